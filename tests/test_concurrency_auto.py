"""``--concurrency auto``: the rule grows while the server keeps up, cuts on 429, timeouts and rising
latency, honours Retry-After, and never holds more than twice the server's capacity in flight.

The rule (``AdaptiveLimit``) is bookkeeping with no clock, so most tests feed it made-up answers;
a simulated server of capacity K checks the bound and where it settles for many K; then a real
sweep runs against the stand-in's capacity behaviour. No test asserts a wall-clock time.
"""

from __future__ import annotations

import asyncio
import json
import random
import time

import pytest
from concurrency_sim import Shape, simulate

from llm_mesa.llm import Endpoint, LLMRequest, complete, gather_sync, run_sync
from llm_mesa.llm.adaptive import LATENCY_FLOOR, RATE_WAIT_CAP_S
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


def test_until_the_server_says_what_it_takes_every_call_ready_is_let_in():
    rule = AdaptiveLimit()
    rule.wanted(1000)  # a 1,000-agent round, ready at once
    assert rule.limit == 1000 and not rule.learned
    rule.wanted(20)
    assert rule.limit == 1000  # never shrinks for lack of demand
    rule.answered(Ticket(rule.epoch, 401), "rate_limit", 0.0, now=0.0)  # refused with 400 others at the server
    assert rule.limit == 400 and rule.learned
    rule.wanted(5000)
    assert rule.limit == 400  # what the server took holds, demand or not


