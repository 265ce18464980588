"""A server and its clients in simulated time, under ``--concurrency auto``'s rule or a fixed limit.

What the client does is what ``llm_mesa.llm.client`` and ``limits.ServerLimit`` do: calls ready
together ask for places (``AdaptiveLimit.wanted``), wait in line while none is free or a pause
holds, send attempts, back off with full jitter after a refusal while keeping their place, then
(``ServerLimit.before_retry``) give it up when over a lowered limit and wait out a pause; a call
fails after ``max_attempts``. The server is a shape: a capacity (429 above it, at once), a latency
that may depend on time and load, refusals for a while. Time is an event heap, so a test of
thousands of calls takes a fraction of a second and asserts no wall clock.
"""

from __future__ import annotations

import heapq
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from llm_mesa.llm.adaptive import AdaptiveLimit, Ticket


@dataclass
class Shape:
    """A server: ``capacity`` attempts at once (0: none), ``latency(now, active)`` seconds an answer takes,
    ``refuses(now)``: every attempt refused (429) then, with ``retry_after`` seconds (None: no header)."""

    capacity: int = 0
    latency: Callable[[float, int], float] = lambda now, active: 1.0
    refuses: Callable[[float], bool] = lambda now: False
    retry_after: float | None = None


@dataclass
class Run:
    """What a simulated run did."""

    done: int = 0
    failed: int = 0
    elapsed: float = 0.0
    peak_places: int = 0
    peak_active: int = 0
    limits: list[tuple[float, int]] = field(default_factory=list)  # (time, limit) at every change
    round_ends: list[float] = field(default_factory=list)

    def limit_at(self, t: float) -> int:
        return [limit for when, limit in self.limits if when <= t][-1]

    def highest_after(self, t: float) -> int:
        """The highest limit in force at ``t`` or after."""
        return max([self.limit_at(t), *(limit for when, limit in self.limits if when >= t)])


def simulate(shape: Shape, *, rounds: int = 1, calls: int = 100, games: int = 1, fixed: int | None = None,
             max_attempts: int = 5, seed: int = 0, until: float = 10_000.0, think: float = 0.0) -> Run:
    """``games`` games of ``calls`` calls a round, ``rounds`` rounds each (a game's next round starts when all
    its calls are done, after ``think`` seconds at most of its own work, drawn at random: games drift apart
    as in a sweep), against ``shape``, under ``auto`` (``fixed`` None) or a fixed limit."""
    rng = random.Random(seed)
    rule = AdaptiveLimit() if fixed is None else None
    limit = [rule.limit if rule else fixed]
    run = Run(limits=[(0.0, limit[0])])
    events: list = []
    seq = [0]
    now = 0.0
    places = active = 0
    line: deque[int] = deque()  # calls waiting for a place (their ids)
    attempts: dict[int, int] = {}
    game_of: dict[int, int] = {}
    left = [0] * games  # calls of the current round still to finish, per game
    played = [0] * games
    ids = iter(range(10**9))

    def push(at: float, kind: str, *data) -> None:
        seq[0] += 1
        heapq.heappush(events, (at, seq[0], kind, data))

    def resume_at() -> float:
        return rule.resume_at if rule else 0.0

    def sync() -> None:
        if rule and rule.limit != limit[0]:
            limit[0] = rule.limit
            run.limits.append((now, limit[0]))

    def admit() -> None:
        nonlocal places
        while line and places < limit[0] and now >= resume_at():
            call = line.popleft()
            places += 1
            run.peak_places = max(run.peak_places, places)
            push(now, "send", call)
        if line and now < resume_at():
            push(resume_at(), "wake")

    def start_round(game: int) -> None:
        left[game] = calls
        new = [next(ids) for _ in range(calls)]
        for call in new:
            game_of[call], attempts[call] = game, 0
            line.append(call)
        if rule:
            rule.wanted(places + len(line))
            if places + len(line) > limit[0]:
                rule.waited()
            sync()

    def finish(call: int) -> None:
        nonlocal places
        places -= 1
        game = game_of.pop(call)
        left[game] -= 1
        if left[game] == 0:
            played[game] += 1
            if game == 0:
                run.round_ends.append(now)
            if played[game] < rounds:
                if think:
                    push(now + rng.uniform(0, think), "round", game)
                else:
                    start_round(game)

    for game in range(games):
        start_round(game)
    admit()
    while events and now < until:
        now, _, kind, data = heapq.heappop(events)
        if kind == "wake":
            admit()
            continue
        if kind == "round":
            start_round(data[0])
            admit()
            continue
        call = data[0]
        if kind == "send":
            active += 1
            run.peak_active = max(run.peak_active, active)
            ticket = Ticket(rule.epoch, active, rule.attempt(now)) if rule else None
            attempts[call] += 1
            if shape.refuses(now) or (shape.capacity and active > shape.capacity):
                push(now + 0.001, "refused", call, ticket, now)
            else:
                push(now + shape.latency(now, active), "answered", call, ticket, now)
            continue
        if kind == "retry":  # its own backoff is over: ServerLimit.before_retry
            if now < resume_at():
                push(resume_at(), "retry", call)
            else:
                push(now, "send", call)
            continue
        active -= 1
        ticket, sent = data[1], data[2]
        if kind == "refused":
            if rule:
                rule.answered(ticket, "rate_limit", now - sent, now, shape.retry_after, queued=bool(line))
                sync()
            if attempts[call] >= max_attempts:
                run.failed += 1
                finish(call)
            elif places > limit[0]:  # over a lowered limit: in line again, no backoff of its own
                places -= 1
                line.append(call)
            else:
                sleep = rng.uniform(0, min(30.0, 0.5 * 2 ** (attempts[call] - 1)))
                if shape.retry_after:
                    sleep = max(sleep, shape.retry_after)
                push(now + sleep, "retry", call)
        else:
            if rule:
                rule.answered(ticket, None, now - sent, now, queued=bool(line))
                sync()
            run.done += 1
            finish(call)
        admit()
    run.elapsed = now
    return run
