"""Schelling's parameters: the installed Mesa example's own, plus a step limit.

Names and defaults are read from the installed example's ``SchellingScenario`` (Mesa 3.5
and Mesa 4 both take one), so the game offers what the example takes, as it spells it;
``max_rounds`` is the game's own (the example stops only when every agent is happy).
"""

from __future__ import annotations

from typing import Any

from mesa.examples.basic.schelling.model import SchellingScenario

from llm_mesa import LlmMesaError, Parameter, ParameterSet

NAME = "schelling"
#: the largest grid side a game takes (a 200 x 200 grid holds 40,000 cells)
MAX_SIDE = 200


class SchellingError(LlmMesaError):
    """A Schelling game that cannot be built as asked; the message names the fix."""


def scenario_defaults(scenario: type) -> dict[str, Any]:
    """A Mesa ``Scenario`` class's parameters and their defaults, in the order it declares them
    (what Mesa's own ``Scenario.__init_subclass__`` collects)."""
    return {name: getattr(scenario, name) for name in scenario.__annotations__
            if not name.startswith("_") and hasattr(scenario, name)}


#: the installed example's parameters and defaults
EXAMPLE = scenario_defaults(SchellingScenario)

_OWN = {
    "height": Parameter("height", int, EXAMPLE.get("height"), "rows of the grid", low=3, high=MAX_SIDE,
                        control_range=(5, 60), label="Grid height"),
    "width": Parameter("width", int, EXAMPLE.get("width"), "columns of the grid", low=3, high=MAX_SIDE,
                       control_range=(5, 60), label="Grid width"),
    "density": Parameter("density", float, EXAMPLE.get("density"), "the chance that a cell holds an agent at the start",
                         low=0, high=1, step=0.05, label="Agent density"),
    "minority_pc": Parameter("minority_pc", float, EXAMPLE.get("minority_pc"),
                             "the chance that an agent is of the minority type (type 1)", low=0, high=1, step=0.05,
                             label="Fraction minority"),
    "homophily": Parameter("homophily", float, EXAMPLE.get("homophily"),
                           "the least share of an agent's neighbours of its own type that makes it happy",
                           low=0, high=1, step=0.05, label="Homophily"),
    "radius": Parameter("radius", int, EXAMPLE.get("radius"),
                        "how far an agent looks: the cells within this many steps, diagonals included",
                        low=1, high=5, label="Radius"),
}



def example_parameter(name: str, default: Any) -> Parameter:
    """One of the example's parameters as the game offers it: described here, or as the example gives it."""
    return _OWN.get(name) or Parameter(name, type(default), default, f"the example's {name}")


PARAMETERS = ParameterSet.of(
    *(example_parameter(name, default) for name, default in EXAMPLE.items()),
    Parameter("max_rounds", int, 100, "step limit (the example itself stops only once every agent is happy)",
              low=1, high=100_000, control_range=(1, 300), label="Max steps"),
)

__all__ = ["EXAMPLE", "MAX_SIDE", "NAME", "PARAMETERS", "SchellingError", "scenario_defaults"]