def test_a_round_within_the_start_is_never_held_back_by_a_probe_and_a_larger_burst_is_probed_once():
    """A 36-agent round goes whole every round (a probe at half of it cost a 5-round game a latency, 1.39x the
    bound as a process); a burst beyond the start, which no fixed default would send, whose calls waited behind
    each other at the server (its answers spread: a server taking 400 at a time), gets one probe at half."""
    small = AdaptiveLimit()
    small.wanted(36)
    for _ in range(6):
        window(small, queued=False)
        assert small.limit == AUTO_START and small.probe is None
    assert small.history["probes"] == 0
    burst = AdaptiveLimit()
    burst.wanted(1000)
    ticket = Ticket(burst.epoch, 1000)
    for i in range(1000):
        burst.answered(ticket, None, 1.0 + i // 400, now=0.0, queued=False)  # served 400 at a time
    assert burst.limit == 500 and burst.history["probes"] == 1


def test_a_burst_the_server_answers_as_fast_as_its_fastest_call_is_never_probed():
    """1,000 calls at once, each answered after the server's latency (the first round of a 1,000-agent game):
    none waited behind another, so holding half back would cost the next round a latency and gain nothing
    (a 1,000-agent game's second round took 2.1 s of a 1 s latency with the probe)."""
    rule = AdaptiveLimit()
    rule.wanted(1000)
    for _ in range(5):
        ticket = Ticket(rule.epoch, 1000)
        for i in range(1000):
            rule.answered(ticket, None, 1.0 + i * 1e-4, now=0.0, queued=False)  # the client's own spread
        assert rule.limit == 1000 and rule.probe is None
    assert rule.history["probes"] == 0


def test_a_429_cuts_to_what_the_server_took_and_earlier_refusals_do_not_cut_again():
    rule = AdaptiveLimit()
    before_cut = rule.epoch
    rule.answered(Ticket(before_cut, 51), "rate_limit", 0.0, now=0.0)  # 50 others were at the server
    assert rule.limit == 50 and rule.learned
    for active in (58, 64, 53):  # the same burst, sent under the old limit: no new knowledge
        rule.answered(Ticket(before_cut, active), "rate_limit", 0.0, now=0.0)
    assert rule.limit == 50
    rule.answered(Ticket(before_cut, 47), "rate_limit", 0.0, now=0.0)  # refused with 46 others: lower
    assert rule.limit == 46
    rule.answered(Ticket(rule.epoch, 49), "rate_limit", 0.0, now=0.0)  # a retry sent over the limit: nothing new
    assert rule.limit == 46
    rule.answered(Ticket(rule.epoch, 4), "rate_limit", 0.0, now=0.0)  # a server limiting by rate: what it took
    assert rule.limit == 3 and rule.history["rate_limited"] == 7


def test_a_lone_call_refused_says_the_server_takes_nothing_now_and_the_limit_is_not_collapsed():
    rule = AdaptiveLimit()
    for active in (2, 3, 5):  # a burst refused whole, the later refusals first
        rule.answered(Ticket(0, active), "rate_limit", 0.0, now=0.0)
    assert rule.limit == 1
    rule.answered(Ticket(0, 1), "rate_limit", 0.0, now=0.0)  # the call sent alone, refused too
    assert rule.limit == AUTO_START  # the cuts of the storm undone: how many was never the matter
    rule.answered(Ticket(rule.epoch, 9), "rate_limit", 0.0, now=0.0)
    assert rule.limit == AUTO_START  # until an answer comes, a refusal says nothing of how many
    rule.answered(Ticket(rule.epoch, 9), None, 0.5, now=1.0)
    rule.answered(Ticket(rule.epoch, 31), "rate_limit", 0.0, now=1.0)
    assert rule.limit == 30  # answers again: refusals count again


def test_refusals_in_a_row_back_off_as_a_group_and_an_answer_ends_it():
    rule = AdaptiveLimit()
    rule.answered(Ticket(0, 1), "server", 0.0, now=10.0)
    assert rule.resume_at == 0.0  # one refusal: its call backs off alone
    rule.answered(Ticket(0, 1), "rate_limit", 0.0, now=10.0, retry_after_s=0.0)  # Retry-After: 0 is none
    assert rule.resume_at == 10.0 + AdaptiveLimit.GROUP_BACKOFF_S
    rule.answered(Ticket(0, 1), "rate_limit", 0.0, now=10.1)  # within the pause: the same pause
    assert rule.resume_at == 10.0 + AdaptiveLimit.GROUP_BACKOFF_S
    rule.answered(Ticket(0, 1), "rate_limit", 0.0, now=11.0)  # after it: twice as long
    assert rule.resume_at == 11.0 + 2 * AdaptiveLimit.GROUP_BACKOFF_S
    for now in range(12, 30):
        rule.answered(Ticket(0, 1), "rate_limit", 0.0, now=float(now))
    assert rule.resume_at == 29.0 + AdaptiveLimit.GROUP_BACKOFF_CAP_S
    rule.answered(Ticket(0, 1), None, 0.5, now=30.0)
    rule.answered(Ticket(0, 1), "rate_limit", 0.0, now=40.0)
    assert rule.resume_at == 29.0 + AdaptiveLimit.GROUP_BACKOFF_CAP_S  # an answer between: back to one alone


def test_a_rate_limit_window_lets_out_no_more_attempts_than_remain_before_its_reset():
    rule = AdaptiveLimit()
    first = Ticket(0, 1, rule.attempt(now=0.0))
    for _ in range(3):
        rule.attempt(now=0.0)  # three more sent after it
    rule.answered(first, None, 0.1, now=0.1, requests=(5, 2.0))  # 5 remained when it was answered
    assert rule.resume_at == 0.0
    rule.attempt(now=0.2)  # 5 - 3 sent since = 2 left: one ...
    assert rule.resume_at == 0.0
    rule.attempt(now=0.3)  # ... and the last: hold until the reset
    assert rule.resume_at == 0.1 + 2.0
    rule.answered(Ticket(0, 1, rule.sent), None, 0.1, now=0.4, requests=(0, 3600.0))
    assert rule.resume_at == 0.4 + RATE_WAIT_CAP_S  # none left: held, at most as long as a Retry-After
    rule.answered(Ticket(0, 1, rule.sent), None, 0.1, now=100.0, tokens=(0, 5.0))
    assert rule.resume_at == 105.0  # no tokens left: held as well


def test_a_timeout_halves_it_once():
    rule = AdaptiveLimit()
    rule.answered(Ticket(0, 10), "timeout", 60.0, now=0.0)
    rule.answered(Ticket(0, 10), "timeout", 60.0, now=0.0)  # the same epoch's other timeout
    assert rule.limit == 32 and rule.history["timeouts"] == 2


def learned(limit: int) -> AdaptiveLimit:
    """A rule that a 429 has told the server takes ``limit``."""
    rule = AdaptiveLimit()
    rule.wanted(2 * limit)
    rule.answered(Ticket(rule.epoch, limit + 1), "rate_limit", 0.0, now=0.0)
    assert rule.limit == limit
    return rule


def test_a_latency_rise_with_as_many_in_flight_is_the_server_and_cuts_nothing():
    rule = learned(128)
    window(rule, latency=0.1)  # the baseline
    for _ in range(5):
        window(rule, latency=1.0)  # ten times slower, with as many calls in flight (the server)
    assert rule.limit >= 128 and rule.history["probes"] == 0
    assert rule.baseline[1] == 1.0  # the baseline followed the server


def test_a_latency_rise_after_growth_is_probed_before_anything_is_cut():
    rule = learned(100)
    rule.last_cut = None  # far from any cut: it grows by a twentieth a window
    window(rule, latency=1.0)
    assert rule.limit == 105
    window(rule, latency=1.6)  # slower with more in flight: fewer are tried first
    assert rule.probe == (105, 1.6) and rule.limit == 100
    window(rule, latency=1.6)  # as slow with fewer: the server slowed; the limit comes back
    assert rule.limit == 105 and rule.probe is None and rule.baseline == (105, 1.6)
    grown = rule.limit
    window(rule, latency=1.6)
    assert rule.limit > grown  # and it grows again from the server's new speed
    window(rule, latency=3.0)  # slower after growing: fewer are tried
    probed, came_from = rule.limit, rule.probe[0]
    assert rule.probe is not None and probed < grown + 10
    window(rule, latency=1.0)  # faster with fewer, at the fastest speed seen: the calls, or the server? checked
    assert rule.recheck is not None and rule.limit == came_from and rule.last_cut is None
    window(rule, latency=3.0)  # as slow as before with as many again ...
    assert rule.recheck is not None and rule.limit == probed
    window(rule, latency=1.0)  # ... and as fast with fewer again: the calls in flight; the probe's limit stands
    assert rule.limit == probed and rule.learned and rule.recheck is None and rule.probe is None
    assert rule.history["cuts"] == 2  # the first 429's and this one


def test_a_probe_still_slower_than_the_servers_unloaded_speed_halves_at_once():
    """A queue the fewer calls shortened without emptying it: fewer calls made it faster, no check needed; half as
    many are tried next (a server that slows under load is found by halvings that pay)."""
    rule = AdaptiveLimit()
    rule.wanted(1000)
    ticket = Ticket(rule.epoch, 1000)
    for i in range(1000):
        rule.answered(ticket, None, 1.0 + i // 100, now=0.0, queued=False)  # served 100 at a time
    assert rule.probe is not None and rule.limit == 500
    window(rule, latency=3.5)  # faster with half, and still over three times the fastest answer
    assert rule.recheck is None and rule.probe == (500, 3.5) and rule.limit == 250


def test_a_probe_that_met_the_server_speeding_up_on_its_own_cuts_nothing():
    """A latency that swings whatever the load: slow at 144, fast at 72 just as the server sped up, and as fast
    back at 144. The recheck tells the swing from overload: the limit goes back, nothing is cut, and halving goes
    no further (the issue's server: cut to 36 of the 144 calls waiting)."""
    rule = AdaptiveLimit()
    rule.wanted(144)
    window(rule, latency=0.05, queued=False)
    window(rule, latency=0.5, queued=False)  # slower than the fastest answer, as many calls: one probe at half
    assert rule.probe == (144, 0.5) and rule.limit == 72
    window(rule, latency=0.05)  # faster with half: the server's swing just then
    assert rule.recheck is not None and rule.limit == 144
    window(rule, latency=0.05, queued=False)  # as fast with all of them: the server, not the calls in flight
    assert rule.limit == 144 and rule.recheck is None and rule.probe is None and not rule.learned
    for latency in (0.5, 0.05) * 10:  # the swing goes on: nothing more is probed or cut
        window(rule, latency=latency, queued=False)
    assert rule.limit == 144 and rule.history["cuts"] == 0 and rule.history["probes"] == 1


@pytest.mark.parametrize("back, again", [(0.5, 0.5), (0.05, 0.05), (2.0, 0.05), (0.5, 0.2)],
                         ids=["turned slow after the probe", "stayed fast", "far slower than before", "half-way"])
def test_a_probe_at_the_unloaded_speed_cuts_only_if_the_server_is_slow_with_more_and_fast_with_fewer_again(back, again):
    """Slow at 144, fast at 72: back at 144 it must be as slow as before and at 72 as fast again, or it was the
    server's swing (which would have to turn at the end of each of the three windows to fool it)."""
    rule = AdaptiveLimit()
    rule.wanted(144)
    window(rule, latency=0.05, queued=False)
    window(rule, latency=0.5, queued=False)
    window(rule, latency=0.05)  # the probe at 72: fast
    window(rule, latency=back, queued=False)
    if rule.recheck is not None:
        window(rule, latency=again)
    assert rule.limit == 144 and rule.history["cuts"] == 0 and not rule.learned


def test_a_probe_at_the_unloaded_speed_that_is_confirmed_both_ways_stands_and_goes_no_lower():
    """Fewer calls cannot beat the unloaded speed: the probe's limit stands, the lowest worth trying (half the calls
    wanting a place, never less). No refusal marked a capacity there: it grows back by a twentieth a window while
    the server keeps up, as from any limit, not by one now and then as near a limit the server refused above."""
    rule = AdaptiveLimit()
    rule.wanted(144)
    window(rule, latency=0.05, queued=False)
    window(rule, latency=0.5, queued=False)
    for latency in (0.05, 0.5, 0.05):  # fast with fewer, slow with more, fast with fewer again
        window(rule, latency=latency)
    assert rule.limit == 72 and rule.learned and rule.history["cuts"] == 1 and rule.last_cut is None
    window(rule, latency=0.05)
    assert rule.limit == 72 + round(72 * AdaptiveLimit.GROWTH)


def test_a_latency_cut_never_goes_below_the_floor():
    rule = learned(20)
    rule.last_cut = None
    for _ in range(8):
        window(rule, latency=1.0)
        window(rule, latency=50.0)
        window(rule, latency=1.0)
    assert rule.limit >= LATENCY_FLOOR


def test_after_a_cut_it_grows_by_a_twentieth_and_by_one_near_the_cut_ever_more_rarely():
    rule = learned(40)
    for _ in range(AdaptiveLimit.PATIENCE - 1):
        window(rule)
    assert rule.limit == 40  # within a tenth of where the server refused: it waits ...
    window(rule)
    assert rule.limit == 41  # ... then probes one more
    rule.answered(Ticket(rule.epoch, 41), "rate_limit", 0.0, now=0.0)  # refused at 41 again: back to 40
    assert rule.limit == 40
    for _ in range(2 * AdaptiveLimit.PATIENCE - 1):
        window(rule)
    assert rule.limit == 40  # twice as patient before the next probe
    window(rule)
    assert rule.limit == 41
    rule.limit = 20  # far below the cut: a twentieth (at least 1) each window
    window(rule)
    assert rule.limit == 21


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


#: (id, the server, the grid: games x calls a round x rounds, fixed limits to beat, what auto must reach of the
#:  best fixed limit's throughput, the most it may hold at the server after it learned, as a multiple of capacity)
SHAPES = [
    ("capacity 3", Shape(capacity=3, latency=lambda now, a: 1.0 + 0.25 * a / 3, retry_after=0.1), (30, 36, 4),
     (3,), 0.99, 2.0),
    ("capacity 50", Shape(capacity=50, latency=lambda now, a: 1.0 + 0.25 * a / 50, retry_after=0.1), (30, 36, 20),
     (40, 50), 0.99, 1.1),
    ("capacity 700", Shape(capacity=700, latency=lambda now, a: 1.0 + 0.25 * a / 700, retry_after=0.1),
     (30, 36, 20), (500, 700), 0.99, 1.01),
    ("a 1,000-agent round, capacity 400", Shape(capacity=400, latency=lambda now, a: 1.0), (1, 1000, 3),
     (400, 1000), 0.99, 1.01),
    ("latency 10x after 20 s, capacity 200", Shape(capacity=200, latency=lambda now, a: 0.1 if now < 20 else 1.0,
                                                   retry_after=0.1), (30, 36, 40), (200,), 0.99, 1.01),
    ("a 429 storm for 5 s, Retry-After absent", Shape(capacity=50, latency=lambda now, a: 0.5,
                                                      refuses=lambda now: now < 5.0), (4, 16, 5), (50,), 0.99, 1.3),
    ("a 429 storm that never ends", Shape(capacity=50, refuses=lambda now: True, retry_after=0.0), (1, 16, 2),
     (16, 64), 0.75, None),
    ("a queue of 8 slots, no refusal", Shape(latency=lambda now, a: 0.5 * max(1.0, a / 8)), (30, 36, 5), (8, 64),
     0.99, None),
]


@pytest.mark.parametrize("shape, grid, fixed, share, held", [r[1:] for r in SHAPES], ids=[r[0] for r in SHAPES])
def test_in_simulation_auto_holds_against_each_shape_of_server(shape, grid, fixed, share, held):
    """Against the best fixed limit, in simulated time: it reaches ``share`` of its throughput (a storm that never
    ends: the time until every call has failed), fails no more decisions, and never holds more than ``held`` x the
    capacity once the server has said what it takes."""
    games, calls, rounds = grid
    auto = simulate(shape, games=games, calls=calls, rounds=rounds)
    runs = [simulate(shape, games=games, calls=calls, rounds=rounds, fixed=f) for f in fixed]
    best = min(runs, key=lambda r: (r.failed, r.elapsed))
    assert auto.failed <= best.failed, (auto.failed, best.failed)
    assert best.elapsed >= share * auto.elapsed, (auto.elapsed, best.elapsed)
    if held is not None and shape.capacity:
        learned_at = next(t for t, limit in auto.limits if t > 0)  # the first refusal's cut
        assert auto.highest_after(learned_at) <= held * shape.capacity + 1, auto.limits[-10:]


def test_in_simulation_the_first_round_of_1000_calls_takes_what_the_best_fixed_limit_takes():
    shape = Shape(capacity=400, latency=lambda now, a: 1.0)
    auto = simulate(shape, calls=1000, rounds=1)
    best = simulate(shape, calls=1000, rounds=1, fixed=400)
    assert auto.round_ends[0] <= best.round_ends[0] + 0.01 and auto.failed == 0


def test_in_simulation_a_server_that_slows_under_load_without_refusing_is_found_by_halving_probes():
    """Throughput falling as calls are added (no 429): the one probe at half the calls, then halvings while they pay."""
    shape = Shape(latency=lambda now, a: 0.5 * max(1.0, a / 50) ** 1.5)
    auto = simulate(shape, games=30, calls=36, rounds=10)
    assert 25 <= auto.limits[-1][1] <= 135  # near the 50 it serves best, from 1,080 calls ready
    assert auto.elapsed < 0.55 * simulate(shape, games=30, calls=36, rounds=10, fixed=1080).elapsed


def test_low_is_the_lowest_limit_that_held_a_call_back():
    """The start (64) held nothing back when a larger round raised the limit before any call waited; a probe did."""
    rule = AdaptiveLimit()
    rule.wanted(144)
    assert rule.history["low"] == 144
    window(rule, latency=0.05, queued=False)
    window(rule, latency=0.5, queued=False)  # a probe at 72 ...
    rule.waited()  # ... holds calls back
    assert rule.limit == rule.history["low"] == 72
    window(rule, latency=0.5)  # as slow with fewer: back at 144
    rule.waited()
    assert rule.limit == 144 and rule.history["low"] == 72 and rule.history["high"] == 144


def swinging(phase: float, jitter: float, seed: int) -> Shape:
    """A server whose latency swings whatever its load: 0.05 s for a second, 0.5 s the next (from ``phase``), each
    answer up to ``jitter`` s later (no 429, no timeout): ``benchmarks/shaped_server.py --shape swing``."""
    draw = random.Random(seed)
    return Shape(latency=lambda now, active: (0.05 if int(now + phase) % 2 == 0 else 0.5) + draw.uniform(0, jitter))


def test_in_simulation_a_latency_swing_that_does_not_follow_load_is_not_taken_for_overload():
    """4 games of 36 calls a round (144 wanting a place) against a swinging server, over 36 phases, drifts of the
    games apart and jitters: once the round is in, the limit never goes below half of it (72; it fell to 36 and
    18), and the sweep takes at most 1.15x the best fixed limit's time."""
    worst = 1.0
    for case in range(36):
        phase, think, jitter = (case * 0.137) % 2, (0.0, 0.02, 0.1)[case % 3], (0.0, 0.01, 0.03)[case // 3 % 3]
        run = simulate(swinging(phase, jitter, case), games=4, calls=36, rounds=60, think=think, seed=case)
        whole = next(i for i, (_, limit) in enumerate(run.limits) if limit >= 144)
        assert min(limit for _, limit in run.limits[whole:]) >= 72, (case, run.limits[:12])
        best = min(simulate(swinging(phase, jitter, case), games=4, calls=36, rounds=60, think=think, seed=case,
                            fixed=fixed).elapsed for fixed in (72, 144))
        worst = max(worst, run.elapsed / best)
        assert run.elapsed <= 1.15 * best, (case, run.elapsed, best, run.limits[:12])
    assert worst > 1.0  # the probe at half the round is paid for, once


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
    assert stats["max_in_flight"] <= 2 * capacity, stats
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    used = manifest["concurrency_limits"][endpoint.base_url]
    assert used["mode"] == "auto" and used["start"] == AUTO_START and used["low"] <= capacity
    assert used["rate_limited"] == stats["by_fault"].get("capacity", 0) > 0  # it found the limit by touching it
    assert f"limit {limits_in_use()[endpoint.base_url]['limit']}" in lines.read_text().splitlines()[-1]


def test_a_sweep_against_a_swinging_server_never_holds_calls_back_below_half_of_those_wanting_a_place(tmp_path):
    """Over real HTTP: 4 consensus games of 36 agents in flight (144 calls a round) against a server whose latency
    swings between 0.05 s and 0.5 s each second whatever its load. The lowest limit that held a call back (the
    manifest's ``low``) is half of them at the least: the one probe at half the round, never a cut below it."""
    from aiohttp import web
    from hostile_server import HostileServer, completion, game_handler

    from llm_mesa.sweep import run_sweep

    started = time.monotonic()

    async def swinging(request, body):
        await asyncio.sleep(0.05 if int(time.monotonic() - started) % 2 == 0 else 0.5)
        return web.json_response(completion(json.dumps({"colour": random.choice(("red", "blue")), "reason": "r",
                                                        "diary": "d"})))

    with HostileServer(game_handler(swinging)) as server:
        endpoint = Endpoint(server.base_url, "m", timeout=30.0)
        run_sweep({"ba-none": {"n": 36, "topology": "ba", "communication": "none", "max_rounds": 10,
                               "baseline_permutations": 0}}, {"llm": endpoint}, 8, tmp_path / "out", games_in_flight=4,
                  store_mode="off", check_endpoints=False, game="consensus")
    used = json.loads((tmp_path / "out" / "manifest.json").read_text())["concurrency_limits"][endpoint.base_url]
    assert used["mode"] == "auto" and used["high"] == 144 and used["low"] >= 72, used


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
    rule = learned(128)
    window(rule, latency=0.002, queued=False)  # a fast warm-up, demand below the limit
    assert rule.baseline is None
    window(rule, latency=0.1)  # a 50x slower model, calls now waiting: a baseline of its own, no probe, no cut
    assert rule.limit == 128 and rule.baseline == (128, 0.1) and rule.history["probes"] == 0


#: (headers, the window read from them: (remaining, seconds to reset), or None)
RATE_HEADERS = [
    ({"x-ratelimit-remaining-requests": "59", "x-ratelimit-reset-requests": "1s"}, (59, 1.0)),
    ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"}, (0, 360.0)),
    ({"x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "1m30.5s"}, (3, 90.5)),
    ({"x-ratelimit-remaining-requests": "5", "x-ratelimit-reset-requests": "20ms"}, (5, 0.02)),
    ({"x-ratelimit-remaining-requests": "5", "x-ratelimit-reset-requests": "2.5"}, (5, 2.5)),
    ({"x-ratelimit-remaining-requests": "5", "x-ratelimit-reset-requests": "soon"}, None),
    ({"x-ratelimit-remaining-requests": "nan", "x-ratelimit-reset-requests": "1s"}, None),
    ({"x-ratelimit-remaining-requests": "1e999", "x-ratelimit-reset-requests": "1s"}, None),
    ({"x-ratelimit-remaining-requests": "-4", "x-ratelimit-reset-requests": "1s"}, None),
    ({"x-ratelimit-remaining-requests": "5" * 40, "x-ratelimit-reset-requests": "1s"}, None),
    ({"x-ratelimit-remaining-requests": "5"}, None),
    ({}, None),
]


@pytest.mark.parametrize("headers, window", RATE_HEADERS)
def test_rate_limit_windows_are_read_at_the_edge_finite_or_not_at_all(headers, window):
    from llm_mesa.llm.wire import rate_window

    assert rate_window(headers) == window


def test_a_spent_rate_limit_window_in_an_answers_headers_holds_the_next_calls_until_its_reset():
    """The server limit reads the window from the headers an answer came with."""
    async def scenario():
        limit = ServerLimit("auto")
        ticket = limit.sent()
        limit.answered(ticket, None, 0.1, headers={"x-ratelimit-remaining-requests": "0",
                                                   "x-ratelimit-reset-requests": "30s"})
        admitted = []

        async def call():
            async with limit:
                admitted.append(1)

        task = asyncio.create_task(call())
        for _ in range(10):
            await asyncio.sleep(0)
        held = not admitted
        task.cancel()
        return held, limit._paused()

    held, paused = run_sync(scenario())
    assert held and 25 < paused <= 30
