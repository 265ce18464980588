"""Update schemes at parallel speed (issue 20): an LLM game under random-sequential updating, its dependency
depth, and what the scheme does to the rule baselines.

1. A 36-agent BA LLM game with local communication under ``random-sequential`` against the stand-in
   (``llm-mesa serve`` in its own process) answering each call after a fixed ``--latency``: wall time over
   the ideal ``depth x latency`` (depth summed over rounds; goal <= 1.1), and over the one-call-at-a-time
   cost ``36 x rounds x latency``. Turns that cannot see each other have their calls in flight together.
2. The dependency depth per round on the study's four topologies at N = 36, local and global
   communication (rule games: depth depends on the graph and the order, never on the policy).
3. The rule baselines' consensus rate by scheme on the study's rule design (11 conditions x the rule
   configurations), with ``--repetitions`` games per cell (the study's file has 30), seeds paired.
4. What the Mesa model's turns cost against the batched engine's synchronous rounds, per rule game:
   whether the engine would pay for turns.

    python benchmarks/bench_async.py            # 50 rounds at 1 s, 30 repetitions in part 3
    python benchmarks/bench_async.py --quick    # CI: 4 rounds at 0.2 s, 3 repetitions
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_client  # noqa: E402  (the stand-in in its own process, shared with bench_client.py)

from llm_mesa import PlayRequest, get_game  # noqa: E402
from llm_mesa.llm import Endpoint  # noqa: E402
from llm_mesa.models.consensus import ConsensusModel  # noqa: E402
from llm_mesa.models.consensus.conditions import RULE_CONFIGURATIONS, STUDY_CONDITIONS, TALKING_CONFIGURATIONS  # noqa: E402
from llm_mesa.models.consensus.llm_policy import LLMConsensusPolicy  # noqa: E402
from llm_mesa.play import play_batch  # noqa: E402

TOPOLOGIES = ("ba", "er", "ws", "caveman")
SCHEMES = ("synchronous", "random-sequential", "random-asynchronous")


def llm_game(base_url: str, rounds: int, latency: float, seed: int) -> dict:
    """Part 1: one game, its wall time against depth x latency and against one call at a time."""
    # inertia 1: nobody moves, so every game plays all its rounds (a game that ends early measures less)
    model = f"rule:majority-inertia?inertia=1&latency={latency:g}"
    endpoint = Endpoint(base_url, model, concurrency=64, timeout=60.0, max_attempts=3)
    game = ConsensusModel(36, "ba", policy=LLMConsensusPolicy(endpoint), communication="local", max_rounds=rounds,
                          update="random-sequential", baseline_permutations=0, rng=seed)
    started = time.perf_counter()
    game.run()
    wall = time.perf_counter() - started
    return {"seed": seed, "rounds": game.round, "depth": game.depth, "calls": game.totals["calls"], "wall_s": wall,
            "wall/ideal": wall / (game.depth * latency), "wall/one-at-a-time": wall / (36 * game.round * latency)}


def depths(rounds: int, seeds: int) -> list[dict]:
    """Part 2: depth per round by topology and communication (and scheme), over ``seeds`` games."""
    rows = []
    for topology in TOPOLOGIES:
        for communication in ("local", "global"):
            for scheme in SCHEMES[1:]:
                per_round = []
                for seed in range(seeds):
                    m = ConsensusModel(36, topology, policy="majority-inertia:inertia=1", communication=communication,
                                       update=scheme, max_rounds=rounds, baseline_permutations=0, rng=seed).run()
                    per_round.append(m.depth / m.round)
                rows.append({"topology": topology, "communication": communication, "update": scheme,
                             "depth/round mean": statistics.mean(per_round), "min": min(per_round),
                             "max": max(per_round), "games": seeds})
    return rows


def rule_rates(repetitions: int) -> tuple[list[dict], dict]:
    """Part 3: consensus rate of each rule configuration by scheme over the study's 11 conditions, paired seeds."""
    game = get_game("consensus")
    configurations = {**RULE_CONFIGURATIONS, **TALKING_CONFIGURATIONS}
    rows, seconds = [], {s: [] for s in SCHEMES}
    for name, spec in configurations.items():
        row = {"configuration": name}
        for scheme in SCHEMES:
            requests = [PlayRequest({**game.parameters.validate({**conditions, "max_rounds": 50}, complete=True),
                                     "update": scheme}, spec, 1000 * c + seed, ())
                        for c, conditions in enumerate(STUDY_CONDITIONS.values()) for seed in range(repetitions)]
            started = time.perf_counter()
            results = play_batch(game, requests)
            seconds[scheme].append((time.perf_counter() - started) / len(requests))
            row[scheme] = float(np.mean([r.row["consensus"] for r in results]))
        rows.append(row)
    return rows, {s: statistics.median(v) for s, v in seconds.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="CI: 4 rounds at 0.2 s, 3 repetitions")
    parser.add_argument("--rounds", type=int, help="rounds of the LLM game (default 50; quick 4)")
    parser.add_argument("--latency", type=float, help="the stand-in's latency per call, s (default 1; quick 0.2)")
    parser.add_argument("--games", type=int, help="LLM games played one after another (default 3; quick 1)")
    parser.add_argument("--repetitions", type=int, help="rule games per condition and configuration in part 3 "
                                                        "(default 30, the study's; quick 3)")
    args = parser.parse_args(argv)
    rounds = args.rounds or (4 if args.quick else 50)
    latency = args.latency if args.latency is not None else (0.2 if args.quick else 1.0)
    games = args.games or (1 if args.quick else 3)
    repetitions = args.repetitions or (3 if args.quick else 30)

    server, base_url = bench_client.start_server()
    try:
        runs = [llm_game(base_url, rounds, latency, seed) for seed in range(games)]
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(f"1. LLM game: 36 agents, BA, local communication, random-sequential, {rounds} rounds, {latency:g} s a call")
    for r in runs:
        print(f"   seed {r['seed']}: {r['calls']} calls, depth {r['depth']} ({r['depth'] / r['rounds']:.1f} a round), "
              f"wall {r['wall_s']:.1f} s = {r['wall/ideal']:.3f} x depth x latency (goal <= 1.1), "
              f"{r['wall/one-at-a-time']:.3f} x 36 x rounds x latency")
    print(f"   median wall/ideal {statistics.median(r['wall/ideal'] for r in runs):.3f}")

    print(f"\n2. dependency depth per round at N = 36 (mean [min, max] over {5 if args.quick else 30} games "
          f"of {10 if args.quick else 50} rounds; synchronous rounds: 1)")
    for row in depths(10 if args.quick else 50, 5 if args.quick else 30):
        print(f"   {row['topology']:8} {row['communication']:6} {row['update']:20} {row['depth/round mean']:5.1f} "
              f"[{row['min']:.1f}, {row['max']:.1f}]")

    rows, per_game = rule_rates(repetitions)
    print(f"\n3. rule baselines' consensus rate over the study's 11 conditions, {repetitions} games each, by scheme")
    print(f"   {'configuration':16}" + "".join(f"{s:>22}" for s in SCHEMES))
    for row in rows:
        print(f"   {row['configuration']:16}" + "".join(f"{row[s]:22.3f}" for s in SCHEMES))
    print("\n4. seconds per rule game (median over configurations): "
          + ", ".join(f"{s} {per_game[s] * 1e3:.1f} ms" for s in SCHEMES)
          + " (synchronous: the batched engine; the others: the Mesa model's turns)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
