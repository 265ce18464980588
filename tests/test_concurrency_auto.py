"""``--concurrency auto``: the rule grows while the server keeps up, cuts on 429, timeouts and rising
latency, honours Retry-After, and never holds more than twice the server's capacity in flight.

The rule (``AdaptiveLimit``) is bookkeeping with no clock, so most tests feed it made-up answers;
a simulated server of capacity K checks the bound and where it settles for many K; then a real
sweep runs against the stand-in's capacity behaviour. No test asserts a wall-clock time.
"""

from __future__ import annotations

import asyncio
import heapq
import json

import pytest

from llm_mesa.llm import Endpoint, LLMRequest, complete, gather_sync, run_sync
from llm_mesa.llm.endpoint import EndpointError
from llm_mesa.llm.limits import AUTO_START, AdaptiveLimit, ServerLimit, Ticket, forget_limits, limits_in_use, server_limit
from llm_mesa.loopback.faults import LoopbackError
from llm_mesa.loopback.server import LoopbackServer


@pytest.fixture(autouse=True)
def fresh_limits():
    forget_limits()
    yield
    forget_limits()


def window(rule: AdaptiveLimit, latency: float = 1.0, queued: bool = True, active: int | None = None) -> None:
    """One limit's worth of answers to attempts sent under the current limit."""
    ticket = Ticket(rule.epoch, active or rule.limit)
    for _ in range(rule.limit):
        rule.answered(ticket, None, latency, now=0.0, queued=queued)


def test_auto_is_the_default_and_starts_where_the_fixed_default_started():
    assert Endpoint("http://127.0.0.1:1/v1", "m").concurrency == "auto"
    assert AdaptiveLimit().limit == AUTO_START == 64


def test_it_doubles_while_calls_wait_latency_stays_flat_and_nothing_is_refused():
    rule = AdaptiveLimit()
    for expected in (128, 256, 512):
        window(rule)
        assert rule.limit == expected
    assert rule.history["grows"] == 3 and rule.history["cuts"] == 0


def test_it_does_not_grow_when_no_call_waited_for_a_place():
    rule = AdaptiveLimit()
    window(rule, queued=False)
    window(rule, queued=False)
    assert rule.limit == 64  # more places would not be used


def test_a_429_cuts_to_what_the_server_took_and_earlier_refusals_do_not_cut_again():
    rule = AdaptiveLimit()
    before_cut = rule.epoch
    rule.answered(Ticket(before_cut, 51), "rate_limit", 0.0, now=0.0)  # 50 others were at the server
    assert rule.limit == 50 and not rule.slow_start
    for active in (58, 64, 53):  # the same burst, sent under the old limit: no new knowledge
        rule.answered(Ticket(before_cut, active), "rate_limit", 0.0, now=0.0)
    assert rule.limit == 50
    rule.answered(Ticket(before_cut, 47), "rate_limit", 0.0, now=0.0)  # refused with 46 others: lower
    assert rule.limit == 46
    # a retry sent over the limit (its call kept its place through the cut) and refused: nothing new
    rule.answered(Ticket(rule.epoch, 49), "rate_limit", 0.0, now=0.0)
    assert rule.limit == 46
    # a server that limits by rate refuses with few at it: what it took
    rule.answered(Ticket(rule.epoch, 4), "rate_limit", 0.0, now=0.0)
    assert rule.limit == 3 and rule.history["rate_limited"] == 7


def test_after_a_cut_it_grows_by_a_twentieth_and_by_one_near_the_cut():
    rule = AdaptiveLimit()
    rule.answered(Ticket(0, 41), "rate_limit", 0.0, now=0.0)
    assert rule.limit == 40
    for _ in range(AdaptiveLimit.PATIENCE - 1):
        window(rule)
    assert rule.limit == 40  # within a tenth of where the server refused: it waits ...
    window(rule)
    assert rule.limit == 41  # ... then probes one more
    rule.limit = 20  # far below it: a twentieth (at least 1) each window
    window(rule)
    assert rule.limit == 21


def test_a_window_with_a_refusal_does_not_grow_even_when_the_refusal_cut_nothing():
    rule = AdaptiveLimit()
    rule.answered(Ticket(0, 51), "rate_limit", 0.0, now=0.0)
    rule.limit = 30  # far below the cut: it would grow each clean window
    rule.answered(Ticket(rule.epoch, 45), "rate_limit", 0.0, now=0.0)  # a retry sent over the limit
    assert rule.limit == 30
    window(rule)
    assert rule.limit == 30  # not grown: a refused call may still be waiting for its turn
    window(rule)
    assert rule.limit == 32


