"""Speed and memory of rule-policy consensus games: the sweep, the engine, the Mesa model, a yardstick.

What it reports (CPU seconds, one core, ratios measured in one run; the load
average is printed beside them):

1. The study's rule grid (11 conditions x 6 rule configurations x 30 seeds =
   1,980 games of 36 agents, every per-round measure, no random-colouring
   baseline) through ``llm-mesa sweep --processes 1``: CPU time net of a
   one-game run (interpreter, imports, output), against the hand-vectorised
   yardstick (``consensus_yardstick.py``: the same games in plain numpy/scipy,
   which must agree game for game). Target: within 5x. Then the baseline's own
   cost: the same sweep with 1,000 random recolourings per game, minus the first.
2. A 10,000-node BA game (majority-with-inertia, 20 rounds): decisions per CPU
   second of the round loop (construction excluded, agent table on, every
   measure recorded each round; median of 5), through the Mesa model and the
   batched engine. Target: at least 10 M/s.
3. A 1,000,000-node BA game to its round limit (50) through the batched engine,
   in a process of its own: decisions/s of the round loop and peak memory
   (target: within 4 GB); with ``--mesa-big`` also through the Mesa model.
4. The Mesa model on the 36-agent game against an older checkout (``--old
   PYTHON`` or ``$LLM_MESA_BENCH_OLD_PYTHON``: the interpreter of that checkout's
   venv, e.g. commit 680be42), interleaved in the same run. Target: at least 3x.

Usage:
  python benchmarks/bench_consensus_rules.py            # full: a few minutes
  python benchmarks/bench_consensus_rules.py --quick    # CI: 3 seeds per cell, 100,000 nodes, fewer repetitions
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

import consensus_yardstick  # noqa: E402

from llm_mesa.graph_measures import Adjacency  # noqa: E402
from llm_mesa.models.consensus import ConsensusModel  # noqa: E402
from llm_mesa.models.consensus.batched import Stack  # noqa: E402
from llm_mesa.models.consensus.conditions import RULE_CONFIGURATIONS, STUDY_CONDITIONS  # noqa: E402
from llm_mesa.models.consensus.setup import game_setup  # noqa: E402
from llm_mesa.sweep import limit_blas_threads  # noqa: E402

RULE = "majority-inertia:inertia=0.2"
#: an older checkout's interpreter for the 36-agent ratio (e.g. a venv of commit 680be42), from the environment
OLD_DEFAULT = os.environ.get("LLM_MESA_BENCH_OLD_PYTHON")
RATE_36 = """
import sys, time
from llm_mesa.models.consensus import ConsensusModel
t = d = 0.0
for s in range(int(sys.argv[1]), int(sys.argv[1]) + int(sys.argv[2])):
    m = ConsensusModel(36, "ba", policy="majority-inertia:inertia=0.2", max_rounds=50, baseline_permutations=0, rng=s)
    t0 = time.process_time(); m.run(); t += time.process_time() - t0; d += 36 * m.round
print(d / t)
"""
BIG_GAME = """
import resource, sys, time
from llm_mesa.graph_measures import Adjacency
from llm_mesa.models.consensus.batched import Stack
from llm_mesa.models.consensus.setup import game_setup
import random
n = int(sys.argv[1])
t0 = time.process_time()
setup = game_setup(random.Random(1), 1, 1, parameters={"n": n, "topology": "ba", "baseline_permutations": 0},
                   policy="majority-inertia")
