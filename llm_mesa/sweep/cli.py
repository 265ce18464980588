"""Run a sweep of any game: conditions x axes x policies x seeds, resumable.

Examples:
  llm-mesa sweep experiments/consensus-study-rules.toml --out runs/rules
  llm-mesa sweep experiments/consensus-study.toml --dry-run --price 0.1,0.3
  llm-mesa sweep --conditions study --policies rules --seeds 30 --out runs/rules --processes 2
  llm-mesa sweep --game naming --set n=12,24 --set alpha=0.5,0.9 --set speaker=echo --seeds 3 --out runs/sign
  llm-mesa sweep --conditions ba-local,ba-global --policies 'mi-0.2;voter' --seeds 1-10 --out runs/ba.parquet
  llm-mesa sweep --conditions study --policies 'llm:model=qwen2.5-3b' --base-url http://127.0.0.1:8000/v1 \\
      --temperature 0.7 --seeds 30 --out runs/qwen3b --games-in-flight 30 --concurrency 1200
  llm-mesa sweep --list

Each finished game is appended to --out at once; rerun the same command to resume
(games already present are skipped; recorded LLM calls are replayed, not paid twice).
LLM calls are recorded to OUT/calls.sqlite unless --store FILE says where; every
command's recording options work here too: --record FILE (= --store FILE), --no-record
(= --store-mode off), --replay FILE [--replay-fill] (= --store FILE --store-mode replay
[replay-fill]).
Policies are separated by ';' (specs contain commas): configuration names
(see --list), 'rules' for all of the game's rule configurations, registry specs
NAME[:k=v,...], or 'llm[:model=...,temperature=...]' on top of the endpoint options.
--set NAME=V1,V2 makes any parameter of the game an axis, crossed with --conditions
(--set policy=... or, in the naming game, --set speaker=... is the same as --policies).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from llm_mesa.games import Game, game_names, get_game
from llm_mesa.llm.endpoint import add_endpoint_arguments
from llm_mesa.llm.recording import add_recording_arguments, recording_from_args, recording_requested
from llm_mesa.policy import parse_policy_spec
from llm_mesa.sweep.engine import BUDGET_STATUS, STORE_MODES, BudgetReached, run_sweep
from llm_mesa.sweep.grid import resolve_policies
from llm_mesa.sweep.output import SweepError
from llm_mesa.sweep.progress import SweepProgress


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("experiment", nargs="?", metavar="FILE",
                        help="an experiment file (experiments/*.toml): the study's grid, seeds, endpoint and budget; "
                             "the options below then only override its endpoint, policies, repetitions and execution")
    grid = parser.add_argument_group("grid")
    grid.add_argument("--game", default=None, choices=game_names(), help="the game to sweep (default consensus)")
    grid.add_argument("--conditions", default=None,
                      help="a group or condition names of the game, comma-separated (see --list; default: "
                           "the study's conditions, or one condition of defaults when --set is given)")
    grid.add_argument("--set", dest="axes", action="append", default=[], metavar="NAME=V1,V2",
                      help="make a game parameter an axis of the grid (repeatable), e.g. --set n=12,24")
    grid.add_argument("--policies", default=None,
                      help="';'-separated configuration names, 'rules' (all of them), or policy specs (default rules)")
    grid.add_argument("--seeds", default="30", help="a count (30 = seeds 0..29), a range (1-30) or a list (1,5,9)")
    grid.add_argument("--max-rounds", type=int, help="round limit of every game (default: the game's own)")
    grid.add_argument("--baseline-permutations", type=int,
                      help="consensus game: random recolourings for the largest-component baseline (default 1000)")
    grid.add_argument("--repetitions", type=int, help="with FILE: games per cell instead of the file's (e.g. a quick cut)")
    grid.add_argument("--list", action="store_true", help="list the game's conditions and rule configurations, then exit")
    run = parser.add_argument_group("execution and output")
    run.add_argument("--out", metavar="DIR|FILE.parquet", help="results: a dataset directory, or one .parquet file")
    run.add_argument("--processes", type=int, default=None, help="worker processes (rule sweeps; default 1)")
    run.add_argument("--executor", default=None, metavar="WHERE",
                     help="where games are played: local (default: --processes here), local-cluster:N "
                          "(a Dask cluster of N workers here) or dask://HOST:PORT (a running Dask scheduler)")
    run.add_argument("--games-in-flight", type=int, default=None,
                     help="games played at once in threads per process (LLM sweeps; default 1)")
    run.add_argument("--batch-size", type=int, help="games per task sent to a worker process (default: automatic)")
    run.add_argument("--tables", default="", help="per-game tables to save too, comma-separated "
                     "(consensus: rounds, agents, messages, transcript, edges; naming: rounds)")
    run.add_argument("--store", metavar="FILE", help="SQLite file recording LLM calls (default OUT/calls.sqlite)")
    run.add_argument("--store-mode", choices=STORE_MODES, default="auto",
                     help="auto: record, and replay-fill when resuming (default auto)")
    run.add_argument("--quiet", action="store_true", help="no progress bar or lines, only the final table")
    run.add_argument("--extend", action="store_true",
                     help="add conditions, policies or seeds to an existing sweep's directory (else refused)")
    run.add_argument("--max-tokens", type=float, help="budget: stop (resumably) once the sweep has used this many tokens")
    run.add_argument("--max-cost", type=float, help="budget: stop (resumably) once the sweep has cost this much (needs --price)")
    run.add_argument("--dry-run", action="store_true",
                     help="contact nothing: print the number of games and estimates of calls, tokens, cost and time")
    run.add_argument("--latency", type=float, default=1.0,
                     help="with --dry-run: seconds one LLM call takes, for the time estimate (default 1)")
    add_endpoint_arguments(parser)
    add_recording_arguments(parser, default_shown="OUT/calls.sqlite; aliases of --store and --store-mode")


def list_grid(game: Game) -> str:
    lines = [f"{game.name} conditions (groups: "
             + ", ".join(f"{g} ({len(v)})" for g, v in game.condition_groups.items()) + "):"]
    lines += [f"  {name:<24} {game.describe(kwargs)}" for name, kwargs in game.conditions.items()]
    for group, configurations in game.policy_groups.items():
        lines.append(f"{group} configurations ('{group}' = all):")
        lines += [f"  {name:<24} {spec}" for name, spec in configurations.items()]
    lines.append("parameters (--set NAME=V1,V2):")
    lines += [f"  {p.name:<24} {p.help}" for p in game.parameters if p.sweep]
    return "\n".join(lines)


def _endpoint_for(spec: str, args: argparse.Namespace):
    """An LLM spec's Endpoint: the command line's endpoint options, then the spec's own."""
    from llm_mesa.llm.endpoint import endpoint_from_spec

    return endpoint_from_spec(parse_policy_spec(spec)[1], args, f"--policies {spec!r}")


