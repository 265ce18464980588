"""``--concurrency auto`` against each shape of server, beside the best fixed limit, over real HTTP.

The client is llm-mesa's own (``llm_mesa.llm.complete``, retries, the server limit); the server is
``benchmarks/shaped_server.py`` in a process of its own. The work is a game's: ``games`` games in
flight, each playing ``rounds`` rounds of ``calls`` calls gathered together (a round starts when the
last one ends). Each shape is run under ``auto`` and each fixed limit, interleaved, ``--repeats``
times; reported per limit: median wall time, decisions a second that did not fail, failed
decisions (a call refused after its 5 attempts), the most the server held at once, and for auto
the limit it ended on. The best fixed limit is the fastest that failed fewest decisions.

Shapes:

* ``capacity``: 429 above 50 in flight (Retry-After 0.1 s), latency 0.2 s x (1 + 0.25 x load);
* ``jump``: capacity 200, latency 0.05 s, 10x from 3 s on (no 429 for it, no timeout);
* ``storm``: every call refused with no Retry-After for the first 3 s, then capacity 50;
* ``storm-forever``: every call refused, for ever: the time until 16 decisions have failed;
* ``swing``: latency 0.05 s for a second, 0.5 s the next, and so on, whatever the load (no 429, no timeout),
  4 games of 36 calls a round (144 calls wanting a place);
* ``round-1000``: one round of 1,000 calls ready at once (a 1,000-agent game), capacity 400, 0.5 s.

    python benchmarks/bench_concurrency_shapes.py            # every shape, 3 repeats
    python benchmarks/bench_concurrency_shapes.py --quick    # CI: smaller grids, 1 repeat
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_client  # noqa: E402  (free ports, waiting for a server)

from llm_mesa.llm import Endpoint, LLMRequest, complete, run_sync  # noqa: E402
from llm_mesa.llm.limits import forget_limits, limits_in_use  # noqa: E402
from llm_mesa.llm.runtime import gather  # noqa: E402


@dataclass(frozen=True)
class Case:
    shape: str
    server: tuple[str, ...]
    games: int
    calls: int
    rounds: int
    fixed: tuple[int, ...]


def cases(quick: bool) -> list[Case]:
    scale = 0.4 if quick else 1.0
    g = max(2, round(30 * scale))
    return [
        Case("capacity", ("--shape", "capacity", "--capacity", "50", "--latency", "0.2", "--retry-after", "0.1"),
             g, 36, 3 if quick else 8, (40, 50, 64)),
        Case("jump", ("--shape", "jump", "--capacity", "200", "--latency", "0.05", "--at", "3", "--retry-after", "0.1"),
             g, 36, 8 if quick else 20, (100, 200)),
        Case("storm", ("--shape", "storm", "--capacity", "50", "--latency", "0.2", "--at", "3"), 4, 16,
             3 if quick else 6, (16, 50, 64)),
        Case("storm-forever", ("--shape", "storm", "--at", "inf"), 1, 16, 1, (16, 64)),
        Case("swing", ("--shape", "swing", "--capacity", "0", "--latency", "0.05", "--period", "1"), 4, 36,
             12 if quick else 30, (36, 72, 144)),
        Case("round-1000", ("--shape", "capacity", "--capacity", "400", "--latency", "0.5", "--retry-after", "0"),
             1, 1000 if not quick else 600, 2 if quick else 3, (300, 400, 1000)),
    ]


@dataclass
class Run:
    limit: str
    wall_s: float
    decisions: int
    failed: int
    peak: int
    report: dict

    @property
    def rate(self) -> float:
        return (self.decisions - self.failed) / self.wall_s


def play(base_url: str, case: Case, limit: int | str) -> Run:
    forget_limits()
    urllib.request.urlopen(urllib.request.Request(base_url.removesuffix("/v1") + "/reset", method="POST"), timeout=10)
    endpoint = Endpoint(base_url, "m", concurrency=limit, max_attempts=5, timeout=60.0)

    async def game(g: int) -> list:
        results = []
        for r in range(case.rounds):
            results += await gather(*[complete(endpoint, LLMRequest(messages=[
                {"role": "user", "content": f"game {g} round {r} agent {a}"}])) for a in range(case.calls)])
        return results

    async def everything() -> list:
        return [r for done in await gather(*[game(g) for g in range(case.games)]) for r in done]

    started = time.perf_counter()
    results = run_sync(everything())
    wall = time.perf_counter() - started
    stats = json.loads(urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=10).read())
    report = limits_in_use([base_url]).get(base_url, {})
    return Run(str(limit), wall, len(results), sum(r.error is not None for r in results), stats["peak"], report)


def bench(case: Case, repeats: int) -> list[str]:
    port = bench_client.free_port()
    server = subprocess.Popen([sys.executable, str(Path(__file__).with_name("shaped_server.py")), "--port", str(port),
                               *case.server])
    try:
        bench_client.wait_for_port(port)
        base_url = f"http://127.0.0.1:{port}/v1"
        limits: list[int | str] = ["auto", *case.fixed]
        runs: dict[str, list[Run]] = {str(limit): [] for limit in limits}
        for _ in range(repeats):
            for limit in limits:  # interleaved: a drift of the machine's load falls on every limit alike
                runs[str(limit)].append(play(base_url, case, limit))
    finally:
        server.terminate()
        server.wait(10)
    medians = {k: sorted(v, key=lambda r: r.wall_s)[len(v) // 2] for k, v in runs.items()}
    fixed = [medians[str(f)] for f in case.fixed]
    best = min(fixed, key=lambda r: (r.failed, r.wall_s))
    auto = medians["auto"]
    lines = [f"{case.shape}: {case.games} games x {case.calls} calls x {case.rounds} rounds; medians of {repeats}",
             "  limit     wall s  decisions/s  failed  peak at server"]
    for name, run in medians.items():
        extra = ""
        if name == "auto":
            r = run.report
            extra = (f"  ended at {r.get('limit')} (low {r.get('low')}, high {r.get('high')}), {r.get('cuts')} cuts, "
                     f"{r.get('rate_limited')} 429s, {r.get('probes')} probes, {r.get('pauses')} group pauses")
        lines.append(f"  {name:>6} {run.wall_s:9.2f} {run.rate:12.1f} {run.failed:7d} {run.peak:15d}{extra}")
    lines.append(f"  auto / best fixed ({best.limit}): {best.wall_s / auto.wall_s:.3f} of its speed (wall time ratio), "
                 f"failed {auto.failed} against {best.failed}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller grids, one repeat (CI)")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--shapes", default=None, help="comma-separated shapes to run (default all)")
    args = parser.parse_args()
    repeats = args.repeats or (1 if args.quick else 3)
    chosen = set(args.shapes.split(",")) if args.shapes else None
    print(f"load {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores")
    for case in cases(args.quick):
        if chosen is None or case.shape in chosen:
            print("\n".join(bench(case, repeats)), flush=True)
    print(f"load {os.getloadavg()[0]:.1f} (1 min) at the end")


if __name__ == "__main__":
    main()
