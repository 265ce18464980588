"""`llm-mesa analyze` on the consensus study's rule grid kept with agents: wall time and peak memory.

Plays the study's 1,980-game rule grid (11 conditions x 30 repetitions x the six rule
configurations of `--policies rules`, `--tables agents`) unless given a sweep, then times
`llm-mesa analyze` on it in a fresh process (cache off, so it computes everything), and the
`llm-mesa report` that follows an analysis (the cache on: it only draws). With `--before
TREE` (a source tree laid out as an importable `llm_mesa` package) the same analysis of
that version runs alternately with this one, so the ratio comes from one run under one load;
`--profile` writes a cProfile of this version's analysis.

    python benchmarks/bench_analyze.py                       # play the grid, then 1 analysis + 1 report
    python benchmarks/bench_analyze.py --sweep runs/rules-agents --runs 3 --before /tmp/base
    python benchmarks/bench_analyze.py --quick               # CI: 3 repetitions a cell (198 games), 1 run

With ``--before`` it also sets the two versions' majority-following fits side by side: each
model's slope, their relative difference, and each fit's verdict (converged, its attempts).
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


last_output: dict[str, str] = {}


def timed(argv: list[str], env: dict[str, str], name: str = "") -> tuple[float, float]:
    """Wall seconds and peak resident memory (MB, the largest process) of one command (its output kept by name)."""
    start = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "%M", *argv], env=env, capture_output=True, text=True, cwd="/tmp")
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {done.stderr[-2000:]}")
    last_output[name] = done.stdout
    return wall, int(done.stderr.strip().splitlines()[-1]) / 1024


def slopes(output: str) -> dict[str, tuple[float, bool, list[int]]]:
    """Each model's majority-following slope, verdict and iterations per attempt, from ``analyze --json``."""
    fits = json.loads(output).get("majority_following", {}).get("per_model", {})
    return {model: (fit["slope"], fit["converged"], [a["iterations"] for a in fit["fit"]["attempts"]])
            for model, fit in fits.items() if "slope" in fit}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sweep", help="a sweep kept with --tables agents (default: play the study's rule grid)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--before", help="a source tree of another version, analysed alternately with this one")
    parser.add_argument("--before-has-cache", action="store_true",
                        help="the other version has analyze's cache: turn it off there too (--no-cache)")
    parser.add_argument("--profile", metavar="FILE.prof", help="also profile this version's analysis")
    parser.add_argument("--quick", action="store_true", help="CI: 3 repetitions a cell instead of the file's 30")
    args = parser.parse_args()
    python = sys.executable
    with tempfile.TemporaryDirectory() as scratch:
        sweep = args.sweep
        if sweep is None:
            sweep = str(Path(scratch) / "rules")
            subprocess.run([python, "-m", "llm_mesa.cli", "sweep", str(ROOT / "experiments/consensus-study-rules.toml"),
                            "--policies", "rules", "--out", sweep, *(["--repetitions", "3"] if args.quick else [])],
                           check=True, capture_output=True)
        print(f"sweep {sweep}; load average at start {os.getloadavg()[0]:.1f}")
        mine = {**os.environ}
        theirs = {**os.environ, "PYTHONPATH": args.before} if args.before else None
        analyse = [python, "-m", "llm_mesa.cli", "analyze", sweep, "--json", "--no-cache"]
        results: dict[str, list[tuple[float, float]]] = {"after": [], "before": []}
        for _ in range(args.runs):
            if theirs is not None:  # an older version may have no cache (nor its option)
                results["before"].append(timed(analyse if args.before_has_cache else analyse[:-1], theirs, "before"))
            results["after"].append(timed(analyse, mine, "after"))
        for name, runs in results.items():
            if runs:
                print(f"analyze ({name}): median {statistics.median(w for w, _ in runs):.1f} s wall, "
                      f"peak {max(m for _, m in runs):.0f} MB ({len(runs)} runs: "
                      + ", ".join(f"{w:.1f} s" for w, _ in runs) + ")")
        if results["before"]:
            ratio = statistics.median(w for w, _ in results["before"]) / statistics.median(w for w, _ in results["after"])
            print(f"before / after: {ratio:.1f}x")
            before, after = slopes(last_output["before"]), slopes(last_output["after"])
            for model in after:
                old, new = before.get(model), after[model]
                if old is not None:
                    print(f"  {model:<16} slope before {old[0]:.5f} (converged {old[1]}, iterations {old[2]}), "
                          f"after {new[0]:.5f} (converged {new[1]}, iterations {new[2]}): "
                          f"relative difference {abs(new[0] - old[0]) / abs(old[0]):.1e}")
        subprocess.run([*analyse[:-1]], env=mine, check=True, capture_output=True, cwd="/tmp")  # fills the cache
        wall, peak = timed([python, "-m", "llm_mesa.cli", "report", sweep, "--out", str(Path(scratch) / "r.html")], mine)
        print(f"report right after analyze (cache on): {wall:.1f} s wall, peak {peak:.0f} MB")
        if args.profile:
            subprocess.run([python, "-m", "cProfile", "-o", args.profile, "-m", "llm_mesa.cli", *analyse[3:]],
                           env=mine, check=True, capture_output=True, cwd="/tmp")
            print(f"profile written to {args.profile}")
        print(f"load average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
