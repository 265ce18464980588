"""Stop spending at once: after an interrupt no new LLM call leaves, and the calls in flight get a short grace.

Why: a sweep stopped (SIGTERM, Ctrl-C) with calls waiting behind a server's limit used to play
its games in flight to their ends, 13 s and 516 paid calls after the signal. Now:

* ``request_stop`` (from any thread: the sweep's drain and ``runtime.run_sync`` call it when an
  interrupt reaches them, the sweep's circuit breaker when it trips) marks this process's calls
  stopped. From then no attempt leaves: a call asking for its place at a server, or about to
  send an attempt (a retry included), is held (``hold``).
* The attempts already in flight run on for up to ``GRACE_S``, or until none is left: an answer
  that arrives is recorded and used as ever, so a rerun does not pay for it again.
* Then every call still held, waiting for a place, backing off or in flight raises
  ``SpendingStopped``: its round fails, so its game is left out (nothing half-written), and the
  same command, run again, calls only for what was not recorded. A second request ends the
  grace at once (a second Ctrl-C).
* ``clear_stop``, once the work it stopped has ended, lets the process spend again (a
  notebook's next game).

``SpendingStopped`` is a ``BaseException``, as ``KeyboardInterrupt`` is: a game or a policy that
catches ``Exception`` to count a failed call must not catch it and play on, paying.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, NoReturn

from llm_mesa.llm.event_loop import started_loop

#: seconds the attempts in flight may take to come back after a stop, their answers kept
GRACE_S = 3.0
#: how often the grace looks whether any attempt is still in flight
_POLL_S = 0.05
#: the longest a thread that waits for work sleeps at once: a signal the kernel hands to another thread (the
#: loop's, a game's) only sets Python's flag, and the main thread runs the handler when it next wakes
SIGNAL_POLL_S = 0.2

__all__ = ["GRACE_S", "SIGNAL_POLL_S", "SpendingStopped", "clear_stop", "final", "hold", "interrupted", "request_stop",
           "requested", "waited_for"]


class SpendingStopped(BaseException):
    """An LLM call stopped by ``request_stop``: never sent, or cut off after the grace."""

    def __init__(self, message: str = "the run was stopped: no new LLM call is sent") -> None:
        super().__init__(message)


class _Stop:
    """The process's stop: plain flags any thread reads, and what the loop thread waits on."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requested = False
        self.final = False
        self.over: asyncio.Event | None = None  # set at the end of the grace (loop thread only)
        self.timers: list[asyncio.TimerHandle] = []


_stop = _Stop()
#: what the server limits give: attempts at the servers now, and what to do at the end of a grace
_in_flight: list[Callable[[], int]] = []
_at_end: list[Callable[[], None]] = []


def watch(in_flight: Callable[[], int], at_end: Callable[[], None]) -> None:
    """How the stop sees the attempts in flight, and what ends them (``llm_mesa.llm.limits`` registers)."""
    _in_flight.append(in_flight)
    _at_end.append(at_end)


def requested() -> bool:
    """Has a stop been asked for (and not cleared)?"""
    return _stop.requested


def final() -> bool:
    """Is the grace over: every call left raises ``SpendingStopped``?"""
    return _stop.final


def request_stop(grace_s: float = GRACE_S) -> None:
    """Stop spending (see the module docstring); a second request ends the grace at once."""
    with _stop.lock:
        again, _stop.requested = _stop.requested, True
    loop = started_loop()
    if loop is None:  # no call was ever made in this process: nothing to wait for
        _stop.final = True
        return
    loop.call_soon_threadsafe(_end if again else _begin, grace_s)


def clear_stop() -> None:
    """Let the process spend again, once the work a stop ended has ended."""
    with _stop.lock:
        _stop.requested = _stop.final = False
    loop = started_loop()
    if loop is not None:
        loop.call_soon_threadsafe(_forget)


def _forget() -> None:
    for timer in _stop.timers:
        timer.cancel()
    _stop.timers.clear()
    if _stop.over is not None and not _stop.over.is_set():
        _stop.over.set()  # nothing may wait on a stop that was cleared
    _stop.over = None


def _event() -> asyncio.Event:
    if _stop.over is None:
        _stop.over = asyncio.Event()
    return _stop.over


def _begin(grace_s: float) -> None:
    """On the loop: the grace starts; it ends when no attempt is in flight, or after ``grace_s``."""
    if not _stop.requested or _stop.final:
        return
    loop = asyncio.get_running_loop()
    _event()
    _stop.timers.append(loop.call_later(grace_s, _end))

    def look() -> None:
        if not _stop.requested or _stop.final:
            return
        if sum(count() for count in _in_flight) == 0:
            _end()
        else:
            _stop.timers.append(loop.call_later(_POLL_S, look))

    look()


def _end(*_: Any) -> None:
    """On the loop: the grace is over; every call left is stopped."""
    if not _stop.requested or _stop.final:
        return
    _stop.final = True
    for timer in _stop.timers:
        timer.cancel()
    _stop.timers.clear()
    _event().set()
    for end in _at_end:
        end()


async def hold() -> NoReturn:
    """Where a call would send an attempt after a stop: wait out the grace, then raise ``SpendingStopped``."""
    if not _stop.final:
        await _event().wait()
    raise SpendingStopped()


def interrupted(future: Any) -> None:
    """An interrupt met a thread blocked on work on the loop (``runtime.run_sync``): stop spending, give that
    work its grace (its answers recorded), then let the process spend again. A second interrupt while it
    waits ends the grace at once and is raised."""
    request_stop()
    try:
        future.result(GRACE_S + 1.0)
    except KeyboardInterrupt:
        request_stop()
        future.cancel()
        raise
    except BaseException:  # noqa: BLE001, S110  (the first interrupt is what is raised; the work's end is no news)
        pass
    future.cancel()
    clear_stop()


def waited_for(futures: concurrent.futures.Future | Iterable[concurrent.futures.Future],
               timeout: float | None = None) -> bool:
    """Wait until every one of ``futures`` is done (True) or ``timeout`` seconds pass (False), waking every
    ``SIGNAL_POLL_S``: an interrupt then reaches a main thread that waits, whichever thread the kernel gave
    it to (a sweep signalled while every game waited on its calls played on for 13 s, 96 calls)."""
    waiting = [futures] if isinstance(futures, concurrent.futures.Future) else list(futures)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = SIGNAL_POLL_S if deadline is None else min(SIGNAL_POLL_S, deadline - time.monotonic())
        if left <= 0:
            return all(f.done() for f in waiting)
        _, waiting_on = concurrent.futures.wait(waiting, timeout=left)
        if not waiting_on:
            return True
