"""A page's controls for any game, and building a model from their values (``GameView``'s defaults).

The controls are the game's parameter definition (``Parameter.control_spec``), then
the agents' policy, the LLM endpoint and model when the game has an LLM policy (the
built-in loopback stand-in by default, so LLM agents work offline), and the seed.
Every value, typed into the page or given in a link (``?n=500``), is checked the same
way: converted as its control's type, held to the page's own range (a slider over the
range a parameter offers widens to any value within the parameter's bounds instead:
the offered range is where a slider starts, not a limit), then to the parameter's own
checks; each error is a ``ControlError`` that names the control, with the message the
control itself shows.
"""

from __future__ import annotations

import atexit
import re
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlparse

from llm_mesa import declared
from llm_mesa.errors import LlmMesaError

if TYPE_CHECKING:
    from llm_mesa.games import Game
    from llm_mesa.parameters import ParameterSet
    from llm_mesa.views import GameView

GENERAL = "_general"  # an error that belongs to no single control
#: the endpoint control's value that starts the loopback stand-in inside the page's process
BUILTIN = "loopback"
#: the page's LLM calls give up sooner than a study's: a failure shows within seconds
PAGE_ENDPOINT = {"timeout": 60.0, "max_attempts": 2}
LLM = "llm"


class ControlError(LlmMesaError):
    """A control value that cannot make a game: the page shows the message beside its control.

    Args:
        control: The name of the control at fault.
        message: One line that names the fix.
    """

    def __init__(self, control: str, message: str) -> None:
        super().__init__(message)
        self.control = control


# --- the controls ---------------------------------------------------------------------------


def policy_choices(game: Game) -> list[str]:
    """The game's rule configurations, its registered rule policies, then ``llm`` when it has an LLM policy."""
    from llm_mesa.policy import registered_rule_policies

    specs = [spec for group in declared.policy_groups(game).values() for spec in group.values()]
    specs += registered_rule_policies(game.name)
    if game.llm.policy:
        specs.append(LLM)
    return list(dict.fromkeys(specs))


def loopback_model(game: Game) -> str:
    """The first stand-in behaviour the game registers (what its LLM agents are answered by offline)."""
    from llm_mesa.loopback.behaviours import listed_behaviours

    mine = [name for name in listed_behaviours() if name.startswith(f"{game.name}:")]
    return mine[0] if mine else "echo"


def controls_of(view: GameView) -> dict[str, dict[str, Any]]:
    game = view.game
    specs = game.parameters.controls()
    choices = view.policy_choices()
    if choices:
        specs[view.policy_control] = {"type": "Select", "value": choices[0], "values": choices, "label": "Policy"}
    if LLM in choices:
        specs["llm_endpoint"] = {"type": "InputText", "value": BUILTIN,
                                 "label": "LLM endpoint (base URL, or loopback: the built-in stand-in)"}
        specs["llm_model"] = {"type": "InputText", "value": view.loopback_model(), "label": "LLM model"}
    specs["seed"] = {"type": "InputInt", "value": 1, "min": 0, "label": "Seed"}
    return specs


