"""Schelling's stand-in behaviour for the loopback server: it reads the prompt and answers as Mesa's rule.

``schelling:mesa`` reads the homophily from the rules ("at least a share H of your
neighbours") and the neighbourhood from the agent's state ("N neighbours of your type, M of
the other type") and answers ``move`` when the share of its type is below H (no neighbours:
a share of 0), as the example's ``SchellingAgent.assign_state`` judges happiness; so LLM
agents answered by it play the ``mesa`` rule's game. A prompt without those lines (the
pre-flight's 1-token call) is refused as a real server refuses a request: HTTP 400.
"""

from __future__ import annotations

import random
import re
from typing import Any

from llm_mesa.loopback import Behaviour, PromptNotUnderstood, PromptView, register_behaviour

from .policies import MOVE, NAME, STAY

_HOMOPHILY = re.compile(r"at least a share ([0-9.eE+-]+) of your neighbours")
_AROUND = re.compile(r"(\d+) neighbours of your type, (\d+) of the other type")


class MesaBehaviour(Behaviour):
    """Answers Schelling's prompt as the example's rule: move when unhappy."""

    kind = f"{NAME}:mesa"
    json_answer = True

    def answer(self, prompt: PromptView, rng: random.Random | None) -> dict[str, Any]:
        homophily = _HOMOPHILY.search(prompt.full)
        around = _AROUND.search(prompt.last_user)
        if homophily is None or around is None:
            raise PromptNotUnderstood(f"{NAME}:mesa reads 'at least a share H of your neighbours' and 'N neighbours "
                                      "of your type, M of the other type'; this prompt lacks one")
        similar, other = (int(n) for n in around.groups())
        share = similar / (similar + other) if similar + other else 0.0
        return {"choice": MOVE if share < float(homophily.group(1)) else STAY}


register_behaviour(f"{NAME}:mesa", lambda params, model: MesaBehaviour(),
                   "answers the schelling prompt as Mesa's rule would: move when unhappy")
