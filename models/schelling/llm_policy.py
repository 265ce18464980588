"""Schelling's LLM agents: each asked, at the start of every step, whether to stay or move.

The rules come first, the same for every agent of a game (so servers cache them): the
grid, the two types, the neighbourhood, the happiness rule with the game's own homophily,
that every agent decides at once on the grid as it is, and that a mover lands on a random
empty cell. The agent's state comes last: its type and how many of its neighbours are of
its type, of the other type, and empty. The answer is ``{"choice": "stay" | "move"}``; one
that still decides nothing after the core's reminder keeps the agent where it is (the core
counts it as a failed decision).
"""

from __future__ import annotations

import hashlib
from typing import Any

from llm_mesa import LLMPolicy, Question, register_policy
from llm_mesa.llm import parse_json_answer

from .policies import CHOICES, NAME, STAY, View

RULES = (
    "You are one agent in Schelling's segregation model, on a grid of {width} x {height} cells whose edges do not "
    "wrap around. Each cell holds at most one agent; {agents} agents live on the grid, each of type 0 or type 1. "
    "Your neighbourhood is every cell within {radius} step(s) of yours in any direction, diagonals included. "
    "You are happy when at least a share {homophily!r} of your neighbours are of your type (with no neighbours at "
    "all you are unhappy). Each step every agent chooses at the same time, on the grid as it is at the start of the "
    "step: stay where it is, or move to an empty cell chosen at random. Once everyone has moved, happiness is judged "
    "again; the game ends when every agent is happy. "
    'Answer with one JSON object: {{"choice": "stay"}} or {{"choice": "move"}}.'
)
STATE = ("Step {round}. You are of type {type}. In your neighbourhood: {similar} neighbours of your type, "
         "{other} of the other type, {empty} empty cells.")
TEMPLATE_HASH = hashlib.sha256((RULES + STATE).encode()).hexdigest()[:12]
SCHEMA = {"type": "object", "properties": {"choice": {"type": "string", "enum": list(CHOICES)}},
          "required": ["choice"], "additionalProperties": False}
REMINDER = 'Answer only with the JSON object {"choice": "stay"} or {"choice": "move"}.'


def messages(view: View) -> list[dict[str, str]]:
    """The rules as the system message, the agent's state as the user's."""
    return [{"role": "system", "content": RULES.format(**vars(view))},
            {"role": "user", "content": STATE.format(**vars(view))}]


def decode(text: str) -> str | None:
    """The choice in an answer (any case), or None."""
    data = parse_json_answer(text)
    choice = str(data.get("choice", "")).strip().lower() if data else ""
    return choice if choice in CHOICES else None


@register_policy("llm", NAME, "an LLM agent behind any OpenAI-compatible endpoint")
class SchellingLLM(LLMPolicy):
    """Asks the endpoint whether the agent stays or moves; the core keys, records and counts each call."""

    def question(self, view: View) -> Question[str]:
        chat = messages(view)
        return Question(decode, messages=chat, prompt=f"{chat[0]['content']}\n\n{chat[1]['content']}\nAnswer:",
                        schema=SCHEMA, reminder=REMINDER, template_hash=TEMPLATE_HASH)

    def failed(self, view: View) -> str:
        return STAY


def game_policy(endpoint: Any, store: Any = None) -> SchellingLLM:
    """The game contract's LLM policy factory (``SchellingGame.llm.policy``)."""
    return SchellingLLM(endpoint, store)


__all__ = ["REMINDER", "RULES", "SCHEMA", "STATE", "SchellingLLM", "TEMPLATE_HASH", "decode", "game_policy", "messages"]