def test_a_timeout_halves_it_once_and_rising_latency_cuts_it():
    rule = AdaptiveLimit()
    rule.answered(Ticket(0, 10), "timeout", 60.0, now=0.0)
    rule.answered(Ticket(0, 10), "timeout", 60.0, now=0.0)  # the same epoch's other timeout
    assert rule.limit == 32 and rule.history["timeouts"] == 2
    window(rule, latency=1.0)  # the second timeout came back in this window: no growth
    assert rule.limit == 32
    for _ in range(AdaptiveLimit.PATIENCE):  # the baseline: 1 s, flat, so it grows by one near its cut
        window(rule, latency=1.0)
    grown = rule.limit
    assert grown > 32
    window(rule, latency=1.6)  # above 1.5 x the best window median: the server queues
    assert rule.limit == int(grown * AdaptiveLimit.CUT)


def test_retry_after_holds_every_new_call_until_it_has_passed():
    async def scenario():
        limit = ServerLimit("auto")
        ticket = limit.sent()
        limit.answered(ticket, "rate_limit", 0.0, retry_after_s=3600.0)  # capped by the client in real use
        admitted = []

        async def call(i):
            async with limit:
                admitted.append(i)

        tasks = [asyncio.create_task(call(i)) for i in range(3)]
        for _ in range(10):
            await asyncio.sleep(0)
        held = list(admitted)
        limit.adaptive.resume_at = 0.0  # the pause has passed
        limit._let_in()
        await asyncio.gather(*tasks)
        return held, admitted

    held, admitted = run_sync(scenario())
    assert held == [] and admitted == [0, 1, 2]


def test_a_number_fixes_the_limit_and_a_shared_server_keeps_the_smallest_number():
    async def limits():
        auto = server_limit(Endpoint("http://127.0.0.1:9/v1", "a"))
        fixed = server_limit(Endpoint("http://127.0.0.1:9/v1", "b", concurrency=12))
        ticket = fixed.sent()
        fixed.answered(ticket, "rate_limit", 0.0)
        return auto is fixed, fixed.limit, fixed.report()["mode"]

    assert run_sync(limits()) == (True, 12, "fixed")