adjacency = Adjacency.from_graph(setup.graph)  # the networkx graph stays, as in play_games
stack = Stack([setup], [adjacency], [1], agents=True)
t1 = time.process_time()
(game,) = stack.play()
t2 = time.process_time()
print(t1 - t0, t2 - t1, n * game.round, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def child_cpu(command: list[str]) -> float:
    """CPU seconds (user + system) of a child process run to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def sweep_cpu(out: Path, seeds: int, conditions: str = "study", policies: str = "rules",
              baseline: int = 0) -> float:
    exe = Path(sys.executable).with_name("llm-mesa")
    command = [str(exe), "sweep", "--game", "consensus", "--conditions", conditions, "--policies", policies,
               "--seeds", str(seeds), "--set", f"baseline_permutations={baseline}", "--processes", "1",
               "--out", str(out), "--quiet"]
    return child_cpu(command)


def bench_grid(seeds: int, reps: int) -> dict:
    """The rule grid through the sweep CLI (net of one game) against the yardstick, and the baseline apart."""
    grid_s, one_s, base_s, yard_s, yard_build_s = [], [], [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-grid-") as tmp:
        for rep in range(reps):  # interleaved: one game, the grid, the yardstick, the grid with baseline
            one_s.append(sweep_cpu(Path(tmp) / f"one{rep}", 1, "ba-none", "mi-0.2"))
            grid_s.append(sweep_cpu(Path(tmp) / f"grid{rep}", seeds))
            yard, built, played = consensus_yardstick.run(STUDY_CONDITIONS, RULE_CONFIGURATIONS, range(seeds))
            yard_s.append(built + played)
            yard_build_s.append(built)
            base_s.append(sweep_cpu(Path(tmp) / f"base{rep}", seeds, baseline=1000))
        games = pd.read_parquet(Path(tmp) / "grid0" / "games")
    same = all(yard[(r.condition, r.policy, int(r.seed))] == (int(r.rounds), bool(r.consensus),
                                                              int(r.largest_component))
               for r in games.itertuples())
    grid, one, base, yard = (statistics.median(x) for x in (grid_s, one_s, base_s, yard_s))
    return {"games": len(games), "grid_s": grid, "one_s": one, "net_s": grid - one, "yard_s": yard,
            "yard_build_s": statistics.median(yard_build_s), "ratio": (grid - one) / yard,
            "baseline_s": base - grid, "same_games": same}


def rate_10k(n: int, rounds: int, reps: int) -> dict:
    """Decisions per CPU second of the round loop: Mesa model and engine, agent table on; medians."""
    mesa, engine = [], []
    for seed in range(reps):
        model = ConsensusModel(n, "ba", policy=RULE, max_rounds=rounds, baseline_permutations=0, rng=seed)
        t0 = time.process_time()
        model.run()
        mesa.append(n * model.round / (time.process_time() - t0))
        setup = game_setup(random.Random(seed), seed, seed, policy=RULE,
                           parameters={"n": n, "topology": "ba", "max_rounds": rounds, "baseline_permutations": 0})
        stack = Stack([setup], [Adjacency.from_graph(setup.graph)], [seed], agents=True)
        t0 = time.process_time()
        (game,) = stack.play()
        engine.append(n * game.round / (time.process_time() - t0))
    return {"n": n, "rounds": rounds, "mesa": statistics.median(mesa), "engine": statistics.median(engine)}


def big_game(n: int, script: str = BIG_GAME) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as fh:
        fh.write(script)
    try:
        out = subprocess.run([sys.executable, fh.name, str(n)], check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(fh.name)
    build_s, loop_s, decisions, peak = (float(x) for x in out.split())
    return {"n": n, "build_s": build_s, "loop_s": loop_s, "rate": decisions / loop_s, "peak_gb": peak / 2**30}


BIG_MESA = """
import resource, sys, time
from llm_mesa.models.consensus import ConsensusModel
n = int(sys.argv[1])
t0 = time.process_time()
model = ConsensusModel(n, "ba", policy="majority-inertia", baseline_permutations=0, rng=1)
t1 = time.process_time()
model.run()
t2 = time.process_time()
print(t1 - t0, t2 - t1, n * model.round, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def rate_36(python: str, reps: int, games: int = 20) -> list[float]:
    rates = []
    for rep in range(reps):
        out = subprocess.run([python, "-c", RATE_36, str(rep * games), str(games)], check=True,
                             capture_output=True, text=True, cwd=tempfile.gettempdir()).stdout
        rates.append(float(out.strip()))
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 seeds per cell, 100,000 nodes, fewer repetitions")
    parser.add_argument("--big-n", type=int, help="nodes of the largest game (default 1,000,000; quick 100,000)")
    parser.add_argument("--mesa-big", action="store_true",
                        help="also play the largest game through the Mesa model (a minute of construction)")
    parser.add_argument("--old", default=OLD_DEFAULT, help="python of an older checkout's venv, for the 36-agent"
                        " ratio (default: $LLM_MESA_BENCH_OLD_PYTHON; skipped when not given)")
    args = parser.parse_args()
    quick = args.quick
    load_before = os.getloadavg()
    with limit_blas_threads(1):
        grid = bench_grid(3 if quick else 30, 1 if quick else 3)
        big10k = rate_10k(10_000, 20, 2 if quick else 5)
        big = big_game(args.big_n or (100_000 if quick else 1_000_000))
        big_mesa = big_game(big["n"], BIG_MESA) if args.mesa_big else None
        new36, old36 = [], []
        if args.old and Path(args.old).exists():
            for _ in range(1 if quick else 3):  # interleaved: old, new, old, new...
                old36 += rate_36(args.old, 1)
                new36 += rate_36(sys.executable, 1)
    load_after = os.getloadavg()

    print(f"rule games, CPU seconds on one core; load average {load_before[0]:.2f} at start, "
          f"{load_after[0]:.2f} at end ({os.cpu_count()} cores)")
    print(f"\n1. rule grid: {grid['games']} games ({len(STUDY_CONDITIONS)} conditions x "
          f"{len(RULE_CONFIGURATIONS)} rule configurations x {grid['games'] // 66} seeds), per-round measures:")
    print(f"   llm-mesa sweep --processes 1: {grid['grid_s']:.2f} s, one-game run {grid['one_s']:.2f} s, "
          f"net {grid['net_s']:.2f} s")
    print(f"   yardstick (numpy/scipy): {grid['yard_s']:.2f} s ({grid['yard_build_s']:.2f} s building graphs); "
          f"same games: {grid['same_games']}")
    print(f"   ratio sweep net / yardstick: {grid['ratio']:.2f}x (target <= 5x)")
    print(f"   random-colouring baseline (1,000 recolourings per game), apart: {grid['baseline_s']:.2f} s")
    print(f"\n2. {big10k['n']:,}-node BA game, {big10k['rounds']} rounds, agent table on, every measure:")
    print(f"   Mesa model {big10k['mesa'] / 1e6:.1f} M decisions/s; batched engine {big10k['engine'] / 1e6:.1f} M/s "
          "(median; target >= 10 M/s)")
    print(f"\n3. {big['n']:,}-node BA game to 50 rounds (batched engine, agent table on): "
          f"{big['rate'] / 1e6:.1f} M decisions/s of the round loop ({big['loop_s']:.1f} s), "
          f"construction {big['build_s']:.1f} s, peak memory {big['peak_gb']:.2f} GB (target <= 4 GB)")
    if big_mesa is not None:
        print(f"   through the Mesa model: {big_mesa['rate'] / 1e6:.1f} M decisions/s ({big_mesa['loop_s']:.1f} s), "
              f"construction {big_mesa['build_s']:.1f} s, peak memory {big_mesa['peak_gb']:.2f} GB")
    if new36:
        new, old = statistics.median(new36), statistics.median(old36)
        print(f"\n4. Mesa model, 36 agents: {new:,.0f} decisions/s against {old:,.0f} for {args.old} "
              f"({new / old:.1f}x; target >= 3x)")
    else:
        print("\n4. Mesa model, 36 agents: skipped (give --old PYTHON of an older checkout's venv)")


if __name__ == "__main__":
    main()
