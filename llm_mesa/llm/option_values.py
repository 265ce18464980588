"""The endpoint's options and their values, checked where they are read: how a field is set
(``EndpointOption``), the concurrency limit, a JSON object option and a price; kept apart
so that ``endpoint`` holds the endpoint itself."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from llm_mesa.errors import LlmMesaError


class EndpointError(LlmMesaError):
    """A bad or unreachable endpoint; the message is one line that names the fix."""


@dataclass(frozen=True)
class EndpointOption:
    """How one ``Endpoint`` field is set: its command-line option, type and help.

    The one list of them (``ENDPOINT_OPTIONS``, from the fields themselves) serves
    the command line, ``llm:key=value`` policy specs, the experiment file's ``[llm]``
    table (keyed by field name) and the explorer.
    """

    name: str   # the Endpoint field, the [llm] key and the spec key
    flag: str   # the command-line option
    kind: type  # str, int, float, bool, dict (JSON text) or tuple (price: two numbers)
    help: str
    spec: bool = True  # settable in a policy spec llm:name=value
    choices: tuple[str, ...] | None = None

    @property
    def dest(self) -> str:
        """Where argparse keeps the option's value."""
        return self.flag.lstrip("-").replace("-", "_")

    def parse(self, value: Any) -> Any:
        """A value given as text (command line) or data (TOML), as the field's type."""
        if value is None:
            return None
        if self.kind is dict:
            return parse_json_object(value, self.flag)
        if self.kind is tuple:
            return parse_price(value)
        return value


def option_metadata(flag: str, kind: type, help: str, *, spec: bool = True, choices: tuple[str, ...] | None = None):
    """An ``Endpoint`` field's metadata: the option that sets it (``field(metadata=option_metadata(...))``)."""
    return {"option": (flag, kind, help, spec, choices)}


def concurrency_value(value: Any) -> int | str:
    """``--concurrency``: ``auto`` (the limit finds the server's capacity) or a whole number >= 1 (fixed)."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EndpointError(f"concurrency must be auto or a positive whole number, got {value!r}; "
                            "e.g. --concurrency auto (the default) or --concurrency 64")
    return value


def shared_concurrency(values: Any) -> int | str | None:
    """The limit endpoints sharing a server get: the smallest number given, ``auto`` when all say auto."""
    values = list(values)
    numbers = [v for v in values if v != "auto"]
    return min(numbers) if numbers else ("auto" if values else None)


def parse_json_object(text: Any, option: str) -> dict[str, Any] | None:
    if text is None or isinstance(text, dict):
        return text
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EndpointError(f"{option} is not valid JSON ({exc.msg} at column {exc.colno}); "
                            "quote it, e.g. '{\"repetition_penalty\": 1.1}'") from None
    if not isinstance(value, dict):
        raise EndpointError(f"{option} must be a JSON object, e.g. '{{\"repetition_penalty\": 1.1}}'")
    return value


def parse_price(text: Any) -> tuple[float, float] | None:
    if text is None or isinstance(text, tuple):
        return text
    parts = list(text) if isinstance(text, list) else str(text).split(",")
    try:
        if len(parts) != 2:
            raise ValueError
        return float(parts[0]), float(parts[1])
    except ValueError:
        raise EndpointError(f"--price {text!r} needs the form PROMPT,COMPLETION (per 1M tokens), e.g. 0.15,0.6") from None
