"""What a game hands the core is held to JSON's types, and what the core prints as JSON is JSON.

Why one place: a summary row goes to Parquet (a sweep), to ``--json`` and to
``summary.json``. A value Arrow cannot take (a set, an object of the game's own)
crashed a sweep with ``ArrowInvalid`` deep in the writer, after the game was
played; so a row is checked where it leaves the game (``GameResult``, the game's
command), and a value outside JSON's types is refused in one line that names its key.

The types: text, whole and real numbers, true/false, null, and lists and
mappings (with text keys) of them; numpy scalars count as the numbers they hold
(and are turned into them), tuples as lists. Real numbers may be NaN or
infinite in a row (a figure a game could not compute); ``json_text`` prints
them as ``null``, since ``NaN`` and ``Infinity`` are not JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from llm_mesa.errors import LlmMesaError

__all__ = ["SummaryValueError", "checked_row", "json_safe", "json_text"]

_SCALARS = (str, bool, int, float, type(None))
#: deepest nesting of a row's value (a list of lists, a mapping of lists...)
MAX_VALUE_DEPTH = 16


class SummaryValueError(LlmMesaError):
    """A summary row's value that is not of JSON's types; the message names the key."""


def _plain(value: Any, key: str, depth: int = 0) -> Any:
    if isinstance(value, _SCALARS):
        return value
    if depth >= MAX_VALUE_DEPTH:
        raise SummaryValueError(f"the summary row's value of {key!r} nests deeper than {MAX_VALUE_DEPTH} levels; "
                                "keep a row's values flat (a table holds what is per round or per agent)")
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__ == "numpy" and getattr(value, "ndim", 1) == 0:
        return _plain(item(), key, depth + 1)  # a numpy scalar: the number it holds
    if type(value).__name__ in ("NAType", "NaTType"):  # pandas' missing value
        return None
    if isinstance(value, (list, tuple)):
        return [_plain(v, key, depth + 1) for v in value]
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return {k: _plain(v, key, depth + 1) for k, v in value.items()}
    raise SummaryValueError(f"the summary row's value of {key!r} is a {type(value).__name__} ({_shown(value)}); a "
                            "summary value must be text, a number, true/false, null, or a list or mapping (text "
                            "keys) of them: convert it in the game's summary (e.g. sorted(a_set) for a set)")


def _shown(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001  (an object whose repr fails says nothing more)
        text = "?"
    return text if len(text) <= 60 else text[:57] + "..."


def checked_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """``row`` with every value in JSON's types (numpy scalars as numbers, tuples as lists), or one
    ``SummaryValueError`` that names the first key that is not."""
    out = {}
    for key, value in row.items():
        if not isinstance(key, str):
            raise SummaryValueError(f"the summary row has a key {key!r} that is not a text; name every column")
        out[key] = _plain(value, key)
    return out


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite number as None and numpy scalars as plain numbers (for JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, _SCALARS):
        return value
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__ == "numpy" and getattr(value, "ndim", 1) == 0:
        return json_safe(item())
    if isinstance(value, Mapping):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def json_text(value: Any, **dumps: Any) -> str:
    """Valid JSON of a value: NaN and infinities as ``null``, anything else JSON has no type for as its text.

    Args:
        value: What to print (a summary row, a report).
        **dumps: Options of ``json.dumps`` (``indent``, ``sort_keys``).

    Returns:
        The JSON text.
    """
    return json.dumps(json_safe(value), allow_nan=False, default=str, **dumps)
