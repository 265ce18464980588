"""The spatial prisoner's dilemma's parameters: the installed Mesa example's own, plus a step limit.

Names and defaults are read from the installed example: Mesa 3.5's ``PdGrid`` takes keyword
arguments (``width``, ``height``, ``activation_order``, ``payoffs``), Mesa 4's a
``PrisonersDilemmaScenario`` (the same, ``payoff`` for ``payoffs``, and ``torus``). The payoff
table, a dict keyed by (my move, the neighbour's move), is offered as its four entries,
``payoff_cc``, ``payoff_cd``, ``payoff_dc`` and ``payoff_dd``, each a number a command line, a
sweep axis and a slider can take; their defaults are the example's ``PdGrid.payoff``.
``max_rounds`` is the game's own (the example never stops by itself; Mesa's notebook plays 20 steps).
"""

from __future__ import annotations

import inspect
from typing import Any

from mesa.examples.advanced.pd_grid.model import PdGrid

from llm_mesa import Parameter, ParameterSet

NAME = "pd_grid"
MAX_SIDE = 200
MOVES = ("C", "D")
#: the example's payoff table as scalar parameters: (my move, the neighbour's move) -> name
PAYOFF_NAMES = {(mine, theirs): f"payoff_{mine}{theirs}".lower() for mine in MOVES for theirs in MOVES}
#: what the installed example calls its payoff table (``payoffs`` on Mesa 3.5, ``payoff`` in Mesa 4's scenario)
PAYOFF_TABLES = ("payoffs", "payoff")


def example_defaults() -> dict[str, Any]:
    """The installed example's parameters and defaults: its scenario's (Mesa 4) or its keywords' (Mesa 3.5)."""
    signature = inspect.signature(PdGrid.__init__).parameters
    if "scenario" in signature:
        scenario = signature["scenario"].default
        return {name: getattr(scenario, name) for name in scenario.__annotations__
                if not name.startswith("_") and hasattr(scenario, name)}
    return {name: p.default for name, p in signature.items() if name not in ("self", "rng")}


#: the installed example's parameters and defaults
EXAMPLE = example_defaults()
#: the example's own name for its payoff table
PAYOFF_TABLE = next(name for name in PAYOFF_TABLES if name in EXAMPLE)
REGIMES = tuple(PdGrid.activation_regimes)

_OWN = {
    "width": Parameter("width", int, EXAMPLE.get("width"), "columns of the grid (one agent a cell)", low=3, high=MAX_SIDE,
                       control_range=(3, 80), label="Grid width"),
    "height": Parameter("height", int, EXAMPLE.get("height"), "rows of the grid (one agent a cell)", low=3, high=MAX_SIDE,
                        control_range=(3, 80), label="Grid height"),
    "activation_order": Parameter("activation_order", str, EXAMPLE.get("activation_order"),
                                  "how agents act each step: Sequential (one at a time in a fixed order), Random "
                                  "(one at a time in a fresh random order) or Simultaneous (all on the same state, "
                                  "then all apply)", choices=REGIMES, label="Activation order"),
    "torus": Parameter("torus", bool, EXAMPLE.get("torus"), "the grid's edges wrap around", label="Torus"),
}


def payoff_parameter(moves: tuple[str, str]) -> Parameter:
    mine, theirs = moves
    return Parameter(PAYOFF_NAMES[moves], float, float(PdGrid.payoff[moves]),
                     f"an agent's payoff from one neighbour when it plays {mine} and the neighbour {theirs} "
                     f"(the example's payoff[({mine!r}, {theirs!r})])", low=-1000, high=1000, step=0.1,
                     control_range=(0, 3), label=f"Payoff {mine} vs {theirs}")


def example_parameter(name: str, default: Any) -> list[Parameter]:
    """One of the example's parameters as the game offers it: the payoff table as its entries, the others
    described here, or as the example gives them."""
    if name == PAYOFF_TABLE:
        return [payoff_parameter(moves) for moves in PAYOFF_NAMES]
    return [_OWN.get(name) or Parameter(name, type(default), default, f"the example's {name}")]


PARAMETERS = ParameterSet.of(
    *(p for name, default in EXAMPLE.items() for p in example_parameter(name, default)),
    Parameter("max_rounds", int, 20, "step limit (the example itself never stops; Mesa's notebook plays 20 steps)",
              low=1, high=100_000, control_range=(1, 200), label="Max steps"),
)


def payoff_table(parameters: dict[str, Any]) -> dict[tuple[str, str], float]:
    """The example's payoff table from the four payoff parameters."""
    return {moves: parameters[name] for moves, name in PAYOFF_NAMES.items()}


__all__ = ["EXAMPLE", "MAX_SIDE", "MOVES", "NAME", "PARAMETERS", "PAYOFF_NAMES", "PAYOFF_TABLE", "REGIMES",
           "example_defaults", "payoff_table"]
