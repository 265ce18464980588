"""The Boltzmann wealth model's parameters: the installed Mesa example's own, plus a step limit.

Names and defaults are read from the installed example's ``BoltzmannScenario`` (Mesa 3.5 and
Mesa 4 both take one); ``max_rounds`` is the game's own (the example never stops by itself).
"""

from __future__ import annotations

from typing import Any

from mesa.examples.basic.boltzmann_wealth_model.model import BoltzmannScenario

from llm_mesa import Parameter, ParameterSet

NAME = "boltzmann_wealth_model"
MAX_SIDE = 200
MAX_AGENTS = 100_000


def scenario_defaults(scenario: type) -> dict[str, Any]:
    """A Mesa ``Scenario`` class's parameters and their defaults, in the order it declares them
    (what Mesa's own ``Scenario.__init_subclass__`` collects)."""
    return {name: getattr(scenario, name) for name in scenario.__annotations__
            if not name.startswith("_") and hasattr(scenario, name)}


#: the installed example's parameters and defaults
EXAMPLE = scenario_defaults(BoltzmannScenario)

_OWN = {
    "n": Parameter("n", int, EXAMPLE.get("n"), "number of agents, each starting with 1 unit of money",
                   low=2, high=MAX_AGENTS, control_range=(2, 500), label="Agents"),
    "width": Parameter("width", int, EXAMPLE.get("width"), "columns of the grid", low=3, high=MAX_SIDE,
                       control_range=(3, 50), label="Grid width"),
    "height": Parameter("height", int, EXAMPLE.get("height"), "rows of the grid", low=3, high=MAX_SIDE,
                        control_range=(3, 50), label="Grid height"),
}


def example_parameter(name: str, default: Any) -> Parameter:
    """One of the example's parameters as the game offers it: described here, or as the example gives it."""
    return _OWN.get(name) or Parameter(name, type(default), default, f"the example's {name}")


PARAMETERS = ParameterSet.of(
    *(example_parameter(name, default) for name, default in EXAMPLE.items()),
    Parameter("max_rounds", int, 100, "step limit (the example itself never stops)", low=1, high=100_000,
              control_range=(1, 500), label="Max steps"),
)

__all__ = ["EXAMPLE", "MAX_AGENTS", "MAX_SIDE", "NAME", "PARAMETERS", "scenario_defaults"]
