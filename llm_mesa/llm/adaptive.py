"""The rule of ``--concurrency auto``: how many calls one server is let hold in flight.

Bookkeeping alone: each attempt reports its outcome, its service time, the rate-limit window
its answer announced and the time (``now``), so tests drive it with made-up events and no
clock; ``llm_mesa.llm.limits.ServerLimit`` applies it to the calls of a loop.

What it must get right, each measured against the best fixed limit
(``benchmarks/bench_concurrency.py``):

* a server that refuses above its capacity (429): found within the first round, even a round
  of 1,000 calls, and never held above what it took but for a gentle probe;
* a server whose latency rises (10x, no 429, no timeout) while our calls in flight stay the same:
  not overload, so no cut (its latency becomes the new baseline); only a rise that fewer calls
  in flight undo is (a probe at fewer calls decides before anything is cut);
* a server whose latency swings whatever its load (0.05 s and 0.5 s by turns, each second): not
  overload either, though a probe at fewer calls may meet it speeding up; a probe whose answers
  ran at the server's unloaded speed is checked both ways (slow again with as many, fast again
  with fewer) before its limit stands, and nothing lower is tried (``benchmarks/bench_swing.py``:
  never under half the calls wanting a place, within 1.15x of the best fixed limit);
* a slow server: kept busy (a rise in latency alone never cuts below ``LATENCY_FLOOR``);
* a server that refuses everything for a while (429 with no or a zero ``Retry-After``, 5xx):
  the calls back off as a group (new calls and retries wait out one shared, growing pause),
  and the limit is not collapsed to one call (a refusal of a call sent alone says the server
  takes nothing now, not that it takes fewer), so no call runs its retries alone in line.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

#: the least ``--concurrency auto`` starts at (the fixed default): more when more calls are ready at once
AUTO_START = 64
#: and never goes above this (a guard against a runaway, not a target)
AUTO_CEILING = 8192
#: a rise in latency alone never cuts below this: a slow server is kept busy
LATENCY_FLOOR = 16
#: the longest a rate-limit window's reset (``x-ratelimit-reset-*``) holds calls, as Retry-After is capped
RATE_WAIT_CAP_S = 60.0


@dataclass(frozen=True)
class Ticket:
    """What one attempt was sent under: the limit's epoch, the attempts then at the server (itself
    included), and its number among the attempts sent to the server (rate windows count from it)."""

    epoch: int
    active: int
    seq: int = 0


class AdaptiveLimit:
    """The rule of ``--concurrency auto`` for one server (see the module docstring for what it must do).

    * **Until the server says what it takes** (a 429, a timeout, a confirmed latency rise), every
      call that is ready is let in: the limit follows the calls that want a place (``wanted``),
      from ``AUTO_START`` up to ``AUTO_CEILING``; a 1,000-agent round goes out at once.
    * **A 429** cuts at once to the attempts that were at the server when the refused one was
      sent, less one (what the server took). A refusal of an attempt sent over the limit says
      nothing new. A refusal of an attempt sent *alone* says the server takes nothing now (a rate
      limit, an outage): the cuts of that run of refusals are undone, and the calls wait.
    * **Refusals back off as a group**: from the second 429 or 5xx in a row without an answer
      between, and without a ``Retry-After`` above 0, no call is let in and no retry leaves for a
      shared pause of ``GROUP_BACKOFF_S``, doubling each time (at most ``GROUP_BACKOFF_CAP_S``);
      an answer ends it. A ``Retry-After`` (capped by the client) holds every new call as long.
    * **Rate-limit headers** (``x-ratelimit-remaining-requests`` / ``-reset-requests``, and the
      tokens' pair): no more attempts leave before the reset than the answer said remain (less
      the attempts sent since it was sent); none when none remain.
    * **A timeout** of an attempt sent under the current limit halves it (once per limit).
    * **Windows**: one limit's worth of answers after the last change. A window in which calls
      waited for a place, with no 429 or timeout, is judged against the baseline (the lowest
      median of the windows since the baseline was last set, and the limit it was seen at):
      - its median within ``LATENCY_RISE`` of the baseline: the limit grows, by ``GROWTH`` (at
        least 1) a window, and by 1 every ``PATIENCE`` windows near the limit of its last cut
        (twice as many windows after each probe the server refused at the same place, at most
        ``PATIENCE_CAP``: a server whose capacity stays put is probed ever more rarely);
      - above it with no more calls in flight than the baseline had: the server slowed down on
        its own, so the baseline follows it and nothing is cut;
      - above it with more calls in flight: a **probe**, one window at fewer calls (the
        baseline's limit, or this one over ``LATENCY_RISE``, at least ``LATENCY_FLOOR``). Faster
        there, every answer still over ``UNLOADED`` times the fastest: the calls in flight made
        a queue, and the probe's limit stands (a cut; half as many are tried next, while that
        pays). Faster there at the unloaded speed: no queue is left to undo, so the probe must
        finish as many calls a second, and pass a check both ways (``_rechecked``: a swing of
        the server's own latency is not overload) before its limit stands, the lowest tried.
        As slow: the server slowed down, the baseline follows it and the limit comes back.
      A window in which no call waited starts the baseline afresh (its latency is the
      workload's: another model, another prompt). Once, such a window of more than ``AUTO_START``
      calls whose median is above ``LATENCY_RISE`` times the fastest answer seen (some calls
      waited behind others at the server) is probed at half the calls; a burst answered as fast
      as the fastest call queued nowhere, and holding half of it back would only cost a round a
      latency.
    """

    LATENCY_RISE = 1.5
    #: a probe whose median is within this of the fastest answer seen met the server's unloaded speed
    UNLOADED = 3.0
    GROWTH = 0.05
    CUT = 0.9  # "near the last cut": within a tenth of it
    PATIENCE = 4
    PATIENCE_CAP = 64  # each probe refused where the last was doubles the patience, up to this
    GROUP_BACKOFF_S = 0.25
    GROUP_BACKOFF_CAP_S = 1.0

    def __init__(self, start: int = AUTO_START, ceiling: int = AUTO_CEILING) -> None:
        self.limit = start
        self.ceiling = ceiling
        self.epoch = 0
        #: the server has said what it takes (a 429, a timeout, a confirmed rise): the limit no longer follows demand
        self.learned = False
        self.resume_at = 0.0  # no call is let in, and no retry leaves, before this (time.monotonic())
        self.baseline: tuple[int, float] | None = None  # (limit, median latency) to judge windows against
        self.probe: tuple[int, float] | None = None  # (the limit probed from, its median) while fewer are tried
        #: while a probe that ran at the server's unloaded speed is checked (``_rechecked``): the limit probed
        #: from and its median, the probe's limit and its median, and the median back at the first (or None)
        self.recheck: tuple[int, float, int, float, float | None] | None = None
        self.last_cut: int | None = None
        self.sent = 0  # attempts sent (``Ticket.seq``)
        self._latencies: list[float] = []
        self._saturated = False
        self._held_back = False  # a call has waited for a place (``history["low"]`` counts from then)
        self._refused = False  # a 429 or timeout came back in this window
        self._clean = 0  # clean windows in a row near the last cut
        self._patience = self.PATIENCE  # clean windows near the last cut before a probe one above it
        self._demand_probed = False  # the one probe at half the calls that follows demand has been made
        self._fastest = float("inf")  # the fastest answer seen: what a call takes when none waits behind others
        self._descending = False  # probes that paid are halving the limit further
        self._refusals = 0  # 429s and 5xx since the last answer
        self._pauses = 0  # the group back-off's step
        self._before_refusals: int | None = None  # the limit before this run of 429s cut it
        self._takes_nothing = False  # a lone attempt was refused and no answer came since: not a matter of how many
        self._budget: int | None = None  # attempts the last rate-limit window leaves, until ``_budget_until``
        self._budget_until = 0.0
        self.history = {"start": start, "low": start, "high": start, "grows": 0, "cuts": 0, "rate_limited": 0,
                        "timeouts": 0, "probes": 0, "rechecks": 0, "pauses": 0}

    @property
    def slow_start(self) -> bool:
        """Kept for readers of the rule before it followed demand: True until the server said what it takes."""
        return not self.learned

    # -- what the server limit tells it ----------------------------------------------------
    def wanted(self, calls: int) -> None:
        """``calls`` want a place now (in flight, waiting and arriving): until the server has said what it
        takes, they are all let in."""
        if not self.learned and self.probe is None and self.recheck is None and not self._descending \
                and calls > self.limit \
                and self.limit < self.ceiling:
            self._set(min(self.ceiling, calls), cut=False)

    def waited(self) -> None:
        """A call found no free place: the limit binds (more calls would be sent). The history's ``low`` is the
        lowest limit that held a call back (the limit itself, until one did): a limit in force while every call
        had a place, as the start before a larger round arrives, cut nothing."""
        self._saturated = True
        self.history["low"] = min(self.history["low"], self.limit) if self._held_back else self.limit
        self._held_back = True

    def attempt(self, now: float) -> int:
        """An attempt leaves (its ``Ticket.seq``); it spends one of a rate-limit window's remaining requests."""
        self.sent += 1
        if self._budget is not None:
            if now >= self._budget_until:
                self._budget = None
            else:
                self._budget -= 1
                if self._budget <= 0:
                    self.resume_at = max(self.resume_at, self._budget_until)
        return self.sent

    def answered(self, ticket: Ticket, kind: str | None, latency_s: float, now: float,
                 retry_after_s: float | None = None, queued: bool = False,
                 requests: tuple[int, float] | None = None, tokens: tuple[int, float] | None = None) -> None:
        """One attempt came back: ``kind`` None (an answer), ``rate_limit``, ``timeout``, ``server`` or another
        failure; ``queued``: calls are waiting for a place now; ``requests``/``tokens``: the rate-limit windows
        its answer announced, ``(remaining, seconds until reset)``."""
        if queued:
            self._saturated = True
        if requests is not None:
            self._rate_window(ticket, requests, now, budget=True)
        if tokens is not None:
            self._rate_window(ticket, tokens, now, budget=False)
        if retry_after_s:
            self.resume_at = max(self.resume_at, now + retry_after_s)
        if kind in ("rate_limit", "timeout"):
            self._refused = True
        if kind in ("rate_limit", "server"):
            self._refusals += 1
            if not retry_after_s:
                self._group_pause(now)
        if kind == "rate_limit":
            self._rate_limited(ticket)
        elif kind == "timeout":
            self.history["timeouts"] += 1
            if ticket.epoch == self.epoch:
                self._set(max(1, self.limit // 2), cut=True)
        elif kind is None:
            self._fastest = min(self._fastest, latency_s)
            self._refusals = self._pauses = 0
            self._before_refusals, self._takes_nothing = None, False
            if ticket.epoch == self.epoch:
                self._latencies.append(latency_s)
                if len(self._latencies) >= self.limit:
                    self._judge()

    def _rate_limited(self, ticket: Ticket) -> None:
        self.history["rate_limited"] += 1
        if self._before_refusals is None:
            self._before_refusals = self.limit
        took = ticket.active - 1
        if took <= 0:  # refused alone: the server takes nothing now, which fewer calls would not change
            self.learned = self._takes_nothing = True
        if self._takes_nothing:  # until an answer comes, refusals say nothing of how many it takes
            if self.limit < self._before_refusals:
                self._set(self._before_refusals, cut=False)
        elif took < self.limit:  # else it was sent over the limit, by a call that kept its place
            same = self.last_cut is not None and took >= self.last_cut  # a probe above it refused, as the last
            self._patience = min(self.PATIENCE_CAP, self._patience * 2) if same else self.PATIENCE
            self._set(took, cut=True)

    def _group_pause(self, now: float) -> None:
        """From the second refusal in a row with no answer between: one shared pause, longer each time."""
        if self._refusals < 2 or now < self.resume_at:
            return
        self._pauses += 1
        self.history["pauses"] += 1
        self.resume_at = now + min(self.GROUP_BACKOFF_CAP_S, self.GROUP_BACKOFF_S * 2 ** (self._pauses - 1))

    def _rate_window(self, ticket: Ticket, window: tuple[int, float], now: float, *, budget: bool) -> None:
        remaining, reset_s = window
        until = now + min(reset_s, RATE_WAIT_CAP_S)
        left = remaining - (self.sent - ticket.seq) if budget else remaining  # sent since: they took from it too
        if left <= 0:
            self.resume_at = max(self.resume_at, until)
        elif budget:
            self._budget, self._budget_until = left, until

    # -- the rule -----------------------------------------------------------------------------
    def _judge(self) -> None:
        median = statistics.median(self._latencies)
        if self.recheck is not None:
            self._rechecked(median)
            return
        if self.probe is not None:
            self._probed(median, self._quartile())
            return
        if not self._saturated:  # no call waited: the latency is the workload's, not the limit's
            if not self.learned and not self._demand_probed and self.limit > AUTO_START \
                    and median > self.LATENCY_RISE * self._fastest:
                # a burst beyond what a fixed default would send went at once and is slower than the fastest
                # answer seen (some calls waited behind others at the server): would half of it go faster? (a
                # round within AUTO_START is what any limit sends, and a burst served as fast as the fastest call
                # queued nowhere: holding half of either back costs the round a latency and cannot speed it up)
                self._demand_probed = True
                self._start_probe(median, self.limit // 2)
                return
            self.baseline = None  # start the baseline afresh
            self._next_window()
            return
        if self.baseline is not None and median > self.LATENCY_RISE * self.baseline[1]:
            if self.limit > max(self.baseline[0], LATENCY_FLOOR):  # more in flight than the baseline had: try fewer
                self._start_probe(median, max(self.baseline[0], int(self.limit / self.LATENCY_RISE)))
                return
            self.baseline = (self.limit, median)  # as many in flight, slower: the server's doing; follow it
            self._next_window()
            return
        if self.baseline is None or median < self.baseline[1]:
            self.baseline = (self.limit, median)
        self._grow()

    def _start_probe(self, median: float, fewer: int) -> None:
        """One window at ``fewer`` calls (at least ``LATENCY_FLOOR``) before anything is cut."""
        self.probe = (self.limit, median)
        self.history["probes"] += 1
        self._set(max(LATENCY_FLOOR, min(fewer, self.limit - 1)), cut=False)

    def _quartile(self) -> float:
        """The window's lower quartile: how fast its faster answers were."""
        ordered = sorted(self._latencies)
        return ordered[len(ordered) // 4]

    def _probed(self, median: float, quartile: float) -> None:
        """The probe's window is in. Faster with fewer, its answers all still slower than the server's unloaded
        speed: the fewer calls undid a queue, so fewer stand (and half as many are tried next, while that pays).
        Faster with fewer, its faster answers at the unloaded speed: there is no queue left to undo, so fewer
        calls must finish at least as many calls a second to pay, and the server may instead have sped up on
        its own just then: ``_rechecked`` tells which. As slow: the server slowed down on its own; the baseline
        follows it and the limit comes back (or, after halvings that paid, the last of them stands)."""
        came_from, slower = self.probe
        self.probe = None
        loaded = quartile > self.UNLOADED * self._fastest
        if median * (self.LATENCY_RISE if loaded else max(self.LATENCY_RISE, came_from / self.limit)) <= slower:
            if not loaded:
                self.recheck = (came_from, slower, self.limit, median, None)
                self.history["rechecks"] += 1
                self._set(came_from, cut=False)
            elif self.limit // 2 >= LATENCY_FLOOR:
                self.baseline = (self.limit, median)
                self._descending = True
                self._start_probe(median, self.limit // 2)
            else:
                self.baseline = (self.limit, median)
                self._descending = False
                self._set(self.limit, cut=True)
            return
        self._back(came_from, slower)

    def _rechecked(self, median: float) -> None:
        """A probe ran at the server's unloaded speed and was faster: is that the fewer calls, or the server
        speeding up on its own just then (a latency that swings whatever the load)? One window back at the
        calls probed from, then one at the probe's again. The fewer calls made it so if the first is as slow as
        before (nearer the slow window than the probe's, and not far slower than before) and the second as
        fast as the probe (nearer the probe's than the slow one): then the probe's limit stands, the lowest
        worth trying (fewer calls cannot beat the unloaded speed). Any other pair is the server's doing: nothing
        is cut, the limit stays where it came from (or, after halvings that paid, the last of them stands).
        A swing fools this only if it turns at each of the three windows' ends."""
        came_from, slower, fewer, faster, again = self.recheck
        middle = math.sqrt(slower * faster)
        if again is None:
            if max(middle, faster * came_from / fewer) <= median <= self.LATENCY_RISE * slower:
                self.recheck = (came_from, slower, fewer, faster, median)
                self._set(fewer, cut=False)
                return
            self.recheck = None
            self._back(came_from, median)
            return
        self.recheck = None
        if median <= min(math.sqrt(again * faster), self.LATENCY_RISE * faster):
            self.baseline = (fewer, median)
            self._descending = False
            self._set(fewer, cut=True)
            self.last_cut = None  # no refusal marks a capacity here: it grows back as from any other limit
            return
        self._back(came_from, again)

    def _back(self, came_from: int, median: float) -> None:
        """Back where the probe came from, its latency the baseline (a cut, after halvings that paid)."""
        self.baseline = (came_from, median)
        self._set(came_from, cut=self._descending)
        self._descending = False

    def _grow(self) -> None:
        near_cut = self.last_cut is not None and self.limit >= self.CUT * self.last_cut
        clean = not self._refused and self.limit < self.ceiling and self.learned
        self._clean = self._clean + 1 if clean and near_cut else 0
        if clean and not near_cut:
            self._set(min(self.ceiling, self.limit + max(1, round(self.limit * self.GROWTH))), cut=False)
        elif clean and self._clean >= self._patience:  # near where the server refused: probe gently
            self._clean = 0
            self._set(self.limit + 1, cut=False)
        else:  # judged again after another window
            self._next_window()

    def _next_window(self) -> None:
        self._latencies.clear()
        self._saturated = self._refused = False

    def _set(self, limit: int, *, cut: bool) -> None:
        self.limit = limit
        self.epoch += 1
        self._next_window()
        if cut:
            self.learned = True
            self.last_cut = limit
        self.history["cuts" if cut else "grows"] += 1
        self.history["high"] = max(self.history["high"], limit)
        if not self._held_back:  # no call has waited yet: the limit never bound, nothing was held below it
            self.history["low"] = limit
