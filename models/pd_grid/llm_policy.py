"""The spatial prisoner's dilemma's LLM agents: each asked for its next move, C or D.

The rules come first, the same for every agent of a game (so servers cache them): the
grid, the game against every neighbour with one move for all, the game's own payoff table,
how scores add up, and how the step's turns are taken under the game's activation order.
The agent's state comes last: its move and score, then each neighbour's, in the grid's
order. The answer is ``{"move": "C" | "D"}``; one that still decides nothing after the
core's reminder keeps the agent's move (the core counts it as a failed decision).

Scores are written as Python writes a float (the shortest text that reads back as the same
number), so an answer read from the prompt can compare them exactly as the example does.
"""

from __future__ import annotations

import hashlib
from typing import Any

from llm_mesa import LLMPolicy, Question, register_policy
from llm_mesa.llm import parse_json_answer

from .parameters import MOVES
from .policies import NAME, View

RULES = (
    "You are one player of the iterated prisoner's dilemma on a grid of {width} x {height} cells, one player a cell. "
    "Your neighbours are the players in the cells around yours, diagonals included: {edges}. Each step you play one move, "
    "C (cooperate) or D (defect), against every neighbour at once, and earn from each neighbour: {payoffs}. Your "
    "score is the sum of everything you have earned so far. {turns} "
    'Answer with one JSON object: {{"move": "C"}} or {{"move": "D"}}.'
)
TURNS = {
    "Simultaneous": "Each step every player chooses its next move at the same time, seeing the moves and scores as they "
                    "are at the start of the step; it is then paid against its neighbours' new moves.",
    "Random": "Each step the players take turns one at a time, in a random order that changes every step; on your turn "
              "you see your neighbours' moves and scores as they are, the changes of those who acted before you this "
              "step included, and you are paid at once against their moves.",
    "Sequential": "Each step the players take turns one at a time, in the same fixed order every step; on your turn you "
                  "see your neighbours' moves and scores as they are, the changes of those who acted before you this "
                  "step included, and you are paid at once against their moves.",
}
STATE = "Step {round}, your turn. You: {move}, score {score!r}. Your neighbours, in the grid's order: {neighbours}."
TEMPLATE_HASH = hashlib.sha256((RULES + "".join(TURNS.values()) + STATE).encode()).hexdigest()[:12]
SCHEMA = {"type": "object", "properties": {"move": {"type": "string", "enum": list(MOVES)}},
          "required": ["move"], "additionalProperties": False}
REMINDER = 'Answer only with the JSON object {"move": "C"} or {"move": "D"}.'


def messages(view: View) -> list[dict[str, str]]:
    """The rules as the system message, the agent's state as the user's."""
    payoffs = "; ".join(f"you {mine} and they {theirs}: {value:g}" for (mine, theirs), value in view.payoffs)
    rules = RULES.format(width=view.width, height=view.height, payoffs=payoffs, turns=TURNS[view.activation_order],
                         edges="the grid's edges wrap around, so everyone has 8" if view.torus
                         else "8, or fewer at the grid's edges, which do not wrap around")
    neighbours = "; ".join(f"{i}: {move}, score {score!r}" for i, (move, score) in enumerate(view.neighbours, 1)) or "none"
    state = STATE.format(round=view.round, move=view.move, score=view.score, neighbours=neighbours)
    return [{"role": "system", "content": rules}, {"role": "user", "content": state}]


def decode(text: str) -> str | None:
    """The move in an answer (either case), or None."""
    data = parse_json_answer(text)
    move = str(data.get("move", "")).strip().upper() if data else ""
    return move if move in MOVES else None


@register_policy("llm", NAME, "an LLM agent behind any OpenAI-compatible endpoint")
class PdGridLLM(LLMPolicy):
    """Asks the endpoint for the agent's next move; the core keys, records and counts each call."""

    def question(self, view: View) -> Question[str]:
        chat = messages(view)
        return Question(decode, messages=chat, prompt=f"{chat[0]['content']}\n\n{chat[1]['content']}\nAnswer:",
                        schema=SCHEMA, reminder=REMINDER, template_hash=TEMPLATE_HASH)

    def failed(self, view: View) -> str:
        return view.move


def game_policy(endpoint: Any, store: Any = None) -> PdGridLLM:
    """The game contract's LLM policy factory (``PdGridGame.llm.policy``)."""
    return PdGridLLM(endpoint, store)


__all__ = ["PdGridLLM", "REMINDER", "RULES", "SCHEMA", "STATE", "TEMPLATE_HASH", "TURNS", "decode", "game_policy",
           "messages"]
