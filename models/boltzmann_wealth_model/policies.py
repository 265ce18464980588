"""What a Boltzmann agent sees and chooses, and Mesa's own rule as the ``mesa`` policy.

The example's agent, at its turn, moves to a random neighbouring cell and then, if it holds
any money and shares its cell, gives one unit to a random cellmate. Here the giving is its
policy's choice, ``give`` or ``keep``, asked at that same moment: after its move and after
the gifts of the agents before it in the step's random order, exactly where the example's
rule looks at its wealth. The move, the order and the cellmate who receives stay the
example's, drawn from its stream.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from llm_mesa import Policy, register_policy

from .parameters import NAME

GIVE, KEEP = "give", "keep"
CHOICES = (GIVE, KEEP)


@dataclass(frozen=True)
class View:
    """What one agent sees at its turn, after its move: its money and its cellmates' (asked only when it can give)."""

    agent: int
    round: int
    wealth: int
    cellmates: tuple[int, ...]  # each cellmate's wealth
    agents: int
    width: int
    height: int


@register_policy("mesa", NAME, "Mesa's own rule: give one unit to a random cellmate whenever it can")
class MesaRule(Policy):
    """The example's ``MoneyAgent.step``: an agent with money and company gives one unit."""

    def decide(self, view: View, rng: random.Random) -> str:
        return GIVE if view.wealth > 0 and view.cellmates else KEEP


__all__ = ["CHOICES", "GIVE", "KEEP", "MesaRule", "NAME", "View"]
