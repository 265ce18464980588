"""The per-server limit on calls in flight: places in arrival order, none lost to a cancelled call,
and a lowered limit holds for the calls let in after it."""

from __future__ import annotations

import asyncio

from llm_mesa.llm import run_sync
from llm_mesa.llm.endpoint import Endpoint
from llm_mesa.llm.limits import ServerLimit, server_limit


async def _settle(turns: int = 5) -> None:
    for _ in range(turns):
        await asyncio.sleep(0)


def test_a_cancelled_waiter_loses_no_place_and_order_is_kept():
    async def scenario():
        limit = ServerLimit(1)
        release = {name: asyncio.Event() for name in "abc"}
        admitted: list[str] = []
        peak = 0

        async def call(name):
            nonlocal peak
            async with limit:
                admitted.append(name)
                peak = max(peak, limit.in_flight)
                await release[name].wait()

        tasks = {name: asyncio.create_task(call(name)) for name in "abc"}
        await _settle()
        assert admitted == ["a"] and limit.in_flight == 1
        tasks["b"].cancel()  # waiting for a place
        await _settle()
        release["a"].set()
        await _settle()
        assert admitted == ["a", "c"] and tasks["b"].cancelled()
        release["c"].set()
        await _settle()
        return peak, limit.in_flight

    assert run_sync(scenario()) == (1, 0)


def test_a_lowered_limit_holds_for_the_calls_let_in_after_it():
    async def scenario():
        limit = ServerLimit(3)
        release = asyncio.Event()
        admitted: list[int] = []

        async def call(i):
            async with limit:
                admitted.append(i)
                await release.wait()

        first = [asyncio.create_task(call(i)) for i in range(2)]
        await _settle()
        limit.lower_to(1)
        limit.lower_to(5)  # a wider wish never raises it again
        later = [asyncio.create_task(call(i)) for i in range(2, 4)]
        await _settle()
        assert admitted == [0, 1] and limit.limit == 1  # 2 in flight, over the new limit: no one else
        release.set()
        await asyncio.gather(*first, *later)
        return admitted, limit.in_flight

    assert run_sync(scenario()) == ([0, 1, 2, 3], 0)


def test_the_limit_is_per_server_and_the_smallest_given():
    async def limits():
        a = server_limit(Endpoint("http://127.0.0.1:9/v1", "m1", concurrency=8))
        b = server_limit(Endpoint("http://127.0.0.1:9/v1/", "m2", concurrency=3))
        c = server_limit(Endpoint("http://127.0.0.1:10/v1", "m1", concurrency=8))
        return a is b, a.limit, c is a, c.limit

    assert run_sync(limits()) == (True, 3, False, 8)
