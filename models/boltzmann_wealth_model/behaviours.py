"""The Boltzmann wealth model's stand-in behaviour for the loopback server: it answers as Mesa's rule.

``boltzmann_wealth_model:mesa`` reads the agent's money ("You hold W unit(s)") and its
company ("Your cell holds K other agent(s)") and gives whenever the example's rule would:
money and company (an agent is asked only then, so it always gives). LLM agents answered by
it play the ``mesa`` rule's game. A prompt without those lines (the pre-flight's 1-token
call) is refused as a real server refuses a request: HTTP 400.
"""

from __future__ import annotations

import random
import re
from typing import Any

from llm_mesa.loopback import Behaviour, PromptNotUnderstood, PromptView, register_behaviour

from .policies import GIVE, KEEP, NAME

_WEALTH = re.compile(r"You hold (\d+) unit")
_COMPANY = re.compile(r"Your cell holds (\d+) other agent")


class MesaBehaviour(Behaviour):
    """Answers the Boltzmann prompt as the example's rule: give when it has money and company."""

    kind = f"{NAME}:mesa"
    json_answer = True

    def answer(self, prompt: PromptView, rng: random.Random | None) -> dict[str, Any]:
        wealth, company = _WEALTH.search(prompt.last_user), _COMPANY.search(prompt.last_user)
        if wealth is None or company is None:
            raise PromptNotUnderstood(f"{NAME}:mesa reads 'You hold W unit(s)' and 'Your cell holds K other agent(s)'; "
                                      "this prompt lacks one")
        return {"choice": GIVE if int(wealth.group(1)) > 0 and int(company.group(1)) > 0 else KEEP}


register_behaviour(f"{NAME}:mesa", lambda params, model: MesaBehaviour(),
                   "answers the boltzmann_wealth_model prompt as Mesa's rule would: give when it can")
