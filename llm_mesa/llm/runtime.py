"""One event loop per process, in a daemon thread, for every LLM call.

Why a background loop: models step synchronously (Mesa, ``batch_run`` workers,
Solara's model thread), but LLM calls want to be in flight together, and the
``openai`` async client, its connection pool and our per-server limits on calls
in flight are bound to one loop. Running that loop in its own thread lets any
caller block on it with ``run_sync``, including a Jupyter cell whose own thread
already runs a loop (that loop is not ours, so nothing deadlocks), and keeps one
client per endpoint shared by every game the process plays.

A forked child does not inherit the thread, so the loop is keyed by process id
and started afresh, lazily, in each process.

The loop is uvloop's where it is installed (a dependency off Windows): its
transports, timers and polling are C, which cut the client's CPU a call by
about a quarter against asyncio's (``benchmarks/bench_scale.py``);
``LLM_MESA_EVENT_LOOP=asyncio`` keeps asyncio's own.

While a caller blocks on the loop (a round's calls in flight), the cyclic
garbage collector runs less often (``deferred_collection``): a round of 1,000
calls keeps tens of thousands of young objects alive at once (requests,
futures, buffers), and at the default threshold the collector walked them
every 700 allocations, which cost as much CPU as the calls themselves. Nearly
everything a call allocates is freed by reference counting; the cycles left
are collected as before once the collector runs.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any

from llm_mesa.llm.event_loop import get_loop, in_runtime_thread, started_loop
from llm_mesa.llm.stopping import interrupted, waited_for

_shutdown_hooks: list[Callable[[], Coroutine[Any, Any, Any]]] = []

#: the youngest generation's collection threshold while calls are in flight (Python's default: 700)
DEFERRED_GC_THRESHOLD = 100_000
_gc_lock = threading.Lock()
_gc_waiters = 0
_gc_saved: tuple[int, ...] | None = None


@contextlib.contextmanager
def deferred_collection():
    """Collect the youngest generation at most every ``DEFERRED_GC_THRESHOLD`` allocations inside.

    Nested and concurrent uses (games on several threads) share one raised threshold; the
    last to leave restores what was set before. A threshold the program set higher is kept.
    """
    global _gc_waiters, _gc_saved
    with _gc_lock:
        if _gc_waiters == 0:
            _gc_saved = gc.get_threshold()
            if _gc_saved[0] and _gc_saved[0] < DEFERRED_GC_THRESHOLD:
                gc.set_threshold(DEFERRED_GC_THRESHOLD, *_gc_saved[1:])
        _gc_waiters += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_waiters -= 1
            if _gc_waiters == 0 and _gc_saved is not None:
                gc.set_threshold(*_gc_saved)
                _gc_saved = None


async def gather(*aws: Awaitable[Any], return_exceptions: bool = False) -> list[Any]:
    """Await ``aws`` together on the running loop; results in input order.

    A coroutine, so that ``run_sync(gather(...))`` creates its tasks on our loop:
    ``asyncio.gather(...)`` called outside a running loop binds its tasks to the
    caller's loop (or fails in a worker thread).

    It has ``asyncio.TaskGroup`` semantics: when one awaitable raises, the others
    are cancelled at once and the first failure is raised (itself, not an
    ``ExceptionGroup``, so ``except ReplayMiss`` still works; any further
    failures are named in a note). Why: the calls of a round that has failed
    must not go on being sent, paid for and recorded after the failure, as
    ``asyncio.gather`` lets them. With ``return_exceptions=True`` nothing is
    cancelled: every awaitable runs to its end and failures are returned in
    place of results, as ``asyncio.gather`` does.
    """
    if return_exceptions:
        return list(await asyncio.gather(*aws, return_exceptions=True))
    failures: list[BaseException] = []
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(aw if asyncio.iscoroutine(aw) else _await(aw)) for aw in aws]
    except BaseExceptionGroup as raised:
        failures = list(raised.exceptions)
    if failures:  # raised outside the except block, so the group is not chained to it
        first = failures[0]
        if len(failures) > 1:
            first.add_note(f"{len(failures) - 1} more awaitable(s) of this gather failed before "
                           "the rest were cancelled")
        raise first
    return [task.result() for task in tasks]


def run_sync[T](coro: Coroutine[Any, Any, T] | Awaitable[T], timeout: float | None = None) -> T:
    """Run ``coro`` on the background loop and block this thread for its result.

    Safe from a script, a Jupyter cell, a Solara worker thread and a
    multiprocessing worker. ``timeout`` (seconds) cancels the coroutine and raises
    ``TimeoutError``. Calling it from a coroutine already on the background loop
    would deadlock, so that raises ``RuntimeError`` (await the coroutine instead).
    """
    if in_runtime_thread():
        if asyncio.iscoroutine(coro):
            coro.close()
        raise RuntimeError("run_sync() was called from the llm-mesa event loop itself; await the coroutine instead")
    if isinstance(coro, asyncio.Future):
        # e.g. asyncio.gather(...) built in the caller's thread: its tasks belong to
        # another loop (or none). Say how to do it right instead of hanging.
        coro.cancel()
        raise TypeError("run_sync() needs a coroutine; use runtime.gather(...) or gather_sync([...]) "
                        "instead of asyncio.gather(...) outside a running loop")
    if not asyncio.iscoroutine(coro):
        coro = _await(coro)
    future = asyncio.run_coroutine_threadsafe(coro, get_loop())
    try:
        with deferred_collection():
            if not waited_for(future, timeout):
                future.cancel()
                raise TimeoutError(f"run_sync() gave up after {timeout} s")
            return future.result()
    except KeyboardInterrupt:
        # in the waiting thread: no new call leaves, the calls in flight get their grace (llm_mesa.llm.stopping)
        interrupted(future)
        raise
    except BaseException:
        future.cancel()
        raise


async def _await[T](aw: Awaitable[T]) -> T:
    return await aw


def gather_sync(coros: Iterable[Awaitable[Any]], timeout: float | None = None,
                return_exceptions: bool = False) -> list[Any]:
    """Run many coroutines together on the background loop; results in input order."""
    return run_sync(gather(*coros, return_exceptions=return_exceptions), timeout=timeout)


def on_shutdown(hook: Callable[[], Coroutine[Any, Any, Any]]) -> None:
    """Run ``hook()`` on the loop at interpreter exit (e.g. close HTTP sessions cleanly)."""
    if hook not in _shutdown_hooks:
        _shutdown_hooks.append(hook)


@atexit.register
def _shutdown() -> None:
    loop = started_loop()
    if loop is None:
        return
    for hook in _shutdown_hooks:
        try:
            asyncio.run_coroutine_threadsafe(hook(), loop).result(2)
        except Exception:  # noqa: BLE001, S110 - exiting anyway: never mask the program's own exit status
            pass
