"""Sweep benchmark: the consensus rule grid on 1 and 2 local workers and a 2-worker Dask
LocalCluster, and many LLM games against the loopback endpoint at a set latency.

1. The study's rule grid (11 conditions x 6 rule configurations x 30 seeds = 1,980 games;
   ``--quick``: 1 seed, 66 games) through ``run_sweep`` with ``processes=1``, ``processes=2``
   and ``executor="local-cluster:2"``: wall time and games/s of each, in one run.
2. ``--llm-games`` LLM games (36 agents on the caveman graph with one preferred colour per
   clique, a state majority agents hold forever, so every game plays all its rounds)
   against ``llm-mesa serve`` in its own process at ``--latency`` seconds a call, all in
   flight at once: wall time over the ideal
   max(rounds x latency x games / games in flight, calls / the bare client's calls/s),
   and the extrapolation of that ratio to the whole consensus study (1,980 games x 50
   rounds at the same latency and games in flight, from its dry-run estimate).

    python benchmarks/bench_sweep.py            # full: 1,980 rule games; 200 LLM games, 5 rounds, 1 s
    python benchmarks/bench_sweep.py --quick    # CI: 66 rule games; 20 LLM games, 3 rounds, 0.2 s
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_llm_game  # noqa: E402  (the loopback process, the frozen caveman game, the client's rates)

from llm_mesa.llm.endpoint import Endpoint  # noqa: E402
from llm_mesa.models.consensus.conditions import RULE_CONFIGURATIONS, STUDY_CONDITIONS  # noqa: E402
from llm_mesa.registry import get_game  # noqa: E402
from llm_mesa.sweep import run_sweep  # noqa: E402
from llm_mesa.sweep.dry_run import estimate_sweep  # noqa: E402


def rule_grid(seeds: int) -> dict[str, tuple[float, int]]:
    """Wall time and games of the rule grid through each way of running it."""
    out = {}
    for label, kwargs in (("1 local process", {"processes": 1}), ("2 local processes", {"processes": 2}),
                          ("Dask LocalCluster, 2 workers", {"executor": "local-cluster:2"})):
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            result = run_sweep(dict(STUDY_CONDITIONS), dict(RULE_CONFIGURATIONS), seeds, Path(tmp) / "grid", **kwargs, game="consensus")
            out[label] = (time.perf_counter() - started, result.played)
    return out


def llm_games(base_url: str, games: int, rounds: int, latency: float, concurrency: int) -> dict[str, float]:
    model = f"rule:majority-inertia?inertia=0&latency={latency}"
    endpoint = Endpoint(base_url, model, concurrency=concurrency, timeout=60.0, max_attempts=3)
    condition = {"n": bench_llm_game.N_AGENTS, "topology": "caveman", "preferences": "explicit",
                 "explicit_preferences": bench_llm_game.clique_preferences(), "max_rounds": rounds,
                 "baseline_permutations": 0}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        result = run_sweep({"cliques": condition}, {"llm": endpoint}, games, Path(tmp) / "llm",
                           games_in_flight=games, store_mode="off", check_endpoints=False, game="consensus")
        wall = time.perf_counter() - started
    rows = result.results
    return {"wall": wall, "calls": float(rows["calls"].sum()), "rounds": float(rows["rounds"].sum()),
            "failures": float(rows["failures"].sum())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small CI run")
    parser.add_argument("--llm-games", type=int, help="LLM games, all in flight (default 200; quick 20)")
    parser.add_argument("--rounds", type=int, help="rounds per LLM game (default 5; quick 3)")
    parser.add_argument("--latency", type=float, help="seconds per call at the endpoint (default 1; quick 0.2)")
    args = parser.parse_args(argv)
    seeds = 1 if args.quick else 30
    games = args.llm_games or (20 if args.quick else 200)
    rounds = args.rounds or (3 if args.quick else 5)
    latency = args.latency if args.latency is not None else (0.2 if args.quick else 1.0)
    concurrency = games * bench_llm_game.N_AGENTS

    print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores here; read every figure with it)")
    print(f"\n1. the consensus study's rule grid ({11 * 6 * seeds} games)")
    grid = rule_grid(seeds)
    base = grid["1 local process"][0]
    for label, (wall, played) in grid.items():
        print(f"   {label:<30} {wall:7.1f} s  {played / wall:7.1f} games/s  ({base / wall:.2f}x one process)")

    server, base_url = bench_llm_game.start_server()
    try:
        rates, _ = bench_llm_game.client_rates(base_url, 2000, 256, 1)
        bare = max(rates[bench_llm_game.BARE])
        bench_llm_game.warm_up(base_url, "rule:majority-inertia", 64)
        run = llm_games(base_url, games, rounds, latency, concurrency)
    finally:
        server.terminate()
        server.wait(10)
    ideal = max(run["rounds"] * latency / games, run["calls"] / bare)
    ratio = run["wall"] / ideal
    print(f"\n2. {games} LLM games of 36 agents, {rounds} rounds, {latency:g} s a call, all in flight")
    print(f"   calls / failures         {run['calls']:,.0f} / {run['failures']:,.0f}")
    print(f"   wall time                {run['wall']:.1f} s")
    print(f"   ideal                    {ideal:.1f} s = max(rounds x latency x games / in flight "
          f"{run['rounds'] * latency / games:.1f} s, calls / bare openai {bare:,.0f} calls/s {run['calls'] / bare:.1f} s)")
    print(f"   wall / ideal             {ratio:.2f}")
    game = get_game("consensus")
    study = {name: dict(p) for name, p in STUDY_CONDITIONS.items()}
    endpoint = Endpoint(base_url, "m", concurrency=concurrency)
    estimate = estimate_sweep(game, study, dict.fromkeys(study, list(range(30))), {"llm": ("llm", endpoint)},
                              latency_s=latency, games_in_flight=games)
    print(f"   the whole consensus study per model (1,980 games x 50 rounds, same latency and games in flight): "
          f"ideal {estimate.time_s / 3600:.2f} h, expected {ratio * estimate.time_s / 3600:.2f} h at this ratio; "
          f"six models: {6 * ratio * estimate.time_s / 3600:.1f} h")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
