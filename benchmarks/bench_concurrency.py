"""``--concurrency auto`` against a server of known capacity: throughput against the best fixed limit.

The stand-in runs as its own process (``llm-mesa serve --capacity K --slowdown S``): it
answers 429 (with ``--retry-after``) above K calls in flight and its latency grows with
the load (x (1 + S x in flight / K)). The same sweep, ``--games`` games of 36 LLM agents
in flight at once through ``llm_mesa.sweep.run_sweep`` (every game plays all its
rounds: one preferred colour per caveman clique, which majority rules hold), is played
under each fixed limit of ``--fixed`` (the search by hand) and under ``auto``, in
interleaved order, ``--repeats`` times. Reported per limit: the median throughput
(decisions a second that did not fail), failed decisions (a call still refused after its
five attempts), the peak of calls in flight at the server, and
for auto the limit it ended on, its lowest and highest, cuts and 429s. The best fixed
limit is the fastest that failed no decision (what a user would keep). The goal: auto
reaches >= 90 % of its throughput with zero failed decisions and
never more than 2 x K in flight.

    python benchmarks/bench_concurrency.py            # K = 50, 30 games x 8 rounds, 0.2 s, 3 repeats
    python benchmarks/bench_concurrency.py --quick    # CI: 12 games x 3 rounds, 0.1 s, 1 repeat
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_client  # noqa: E402  (free ports, waiting for a server)
from bench_llm_game import N_AGENTS, clique_preferences  # noqa: E402

from llm_mesa.llm import Endpoint  # noqa: E402
from llm_mesa.llm.limits import forget_limits, limits_in_use  # noqa: E402
from llm_mesa.sweep import run_sweep  # noqa: E402

MODEL = "rule:majority-inertia"


@dataclass
class Run:
    """One sweep under one limit."""

    limit: str
    wall_s: float
    decisions: int
    failures: int
    server_peak: int
    report: dict

    @property
    def throughput(self) -> float:
        """Decisions a second that did not fail (a failed one keeps the agent's colour: no answer)."""
        return (self.decisions - self.failures) / self.wall_s


def start_server(capacity: int, slowdown: float, latency: float, retry_after: float) -> tuple[subprocess.Popen, str]:
    port = bench_client.free_port()
    server = subprocess.Popen([sys.executable, "-m", "llm_mesa.cli", "serve", "--port", str(port),
                               "--capacity", str(capacity), "--slowdown", str(slowdown), "--latency", str(latency),
                               "--retry-after", str(retry_after)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        bench_client.wait_for_port(port)
    except RuntimeError:
        server.kill()
        raise
    return server, f"http://127.0.0.1:{port}/v1"


def control(base_url: str, what: str) -> dict:
    method = "POST" if what == "reset" else "GET"
    with urllib.request.urlopen(urllib.request.Request(f"{base_url}/control/{what}", method=method,
                                                       data=b"" if method == "POST" else None)) as answer:
        return json.loads(answer.read() or b"{}")


def sweep(base_url: str, limit: str, games: int, rounds: int) -> Run:
    """``games`` games in flight at once through ``run_sweep``, all calls under ``limit``."""
    forget_limits()  # every run starts afresh (auto at its start, not where the last run left it)
    control(base_url, "reset")
    endpoint = Endpoint(base_url, MODEL, concurrency=limit, timeout=60.0)
    condition = {"n": N_AGENTS, "topology": "caveman", "preferences": "explicit",
                 "explicit_preferences": clique_preferences(), "max_rounds": rounds, "baseline_permutations": 0}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        result = run_sweep({"cliques": condition}, {"llm": endpoint}, games, Path(tmp) / "sweep", games_in_flight=games,
                           store_mode="off", check_endpoints=False, game="consensus")
        wall = time.perf_counter() - started
    rows = result.results
    report = next(iter(limits_in_use().values()), {})
    return Run(limit, wall, N_AGENTS * int(rows["rounds"].sum()), int(rows["failures"].sum()),
               int(control(base_url, "stats")["max_in_flight"]), report)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small CI run: 12 games x 3 rounds, 0.1 s, 1 repeat")
    parser.add_argument("--capacity", type=int, default=50, help="the stand-in's capacity K (default 50)")
    parser.add_argument("--slowdown", type=float, default=0.25, help="latency growth at full load (default 0.25)")
    parser.add_argument("--latency", type=float, default=0.2, help="the stand-in's latency unloaded (default 0.2 s)")
    parser.add_argument("--retry-after", type=float, default=0.1, help="the stand-in's Retry-After on a 429 (0.1 s)")
    parser.add_argument("--games", type=int, default=30, help="games in flight (default 30)")
    parser.add_argument("--rounds", type=int, default=8, help="rounds a game (default 8)")
    parser.add_argument("--fixed", default="25,40,45,50,55,64", help="fixed limits searched by hand")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved repeats (default 3)")
    args = parser.parse_args(argv)
    if args.quick:
        args.games, args.rounds, args.latency, args.repeats, args.fixed = 12, 3, 0.1, 1, "40,50,64"
    limits = [*args.fixed.split(","), "auto"]
    server, base_url = start_server(args.capacity, args.slowdown, args.latency, args.retry_after)
    runs: dict[str, list[Run]] = {limit: [] for limit in limits}
    try:
        sweep(base_url, "auto", 2, 1)  # warm up: imports, the loop, the client and its connections
        for repeat in range(args.repeats):
            for limit in limits if repeat % 2 == 0 else reversed(limits):
                runs[limit].append(sweep(base_url, limit, args.games, args.rounds))
    finally:
        server.terminate()
        server.wait(timeout=10)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"stand-in: capacity {args.capacity}, latency {args.latency:g} s x (1 + {args.slowdown:g} x in flight / "
          f"{args.capacity}), Retry-After {args.retry_after:g} s; {args.games} games x {N_AGENTS} agents x "
          f"{args.rounds} rounds in flight at once; medians of {args.repeats}, interleaved; load {load:.1f}")
    print(f"{'limit':>6} {'decisions/s':>12} {'failed':>7} {'peak at server':>15}  auto  (decisions/s: not failed)")
    medians = {limit: statistics.median(r.throughput for r in rs) for limit, rs in runs.items()}
    for limit, rs in runs.items():
        detail = ""
        if limit == "auto":
            last = rs[-1].report
            detail = (f"ended at {last.get('limit')} (low {last.get('low')}, high {last.get('high')}), "
                      f"{last.get('cuts')} cuts, {last.get('rate_limited')} 429s")
        print(f"{limit:>6} {medians[limit]:>12.1f} {sum(r.failures for r in rs):>7} "
              f"{max(r.server_peak for r in rs):>15}  {detail}")
    # the best fixed limit a user would pick by hand: the fastest that fails no decision
    usable = [limit for limit in limits if limit != "auto" and not sum(r.failures for r in runs[limit])]
    best = max(usable or [limit for limit in limits if limit != "auto"], key=medians.get)
    ratio = medians["auto"] / medians[best]
    auto_runs = runs["auto"]
    peak = max(r.server_peak for r in auto_runs)
    failed = sum(r.failures for r in auto_runs)
    print(f"auto / best fixed ({best}): {ratio:.3f} of its throughput (goal >= 0.90); failed decisions {failed} "
          f"(goal 0); peak in flight at the server {peak} = {peak / args.capacity:.2f} x capacity (goal <= 2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
