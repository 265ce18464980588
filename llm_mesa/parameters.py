"""One definition of a game's parameters, from which everything else derives.

A game lists its parameters once (name, type, default, bounds, choices, help).
From that list come the model's validation, the command line's options, the
explorer's controls and the sweep grid's validation, so a parameter is never
spelled out in four places that can drift apart.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from llm_mesa.errors import LlmMesaError


class ParameterError(LlmMesaError):
    """A parameter value that the game cannot take; the message names the fix."""


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


@dataclass(frozen=True)
class Parameter:
    """One game parameter: from it come its validation, its command-line option, its explorer
    control and its use as a sweep axis.

    Attributes:
        name: The parameter's name, as the game's model takes it (``rounds``, ``inertia``).
        kind: Its type: ``int``, ``float``, ``str`` or ``bool``.
        default: Its value when none is given (within its own bounds: checked when the game registers).
        help: One line for ``--help`` and error messages.
        low: The smallest number allowed (inclusive).
        high: The largest number allowed (inclusive).
        choices: The values a string may take.
        nullable: Lets ``None`` through, meaning "the game picks" (a memory size that depends on the mode).
        cli: The command-line option (default ``--name`` with dashes).
        sweep: Whether it may be a sweep axis.
        control: Whether the explorer shows it.
        step: The explorer slider's step.
        label: The explorer's short label (default: the name).
        in_seed: Whether it enters the seeds an experiment derives for its games: False for one that
            says who plays, not what is played (which agents an LLM plays), so that designs differing
            only in it play the same graphs and draws.
        round_limit: Marks the one whole-number parameter that bounds the game's rounds: a model still
            running past it is stopped as runaway (``llm_mesa.play.step_limit``).
        control_range: The range a slider offers, within ``low``..``high`` (which only validate);
            None: ``offered_range`` picks one.
    """

    name: str
    kind: type
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] | None = None
    nullable: bool = False
    cli: str | None = None
    sweep: bool = True
    control: bool = True
    step: float | None = None  # slider step in the explorer
    label: str = ""  # the explorer's short label (default: the name)
    in_seed: bool = True
    round_limit: bool = False
    #: the range a slider offers (within ``low``..``high``, which only validate); None: ``offered_range``
    control_range: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if self.control_range is not None:
            low, high = self.control_range
            if not low < high or (self.low is not None and low < self.low) or (self.high is not None and high > self.high):
                raise ValueError(f"parameter {self.name}: control_range {self.control_range} must lie within its "
                                 f"bounds {self.low}..{self.high}, low below high")

    @property
    def option(self) -> str:
        """The command-line option (``--max-rounds``)."""
        return self.cli or "--" + self.name.replace("_", "-")

    def convert(self, value: Any) -> Any:
        """A value as this parameter's type, checked against its bounds and choices.

        Args:
            value: A Python value, or text from a command line, a link or a file (``"12"``, ``"yes"``).

        Returns:
            The value as the parameter's type.

        Raises:
            ParameterError: The value is not of the type, or is outside the bounds or choices; the
                message names the fix.
        """
        if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "null")
                             and self.nullable):
            if self.nullable:
                return None
            raise ParameterError(f"{self.name} needs a value; {self._expected()}")
        try:
            converted = self._cast(value)
        except ParameterError:
            raise  # a kind that checks its values (a prompt template) says what is wrong itself
        except (TypeError, ValueError):
            raise ParameterError(f"{self.name}={value!r} is not {self._expected()}") from None
        self.check(converted)
        return converted

    def _cast(self, value: Any) -> Any:
        if self.kind is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
            raise ValueError(value)
        if self.kind is int:
            if isinstance(value, bool):
                raise ValueError(value)
            if isinstance(value, float):
                if not value.is_integer():
                    raise ValueError(value)
                return int(value)
            return int(str(value).strip())
        if self.kind is float:
            if isinstance(value, bool):
                raise ValueError(value)
            number = float(value)
            if not math.isfinite(number):
                raise ValueError(value)
            return number
        return self.kind(value)

    def check(self, value: Any) -> None:
        """Refuse a value of the right type outside the bounds or choices.

        Args:
            value: A value of the parameter's type.

        Raises:
            ParameterError: The value is outside the bounds or not among the choices.
        """
        if value is None and self.nullable:
            return
        if self.choices is not None and value not in self.choices:
            raise ParameterError(f"unknown {self.name.replace('_', ' ')} {value!r}; choose one of: "
                                 + ", ".join(map(str, self.choices)))
        if self.low is not None and value < self.low:
            raise ParameterError(f"{self.name}={value} is below its minimum {self.low:g}; {self.help}")
        if self.high is not None and value > self.high:
            raise ParameterError(f"{self.name}={value} is above its maximum {self.high:g}; {self.help}")

    def _expected(self) -> str:
        kind = {int: "a whole number", float: "a number", bool: "true or false", str: "a text"}.get(
            self.kind, self.kind.__name__)
        if self.choices is not None:
            return "one of " + ", ".join(map(str, self.choices))
        bounds = [f">= {self.low:g}" if self.low is not None else "", f"<= {self.high:g}" if self.high is not None else ""]
        bounds = " and ".join(b for b in bounds if b)
        return kind + (f" {bounds}" if bounds else "")

    def offered_range(self) -> tuple[float, float]:
        """The range a slider offers, for a number with both bounds.

        Returns:
            ``control_range`` when declared; else the bounds, unless they are so wide that the default
            would sit pinned at one end (n 5..10,000 at 36), then a range around the default (a few times
            it), within the bounds.
        """
        if self.control_range is not None:
            return self.control_range
        low, high = float(self.low), float(self.high)
        default = self.default if isinstance(self.default, (int, float)) and not isinstance(self.default, bool) else None
        if default is None or (default - low) >= 0.1 * (high - low):
            return (self.low, self.high)
        top = min(high, max(low + 10 * (self.step or 1), default * 4 if default > 0 else default + 10))
        top = int(top) if self.kind is int else top
        return (self.low, top)

    def control_spec(self) -> dict[str, Any]:
        """This parameter as an explorer control.

        Returns:
            The control in Mesa's ``model_params`` format: a ``Select`` for choices, a ``Checkbox`` for a
            true/false value, a ``SliderInt`` or ``SliderFloat`` for a bounded number, else an
            ``InputText``.
        """
        label = self.label or self.name.replace("_", " ")
        choices = self.choices if self.choices is not None else getattr(self.kind, "choices", None)
        if choices is not None:  # a kind may offer choices beyond which it takes more (a prompt: file:PATH)
            return {"type": "Select", "value": self.default, "values": list(choices), "label": label}
        if self.kind is bool:
            return {"type": "Checkbox", "value": bool(self.default), "label": label}
        if self.kind in (int, float) and self.low is not None and self.high is not None:
            slider = "SliderInt" if self.kind is int else "SliderFloat"
            low, high = self.offered_range()
            step = self.step if self.step is not None else (1 if self.kind is int else (high - low) / 20)
            # widen: a value beyond the offered range but within the bounds (a link's ?n=500) widens the slider
            return {"type": slider, "value": self.default, "min": low, "max": high, "step": step, "label": label,
                    "widen": True}
        return {"type": "InputText", "value": "" if self.default is None else str(self.default), "label": label}


@dataclass(frozen=True)
class ParameterSet:
    """A game's parameters, in the order they are shown; build one with ``ParameterSet.of(...)``.

    Attributes:
        parameters: The parameters, names unique; at most one is the ``round_limit``.
    """

    parameters: tuple[Parameter, ...]
    _index: dict[str, Parameter] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {p.name: p for p in self.parameters})
        if len(self._index) != len(self.parameters):
            raise ValueError("parameter names must be unique")
        limits = [p.name for p in self.parameters if p.round_limit]
        if len(limits) > 1 or any(self._index[name].kind is not int for name in limits):
            raise ValueError(f"at most one whole-number parameter may be the round limit, not {limits}")

    @classmethod
    def of(cls, *parameters: Parameter) -> "ParameterSet":
        """A set of these parameters.

        Args:
            *parameters: The game's parameters, in the order they are shown.

        Returns:
            The set (its names checked unique).
        """
        return cls(tuple(parameters))

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self.parameters)

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __getitem__(self, name: str) -> Parameter:
        try:
            return self._index[name]
        except KeyError:
            raise ParameterError(f"unknown parameter {name!r}; choose among: {', '.join(self._index)}") from None

    @property
    def names(self) -> tuple[str, ...]:
        """The parameters' names, in order."""
        return tuple(self._index)

    def defaults(self) -> dict[str, Any]:
        """Every parameter's default.

        Returns:
            Name -> default, in order.
        """
        return {p.name: p.default for p in self.parameters}

    def validate(self, values: Mapping[str, Any], *, complete: bool = False) -> dict[str, Any]:
        """Values converted and checked, each by its parameter.

        Args:
            values: Name -> value (text or a Python value).
            complete: Fill in the default of every parameter not given.

        Returns:
            Name -> the converted value.

        Raises:
            ParameterError: An unknown name, or a value the parameter refuses.
        """
        out = self.defaults() if complete else {}
        for name, value in values.items():
            out[name] = self[name].convert(value)
        return out

    # --- the command line ------------------------------------------------------------
    def add_arguments(self, parser: argparse.ArgumentParser | argparse._ArgumentGroup,
                      names: Iterable[str] | None = None, **defaults: Any) -> None:
        """Add one command-line option per parameter; its type check is the parameter's own (one error line).

        Args:
            parser: The parser or argument group to add to.
            names: The parameters to add (default: all).
            **defaults: Defaults that replace the parameters' own, by name.
        """
        for p in (self[n] for n in names) if names is not None else self.parameters:
            default = defaults.get(p.name, p.default)
            shown = "" if default is None else f" (default {default})"
            if p.kind is bool and not default:
                parser.add_argument(p.option, dest=p.name, action="store_true", help=p.help)
                continue
            metavar = getattr(p.kind, "metavar", None) or (
                p.name.upper() if p.choices is None else "{" + ",".join(map(str, p.choices)) + "}")
            parser.add_argument(p.option, dest=p.name, default=default, type=_ArgumentType(p),
                                metavar=metavar, help=p.help + shown)

    def from_args(self, args: argparse.Namespace) -> dict[str, Any]:
        """The parameter values a parsed command line holds.

        Args:
            args: The namespace ``parse_args`` returned (options added by ``add_arguments``).

        Returns:
            Name -> value, for the parameters the namespace has.
        """
        return {p.name: getattr(args, p.name) for p in self.parameters if hasattr(args, p.name)}

    # --- sweeps ----------------------------------------------------------------------
    def parse_axis(self, text: str) -> tuple[str, list[Any]]:
        """A sweep axis from its text (``--set alpha=0.5,0.9``).

        Args:
            text: ``NAME=V1,V2,...``.

        Returns:
            The name and its values, each checked, duplicates dropped: ``("alpha", [0.5, 0.9])``.

        Raises:
            ParameterError: A malformed text, an unknown name, a parameter that may not be an axis or a
                bad value.
        """
        name, eq, rest = text.partition("=")
        name = name.strip().replace("-", "_")
        if not eq or not name or not rest.strip():
            raise ParameterError(f"--set {text!r} needs the form NAME=V1,V2,... (e.g. --set n=12,24)")
        parameter = self[name]
        if not parameter.sweep:
            raise ParameterError(f"{name} cannot be a sweep axis")
        values = [parameter.convert(v.strip()) for v in rest.split(",") if v.strip()]
        if not values:
            raise ParameterError(f"--set {text!r} gives no values")
        return name, list(dict.fromkeys(values))

    # --- the explorer ----------------------------------------------------------------
    def controls(self, names: Sequence[str] | None = None, **overrides: Any) -> dict[str, dict[str, Any]]:
        """Explorer controls for the parameters that have one.

        Args:
            names: The parameters to give controls (default: those marked ``control``).
            **overrides: Per name, fields replacing the control's own (a page's own ``min`` and ``max``
                are its limit).

        Returns:
            Name -> control, in Mesa's ``model_params`` format.
        """
        chosen = [self[n] for n in names] if names is not None else [p for p in self.parameters if p.control]
        out = {}
        for p in chosen:
            spec = p.control_spec()
            override = overrides.get(p.name, {})
            spec.update(override)
            if {"min", "max"} & set(override):  # a page's own range is its limit (unless it says to widen)
                spec["widen"] = bool(override.get("widen", False))
            out[p.name] = spec
        return out


class _ArgumentType:
    """argparse's ``type=``: converts with the parameter's own checks and messages."""

    def __init__(self, parameter: Parameter) -> None:
        self.parameter = parameter
        self.__name__ = parameter.kind.__name__

    def __call__(self, text: str) -> Any:
        try:
            return self.parameter.convert(text)
        except ParameterError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None


__all__ = ["Parameter", "ParameterError", "ParameterSet"]
