"""The process's one background event loop for LLM calls, in a daemon thread of its own.

Kept apart from ``llm_mesa.llm.runtime`` (which runs work on it) so that what stops
spending (``llm_mesa.llm.stopping``) can find the loop without importing the runtime that
waits on it. A forked child does not inherit the thread, so the loop is keyed by process id
and started afresh, lazily, in each process. The loop is uvloop's where it is installed
(unless ``LLM_MESA_EVENT_LOOP=asyncio``), else asyncio's.
"""

from __future__ import annotations

import asyncio
import os
import threading

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_pid: int | None = None


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop's loop where it is installed (unless ``LLM_MESA_EVENT_LOOP=asyncio``), else asyncio's."""
    if os.environ.get("LLM_MESA_EVENT_LOOP", "uvloop") != "asyncio":
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return uvloop.new_event_loop()
    return asyncio.new_event_loop()


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
        loop = _new_loop()
        ready = threading.Event()
        thread = threading.Thread(target=_serve, args=(loop, ready), name="llm-mesa-loop", daemon=True)
        thread.start()
        ready.wait()
        _loop, _thread, _pid = loop, thread, os.getpid()
        return loop


def started_loop() -> asyncio.AbstractEventLoop | None:
    """The process's background loop if it has been started (and still runs), else None; starts nothing."""
    loop, thread = _loop, _thread
    if loop is None or _pid != os.getpid() or thread is None or not thread.is_alive():
        return None
    return loop


def in_runtime_thread() -> bool:
    """True when called from the background loop's own thread."""
    return _thread is not None and _pid == os.getpid() and threading.current_thread() is _thread


__all__ = ["get_loop", "in_runtime_thread", "started_loop"]