def initial_values(specs: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    return {name: spec.get("value") for name, spec in specs.items()}


# --- checking values -------------------------------------------------------------------------

_KINDS = {"SliderInt": int, "InputInt": int, "SliderFloat": float, "InputFloat": float, "Checkbox": bool}


def check_value(name: str, spec: Mapping[str, Any], value: Any, parameters: ParameterSet | None = None) -> Any:
    """``value`` as control ``name`` holds it, or ``ControlError`` with the control's own message."""
    from llm_mesa.parameters import Parameter, ParameterError

    label = spec.get("label", name)
    kind = _KINDS.get(spec.get("type", "InputText"), str)
    probe = Parameter(name, kind, None, "", nullable=False)
    try:
        converted = probe.convert(value) if kind is not str else ("" if value is None else str(value))
    except ParameterError:
        expected = {int: "a whole number", float: "a number", bool: "true or false"}[kind]
        raise ControlError(name, f"{label}: {value!r} is not {expected}") from None
    if spec.get("type") == "Select" and converted not in spec.get("values", ()):
        raise ControlError(name, f"{label}: unknown value {converted!r}; choose one of: "
                                 + ", ".join(map(str, spec.get("values", ()))))
    own = parameters[name] if parameters is not None and name in parameters else None
    if kind in (int, float) and spec.get("widen") and own is not None:
        # a slider over an offered range widens to any value the game takes: only the game's bounds hold
        if own.low is not None and converted < own.low:
            raise ControlError(name, f"{label}: {_number(converted)} is below the game's minimum {_number(own.low)}")
        if own.high is not None and converted > own.high:
            raise ControlError(name, f"{label}: {_number(converted)} is above the game's maximum {_number(own.high)}")
    elif kind in (int, float):
        low, high = spec.get("min"), spec.get("max")
        if low is not None and converted < low:
            raise ControlError(name, f"{label}: {_number(converted)} is below this page's minimum {_number(low)}")
        if high is not None and converted > high:
            top = own.high if own is not None else None
            hint = f" (the game takes up to {_number(top)}: play it from the command line)" if top is not None and top > high else ""
            raise ControlError(name, f"{label}: {_number(converted)} is above this page's maximum {_number(high)}{hint}")
    if parameters is not None and name in parameters:
        try:
            converted = parameters[name].convert(converted)
        except ParameterError as exc:
            raise ControlError(name, f"{label}: {exc}") from None
    if name == "llm_endpoint":
        converted = check_endpoint_text(converted)
    return converted


def _on_steps(value: float, start: float, step: float) -> bool:
    offset = (value - start) / step
    return abs(offset - round(offset)) < 1e-9


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:g}"


def check_values(specs: Mapping[str, Mapping[str, Any]], values: Mapping[str, Any],
                 parameters: ParameterSet | None = None) -> dict[str, Any]:
    """Every value checked by its control, in the controls' order; values without a control pass through."""
    out = dict(values)
    for name, spec in specs.items():
        if name in values:
            out[name] = check_value(name, spec, values[name], parameters)
    return out


def query_values(specs: Mapping[str, Mapping[str, Any]], search: str,
                 parameters: ParameterSet | None = None) -> tuple[dict[str, Any], dict[str, str]]:
    """A query string as control values; each bad value (or unknown name) gets its control's message."""
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for name, text in parse_qsl((search or "").lstrip("?"), keep_blank_values=True):
        spec = specs.get(name)
        if spec is None:
            errors[GENERAL] = f"the link names no control {name!r}; the page has: {', '.join(specs)}"
            continue
        try:
            values[name] = on_a_step(name, spec, check_value(name, spec, text, parameters))
        except ControlError as exc:
            errors[name] = str(exc)
    return values, errors


def on_a_step(name: str, spec: Mapping[str, Any], value: Any) -> Any:
    """``value``, if the control's slider can hold it; a link's value between two steps would show (and soon
    play) the nearest step while the game plays the value: ``ControlError`` instead."""
    step, low = spec.get("step"), spec.get("min") or 0
    if spec.get("type") in ("SliderInt", "SliderFloat") and step and not _on_steps(value, low, step):
        raise ControlError(name, f"{spec.get('label', name)}: {_number(value)} is not a step of this page's slider "
                                 f"({_number(low)} to {_number(spec.get('max'))} in steps of {_number(step)})")
    return value


def check_endpoint_text(url: str) -> str:
    """``url`` stripped, or ``ControlError`` on the endpoint control for a malformed one."""
    url = (url or "").strip()
    if url == BUILTIN:
        return url
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname or " " in url:
        raise ControlError("llm_endpoint", f"{url!r} is not an endpoint URL: give a base URL such as "
                                           f"http://127.0.0.1:8765/v1, or {BUILTIN} for the built-in stand-in")
    return url


def option_of(name: str, parameters: ParameterSet | None = None) -> str:
    """The command-line option that sets control ``name`` (``--n``, ``--ring-degree``)."""
    if parameters is not None and name in parameters:
        return parameters[name].option
    return "--" + name.replace("_", "-")


def page_words(text: str, specs: Mapping[str, Mapping[str, Any]], parameters: ParameterSet | None = None) -> str:
    """A message in the page's words: each command-line option a control sets becomes the control's label."""
    for name, spec in specs.items():
        option = option_of(name, parameters)
        text = re.sub(rf"(?<![\w-]){re.escape(option)}(?![\w-])", f"“{spec.get('label', name)}”", text)
    return text


