"""The Boltzmann wealth model's LLM agents: each asked, at its turn, whether to give one unit or keep it.

The rules come first, the same for every agent of a game (so servers cache them): the
grid, that everyone starts with one unit, that agents act one at a time in a random order,
moving to a random neighbouring cell and then choosing, and that the receiver is a random
cellmate. The agent's state comes last: its money and its cellmates' money, after its
move. The answer is ``{"choice": "give" | "keep"}``; one that still decides nothing after
the core's reminder keeps the money (the core counts it as a failed decision).
"""

from __future__ import annotations

import hashlib
from typing import Any

from llm_mesa import LLMPolicy, Question, register_policy
from llm_mesa.llm import parse_json_answer

from .policies import CHOICES, KEEP, NAME, View

RULES = (
    "You are one of {agents} agents in the Boltzmann wealth model, on a grid of {width} x {height} cells whose edges "
    "do not wrap around; a cell may hold several agents. Every agent started with 1 unit of money. Each step the "
    "agents act one at a time, in a random order that changes every step. On its turn an agent moves to a random "
    "neighbouring cell; then, if it holds money and shares its cell with other agents, it chooses: give 1 unit of "
    "its money to one of them, picked at random, or keep it. "
    'Answer with one JSON object: {{"choice": "give"}} or {{"choice": "keep"}}.'
)
STATE = ("Step {round}, your turn: you have just moved. You hold {wealth} unit(s) of money. Your cell holds "
         "{count} other agent(s), who hold: {cellmates}.")
TEMPLATE_HASH = hashlib.sha256((RULES + STATE).encode()).hexdigest()[:12]
SCHEMA = {"type": "object", "properties": {"choice": {"type": "string", "enum": list(CHOICES)}},
          "required": ["choice"], "additionalProperties": False}
REMINDER = 'Answer only with the JSON object {"choice": "give"} or {"choice": "keep"}.'


def messages(view: View) -> list[dict[str, str]]:
    """The rules as the system message, the agent's state as the user's."""
    fields = {**vars(view), "count": len(view.cellmates), "cellmates": ", ".join(map(str, view.cellmates)) or "-"}
    return [{"role": "system", "content": RULES.format(**fields)}, {"role": "user", "content": STATE.format(**fields)}]


def decode(text: str) -> str | None:
    """The choice in an answer (any case), or None."""
    data = parse_json_answer(text)
    choice = str(data.get("choice", "")).strip().lower() if data else ""
    return choice if choice in CHOICES else None


@register_policy("llm", NAME, "an LLM agent behind any OpenAI-compatible endpoint")
class BoltzmannLLM(LLMPolicy):
    """Asks the endpoint whether the agent gives or keeps; the core keys, records and counts each call."""

    def question(self, view: View) -> Question[str]:
        chat = messages(view)
        return Question(decode, messages=chat, prompt=f"{chat[0]['content']}\n\n{chat[1]['content']}\nAnswer:",
                        schema=SCHEMA, reminder=REMINDER, template_hash=TEMPLATE_HASH)

    def failed(self, view: View) -> str:
        return KEEP


def game_policy(endpoint: Any, store: Any = None) -> BoltzmannLLM:
    """The game contract's LLM policy factory (``BoltzmannGame.llm.policy``)."""
    return BoltzmannLLM(endpoint, store)


__all__ = ["BoltzmannLLM", "REMINDER", "RULES", "SCHEMA", "STATE", "TEMPLATE_HASH", "decode", "game_policy", "messages"]
