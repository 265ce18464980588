"""Token, latency, failure and cost ledgers for LLM calls.

Times are kept apart: ``latency_s`` sums service times (from a call's place under its
server's concurrency limit to its answer), ``queue_s`` the waits for that place, so
"time per decision" reads honestly from ``latency_s / calls``. ``cached_tokens`` counts
the prompt tokens servers took from their prompt caches (``cache_share`` of all), and
``served`` the model and ``system_fingerprint`` each answer named (a run card quotes them).

A ``Usage`` sums what its calls cost. Ledgers nest: ``usage.child("round=3")``
returns a sub-ledger whose records also count in every ancestor, so one record
lands in the round, the game and the sweep at once. To count a call in two
unrelated hierarchies (per agent and per round), pass both ledgers:
``complete(..., usage=(agent_ledger, round_ledger))``; do not pass two ledgers
that share an ancestor, or that ancestor counts the call twice.

Replayed calls count like live ones, in tokens and in ``cost`` (the game used
them: tokens-to-convergence and a game's cost must not depend on whether its
calls were made now or replayed from a recording), so a game's summary, which
prices its calls' tokens, and its manifest, which reads this ledger, show the
same numbers. What was replayed is kept apart as well: ``replayed`` counts
those calls and ``replayed_cost`` is their share of ``cost`` (money this run
did not spend: ``cost - replayed_cost``). ``call_cost`` is the one place a
call is priced.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llm_mesa.llm.endpoint import Endpoint
    from llm_mesa.llm.types import LLMResult

PARSE_OUTCOMES = ("ok", "retry_ok", "truncated", "parse_failure", "call_failure")


class Usage:
    """A ledger of calls: counts, tokens, latency, failures by kind, parse outcomes, cost."""

    __slots__ = ("attempts", "cached_tokens", "calls", "children", "completion_tokens", "cost", "failures", "latency_s",
                 "name", "outcomes", "parent", "prompt_tokens", "queue_s", "replayed", "replayed_cost", "served")

    def __init__(self, name: str = "total", parent: Usage | None = None) -> None:
        self.name = name
        self.parent = parent
        self.children: dict[str, Usage] = {}
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        #: summed service time of the calls (waits for a concurrency slot are in ``queue_s``)
        self.latency_s = 0.0
        self.queue_s = 0.0
        #: prompt tokens the servers answered from their prompt caches
        self.cached_tokens = 0
        self.attempts = 0
        self.replayed = 0
        self.cost = 0.0
        self.replayed_cost = 0.0
        self.failures: dict[str, int] = {}
        self.outcomes: dict[str, int] = {}
        #: (model, system_fingerprint) as the servers named them in their answers -> calls
        self.served: dict[tuple[str | None, str | None], int] = {}

    def child(self, key: str) -> Usage:
        """The sub-ledger named ``key`` (created on first use); its records count here too."""
        sub = self.children.get(key)
        if sub is None:
            sub = self.children[key] = Usage(key, self)
        return sub

    def _chain(self) -> Iterator[Usage]:
        ledger: Usage | None = self
        while ledger is not None:
            yield ledger
            ledger = ledger.parent

    def add_result(self, result: LLMResult, endpoint: Endpoint | None = None) -> None:
        """Count one call (live or replayed alike, ``replayed`` apart) here and in every ancestor."""
        cost = call_cost(result, endpoint)
        served = (result.model, result.system_fingerprint) if result.model or result.system_fingerprint else None
        for ledger in self._chain():
            ledger.calls += 1
            ledger.prompt_tokens += result.prompt_tokens
            ledger.completion_tokens += result.completion_tokens
            ledger.latency_s += result.latency_s
            ledger.queue_s += result.queue_s
            ledger.cached_tokens += result.cached_tokens
            ledger.attempts += result.attempts
            ledger.cost += cost
            if result.replayed:
                ledger.replayed += 1
                ledger.replayed_cost += cost
            if result.error is not None:
                ledger.failures[result.error] = ledger.failures.get(result.error, 0) + 1
            if served is not None:
                ledger.served[served] = ledger.served.get(served, 0) + 1

    def add_outcome(self, outcome: str) -> None:
        """Count one parse outcome of a structured answer here and in every ancestor."""
        for ledger in self._chain():
            ledger.outcomes[outcome] = ledger.outcomes.get(outcome, 0) + 1

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def cache_share(self) -> float:
        """The share of prompt tokens served from a prompt cache (0 with no prompt tokens)."""
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def failed_calls(self) -> int:
        return sum(self.failures.values())

    def as_dict(self) -> dict[str, Any]:
        """This ledger's totals, JSON-able (no children)."""
        return {
            "calls": self.calls, "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens, "total_tokens": self.total_tokens,
            "cached_tokens": self.cached_tokens, "cache_share": round(self.cache_share, 6),
            "latency_s": round(self.latency_s, 6), "queue_s": round(self.queue_s, 6), "attempts": self.attempts,
            "replayed": self.replayed, "cost": self.cost, "replayed_cost": self.replayed_cost,
            "failed_calls": self.failed_calls,
            "failures": dict(self.failures),
            "outcomes": {k: self.outcomes.get(k, 0) for k in PARSE_OUTCOMES},
            "served_by": [{"model": m, "system_fingerprint": f, "calls": n}
                          for (m, f), n in sorted(self.served.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1])))],
        }

    def rows(self, path: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        """Flat rows, this ledger then its descendants, for a DataFrame (``ledger`` = path)."""
        here = path + (self.name,)
        flat = self.as_dict()
        failures, outcomes = flat.pop("failures"), flat.pop("outcomes")
        flat.pop("served_by")
        row = {"ledger": "/".join(here), **flat,
               **{f"failures_{k}": v for k, v in failures.items()},
               **{f"outcome_{k}": v for k, v in outcomes.items()}}
        out = [row]
        for sub in self.children.values():
            out.extend(sub.rows(here))
        return out

    def to_frame(self):
        """The ledger tree as a pandas DataFrame (one row per ledger)."""
        import pandas as pd
        return pd.DataFrame(self.rows()).fillna(0)

    def __repr__(self) -> str:
        return (f"<Usage {self.name}: {self.calls} calls, {self.prompt_tokens}+{self.completion_tokens} tokens, "
                f"{self.failed_calls} failed>")


def call_cost(result: LLMResult, endpoint: Endpoint | None) -> float:
    """What one call's tokens cost at the endpoint's price, live or replayed (0 without a price)."""
    if endpoint is None or endpoint.price is None:
        return 0.0
    return endpoint.cost(result.prompt_tokens, result.completion_tokens)


def as_ledgers(usage: Usage | Iterable[Usage] | None) -> tuple[Usage, ...]:
    """Normalise the ``usage=`` argument of ``complete``/``ask`` to a tuple of ledgers."""
    if usage is None:
        return ()
    if isinstance(usage, Usage):
        return (usage,)
    return tuple(usage)
