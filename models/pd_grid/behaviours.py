"""The spatial prisoner's dilemma's stand-in behaviour for the loopback server: it answers as Mesa's rule.

``pd_grid:mesa`` reads the agent's move and score ("You: C, score 4.6") and its neighbours'
in the grid's order ("1: D, score 3.2; 2: C, score 4.6; ...") and answers the move of the first highest
score among the neighbours, then itself, as the example's ``PDAgent.step`` picks it; scores
are written as Python writes floats, so they compare exactly as the example's. LLM agents
answered by it play the ``mesa`` rule's game. A prompt without those lines (the
pre-flight's 1-token call) is refused as a real server refuses a request: HTTP 400.
"""

from __future__ import annotations

import random
import re
from typing import Any

from llm_mesa.loopback import Behaviour, PromptNotUnderstood, PromptView, register_behaviour

from .policies import NAME

_FLOAT = r"-?\d+(?:\.\d+)?(?:e[+-]?\d+)?"  # a float as Python writes it
_OWN = re.compile(rf"You: ([CD]), score ({_FLOAT})\.")
_NEIGHBOURS = re.compile(r"Your neighbours, in the grid's order: (.*)")
_PAIR = re.compile(rf"\d+: ([CD]), score ({_FLOAT})")


class MesaBehaviour(Behaviour):
    """Answers the prisoner's-dilemma prompt as the example's rule: copy the best scorer."""

    kind = f"{NAME}:mesa"
    json_answer = True

    def answer(self, prompt: PromptView, rng: random.Random | None) -> dict[str, Any]:
        own, around = _OWN.search(prompt.last_user), _NEIGHBOURS.search(prompt.last_user)
        if own is None or around is None:
            raise PromptNotUnderstood(f"{NAME}:mesa reads 'You: M, score S.' and 'Your neighbours, in the grid's "
                                      "order: 1: M, score S; ...'; this prompt lacks one")
        candidates = [(move, float(score)) for move, score in _PAIR.findall(around.group(1))]
        candidates.append((own.group(1), float(own.group(2))))
        return {"move": max(candidates, key=lambda pair: pair[1])[0]}


register_behaviour(f"{NAME}:mesa", lambda params, model: MesaBehaviour(),
                   "answers the pd_grid prompt as Mesa's rule would: copy the best scorer around")