def build_policies(game: Game, args: argparse.Namespace) -> dict[str, Any]:
    """Labels -> rule specs or Endpoints (LLM specs resolved against the endpoint options)."""
    policies: dict[str, Any] = {}
    from llm_mesa.sweep.grid import POPULATION_SEPARATOR, population_parts

    for label, target in resolve_policies(game, args.policies).items():
        if isinstance(target, str) and POPULATION_SEPARATOR in target:  # a mixed population: each part its own
            policies[label] = [_endpoint_for(p, args) if parse_policy_spec(p)[0] == "llm" else p
                               for p in population_parts(target)]
            continue
        if parse_policy_spec(target)[0] != "llm":
            policies[label] = target
            continue
        endpoint = _endpoint_for(target, args)
        if "model" not in parse_policy_spec(target)[1]:  # name the model the options gave
            label = "llm:model=" + endpoint.model + label[len("llm"):].replace(":", ",", 1)
        policies[label] = endpoint
    return policies


def _duration(seconds: float) -> str:
    if seconds != seconds:
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else \
        f"{seconds // 60}m{seconds % 60:02d}s"


def _warn_if_capped(game: Game, policies: dict[str, Any], args: argparse.Namespace) -> None:
    """Say when the endpoint's concurrency limit, not the games in flight, bounds the calls."""
    from llm_mesa.sweep.grid import build_conditions

    endpoints = [e for p in policies.values() for e in (p if isinstance(p, list) else [p]) if not isinstance(e, str)]
    if not endpoints or args.games_in_flight == 1:
        return
    conditions = build_conditions(game, args.conditions, args.axes)
    largest = max(kwargs.get("n", game.parameters["n"].default) for kwargs in conditions.values())
    wanted = args.games_in_flight * largest
    limit = min(ep.concurrency for ep in endpoints)
    if limit < wanted:
        print(f"note: --concurrency {limit} caps the calls in flight below games in flight x agents "
              f"({args.games_in_flight} x {largest} = {wanted}); raise it if the server can take more",
              file=sys.stderr)


