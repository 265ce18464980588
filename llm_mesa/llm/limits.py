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

A stop (``llm_mesa.llm.stopping``: an interrupt, the sweep's circuit breaker) is kept here, where
every call asks for its place: after it no call is let in, the attempts at the servers get their
grace, then every call holding or waiting for a place raises ``SpendingStopped``.
"""

from __future__ import annotations

import asyncio
import collections
import time
import weakref
from typing import TYPE_CHECKING, Any

from llm_mesa.llm import stopping, wire
from llm_mesa.llm.adaptive import AUTO_CEILING, AUTO_START, AdaptiveLimit, Ticket

if TYPE_CHECKING:
    from llm_mesa.llm.endpoint import Endpoint

class ServerLimit:
    """At most ``limit`` calls in flight: the smallest number given (``lower_to``), or, when every
    endpoint of the server says ``auto``, what ``AdaptiveLimit`` finds."""

    __slots__ = ("_holders", "_wake_at", "_waiters", "active", "adaptive", "arriving", "in_flight", "limit",
                 "peak_in_flight", "picked", "used")

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
        #: calls of this turn of the loop that have asked for a place and not yet got an answer (``auto``: the
        #: calls ready at once, which it lets in until the server says what it takes)
        self.arriving = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._wake_at: asyncio.TimerHandle | None = None
        #: the tasks of the calls holding a place (a stop cuts them off after its grace)
        self._holders: set[asyncio.Task[Any]] = set()

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
        self.arriving += 1
        try:
            await asyncio.sleep(0)  # the other calls of this turn register their endpoints' limits first
        finally:
            self.arriving -= 1
        if self.picked:
            self.picked -= 1
        if stopping.requested():
            await stopping.hold()  # no call is let in after a stop
        self.used += 1
        if self.adaptive is not None:  # the calls ready at once (this one and those arriving with it) and waiting
            self.adaptive.wanted(self.in_flight + len(self._waiters) + self.arriving + 1)
            self.limit = self.adaptive.limit
        await self._place()

    async def _place(self) -> None:
        """Take a free place, or wait in line for one."""
        if self.in_flight < self.limit and not self._waiters and not self._paused():
            self._admit()
            self._holders.add(asyncio.current_task())
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
        self._holders.add(asyncio.current_task())

    async def before_retry(self, backoff_s: float) -> None:
        """Between a call's attempts: its backoff, then any pause. A call holding a place over the limit, which a
        refusal lowered, gives it up and waits in line for one again instead of sleeping (the wait is its backoff),
        so the calls over a server's capacity wait their turn rather than each retrying against it; a group
        pause (a Retry-After, the group back-off of a run of refusals, a spent rate-limit window) is waited out;
        after a stop, no retry."""
        if self.in_flight > self.limit:
            self._holders.discard(asyncio.current_task())
            self._release()
            await self._place()
        else:
            await asyncio.sleep(backoff_s)
        if stopping.requested():
            await stopping.hold()
        pause = self._paused()
        if pause:
            await asyncio.sleep(pause)
            if stopping.requested():
                await stopping.hold()

    async def __aexit__(self, exc_type: type[BaseException] | None, *exc_info: object) -> None:
        task = asyncio.current_task()
        self._holders.discard(task)
        self._release()
        if exc_type is asyncio.CancelledError and stopping.final() and task is not None:
            task.uncancel()  # cut off by a stop (``_stop_all``), not cancelled by its caller: say so
            raise stopping.SpendingStopped() from None

    def _admit(self) -> None:
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def _release(self) -> None:
        self.in_flight -= 1
        self._let_in()

    def stopped(self) -> None:
        """The end of a stop's grace: every call waiting for a place, or holding one, is stopped."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(stopping.SpendingStopped())
        for task in list(self._holders):
            task.cancel()  # turned into SpendingStopped where it leaves its place (``__aexit__``)

    def _let_in(self) -> None:
        """Wake waiters while there are places (after a Retry-After has passed; none after a stop)."""
        if stopping.requested():
            return
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
        if self.adaptive is None:
            return Ticket(0, self.active)
        return Ticket(self.adaptive.epoch, self.active, self.adaptive.attempt(time.monotonic()))

    def answered(self, ticket: Ticket, kind: str | None, latency_s: float, retry_after_s: float | None = None,
                 headers: Any = None) -> None:
        """The attempt came back (``kind`` None: an answer; ``headers``: its answer's, for rate-limit windows);
        ``auto`` learns from it."""
        self.active -= 1
        if self.adaptive is not None:
            before, paused = self.limit, self.adaptive.resume_at
            requests = tokens = None
            if headers is not None:
                requests, tokens = wire.rate_window(headers, "requests"), wire.rate_window(headers, "tokens")
            self.adaptive.answered(ticket, kind, latency_s, time.monotonic(), retry_after_s, bool(self._waiters),
                                   requests, tokens)
            self.limit = self.adaptive.limit
            if self.limit > before or self.adaptive.resume_at != paused:
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


def _attempts_in_flight() -> int:
    """Attempts at any server on the running loop (what a stop's grace waits for)."""
    by_server = _limits.get(asyncio.get_running_loop(), {})
    return sum(limit.active for limit in by_server.values())


def _stop_all() -> None:
    for limit in list(_limits.get(asyncio.get_running_loop(), {}).values()):
        limit.stopped()


stopping.watch(_attempts_in_flight, _stop_all)


def forget_limits() -> None:
    """Drop every server's limit (tests; a server restarted with another capacity).

    Calls in flight keep the limit they were let in under.
    """
    _limits.clear()


__all__ = ["AUTO_CEILING", "AUTO_START", "AdaptiveLimit", "ServerLimit", "Ticket", "forget_limits", "limits_in_use",
           "pick_server", "server_limit"]
