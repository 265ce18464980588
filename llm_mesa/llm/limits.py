"""One limit on calls in flight per server, however many endpoints call it.

Why per server: the limit protects a server's capacity (a vLLM instance, an
API's rate limit). Two endpoints for one base URL (two models it serves, or one
model with other sampling) share that capacity, so limits kept per endpoint
would add up: concurrency 2 and 3 let 5 calls in at once.

Which limit, when endpoints disagree: the smallest ``concurrency`` of the
endpoints that have called the server (on this loop), whatever order they come
in, since the stricter wish is the one the server's owner will have meant. A
limit is only known once its endpoint calls, so ``complete`` registers its
endpoint (``server_limit``) before it first awaits anything, and a call waits
one turn of the loop before it asks for a place: every call of a gathered
round has registered by then, so none is let in under a limit a later call of
the same round lowers. An endpoint that first calls while a wider one's calls
are in flight lowers the limit for the calls let in after; those in flight
finish.

A call keeps its place while it backs off between retries, which is what a
rate-limited server wants. Places are given in arrival order.

``--concurrency auto`` (the default) lets the limit find the server's capacity
(``AdaptiveLimit``, the rule is there); a number fixes it, and a server any
endpoint gives a number keeps the smallest number given.

An endpoint with several servers (``--base-url URL1,URL2``) has one limit per
server; ``pick_server`` sends each call to the server with the most free places
(its limit less the calls in flight, waiting, or picked and not yet arrived),
the least used one on a tie.
"""

from __future__ import annotations

import asyncio
import collections
import statistics
import time
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llm_mesa.llm.endpoint import Endpoint

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


class ServerLimit:
    """At most ``limit`` calls in flight: the smallest number given (``lower_to``), or, when every
    endpoint of the server says ``auto``, what ``AdaptiveLimit`` finds."""

    __slots__ = ("_wake_at", "_waiters", "active", "adaptive", "in_flight", "limit", "peak_in_flight", "picked", "used")

    def __init__(self, limit: int | str) -> None:
        self.adaptive = AdaptiveLimit() if limit == "auto" else None
        self.limit = self.adaptive.limit if self.adaptive is not None else limit
        self.in_flight = 0
        #: attempts at the server now (in flight and not backing off)
        self.active = 0
        self.peak_in_flight = 0
        #: calls sent here by ``pick_server`` that have not asked for their place yet
        self.picked = 0
        #: calls sent here in all
        self.used = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._wake_at: asyncio.TimerHandle | None = None

    def lower_to(self, limit: int | str) -> None:
        """Make ``limit`` the limit if it is smaller than the current one; a number ends ``auto``."""
        if limit == "auto":
            return
        if self.adaptive is not None:
            self.adaptive = None
            self.limit = limit
        self.limit = min(self.limit, limit)

    @property
    def free(self) -> int:
        return self.limit - self.in_flight - len(self._waiters) - self.picked

    def _paused(self) -> float:
        """Seconds until a Retry-After has passed (0: calls may be let in)."""
        return 0.0 if self.adaptive is None else max(0.0, self.adaptive.resume_at - time.monotonic())

    async def __aenter__(self) -> None:
        await asyncio.sleep(0)  # the other calls of this turn register their endpoints' limits first
        if self.picked:
            self.picked -= 1
        self.used += 1
        if self.in_flight < self.limit and not self._waiters and not self._paused():
            self._admit()
            return
        if self.adaptive is not None:
            self.adaptive.waited()
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._let_in()
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():  # let in just as it was cancelled: pass the place on
                self._release()
            elif waiter in self._waiters:
                self._waiters.remove(waiter)
            raise

    async def __aexit__(self, *exc_info: object) -> None:
        self._release()

    def _admit(self) -> None:
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def _release(self) -> None:
        self.in_flight -= 1
        self._let_in()

    def _let_in(self) -> None:
        """Wake waiters while there are places (after a Retry-After has passed)."""
        pause = self._paused()
        if pause:
            if self._waiters and self._wake_at is None:
                def wake() -> None:
                    self._wake_at = None
                    self._let_in()
                self._wake_at = asyncio.get_running_loop().call_later(pause, wake)
            return
        while self._waiters and self.in_flight < self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():  # a cancelled waiter is skipped
                self._admit()
                waiter.set_result(None)

    # -- what the client tells it of each attempt ------------------------------------------------
    def sent(self) -> Ticket:
        """An attempt leaves for the server (call before each attempt)."""
        self.active += 1
        return Ticket(self.adaptive.epoch if self.adaptive is not None else 0, self.active)

    def answered(self, ticket: Ticket, kind: str | None, latency_s: float, retry_after_s: float | None = None) -> None:
        """The attempt came back (``kind`` None: an answer); ``auto`` learns from it."""
        self.active -= 1
        if self.adaptive is not None:
            before = self.limit
            self.adaptive.answered(ticket, kind, latency_s, time.monotonic(), retry_after_s, bool(self._waiters))
            self.limit = self.adaptive.limit
            if self.limit > before or retry_after_s:
                self._let_in()

    def report(self) -> dict[str, Any]:
        """What the manifest and the progress line say of this limit."""
        out: dict[str, Any] = {"mode": "fixed" if self.adaptive is None else "auto", "limit": self.limit,
                               "peak_in_flight": self.peak_in_flight, "calls": self.used}
        if self.adaptive is not None:
            out.update(self.adaptive.history)
        return out


_limits: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, ServerLimit]] = weakref.WeakKeyDictionary()


def _limit_of(url: str, concurrency: int | str) -> ServerLimit:
    loop = asyncio.get_running_loop()
    by_server = _limits.get(loop)
    if by_server is None:
        by_server = _limits[loop] = {}
    limit = by_server.get(url)
    if limit is None:
        limit = by_server[url] = ServerLimit(concurrency)
    else:
        limit.lower_to(concurrency)
    return limit


def server_limit(endpoint: Endpoint) -> ServerLimit:
    """The limit of ``endpoint``'s server on the running loop, lowered to the endpoint's ``concurrency``.

    For an endpoint with several servers every server's limit is registered; the first is returned.
    """
    limits = [_limit_of(url, endpoint.concurrency) for url in endpoint.base_urls]
    return limits[0]


def pick_server(endpoint: Endpoint) -> str:
    """The server for ``endpoint``'s next call: the most free places, then the least used."""
    urls = endpoint.base_urls
    if len(urls) == 1:
        return urls[0]
    limits = [_limit_of(url, endpoint.concurrency) for url in urls]
    best = max(range(len(urls)), key=lambda i: (limits[i].free, -limits[i].used - limits[i].picked, -i))
    limits[best].picked += 1
    return urls[best]


def limits_in_use(urls: Any = None) -> dict[str, dict[str, Any]]:
    """Each server's limit as ``ServerLimit.report`` says it, on every loop of this process
    (``urls``: only those servers). Read from any thread: a report, not a lock."""
    out: dict[str, dict[str, Any]] = {}
    for by_server in list(_limits.values()):
        for url, limit in list(by_server.items()):
            if urls is None or url in urls:
                out[url] = limit.report()
    return out


def forget_limits() -> None:
    """Drop every server's limit (tests; a server restarted with another capacity).

    Calls in flight keep the limit they were let in under.
    """
    _limits.clear()
