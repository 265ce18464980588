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

    __slots__ = ("_waiters", "in_flight", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_flight = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    def lower_to(self, limit: int) -> None:
        """Make ``limit`` the limit if it is smaller than the current one."""
        self.limit = min(self.limit, limit)

    async def __aenter__(self) -> None:
        await asyncio.sleep(0)  # the other calls of this turn register their endpoints' limits first
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


def server_limit(endpoint: Endpoint) -> ServerLimit:
    """The limit of ``endpoint``'s server on the running loop, lowered to the endpoint's ``concurrency``."""
    loop = asyncio.get_running_loop()
    by_server = _limits.get(loop)
    if by_server is None:
        by_server = _limits[loop] = {}
    limit = by_server.get(endpoint.base_url)
    if limit is None:
        limit = by_server[endpoint.base_url] = ServerLimit(endpoint.concurrency)
    else:
        limit.lower_to(endpoint.concurrency)
    return limit


def forget_limits() -> None:
    """Drop every server's limit (tests; a server restarted with another capacity).

    Calls in flight keep the limit they were let in under.
    """
    _limits.clear()
