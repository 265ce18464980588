"""Run a sweep of the consensus game: conditions x policies x seeds, resumable.

Examples:
  llm-mesa sweep --conditions study --policies rules --seeds 30 --out runs/rules --processes 2
  llm-mesa sweep --conditions ba-local,ba-global --policies 'mi-0.2;voter' --seeds 1-10 --out runs/ba.parquet
  llm-mesa sweep --conditions study --policies 'llm:model=qwen2.5-3b' --base-url http://127.0.0.1:8000/v1 \\
      --temperature 0.7 --seeds 30 --out runs/qwen3b --games-in-flight 30 --concurrency 1200
  llm-mesa sweep --list

Each finished game is appended to --out at once; rerun the same command to resume
(games already present are skipped; recorded LLM calls are replayed, not paid twice).
Policies are separated by ';' (specs contain commas): rule configuration names
(see --list), 'rules' for all six, registry specs NAME[:k=v,...], or
'llm[:model=...,temperature=...]' on top of the endpoint options below.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from llm_mesa.llm.endpoint import add_endpoint_arguments
from llm_mesa.policy import parse_policy_spec
from llm_mesa.study_conditions import ALL_CONDITIONS, CONDITION_GROUPS, RULE_CONFIGURATIONS, describe_condition
from llm_mesa.sweep import (
    STORE_MODES,
    TABLES,
    SweepError,
    consensus_table,
    format_consensus_table,
    llm_endpoint,
    resolve_policies,
    run_sweep,
)


def configure(parser: argparse.ArgumentParser) -> None:
    grid = parser.add_argument_group("grid")
    grid.add_argument("--conditions", default="study",
                      help="a group (" + ", ".join(CONDITION_GROUPS) + ") or condition names, comma-separated "
                           "(default study: the 11 identified conditions)")
    grid.add_argument("--policies", default="rules",
                      help="';'-separated rule configuration names, 'rules' (all six), or policy specs (default rules)")
    grid.add_argument("--seeds", default="30", help="a count (30 = seeds 0..29), a range (1-30) or a list (1,5,9)")
    grid.add_argument("--max-rounds", type=int, help="round limit of every game (default: the study's 50)")
    grid.add_argument("--baseline-permutations", type=int,
                      help="random recolourings for the largest-component baseline (default 1000)")
    grid.add_argument("--list", action="store_true", help="list the conditions and rule configurations, then exit")
    run = parser.add_argument_group("execution and output")
    run.add_argument("--out", metavar="DIR|FILE.parquet", help="results: a dataset directory, or one .parquet file")
    run.add_argument("--processes", type=int, default=1, help="worker processes (rule sweeps; default 1)")
    run.add_argument("--games-in-flight", type=int, default=1,
                     help="games played at once in threads per process (LLM sweeps; default 1)")
    run.add_argument("--batch-size", type=int, help="games per task sent to a worker process (default: automatic)")
    run.add_argument("--tables", default="", help=f"per-game tables to save too, comma-separated: {', '.join(TABLES)}")
    run.add_argument("--store", metavar="FILE", help="SQLite file recording LLM calls (default OUT/calls.sqlite)")
    run.add_argument("--store-mode", choices=STORE_MODES, default="auto",
                     help="auto: record, and replay-fill when resuming (default auto)")
    run.add_argument("--quiet", action="store_true", help="no progress lines, only the final table")
    add_endpoint_arguments(parser)


def list_grid() -> str:
    lines = ["conditions (groups: " + ", ".join(f"{g} ({len(v)})" for g, v in CONDITION_GROUPS.items()) + "):"]
    lines += [f"  {name:<24} {describe_condition(kwargs)}" for name, kwargs in ALL_CONDITIONS.items()]
    lines.append("rule configurations ('rules' = all):")
    lines += [f"  {name:<24} {spec}" for name, spec in RULE_CONFIGURATIONS.items()]
    return "\n".join(lines)


def _endpoint_for(spec: str, args: argparse.Namespace):
    """An LLM spec's Endpoint: the command line's endpoint options, then the spec's own."""
    from llm_mesa.llm.endpoint import endpoint_from_args

    _, kwargs = parse_policy_spec(spec)
    ns = argparse.Namespace(**vars(args))
    if "base_url" in kwargs:
        ns.base_url = str(kwargs["base_url"])
    if "model" in kwargs:
        ns.model = str(kwargs["model"])
    base = endpoint_from_args(ns)
    rest = ",".join(f"{k}={v}" for k, v in kwargs.items() if k not in ("base_url", "model"))
    return llm_endpoint("llm" + (":" + rest if rest else ""), base)