def simulate(capacity: int, demand: int = 1080, answers: int = 20_000, slowdown: float = 0.25) -> dict:
    """A server of ``capacity`` calls in flight (429 above it, latency x (1 + slowdown x load)) under the
    rule, in simulated time: calls hold a place while they back off, as the client's do."""
    rule = AdaptiveLimit()
    events: list[tuple[float, int, str, tuple[Ticket, float] | None]] = []
    now, seq, waiting, places, active, served = 0.0, 0, demand, 0, 0, 0
    peak_places = peak_active = 0
    limits_seen = [rule.limit]

    def admit() -> None:
        nonlocal waiting, places, seq
        while waiting and places < rule.limit and now >= rule.resume_at:
            waiting -= 1
            places += 1
            seq += 1
            heapq.heappush(events, (now, seq, "send", None))

    admit()
    while served < answers:
        now, _, kind, attempt = heapq.heappop(events)
        seq += 1
        if kind == "send":
            active += 1
            sent = (Ticket(rule.epoch, active), now)
            peak_active, peak_places = max(peak_active, active), max(peak_places, places)
            if active > capacity:
                heapq.heappush(events, (now + 0.001, seq, "refused", sent))
            else:
                heapq.heappush(events, (now + 1.0 * (1 + slowdown * active / capacity), seq, "answered", sent))
            continue
        active -= 1
        ticket, sent_at = attempt
        if kind == "refused":
            rule.answered(ticket, "rate_limit", now - sent_at, now, retry_after_s=None, queued=waiting > 0)
            heapq.heappush(events, (now + 0.25, seq, "send", None))  # backs off holding its place
        else:
            rule.answered(ticket, None, now - sent_at, now, queued=waiting > 0)
            places -= 1
            served += 1
            waiting += 1  # the game's next call: demand stays
        limits_seen.append(rule.limit)
        admit()
    return {"peak_places": peak_places, "peak_active": peak_active, "high": max(limits_seen),
            "settled": sorted(limits_seen[-len(limits_seen) // 4:])[len(limits_seen) // 8]}


@pytest.mark.parametrize("capacity", [3, 17, 50, 64, 130, 700, 2000])
def test_in_simulation_it_never_holds_twice_the_capacity_and_settles_near_it(capacity):
    run = simulate(capacity)
    # it starts at the fixed default's 64, so only a server of fewer than 32 sees more than twice its capacity
    assert run["peak_places"] <= max(AUTO_START, 2 * capacity) and run["high"] <= max(AUTO_START, 2 * capacity)
    # the median limit of the last quarter of the run lies within a fifth of the capacity
    assert 0.8 * capacity <= run["settled"] <= 1.2 * capacity + 1, run


def test_a_sweep_against_the_capacity_stand_in_fails_no_decision_and_stays_under_twice_its_capacity(tmp_path):
    from llm_mesa.models.consensus.conditions import STUDY_CONDITIONS  # noqa: F401  (the game is installed)
    from llm_mesa.sweep import read_sweep, run_sweep
    from llm_mesa.sweep.progress import SweepProgress

    capacity = 20
    lines = tmp_path / "progress.log"
    with LoopbackServer(seed=1, capacity=capacity, slowdown=0.25, latency=0.05, retry_after=0.05) as server:
        endpoint = Endpoint(server.base_url, "rule:majority-inertia", timeout=30.0)
        with open(lines, "w") as stream:
            progress = SweepProgress(stream=stream, interval=0.0, terminal=False)
            run_sweep({"ba": {"n": 12, "topology": "ba", "max_rounds": 3, "baseline_permutations": 0}},
                      {"llm": endpoint}, 6, tmp_path / "out", games_in_flight=6, store_mode="off",
                      check_endpoints=False, game="consensus", progress=progress)
        stats = server.stats()
    games = read_sweep(tmp_path / "out")
    assert int(games["failures"].sum()) == 0 and int(games["calls"].sum()) == stats["answered"] > 0
    assert stats["max_in_flight"] <= 2 * capacity
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    used = manifest["concurrency_limits"][endpoint.base_url]
    assert used["mode"] == "auto" and used["start"] == AUTO_START and used["low"] <= capacity
    assert used["rate_limited"] == stats["by_fault"].get("capacity", 0) > 0  # it found the limit by touching it
    assert f"limit {limits_in_use()[endpoint.base_url]['limit']}" in lines.read_text().splitlines()[-1]


def test_the_capacity_stand_in_refuses_above_its_capacity():
    with LoopbackServer(seed=1, capacity=4, latency=0.2, retry_after=0.5) as server:
        endpoint = Endpoint(server.base_url, "echo", concurrency=10, max_attempts=1)
        results = gather_sync([complete(endpoint, LLMRequest(messages=[{"role": "user", "content": str(i)}]))
                               for i in range(10)])
        stats = server.stats()
    assert sum(r.error == "rate_limit" for r in results) == 6 == stats["by_fault"]["capacity"]
    assert stats["answered"] == 4 and stats["max_in_flight"] > 4


@pytest.mark.parametrize("settings, match", [
    ({"capacity": -1}, "capacity=-1"),
    ({"slowdown": 0.5}, "needs a capacity"),
    ({"capacity": 5, "slowdown": -1.0}, "slowdown"),
])
def test_bad_capacity_settings_are_named(settings, match):
    with pytest.raises(LoopbackError, match=match):
        LoopbackServer(**settings)


@pytest.mark.parametrize("value, expected", [("auto", "auto"), ("AUTO", "auto"), ("12", 12), (8, 8)])
def test_concurrency_is_auto_or_a_whole_number(value, expected):
    assert Endpoint("http://127.0.0.1:1/v1", "m", concurrency=value).concurrency == expected


@pytest.mark.parametrize("value", [0, -3, "many", 2.5, True])
def test_a_bad_concurrency_names_the_fix(value):
    with pytest.raises(EndpointError, match="auto or a positive whole number"):
        Endpoint("http://127.0.0.1:1/v1", "m", concurrency=value)


def test_the_command_line_takes_auto_and_refuses_zero_in_one_line(capsys):
    from llm_mesa.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
              "--concurrency", "0"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "auto or a positive whole number" in err[0]


def test_a_slower_workload_is_not_taken_for_a_queueing_server():
    """Latency measured while no call waited is the workload's (another model or prompt), not the limit's."""
    rule = AdaptiveLimit()
    window(rule, latency=0.002, queued=False)  # a fast warm-up, demand below the limit
    window(rule, latency=0.1)  # a 50x slower model, calls now waiting: a baseline of its own
    assert rule.limit == 128
    window(rule, latency=0.2)  # latency doubled once the limit did: the server queues
    assert rule.limit == int(128 * AdaptiveLimit.CUT)
