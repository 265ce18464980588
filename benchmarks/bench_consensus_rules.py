"""Speed of rule-policy consensus games: the Mesa path against a numpy yardstick, and the grid.

What it measures (medians over repetitions, one table at the end):

1. Agent-decisions per second of the synchronous majority-with-inertia rule,
   * through the real ``ConsensusModel`` (Mesa agents, per-round measures,
     DataCollector), with and without the per-agent table;
   * through a hand-vectorised yardstick of the same rule on the same graph
     (sparse adjacency times the colour vector, inertia draws vectorised);
   on the study's 36-agent BA game and on a 10,000-node BA game. The ratio is
   Mesa seconds per decision over yardstick seconds per decision (how much the
   model's generality costs). Model construction (graph, layout, agents) is
   timed apart: it is paid once per game.
2. Wall time of the rule-policy grid (11 study conditions x 30 seeds x 6 rule
   configurations = 1,980 games) through ``run_sweep(processes=1)`` on one
   core; ``--quick`` plays one seed per cell (66 games) and projects.

Usage:
  python benchmarks/bench_consensus_rules.py            # full: about 5 minutes on an idle core
  python benchmarks/bench_consensus_rules.py --quick    # CI: a fraction, projected
The machine's load average is printed with the figures: on a shared machine,
read them with it.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.models.consensus.conditions import RULE_CONFIGURATIONS, STUDY_CONDITIONS
from llm_mesa.sweep import limit_blas_threads, run_sweep

INERTIA = 0.2
RULE = f"majority-inertia:inertia={INERTIA}"


def yardstick_run(matrix, colours: np.ndarray, inertia: float, max_rounds: int,
                  rng: np.random.Generator) -> tuple[int, np.ndarray]:
    """The synchronous majority-with-inertia rule, vectorised: rounds played and final colours.

    Each round: blue neighbours = A @ c; an agent keeps its colour with
    probability ``inertia`` or on a tie (or with no neighbours), else takes the
    majority colour. Stops on consensus, like the model.
    """
    c = colours.astype(np.int64)
    degree2 = np.asarray(matrix.sum(axis=1)).ravel()
    rounds = 0
    while rounds < max_rounds and not (c == c[0]).all():
        blue2 = 2 * (matrix @ c)
        majority = np.where(blue2 > degree2, 1, np.where(blue2 < degree2, 0, c))
        keep = rng.random(c.size) < inertia
        c = np.where(keep, c, majority)
        rounds += 1
    return rounds, c


def mesa_rate(n: int, max_rounds: int, seed: int, collect_agents: bool) -> tuple[float, float, int]:
    """(decisions per second of the rounds, construction seconds, decisions) for one game."""
    t0 = time.perf_counter()
    model = ConsensusModel(n, "ba", policy=RULE, max_rounds=max_rounds, baseline_permutations=0,
                           collect_agents=collect_agents, rng=seed)
    t1 = time.perf_counter()
    model.run()
    t2 = time.perf_counter()
    decisions = n * model.round
    return decisions / (t2 - t1), t1 - t0, decisions


def yardstick_rate(n: int, max_rounds: int, seed: int) -> tuple[float, int]:
    """Decisions per second of the yardstick on the same graph and initial colours as the model."""
    model = ConsensusModel(n, "ba", policy=RULE, max_rounds=max_rounds, baseline_permutations=0,
                           collect_agents=False, rng=seed)
    matrix = model.adjacency.matrix.astype(np.int64).tocsr()
    colours = np.array([a.colour == "blue" for a in model.agents_by_node], dtype=np.int64)
    rng = np.random.default_rng(seed)
    t0 = time.perf_counter()
    rounds, _ = yardstick_run(matrix, colours, INERTIA, max_rounds, rng)
    elapsed = time.perf_counter() - t0
    decisions = n * rounds
    return decisions / elapsed if elapsed > 0 else float("inf"), decisions


def bench_game(n: int, max_rounds: int, reps: int) -> dict:
    """Medians over ``reps`` seeds for one game size."""
    with_agents, without, build, yard, decisions = [], [], [], [], []
    for seed in range(reps):
        rate, built, d = mesa_rate(n, max_rounds, seed, True)
        with_agents.append(rate)
        build.append(built)
        decisions.append(d)
        without.append(mesa_rate(n, max_rounds, seed, False)[0])
        # the yardstick is fast: repeat it so its timer is well above its resolution
        yard.append(statistics.median(yardstick_rate(n, max_rounds, seed)[0] for _ in range(5)))
    m_with, m_without, m_yard = (statistics.median(x) for x in (with_agents, without, yard))
    return {"n": n, "max_rounds": max_rounds, "reps": reps, "decisions": statistics.median(decisions),
            "mesa_agents": m_with, "mesa_no_agents": m_without, "yardstick": m_yard,
            "ratio_agents": m_yard / m_with, "ratio_no_agents": m_yard / m_without,
            "construction_s": statistics.median(build)}


def profile_big_game(n: int, max_rounds: int, top: int = 10) -> str:
    """Where the Mesa path spends a large game's rounds (tottime, top functions)."""
    model = ConsensusModel(n, "ba", policy=RULE, max_rounds=max_rounds, baseline_permutations=0,
                           collect_agents=False, rng=0)
    profiler = cProfile.Profile()
    profiler.enable()
    model.run()
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
    lines = [line for line in text.getvalue().splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls"))
    return "\n".join(lines[start:start + top + 1])


def bench_grid(quick: bool, seeds: int = 30) -> dict:
    """Wall time of the 11 x 6 x 30 rule grid through run_sweep on one core."""
    played_seeds = 1 if quick else seeds
    with tempfile.TemporaryDirectory(prefix="bench-grid-") as tmp:
        t0 = time.perf_counter()
        result = run_sweep(dict(STUDY_CONDITIONS), dict(RULE_CONFIGURATIONS), played_seeds,
                           Path(tmp) / "grid", processes=1)
        wall = time.perf_counter() - t0
    games = result.played
    full_games = len(STUDY_CONDITIONS) * len(RULE_CONFIGURATIONS) * seeds
    table = result.headline()
    return {"games": games, "wall_s": wall, "per_game_s": wall / games,
            "projected_s": wall / games * full_games, "full_games": full_games,
            "projected": quick, "table": table}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small repetitions; grid: one seed per cell, projected")
    parser.add_argument("--reps", type=int, help="repetitions per game size (default 15, quick 5; 3 and 2 for 10,000 nodes)")
    parser.add_argument("--big-n", type=int, default=10_000, help="nodes of the large BA game (default 10000)")
    parser.add_argument("--big-rounds", type=int, default=20, help="round limit of the large game (default 20)")
    parser.add_argument("--no-grid", action="store_true", help="skip the grid wall time")
    args = parser.parse_args()
    load_before = os.getloadavg()
    small_reps = args.reps or (5 if args.quick else 15)
    big_reps = args.reps or (2 if args.quick else 3)

    rows = []
    with limit_blas_threads(1):  # as in sweeps; see llm_mesa.sweep.limit_blas_threads
        rows.append(bench_game(36, 50, small_reps))
        rows.append(bench_game(args.big_n, args.big_rounds, big_reps))
        profile = profile_big_game(args.big_n, min(args.big_rounds, 5))
    grid = None if args.no_grid else bench_grid(args.quick)
    load_after = os.getloadavg()

    print(f"majority-with-inertia (inertia {INERTIA}) on BA graphs; medians; cores {os.cpu_count()}; "
          f"load average {load_before[0]:.2f} at start, {load_after[0]:.2f} at end")
    print(f"{'game':>16} {'reps':>4} {'decisions':>10} {'Mesa+agents/s':>14} {'Mesa/s':>12} "
          f"{'yardstick/s':>13} {'ratio+agents':>13} {'ratio':>8} {'build s':>8}")
    for r in rows:
        print(f"{r['n']:>8} agents {r['reps']:>4} {r['decisions']:>10.0f} {r['mesa_agents']:>14,.0f} "
              f"{r['mesa_no_agents']:>12,.0f} {r['yardstick']:>13,.0f} {r['ratio_agents']:>12.1f}x "
              f"{r['ratio_no_agents']:>7.1f}x {r['construction_s']:>8.3f}")
    print("ratio = Mesa seconds per decision / yardstick seconds per decision (higher: the model costs more);"
          " 'build s' = model construction, paid once per game")
    print(f"\nwhere a {args.big_n}-node game's rounds go (Mesa path, no agent table):")
    print(profile)
    if grid is not None:
        kind = "projected from one seed per cell" if grid["projected"] else "measured"
        print(f"\nrule grid, {len(STUDY_CONDITIONS)} conditions x {len(RULE_CONFIGURATIONS)} rule configurations "
              f"x 30 seeds = {grid['full_games']} games, run_sweep(processes=1):")
        print(f"  played {grid['games']} games in {grid['wall_s']:.1f} s ({grid['per_game_s'] * 1000:.0f} ms per game); "
              f"full grid {grid['projected_s'] / 60:.1f} min ({kind})")
        print("consensus (successes / games):")
        print(grid["table"])


if __name__ == "__main__":
    main()
