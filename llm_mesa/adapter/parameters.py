"""A Mesa model's parameters as a game offers them: read from what the model already says.

A model takes its parameters as constructor keywords (``Model(nodes=10, ..., rng=None)``), as a
Mesa ``Scenario`` (``Model(scenario=ModelScenario(...))``, Mesa 4's way), or both (a grid's
``width`` and ``height`` beside a scenario). Each keyword or
scenario field with a number, a yes/no, a text (its ``Literal`` choices where the scenario
names them) becomes a ``Parameter``; one whose default is anything else (``None``, a mapping)
is left to the model unless the game declares it. The game may fix a parameter the model
cannot vary (``fixed``), bound one the signature leaves open (``bounds``), or declare it
whole (``Parameter(...)``). ``ModelArguments.build`` calls the model as Mesa's own examples
are called: ``Model(rng=seed, **keywords)`` or ``Model(scenario=Scenario(rng=seed, **fields))``.
"""

from __future__ import annotations

import inspect
import sys
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llm_mesa.errors import GameError
from llm_mesa.parameters import Parameter

#: the constructor's arguments that are not parameters of a game
NOT_PARAMETERS = frozenset({"self", "rng", "seed", "scenario", "args", "kwargs"})
SCALARS = (bool, int, float, str)


def scenario_class(model_class: type, given: type | None = None) -> type | None:
    """The Mesa ``Scenario`` subclass the model takes.

    Args:
        model_class: The model's class.
        given: The scenario class the game names, where it cannot be read from the model.

    Returns:
        ``given``, else the ``scenario`` argument's default or annotation, else the one ``Scenario`` subclass the
        model's module defines; None for a model that takes no scenario.
    """
    if given is not None:
        return given
    signature = inspect.signature(model_class.__init__).parameters
    if "scenario" not in signature:
        return None
    from mesa.experimental.scenarios import Scenario

    default = signature["scenario"].default
    if isinstance(default, type) and issubclass(default, Scenario):
        return default
    try:
        hinted = typing.get_type_hints(model_class.__init__).get("scenario")
    except Exception:  # noqa: BLE001  (an annotation that does not resolve: look in the module instead)
        hinted = None
    for candidate in (hinted, *typing.get_args(hinted)):
        if isinstance(candidate, type) and issubclass(candidate, Scenario):
            return candidate
    module = sys.modules.get(model_class.__module__)
    found = [v for v in vars(module).values() if isinstance(v, type) and issubclass(v, Scenario) and v is not Scenario
             and v.__module__ == model_class.__module__] if module else []
    return found[0] if len(found) == 1 else None


def scenario_fields(scenario: type) -> dict[str, tuple[Any, Any]]:
    """A scenario class's own fields (``rng`` and its like left out).

    Args:
        scenario: A Mesa ``Scenario`` subclass.

    Returns:
        Name -> (default, type hint), in the order it declares them.
    """
    hints = typing.get_type_hints(scenario)
    return {name: (getattr(scenario, name), hints.get(name)) for name in scenario.__annotations__
            if not name.startswith("_") and name not in NOT_PARAMETERS and hasattr(scenario, name)}


