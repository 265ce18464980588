"""Sweep the consensus study's grid with rule policies, resumably, and print its headline table.

The study's 11 identified conditions x 6 rule configurations (majority-with-inertia
at inertia 0, 0.2, 0.5, 0.8, an opinionated variant, and the voter model) x seeds.
Each finished game is appended to the output as it ends; run the script again
after an interruption and only the missing games are played.

    python examples/sweep_study_grid.py                      # 3 seeds, 198 games, ~1 min
    python examples/sweep_study_grid.py --seeds 30 --processes 2 --out runs/rules

The same from the command line:

    llm-mesa sweep --game consensus --conditions study --policies rules --seeds 30 --out runs/rules --processes 2

With LLM agents, play many games at once in one process so their calls overlap
on the endpoint (every call is recorded to OUT/calls.sqlite; a resumed sweep
replays what it already paid for):

    llm-mesa sweep --game consensus --conditions study --policies 'llm:model=qwen2.5-3b-instruct' \
        --base-url http://127.0.0.1:8000/v1 --temperature 0.7 --seeds 30 \
        --games-in-flight 30 --concurrency 1080 --out runs/qwen3b
"""

from __future__ import annotations

import argparse
from pathlib import Path

from llm_mesa.models.consensus.conditions import RULE_CONFIGURATIONS, STUDY_CONDITIONS
from llm_mesa.sweep import read_sweep, run_sweep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3, help="games per cell (default 3)")
    parser.add_argument("--processes", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--out", default="runs/study-rules", help="output directory (default runs/study-rules)")
    args = parser.parse_args()

    def progress(done: int, total: int, row: dict) -> None:
        if done % 25 == 0 or done == total:
            print(f"  {done}/{total} games")

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    result = run_sweep(STUDY_CONDITIONS, RULE_CONFIGURATIONS, args.seeds, args.out,
                       processes=args.processes, progress=progress, game="consensus")
    print(f"{result.played} games played, {result.skipped} already present")
    print("consensus (successes / games):")
    print(result.headline())

    # The results are a tidy table: one row per game, keyed by condition, policy, seed.
    games = read_sweep(args.out)
    by_rule = games.groupby("policy")[["consensus", "rounds", "stubbornness"]].mean()
    print("\nmean outcome per rule configuration:")
    print(by_rule.round(3).to_string())


if __name__ == "__main__":  # worker processes are spawned: keep the sweep under this guard
    main()