def build_policies(args: argparse.Namespace) -> dict[str, Any]:
    """Labels -> rule specs or Endpoints (LLM specs resolved against the endpoint options)."""
    policies: dict[str, Any] = {}
    for label, target in resolve_policies(args.policies).items():
        if parse_policy_spec(target)[0] != "llm":
            policies[label] = target
            continue
        endpoint = _endpoint_for(target, args)
        if "model" not in parse_policy_spec(target)[1]:  # name the model the options gave
            label = "llm:model=" + endpoint.model + label[len("llm"):].replace(":", ",", 1)
        policies[label] = endpoint
    return policies


class ProgressPrinter:
    """One line per finished game at most every ``interval`` seconds, and the last one."""

    def __init__(self, interval: float = 2.0, stream=sys.stdout) -> None:
        self.interval = interval
        self.stream = stream
        self.started = time.perf_counter()
        self.last = 0.0
        self.first_done: int | None = None

    def __call__(self, done: int, total: int, row: dict[str, Any]) -> None:
        now = time.perf_counter()
        if self.first_done is None:
            self.first_done = done - 1
        if now - self.last < self.interval and done < total:
            return
        self.last = now
        played = done - self.first_done
        rate = played / max(now - self.started, 1e-9)
        eta = (total - done) / rate if rate > 0 else float("nan")
        outcome = f"consensus on {row['winner']}" if row["consensus"] else "no consensus"
        print(f"[{done:>6}/{total}] {row['condition']} | {row['policy']} | seed {row['seed']}: "
              f"{outcome} after {row['rounds']} rounds   {rate:.2f} games/s, ETA {_duration(eta)}",
              file=self.stream, flush=True)


def _duration(seconds: float) -> str:
    if seconds != seconds:
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else \
        f"{seconds // 60}m{seconds % 60:02d}s"


def _warn_if_capped(policies: dict[str, Any], args: argparse.Namespace) -> None:
    """Say when the endpoint's concurrency limit, not the games in flight, bounds the calls."""
    from llm_mesa.study_conditions import resolve_conditions

    endpoints = [p for p in policies.values() if not isinstance(p, str)]
    if not endpoints or args.games_in_flight == 1:
        return
    largest = max(kwargs.get("n", 36) for kwargs in resolve_conditions(args.conditions).values())
    wanted = args.games_in_flight * largest
    limit = min(ep.concurrency for ep in endpoints)
    if limit < wanted:
        print(f"note: --concurrency {limit} caps the calls in flight below games in flight x agents "
              f"({args.games_in_flight} x {largest} = {wanted}); raise it if the server can take more",
              file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    if args.list:
        print(list_grid())
        return 0
    if not args.out:
        raise SweepError("no output given; pass --out DIR (a new or earlier sweep's directory) or --out FILE.parquet")
    options = {k: v for k, v in (("max_rounds", args.max_rounds),
                                 ("baseline_permutations", args.baseline_permutations)) if v is not None}
    tables = [t.strip() for t in args.tables.split(",") if t.strip()]
    policies = build_policies(args)
    _warn_if_capped(policies, args)
    result = run_sweep(
        args.conditions, policies, args.seeds, args.out, processes=args.processes,
        games_in_flight=args.games_in_flight, batch_size=args.batch_size, model_options=options,
        tables=tables, store=args.store, store_mode=args.store_mode,
        progress=None if args.quiet else ProgressPrinter(), command=sys.argv,
    )
    print(f"{result.played} games played, {result.skipped} already present, in {_duration(result.wall_s)}; "
          f"results in {result.out}")
    results = result.results
    print("consensus (successes / games):")
    print(format_consensus_table(consensus_table(results, result.conditions, result.policies)))
    if not results.empty and "invalid" in results and results["invalid"].any():
        print(f"note: {int(results['invalid'].sum())} game(s) marked invalid (too many failed LLM decisions)")
    return 0


__all__ = ["configure", "run", "build_policies", "list_grid"]


if __name__ == "__main__":
    from llm_mesa.cli import main

    sys.exit(main(["sweep", *sys.argv[1:]]))
