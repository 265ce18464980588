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

An endpoint with several servers (``--base-url URL1,URL2``) has one limit per
server; ``pick_server`` sends each call to the server with the most free places
(its limit less the calls in flight, waiting, or picked and not yet arrived),
the least used one on a tie.
"""

from __future__ import annotations

import asyncio
import collections
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llm_mesa.llm.endpoint import Endpoint


class ServerLimit:
    """At most ``limit`` calls in flight, ``limit`` being the smallest one given (``lower_to``)."""

    __slots__ = ("_waiters", "in_flight", "limit", "picked", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_flight = 0
        #: calls sent here by ``pick_server`` that have not asked for their place yet
        self.picked = 0
        #: calls sent here in all
        self.used = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    def lower_to(self, limit: int) -> None:
        """Make ``limit`` the limit if it is smaller than the current one."""
        self.limit = min(self.limit, limit)

    @property
    def free(self) -> int:
        return self.limit - self.in_flight - len(self._waiters) - self.picked

    async def __aenter__(self) -> None:
        await asyncio.sleep(0)  # the other calls of this turn register their endpoints' limits first
        if self.picked:
            self.picked -= 1
        self.used += 1
        if self.in_flight < self.limit and not self._waiters:
            self.in_flight += 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
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

    def _release(self) -> None:
        self.in_flight -= 1
        while self._waiters and self.in_flight < self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():  # a cancelled waiter is skipped
                self.in_flight += 1
                waiter.set_result(None)


_limits: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, ServerLimit]] = weakref.WeakKeyDictionary()


def _limit_of(url: str, concurrency: int) -> ServerLimit:
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


def forget_limits() -> None:
    """Drop every server's limit (tests; a server restarted with another capacity).

    Calls in flight keep the limit they were let in under.
    """
    _limits.clear()
