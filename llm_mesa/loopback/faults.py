"""Latency and fault settings of the loopback endpoint, and how a fault is drawn.

Every inference request draws exactly one uniform number from the server's
seeded fault stream, whatever its settings. So the *number* of faults among the
first N requests depends only on the seed and the probabilities, not on the
order in which concurrent requests arrive: a test can count them exactly.
Latency jitter comes from a separate stream so that it never shifts fault draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

from llm_mesa.errors import LlmMesaError


class LoopbackError(LlmMesaError):
    """Bad loopback settings or request; the message names the fix."""


#: cap on every injected delay (``latency``, ``jitter``, ``timeout_s``, in seconds): a
#: larger value is refused (HTTP 400 for a model name, an error for a server default),
#: so no model name can hold a connection and a handler for days. ``retry_after`` is
#: not capped: it is only announced, the server never waits on it.
MAX_DELAY_S = 60.0

#: fault kinds in the order their probabilities are stacked on [0, 1)
FAULT_KINDS: tuple[str, ...] = ("drop", "timeout", "429", "500", "malformed", "truncate")

_PROBABILITY_OF_KIND = {
    "drop": "pdrop", "timeout": "ptimeout", "429": "p429", "500": "p500",
    "malformed": "pmalformed", "truncate": "ptruncate",
}


@dataclass(frozen=True, slots=True)
class FaultSettings:
    """Latency and fault injection for one behaviour (or the server-wide defaults).

    Probabilities are per request and mutually exclusive; their sum must not
    exceed 1. ``fail_first=N`` makes the first N requests of each distinct
    (model, prompt) fail with ``fault`` before any random draw counts.
    """

    latency: float = 0.0       # seconds before answering (asyncio.sleep; at most MAX_DELAY_S)
    jitter: float = 0.0        # extra uniform delay in [0, jitter) seconds (at most MAX_DELAY_S)
    p429: float = 0.0          # HTTP 429 with a Retry-After header
    retry_after: float = 1.0   # seconds announced in Retry-After
    p500: float = 0.0          # HTTP 500
    ptimeout: float = 0.0      # sleep timeout_s before answering
    timeout_s: float = 30.0    # far longer than a client's timeout (at most MAX_DELAY_S)
    pmalformed: float = 0.0    # HTTP 200 with text that is not a valid answer
    pdrop: float = 0.0         # close the connection without answering
    ptruncate: float = 0.0     # HTTP 200, text cut in half, finish_reason "length"
    fail_first: int = 0        # deterministic mode: first N requests of each prompt fail
    fault: str = "500"         # ... with this fault kind
    capacity: int = 0          # a server of this many calls in flight: 429 (Retry-After) above it; 0 = no limit
    slowdown: float = 0.0      # latency grows with the load: x (1 + slowdown x in flight / capacity)

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def with_overrides(self, overrides: dict[str, Any], where: str = "") -> FaultSettings:
        """A copy with some settings replaced; values may be strings (from a model name)."""
        if not overrides:
            return self
        changes: dict[str, Any] = {}
        for key, value in overrides.items():
            if key not in _FIELD_TYPES:
                raise LoopbackError(f"unknown fault setting {key!r}{where}; "
                                    f"choose from: {', '.join(self.names())}")
            changes[key] = _convert(key, value, where)
        settings = replace(self, **changes)
        settings.validate(where)
        return settings

    def validate(self, where: str = "") -> None:
        for name in ("p429", "p500", "ptimeout", "pmalformed", "pdrop", "ptruncate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise LoopbackError(f"{name}={value}{where} must lie in [0, 1]")
        for name in ("latency", "jitter", "retry_after", "timeout_s"):
            value = getattr(self, name)
            if not (value >= 0.0 and math.isfinite(value)):
                raise LoopbackError(f"{name}={value}{where} must be a finite number of seconds >= 0")
            if name in _DELAYS and value > MAX_DELAY_S:
                raise LoopbackError(f"{name}={value:g}{where} is over the cap on injected delays; "
                                    f"give at most {MAX_DELAY_S:g} seconds")
        if self.fail_first < 0:
            raise LoopbackError(f"fail_first={self.fail_first}{where} must be >= 0")
        if self.capacity < 0:
            raise LoopbackError(f"capacity={self.capacity}{where} must be >= 0 (0: no limit)")
        if not (self.slowdown >= 0.0 and math.isfinite(self.slowdown)):
            raise LoopbackError(f"slowdown={self.slowdown}{where} must be a finite number >= 0")
        if self.slowdown and not self.capacity:
            raise LoopbackError(f"slowdown={self.slowdown:g}{where} needs a capacity (latency grows with in flight / capacity)")
        if self.latency * (1 + self.slowdown) > MAX_DELAY_S:
            raise LoopbackError(f"latency x (1 + slowdown){where} is over the cap on injected delays ({MAX_DELAY_S:g} s)")
        if self.fault not in FAULT_KINDS:
            raise LoopbackError(f"fault={self.fault!r}{where} must be one of: {', '.join(FAULT_KINDS)}")
        total = sum(getattr(self, p) for p in _PROBABILITY_OF_KIND.values())
        if total > 1.0 + 1e-9:
            raise LoopbackError(f"fault probabilities{where} sum to {total:g}; keep their sum <= 1")

    def stacked_thresholds(self) -> tuple[tuple[str, float], ...]:
        """(kind, upper bound) pairs: a draw u < bound (first match) is that fault."""
        bounds, upper = [], 0.0
        for kind in FAULT_KINDS:
            p = getattr(self, _PROBABILITY_OF_KIND[kind])
            if p > 0.0:
                upper += p
                bounds.append((kind, upper))
        return tuple(bounds)


_FIELD_TYPES = {f.name: f.type for f in fields(FaultSettings)}
_DELAYS = ("latency", "jitter", "timeout_s")


def _convert(key: str, value: Any, where: str) -> Any:
    kind = _FIELD_TYPES[key]
    try:
        if kind == "int":
            number = float(value)
            if number != int(number):
                raise ValueError
            return int(number)
        if kind == "float":
            return float(value)
    except (TypeError, ValueError):
        raise LoopbackError(f"{key}={value!r}{where} must be a number") from None
    if key == "fault":
        value = str(value)
        return "429" if value == "rate_limit" else value
    return value


def draw_fault(thresholds: tuple[tuple[str, float], ...], u: float) -> str | None:
    """The fault kind a uniform draw ``u`` selects, or None."""
    for kind, upper in thresholds:
        if u < upper:
            return kind
    return None
