"""The study's rule grid under turns against synchronous rounds, as whole processes.

``llm-mesa sweep --game consensus --conditions study --policies rules --seeds S --set
baseline_permutations=0`` with ``--set update=SCHEME`` for each scheme, each run a fresh
process into a fresh folder, the schemes in turn (A B C A B C ...), best and median of
``--runs``. Rule games under turns are played by the batched engine turn by turn
(``models/consensus/batched.py``); before, they left it for the Mesa model (12.9x the
synchronous grid's time).

    python benchmarks/bench_turns_grid.py              # 10 seeds (660 games), 3 runs
    python benchmarks/bench_turns_grid.py --quick      # CI: 3 seeds, 1 run
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCHEMES = ("synchronous", "random-sequential", "random-asynchronous")


def one_run(seeds: int, scheme: str, out: Path) -> float:
    argv = [str(Path(sys.executable).with_name("llm-mesa")), "sweep", "--game", "consensus", "--conditions", "study",
            "--policies", "rules", "--seeds", str(seeds), "--set", "baseline_permutations=0",
            "--set", f"update={scheme}", "--out", str(out)]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr[-1000:]}")
    return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, help="repetitions a cell (default 10; quick 3)")
    parser.add_argument("--runs", type=int, help="runs of each scheme (default 3; quick 1)")
    parser.add_argument("--quick", action="store_true", help="small CI run")
    args = parser.parse_args(argv)
    seeds = args.seeds or (3 if args.quick else 10)
    runs = args.runs or (1 if args.quick else 3)
    walls: dict[str, list[float]] = {s: [] for s in SCHEMES}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(runs):
            for scheme in SCHEMES:
                walls[scheme].append(one_run(seeds, scheme, Path(tmp) / f"{scheme}-{run}"))
    games = 11 * 6 * seeds
    print(f"the study's rule grid, {games} games ({seeds} seeds), no baseline permutations, as processes; "
          f"{runs} runs each, load average {os.getloadavg()[0]:.1f} at the end")
    best = {s: min(w) for s, w in walls.items()}
    for scheme, times in walls.items():
        print(f"  {scheme:<20} best {best[scheme]:.2f} s, median {statistics.median(times):.2f} s "
              f"({', '.join(f'{t:.2f}' for t in times)}); best / synchronous {best[scheme] / best['synchronous']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