def _split_policy_axes(game: Game, args: argparse.Namespace) -> None:
    """``--set policy=...`` (``speaker=...`` in the naming game) is ``--policies``."""
    kept = []
    for text in args.axes:
        name = text.partition("=")[0].strip()
        if name in ("policy", game.policy_parameter):
            values = text.partition("=")[2]
            args.policies = ";".join(filter(None, [args.policies, *values.split(",")]))
        else:
            kept.append(text)
    args.axes = kept


def _apply_endpoint_defaults(game: Game, args: argparse.Namespace) -> None:
    """The game's own sampling defaults (SIGN's raw completion) where the command line set none."""
    for name, value in getattr(game, "endpoint_defaults", {}).items():
        if getattr(args, name, None) in (None, "") or (name == "prompt_mode" and args.prompt_mode == "chat"
                                                        and "--prompt-mode" not in sys.argv):
            setattr(args, name, value)


def apply_recording_options(args: argparse.Namespace) -> None:
    """``--record``/``--no-record``/``--replay``/``--replay-fill`` (every command's options) as ``--store``/``--store-mode``.

    ``--record FILE`` is ``--store FILE`` (store mode auto: record, replay-fill when
    resuming); ``--no-record`` is ``--store-mode off``; ``--replay FILE [--replay-fill]``
    is ``--store FILE --store-mode replay`` (``replay-fill``). A contradiction with
    ``--store``/``--store-mode`` given too is refused.
    """
    if not recording_requested(args):
        return
    path, mode = recording_from_args(args, default=None)
    option = "--no-record" if mode == "off" else "--record" if mode == "record" else "--replay"
    allowed = ("auto", "record") if mode == "record" else ("auto", mode)
    if args.store_mode not in allowed:
        raise SweepError(f"--store-mode {args.store_mode} contradicts {option}; give one of them")
    if path is None:
        if args.store is not None:
            raise SweepError("--no-record excludes --store; give one of them")
    elif args.store is not None and Path(args.store) != Path(path):
        raise SweepError(f"--store {args.store} and {option} {path} name different files; give one")
    else:
        args.store = path
    if mode != "record":
        args.store_mode = mode


def _given(args: argparse.Namespace, option: str) -> bool:
    """Was ``--option`` written on the command line (rather than left at its default)?"""
    argv = getattr(args, "_argv", None) or sys.argv
    return any(a == option or a.startswith(option + "=") for a in argv)


#: [llm] keys of an experiment file -> the endpoint options they stand for
_LLM_OPTIONS = {"base_url": "--base-url", "model": "--model", "api_key_env": "--api-key-env",
                "temperature": "--temperature", "top_p": "--top-p", "max_tokens": "--max-tokens-per-call",
                "max_completion_tokens": "--max-completion-tokens", "seed": "--llm-seed",
                "extra_body": "--extra-body", "dialect": "--dialect", "prompt_mode": "--prompt-mode",
                "concurrency": "--concurrency", "timeout": "--timeout", "max_attempts": "--max-attempts",
                "price": "--price", "compact_json": "--compact-json"}


def _apply_experiment(args: argparse.Namespace):
    """Read FILE; its values fill every option the command line did not give."""
    from llm_mesa.sweep.experiment import ExperimentError, load_experiment

    for option in ("--conditions", "--set", "--seeds", "--list"):
        if _given(args, option):
            raise ExperimentError(f"{option} and an experiment file exclude each other: the file defines the grid; "
                                  f"edit it (or use --repetitions, --policies and the endpoint options to override)")
    experiment = load_experiment(args.experiment)
    if args.game is not None and args.game != experiment.game.name:
        raise ExperimentError(f"--game {args.game} contradicts the file's game = \"{experiment.game.name}\"")
    if args.repetitions is not None:
        if args.repetitions < 1:
            raise ExperimentError(f"--repetitions must be at least 1 (got {args.repetitions})")
        experiment.repetitions = args.repetitions
    for key, value in experiment.llm.items():
        option = _LLM_OPTIONS[key]
        if not _given(args, option):
            if key == "price":
                value = ",".join(map(str, value))
            elif key == "extra_body":
                import json

                value = json.dumps(value)
            setattr(args, option.lstrip("-").replace("-", "_"), value)
    if args.policies is None:
        args.policies = experiment.policies
    if not args.tables:
        args.tables = ",".join(experiment.tables)
    for key in ("processes", "games_in_flight", "batch_size", "executor"):
        if getattr(args, key) is None and key in experiment.execution:
            setattr(args, key, experiment.execution[key])
    for key in ("max_tokens", "max_cost"):
        if getattr(args, key) is None and key in experiment.budget:
            setattr(args, key, experiment.budget[key])
    return experiment


