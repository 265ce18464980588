"""One event loop per process, in a daemon thread, for every LLM call.

Why a background loop: models step synchronously (Mesa, ``batch_run`` workers,
Solara's model thread), but LLM calls want to be in flight together, and the
``openai`` async client, its connection pool and our per-endpoint semaphores are
bound to one loop. Running that loop in its own thread lets any caller block on
it with ``run_sync``, including a Jupyter cell whose own thread already runs a
loop (that loop is not ours, so nothing deadlocks), and keeps one client per
endpoint shared by every game the process plays.

A forked child does not inherit the thread, so the loop is keyed by process id
and started afresh, lazily, in each process.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import os
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_pid: int | None = None
_shutdown_hooks: list[Callable[[], Coroutine[Any, Any, Any]]] = []


def _serve(loop: asyncio.AbstractEventLoop, ready: threading.Event) -> None:
    asyncio.set_event_loop(loop)
    loop.call_soon(ready.set)
    loop.run_forever()


def get_loop() -> asyncio.AbstractEventLoop:
    """The process-wide background loop, started on first use (and after a fork)."""
    global _loop, _thread, _pid
    loop, pid = _loop, _pid
    if loop is not None and pid == os.getpid() and _thread is not None and _thread.is_alive():
        return loop
    with _lock:
        if _loop is not None and _pid == os.getpid() and _thread is not None and _thread.is_alive():
            return _loop
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        thread = threading.Thread(target=_serve, args=(loop, ready), name="llm-mesa-loop", daemon=True)
        thread.start()
        ready.wait()
        _loop, _thread, _pid = loop, thread, os.getpid()
        return loop


def in_runtime_thread() -> bool:
    """True when called from the background loop's own thread."""
    return _thread is not None and _pid == os.getpid() and threading.current_thread() is _thread


async def gather(*aws: Awaitable[Any], return_exceptions: bool = False) -> list[Any]:
    """``asyncio.gather`` as a coroutine, so that ``run_sync(gather(...))`` runs it on our loop.

    ``asyncio.gather(...)`` called outside a running loop binds its tasks to the
    caller's loop (or fails in a worker thread); this wrapper defers that until it
    runs on the background loop.
    """
    return list(await asyncio.gather(*aws, return_exceptions=return_exceptions))


def run_sync(coro: Coroutine[Any, Any, T] | Awaitable[T], timeout: float | None = None) -> T:
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
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise TimeoutError(f"run_sync() gave up after {timeout} s") from None
    except BaseException:
        # KeyboardInterrupt in the waiting thread: stop the work on the loop too.
        future.cancel()
        raise


async def _await(aw: Awaitable[T]) -> T:
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
    loop = _loop
    if loop is None or _pid != os.getpid() or _thread is None or not _thread.is_alive():
        return
    for hook in _shutdown_hooks:
        try:
            asyncio.run_coroutine_threadsafe(hook(), loop).result(2)
        except Exception:  # exiting anyway: never mask the program's own exit status
            pass
