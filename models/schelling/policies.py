"""What a Schelling agent sees and chooses, and Mesa's own rule as the ``mesa`` policy.

The example's agent moves to a random empty cell when it is unhappy; here its choice,
``stay`` or ``move``, comes from its policy, and where it moves to is still the example's
(a random empty cell, drawn from the model's stream). Happiness is still the example's:
assigned to every agent after the step's moves, so each agent decides on the grid as it is
at the start of the step, and every decision of a step can be asked at once.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from llm_mesa import Policy, register_policy

from .parameters import NAME

STAY, MOVE = "stay", "move"
CHOICES = (STAY, MOVE)


@dataclass(frozen=True)
class View:
    """What one agent sees at the start of a step: its type, its neighbourhood, the rules' numbers."""

    agent: int
    round: int
    type: int
    similar: int  # neighbours of its own type
    other: int  # neighbours of the other type
    empty: int  # empty cells in its neighbourhood
    happy: bool  # as the example assigned it after the last step
    homophily: float
    radius: int
    width: int
    height: int
    agents: int


@register_policy("mesa", NAME, "Mesa's own rule: an unhappy agent moves to a random empty cell, a happy one stays")
class MesaRule(Policy):
    """The example's ``SchellingAgent.step``: move when unhappy."""

    def decide(self, view: View, rng: random.Random) -> str:
        return STAY if view.happy else MOVE


__all__ = ["CHOICES", "MOVE", "MesaRule", "NAME", "STAY", "View"]