def blamed(text: str, specs: Mapping[str, Mapping[str, Any]], parameters: ParameterSet | None = None) -> str:
    """The control a message is about: the first whose option it names (``use a larger --n``), else the first
    whose name or label it names, else none (``GENERAL``)."""
    named = {name: m.start() for name in specs
             if (m := re.search(rf"(?<![\w-]){re.escape(option_of(name, parameters))}(?![\w-])", text))}
    if named:
        return min(named, key=named.get)
    lowered = text.lower()
    words = [name for name in specs if re.search(rf"\b{re.escape(name)}\b", lowered)
             or re.search(rf"\b{re.escape(str(specs[name].get('label', '')).lower())}\b", lowered)]
    return words[0] if words else GENERAL


def reported(specs: Mapping[str, Any], make: Callable[[], Any], parameters: ParameterSet | None = None) -> Any:
    """``make()``, its user-facing errors reported against the control they are about (else against none), in
    the page's words (a control's label, never a command-line option)."""
    try:
        return make()
    except ControlError as exc:
        raise ControlError(exc.control, page_words(str(exc), specs, parameters)) from None
    except (LlmMesaError, ValueError) as exc:
        text = str(exc)
        raise ControlError(blamed(text, specs, parameters), page_words(text, specs, parameters)) from None


# --- the policy -------------------------------------------------------------------------------


_lock = threading.Lock()
_server: Any = None


def resolve_endpoint(url: str) -> str:
    """``url`` itself, or the base URL of the in-process stand-in (started once) for ``loopback``."""
    global _server
    url = url.strip()
    if url != BUILTIN:
        return url
    with _lock:
        if _server is None:
            from llm_mesa.loopback.server import LoopbackServer

            server = LoopbackServer(port=0)
            server.__enter__()
            atexit.register(server.__exit__, None, None, None)
            _server = server
    return _server.base_url


def page_endpoint(game: Game, url: str, model_name: str, *, check: bool = True) -> Any:
    """The endpoint of the LLM controls (the game's sampling defaults, the page's short timeout), asked first."""
    from llm_mesa.llm.client import preflight
    from llm_mesa.llm.endpoint import Endpoint, EndpointError

    url = check_endpoint_text(url)
    name = (model_name or "").strip()
    if not name:
        raise ControlError("llm_model", f"the LLM model name is empty: name the model the endpoint serves "
                                        f"(on {BUILTIN}: {loopback_model(game)})")
    try:
        target = Endpoint(base_url=resolve_endpoint(url), model=name, **{**game.llm.endpoint_defaults, **PAGE_ENDPOINT})
        if check:
            preflight(target)
    except EndpointError as exc:
        text = str(exc).replace("pass e.g. --base-url ", "e.g. ").replace(" (pass one with --model)", "")
        at_model = "model" in text.split(";")[0].lower() and "reach" not in text
        raise ControlError("llm_model" if at_model else "llm_endpoint", text) from None
    return target


def make_policy(view: GameView, values: Mapping[str, Any], policy: str | None = None) -> Any:
    game = view.game
    spec = policy if policy is not None else values.get(view.policy_control)
    if spec is None:
        return declared.first_policy(game)
    if spec != LLM:
        from llm_mesa.policy import PolicyError
        from llm_mesa.policy import make_policy as make

        try:
            make(spec, game)
        except (PolicyError, ValueError) as exc:
            raise ControlError(view.policy_control, f"policy {spec!r}: {exc}") from None
        return spec
    endpoint = page_endpoint(game, values.get("llm_endpoint", BUILTIN), values.get("llm_model", ""))
    return declared.llm_policy(game, endpoint, None)


# --- words ----------------------------------------------------------------------------------------


def shorten(value: Any, limit: int = 400) -> str:
    if value is None or value == "":
        return "-"
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["BUILTIN", "ControlError", "GENERAL", "LLM", "blamed", "check_endpoint_text", "check_value",
           "check_values", "controls_of", "initial_values", "loopback_model", "make_policy", "on_a_step", "option_of",
           "page_endpoint", "page_words", "policy_choices", "query_values", "reported", "resolve_endpoint", "shorten"]
