"""The rule of ``--concurrency auto``: how many calls one server is let hold in flight.

Bookkeeping alone: each attempt reports its outcome, its service time and the time, so
tests drive it with made-up events and no clock; ``llm_mesa.llm.limits.ServerLimit`` applies
it to the calls of a loop.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

#: ``--concurrency auto`` starts where the fixed default starts (nothing gets slower)
AUTO_START = 64
#: and never goes above this (a guard against a runaway, not a target)
AUTO_CEILING = 8192


@dataclass(frozen=True)
class Ticket:
    """What one attempt was sent under: the limit's epoch and the attempts then at the server (itself included)."""

    epoch: int
    active: int


class AdaptiveLimit:
    """The rule of ``--concurrency auto`` for one server: how many calls it lets in flight.

    It is bookkeeping alone: each attempt reports its outcome, its service time and
    the time (``now``), so tests drive it with made-up events and no clock.

    * It starts at ``AUTO_START``, where the fixed default starts.
    * A *window* is one limit's worth of answers after the last change. At its end it is
      judged: when calls waited for a place in it (more would have been sent), none came
      back refused (429) or timed out, and its median service time stayed within
      ``LATENCY_RISE`` times the best window median seen since calls began to wait
      (a window in which none waited starts that baseline afresh: its latency is the
      workload's, another model or prompt, not the limit's), the limit grows: doubled
      until its first cut (slow start), then by ``GROWTH`` (at least 1) a window. A
      window whose median rose above that is cut by ``CUT``: the server is queueing.
    * A 429 cuts at once, to the attempts that were at the server when the refused one
      was sent, less one (what the server took; a server that limits by rate is cut to
      what it took too). A refusal of an attempt sent over the limit (a retry of a call
      that kept its place while the limit was cut) says nothing new. A timeout of an
      attempt sent under the current limit halves it; the other attempts of that limit
      that time out do not halve it again.
    * Near the limit of the last cut (within ``1 - CUT`` of it) it grows by 1 every
      ``PATIENCE`` clean windows, so a probe above the server's capacity costs one refused
      call (and its Retry-After) now and then, not a twentieth of the calls each window.
    * Any 429 or timeout in a window, cutting or not, keeps it from growing: a refused
      call still backing off in its place is served before the limit probes again.
    * ``Retry-After`` (capped by the client at ``RETRY_AFTER_CAP_S``): no call is let in
      before it has passed.

    Why it never holds more than twice the capacity in flight: it only doubles from a
    limit whose window was full with no 429 (so the server took that many), and after
    its first cut it grows by a twentieth a window.
    """

    LATENCY_RISE = 1.5
    GROWTH = 0.05
    CUT = 0.9
    PATIENCE = 4

    def __init__(self, start: int = AUTO_START, ceiling: int = AUTO_CEILING) -> None:
        self.limit = start
        self.ceiling = ceiling
        self.epoch = 0
        self.slow_start = True
        self.resume_at = 0.0  # Retry-After: no call is let in before this (time.monotonic())
        self.best_latency: float | None = None
        self.last_cut: int | None = None  # the limit the last cut set
        self._latencies: list[float] = []
        self._saturated = False
        self._refused = False  # a 429 or timeout came back in this window
        self._clean = 0  # clean windows in a row near the last cut
        self.history = {"start": start, "low": start, "high": start, "grows": 0, "cuts": 0, "rate_limited": 0,
                        "timeouts": 0}

    # -- what the server limit tells it ----------------------------------------------------
    def waited(self) -> None:
        """A call found no free place: the limit binds (more calls would be sent)."""
        self._saturated = True

    def answered(self, ticket: Ticket, kind: str | None, latency_s: float, now: float,
                 retry_after_s: float | None = None, queued: bool = False) -> None:
        """One attempt came back: ``kind`` None (an answer), ``rate_limit``, ``timeout`` or another failure;
        ``queued``: calls are waiting for a place now."""
        if queued:
            self._saturated = True
        if retry_after_s:
            self.resume_at = max(self.resume_at, now + retry_after_s)
        if kind in ("rate_limit", "timeout"):
            self._refused = True
        if kind == "rate_limit":
            self.history["rate_limited"] += 1
            took = ticket.active - 1
            if took < self.limit:  # else it was sent over the limit, by a call backing off in its place
                self._set(max(1, took), cut=True)
        elif kind == "timeout":
            self.history["timeouts"] += 1
            if ticket.epoch == self.epoch:
                self._set(max(1, self.limit // 2), cut=True)
        elif kind is None and ticket.epoch == self.epoch:
            self._latencies.append(latency_s)
            if len(self._latencies) >= self.limit:
                self._judge()

    # -- the rule -----------------------------------------------------------------------------
    def _judge(self) -> None:
        median = statistics.median(self._latencies)
        if not self._saturated:  # no call waited: the latency is the workload's, not the limit's; start afresh
            self.best_latency = None
            self._latencies.clear()
            self._refused = False
            return
        best = self.best_latency = median if self.best_latency is None else min(self.best_latency, median)
        near_cut = self.last_cut is not None and self.limit >= self.CUT * self.last_cut
        if median > self.LATENCY_RISE * best:
            self._set(max(1, int(self.limit * self.CUT)), cut=True)
            return
        clean = self._saturated and not self._refused and self.limit < self.ceiling
        self._clean = self._clean + 1 if clean and near_cut else 0
        if clean and self.slow_start:
            self._set(min(self.ceiling, self.limit * 2), cut=False)
        elif clean and not near_cut:
            self._set(min(self.ceiling, self.limit + max(1, round(self.limit * self.GROWTH))), cut=False)
        elif clean and self._clean >= self.PATIENCE:  # near where the server refused: probe gently
            self._clean = 0
            self._set(self.limit + 1, cut=False)
        else:  # judged again after another window
            self._latencies.clear()
            self._saturated = self._refused = False

    def _set(self, limit: int, *, cut: bool) -> None:
        self.limit = limit
        self.epoch += 1
        self._latencies.clear()
        self._saturated = self._refused = False
        if cut:
            self.slow_start = False
            self.last_cut = limit
        self.history["cuts" if cut else "grows"] += 1
        self.history["low"] = min(self.history["low"], limit)
        self.history["high"] = max(self.history["high"], limit)
