"""What a prisoner's-dilemma agent sees and chooses, and Mesa's own rule as the ``mesa`` policy.

The example's agent takes the move of the best scorer among its neighbours and itself
(ties: the first of its neighbours in the grid's order, itself last); here its next move,
``C`` or ``D``, comes from its policy, asked when the example's rule looks: on the state at
the start of the step under ``Simultaneous`` (all at once), at the agent's turn under
``Random`` and ``Sequential`` (after the neighbours that acted before it). Its payoff is
still the example's (``PDAgent.advance``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from llm_mesa import Policy, register_policy

from .parameters import MOVES, NAME


@dataclass(frozen=True)
class View:
    """What one agent sees when it chooses: its move and score, and each neighbour's, in the grid's order."""

    agent: int
    round: int
    move: str
    score: float
    neighbours: tuple[tuple[str, float], ...]  # (move, score) of each neighbour
    payoffs: tuple[tuple[tuple[str, str], float], ...]  # ((mine, theirs), payoff)
    activation_order: str
    width: int
    height: int
    torus: bool


@register_policy("mesa", NAME, "Mesa's own rule: take the move of the best scorer among the neighbours and itself")
class MesaRule(Policy):
    """The example's ``PDAgent.step``: the first highest score among the neighbours, then itself, wins."""

    def decide(self, view: View, rng: random.Random) -> str:
        return max([*view.neighbours, (view.move, view.score)], key=lambda pair: pair[1])[0]


__all__ = ["MOVES", "MesaRule", "NAME", "View"]