def _budget(args: argparse.Namespace) -> dict[str, float]:
    budget = {}
    for key in ("max_tokens", "max_cost"):
        value = getattr(args, key)
        if value is not None:
            if not (value > 0 and value != float("inf")):
                raise SweepError(f"--{key.replace('_', '-')} must be a positive finite number (got {value})")
            budget[key] = value
    return budget


def run(args: argparse.Namespace) -> int:
    apply_recording_options(args)
    experiment = _apply_experiment(args) if args.experiment else None
    game = experiment.game if experiment is not None else get_game(args.game or "consensus")
    if args.list:
        print(list_grid(game))
        return 0
    if not args.out and not args.dry_run:
        raise SweepError("no output given; pass --out DIR (a new or earlier sweep's directory) or --out FILE.parquet")
    if args.repetitions is not None and experiment is None:
        raise SweepError("--repetitions applies to an experiment file; without one, give --seeds")
    args.processes = 1 if args.processes is None else args.processes
    args.games_in_flight = 1 if args.games_in_flight is None else args.games_in_flight
    _split_policy_axes(game, args)
    if args.policies is None:
        args.policies = "rules"
    if experiment is None and args.conditions is None and not args.axes and game.condition_groups.get("study"):
        args.conditions = "study"
    _apply_endpoint_defaults(game, args)
    options = {k: v for k, v in (("max_rounds", args.max_rounds),
                                 ("baseline_permutations", args.baseline_permutations)) if v is not None}
    if "baseline_permutations" in options and "baseline_permutations" not in game.parameters:
        raise SweepError(f"--baseline-permutations applies to the consensus game, not {game.name}")
    tables = [t.strip() for t in args.tables.split(",") if t.strip()]
    budget = _budget(args)
    policies = build_policies(game, args)
    if experiment is not None:
        conditions: Any = {name: {**parameters, **options} for name, parameters in experiment.conditions.items()}
        seeds: Any = {name: experiment.seeds()[name] for name in experiment.conditions}
        options = {}
    else:
        conditions, seeds = args.conditions, args.seeds
    if args.dry_run:
        print(_dry_run(game, conditions, seeds, policies, args))
        return 0
    _warn_if_capped(game, policies, args)
    progress = None if args.quiet else SweepProgress(describe=game.outcome)
    try:
        result = run_sweep(
            conditions, policies, seeds, args.out, processes=args.processes,
            games_in_flight=args.games_in_flight, game=game, axes=args.axes, batch_size=args.batch_size,
            model_options=options, tables=tables, store=args.store, store_mode=args.store_mode, budget=budget,
            progress=progress, command=getattr(args, "_argv", None) or sys.argv,
            experiment=None if experiment is None else experiment.record(), extend=args.extend,
            executor=args.executor or "local",
        )
    except BudgetReached as stop:
        if progress is not None:
            progress.close()
        print(f"llm-mesa sweep: {stop}", file=sys.stderr)
        return BUDGET_STATUS
    finally:
        if progress is not None:
            progress.close()
    print(f"{result.played} games played, {result.skipped} already present, in {_duration(result.wall_s)}; "
          f"results in {result.out}")
    print(result.headline())
    return 0


def _dry_run(game: Game, conditions: Any, seeds: Any, policies: dict[str, Any], args: argparse.Namespace) -> str:
    """The grid multiplied out, priced and timed; nothing is contacted."""
    from collections.abc import Mapping

    from llm_mesa.sweep.dry_run import estimate_sweep, format_estimate
    from llm_mesa.sweep.grid import build_conditions, plan_policy, resolve_seeds

    built = build_conditions(game, conditions, args.axes)
    seeds_of = ({c: seeds[c] for c in built} if isinstance(seeds, Mapping)
                else dict.fromkeys(built, resolve_seeds(seeds)))
    plan = {label: plan_policy(game, label, target, None) for label, target in policies.items()}
    concurrencies = [ep.concurrency for _, ep in plan.values() if ep is not None]
    estimate = estimate_sweep(game, built, seeds_of, plan, latency_s=args.latency, games_in_flight=args.games_in_flight)
    return format_estimate(estimate, latency_s=args.latency, games_in_flight=args.games_in_flight,
                           concurrency=min(concurrencies) if concurrencies else None)


__all__ = ["configure", "run", "build_policies", "list_grid"]


if __name__ == "__main__":
    from llm_mesa.cli import main

    sys.exit(main(["sweep", *sys.argv[1:]]))