def keyword_fields(model_class: type) -> dict[str, tuple[Any, Any]]:
    """The constructor's keywords that have defaults (``rng``, ``seed``, ``scenario`` left out).

    Args:
        model_class: The model's class.

    Returns:
        Name -> (default, annotation), in the signature's order.
    """
    signature = inspect.signature(model_class.__init__).parameters
    return {name: (p.default, p.annotation) for name, p in signature.items()
            if name not in NOT_PARAMETERS and p.default is not inspect.Parameter.empty
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def inferred(name: str, default: Any, hint: Any, bounds: tuple[float, float] | None) -> Parameter | None:
    """The parameter a keyword or field offers.

    Args:
        name: Its name.
        default: Its default: its type is the parameter's.
        hint: Its annotation (a ``Literal`` gives the choices).
        bounds: ``(low, high)`` the game declares (None: ``default_bounds``).

    Returns:
        The parameter (a float's slider steps hold the default), or None when the default is not a plain value.
    """
    if not isinstance(default, SCALARS) or default is None:
        return None
    kind = type(default)
    choices = typing.get_args(hint) if typing.get_origin(hint) is typing.Literal else None
    low, high = bounds if bounds is not None else default_bounds(name, default)
    if kind in (str, bool):
        low = high = None
    step = None
    if kind is float:  # a slider whose steps hold the model's default (0.074 is not a step of 0.05)
        places = len(repr(default).partition(".")[2].rstrip("0"))
        step = min(0.01, 10.0 ** -places) if places else 0.01
    return Parameter(name, kind, default, f"the model's {name}", low=low, high=high, step=step,
                     choices=tuple(choices) if choices else None, label=name.replace("_", " ").capitalize())


def default_bounds(name: str, default: Any) -> tuple[float | None, float | None]:
    """Bounds for a number the model gives none for.

    Args:
        name: The parameter's name.
        default: Its default.

    Returns:
        ``(low, high)``: a float default within 0..1 is a fraction, 0..1; a count from 0 to ten times its default
        (at least 10); anything else ``(None, None)``, unbounded.
    """
    if isinstance(default, bool) or not isinstance(default, (int, float)):
        return None, None
    if isinstance(default, float) and 0 <= default <= 1:
        return 0.0, 1.0
    if isinstance(default, int) and default >= 0:
        return 0, max(10, 10 * default)
    if default >= 0:
        return 0.0, max(10.0, 10 * default)
    return None, None


@dataclass(frozen=True)
class ModelArguments:
    """How a game's parameters become the model's own arguments, and how the model is built from them.

    Attributes:
        model_class: The model's class.
        scenario: Its ``Scenario`` class (None: it takes keywords only).
        keywords: The constructor's keywords that are parameters.
        fields: The scenario's fields that are parameters.
        fixed: Arguments passed as given, not offered.
        arguments: ``arguments(parameters) -> {name: value}``, the model's arguments where they differ.
    """

    model_class: type
    scenario: type | None
    keywords: tuple[str, ...]
    fields: tuple[str, ...]
    fixed: Mapping[str, Any]
    arguments: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None

    def initialise(self, model: Any, parameters: Mapping[str, Any], seed: int) -> None:
        """Run the model class's own ``__init__`` on ``model``, as Mesa's own examples are built.

        Args:
            model: An instance of the game's model class (a subclass that adds only the game's arguments).
            parameters: The model's own parameters.
            seed: ``rng=seed``, or the scenario's ``rng``.
        """
        given = dict(self.arguments(parameters)) if self.arguments is not None else dict(parameters)
        given = {**given, **self.fixed}
        keywords = {k: v for k, v in given.items() if k in self.keywords}
        if self.scenario is None:
            self.model_class.__init__(model, rng=seed, **keywords)
            return
        fields = {k: v for k, v in given.items() if k in self.fields}
        self.model_class.__init__(model, scenario=self.scenario(rng=seed, **fields), **keywords)


def model_parameters(model_class: type, *, scenario: type | None = None, fixed: Mapping[str, Any] | None = None,
                     bounds: Mapping[str, tuple[float, float]] | None = None, declared: Sequence[Parameter] = (),
                     arguments: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
                     ) -> tuple[list[Parameter], ModelArguments]:
    """The parameters a model offers, read from what it already says, and how to build it from them.

    Args:
        model_class: The model's class.
        scenario: Its ``Scenario`` class, where it cannot be read from the model.
        fixed: Arguments the model takes but cannot vary: passed as given, not offered.
        bounds: ``{name: (low, high)}`` for numbers the model gives no bounds for.
        declared: Parameters declared whole, replacing those read (or added, where ``arguments`` maps them).
        arguments: ``arguments(parameters) -> {name: value}``, the model's arguments where they differ.

    Returns:
        ``(parameters, how)``: the parameters, keywords first, then the scenario's fields; and the
        ``ModelArguments`` that build the model.

    Raises:
        GameError: ``fixed`` or ``bounds`` names an argument the model does not take.
    """
    fixed, bounds = dict(fixed or {}), dict(bounds or {})
    scenario = scenario_class(model_class, scenario)
    keywords = keyword_fields(model_class)
    fields = scenario_fields(scenario) if scenario is not None else {}
    unknown = sorted(name for name in {*fixed, *bounds} if name not in keywords and name not in fields)
    if unknown:
        raise GameError(f"{model_class.__name__} takes no parameter {unknown[0]!r}; it takes: "
                        f"{', '.join([*keywords, *fields]) or 'none'}")
    own = {p.name: p for p in declared}
    offered: list[Parameter] = []
    for name, (default, hint) in {**keywords, **fields}.items():
        if name in fixed:
            continue
        parameter = own.pop(name, None) or inferred(name, default, hint, bounds.get(name))
        if parameter is not None:
            offered.append(parameter)
    offered += own.values()  # declared parameters the model does not name itself (its arguments make them its own)
    return offered, ModelArguments(model_class, scenario, tuple(keywords), tuple(fields), fixed, arguments)


__all__ = ["ModelArguments", "default_bounds", "inferred", "keyword_fields", "model_parameters", "scenario_class",
           "scenario_fields"]
