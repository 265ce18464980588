"""Run a sweep of any game: conditions x axes x policies x seeds, resumable.

Examples:
  llm-mesa sweep experiments/FILE.toml --out runs/study       # a study written down in a file
  llm-mesa sweep experiments/FILE.toml --dry-run --price 0.1,0.3
  llm-mesa sweep --game GAME --list                            # its conditions, policies, tables, parameters
  llm-mesa sweep --game GAME --conditions study --policies rules --seeds 30 --out runs/rules --processes 2
  llm-mesa sweep --game GAME --set NAME=V --set OTHER=V1,V2 --policies 'SPEC;SPEC' --seeds 1-10 --out runs/x.parquet
  llm-mesa sweep --game GAME --policies 'llm:model=qwen2.5-3b' --base-url http://127.0.0.1:8000/v1 \\
      --temperature 0.7 --seeds 30 --out runs/qwen3b --games-in-flight 30

With one game installed it is the default; with several, --game (or the file's
game) says which. Each finished game is appended to --out at once; rerun the same
command to resume (games already present are skipped; recorded LLM calls are
replayed, not paid twice). LLM calls are recorded to OUT/calls.sqlite unless --store
FILE says where; every command's recording options work here too: --record FILE
(= --store FILE), --no-record (= --store-mode off), --replay FILE [--replay-fill]
(= --store FILE --store-mode replay [replay-fill]).
Policies are separated by ';' (specs contain commas): configuration names (see
--list), a group such as 'rules', registry specs NAME[:k=v,...], or
'llm[:model=...,temperature=...]' on top of the endpoint options.
--set NAME=V fixes any parameter of the game for every game of the sweep; --set
NAME=V1,V2 makes it an axis crossed with --conditions (--set policy=..., or the
name the game gives its policy, is the same as --policies).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llm_mesa import declared
from llm_mesa.games import Game
from llm_mesa.llm.endpoint import ENDPOINT_OPTIONS, add_endpoint_arguments, endpoint_with_options, shared_concurrency
from llm_mesa.llm.recording import add_recording_arguments, recording_from_args, recording_requested
from llm_mesa.policy import parse_policy_spec
from llm_mesa.registry import default_game, game_argument, game_names
from llm_mesa.sweep.breaker import check_finished, closing_line
from llm_mesa.sweep.columns import failed_decisions
from llm_mesa.sweep.engine import BudgetReached, play_sweep
from llm_mesa.sweep.experiment import MAX_REPETITIONS, ExperimentError, load_experiment
from llm_mesa.sweep.grid import POPULATION_SEPARATOR, population_parts, resolve_policies
from llm_mesa.sweep.output import SweepError
from llm_mesa.sweep.progress import SweepProgress
from llm_mesa.sweep.spec import STORE_MODES, Execution, SweepSpec

#: execution options of the command line and the experiment file's [execution] keys
EXECUTION_OPTIONS = ("processes", "games_in_flight", "batch_size", "executor")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("experiment", nargs="?", metavar="FILE",
                        help="an experiment file (experiments/*.toml): the study's grid, seeds, endpoint and budget; "
                             "the options below then only override its endpoint, policies, repetitions and execution")
    grid = parser.add_argument_group("grid")
    names = game_names(warn=True)  # the entry points left out, each in one warning line
    grid.add_argument("--game", default=None, type=game_argument, metavar="{" + ",".join(names) + "}",
                      help="the game to sweep" + (f" (default {names[0]}, the only one installed)" if len(names) == 1
                                                  else "; required: several games are installed"))
    grid.add_argument("--conditions", default=None,
                      help="a group or condition names of the game, comma-separated (see --list; default: "
                           "the game's 'study' group if it has one, else one condition of defaults)")
    grid.add_argument("--set", dest="axes", action="append", default=[], metavar="NAME=V[,V2...]",
                      help="fix a game parameter (one value) or make it an axis of the grid (several; repeatable), "
                           "e.g. --set NAME=60 --set OTHER=12,24; every parameter the game defines (see --list)")
    grid.add_argument("--policies", default=None,
                      help="';'-separated configuration names, a group ('rules'), or policy specs (default rules)")
    grid.add_argument("--seeds", default=None, help="a count (30 = seeds 0..29), a range (1-30) or a list (1,5,9); "
                                                    "default 30")
    grid.add_argument("--repetitions", type=int, help="with FILE: games per cell instead of the file's (e.g. a quick cut)")
    grid.add_argument("--list", action="store_true", help="list the game's conditions, configurations and parameters")
    run = parser.add_argument_group("execution and output")
    run.add_argument("--out", metavar="DIR|FILE.parquet", help="results: a dataset directory, or one .parquet file")
    run.add_argument("--processes", type=int, default=None, help="worker processes (rule sweeps; default 1)")
    run.add_argument("--executor", default=None, metavar="WHERE",
                     help="where games are played: local (default: --processes here), local-cluster:N "
                          "(a Dask cluster of N workers here) or dask://HOST:PORT (a running Dask scheduler)")
    run.add_argument("--games-in-flight", type=int, default=None,
                     help="games played at once in threads per process (LLM sweeps; default 1)")
    run.add_argument("--batch-size", type=int, help="games per task sent to a worker process (default: automatic)")
    run.add_argument("--tables", default=None, help="per-game tables to keep too, comma-separated (see --list)")
    run.add_argument("--store", metavar="FILE", help="SQLite file recording LLM calls (default OUT/calls.sqlite)")
    run.add_argument("--store-mode", choices=STORE_MODES, default=None,
                     help="auto: record, and replay-fill when resuming (default auto)")
    run.add_argument("--quiet", action="store_true", help="no progress bar or lines, only the final table")
    run.add_argument("--extend", action="store_true",
                     help="add conditions, policies or seeds to an existing sweep's directory (else refused)")
    run.add_argument("--max-tokens", type=float, help="budget: stop (resumably) once the sweep has used this many tokens")
    run.add_argument("--max-cost", type=float, help="budget: stop (resumably) once the sweep has cost this much (needs --price)")
    run.add_argument("--dry-run", action="store_true",
                     help="contact nothing: print the number of games and estimates of calls, tokens, cost and time")
    run.add_argument("--latency", type=positive_seconds, default=1.0,
                     help="with --dry-run: seconds one LLM call takes, for the time estimate (default 1)")
    add_endpoint_arguments(parser, unset=True)
    add_recording_arguments(parser, default_shown="OUT/calls.sqlite; aliases of --store and --store-mode")


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0 (a latency of nan or inf times nothing)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"{text} must be a finite number of seconds > 0")
    return value


def list_grid(game: Game) -> str:
    design = game.design
    lines = [f"{game.name} conditions (groups: "
             + (", ".join(f"{g} ({len(v)})" for g, v in design.groups.items()) or "none") + "):"]
    lines += [f"  {name:<24} {declared.describe(game, kwargs)}" for name, kwargs in design.conditions.items()] or \
        ["  (none: --set NAME=V1,V2 makes the grid)"]
    for group, configurations in declared.policy_groups(game).items():
        lines.append(f"{group} configurations ('{group}' = all):")
        lines += [f"  {name:<24} {spec}" for name, spec in configurations.items()]
    lines.append("tables (--tables):")
    lines += [f"  {t.name:<24} {t.doc}" for t in game.tables] or ["  (none: the summary row only)"]
    lines.append("parameters (--set NAME=V or NAME=V1,V2):")
    lines += [f"  {p.name:<24} {p.help} (default {p.default})" for p in game.parameters if p.sweep]
    return "\n".join(lines)


def endpoint_values(game: Game, experiment: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Endpoint field -> value: the game's study defaults, then the file's [llm], then the command line."""
    given = {o.name: o.parse(getattr(args, o.dest)) for o in ENDPOINT_OPTIONS if getattr(args, o.dest, None) is not None}
    if not getattr(args, "compact_json", False):
        given.pop("compact_json", None)
    return {**game.llm.endpoint_defaults, **(experiment.llm if experiment is not None else {}), **given}


def build_policies(game: Game, selection: str | Mapping[str, str], values: Mapping[str, Any]) -> dict[str, Any]:
    """Labels -> rule specs or Endpoints (LLM specs laid over the endpoint values; a spec's own options win)."""

    def endpoint(spec: str):
        options = parse_policy_spec(spec)[1]
        base = {k: v for k, v in values.items() if k not in ("base_url", "model")}
        return endpoint_with_options(None, {**{k: values[k] for k in ("base_url", "model") if k in values},
                                            **options}, f"--policies {spec!r}", extra=base)

    policies: dict[str, Any] = {}
    for label, target in resolve_policies(game, selection).items():
        if isinstance(target, str) and POPULATION_SEPARATOR in target:  # a mixed population: each part its own
            policies[label] = [endpoint(p) if parse_policy_spec(p)[0] == "llm" else p for p in population_parts(target)]
            continue
        if parse_policy_spec(target)[0] != "llm":
            policies[label] = target
            continue
        ep = endpoint(target)
        if "model" not in parse_policy_spec(target)[1]:  # name the model the options gave
            label = "llm:model=" + ep.model + label[len("llm"):].replace(":", ",", 1)
        policies[label] = ep
    return policies


def _duration(seconds: float) -> str:
    if seconds != seconds:
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else \
        f"{seconds // 60}m{seconds % 60:02d}s"


def _warn_if_capped(spec: SweepSpec) -> None:
    """Say when the endpoint's concurrency limit, not the games in flight, bounds the calls."""
    endpoints = [e for ep in spec.endpoints.values() for e in getattr(ep, "endpoints", (ep,))]
    in_flight = spec.execution.games_in_flight
    if not endpoints or in_flight == 1:
        return
    per_round = [est.calls_per_round for parameters in spec.conditions.values()
                 if (est := declared.estimate(spec.game, parameters, endpoints[0])) is not None]
    if not per_round:
        return
    wanted = int(in_flight * max(per_round))
    limit = shared_concurrency(ep.concurrency for ep in endpoints)
    if limit != "auto" and limit < wanted:  # auto grows to what the server takes
        print(f"note: --concurrency {limit} caps the calls in flight below games in flight x calls a round "
              f"({in_flight} x {max(per_round):g} = {wanted}); raise it if the server can take more", file=sys.stderr)


def _axes_and_fixed(game: Game, texts: list[str]) -> tuple[list[str], dict[str, Any], list[str]]:
    """``--set`` texts: axes (several values), fixed parameters (one value) and policies (``--set policy=...``)."""
    axes, fixed, policies = [], {}, []
    for text in texts:
        name, _, values = text.partition("=")
        name = name.strip().replace("-", "_")
        if name in ("policy", game.policies.parameter):
            policies += [v for v in values.split(",") if v.strip()]
            continue
        parsed = game.parameters.parse_axis(text)[1]
        if len(parsed) == 1:
            fixed[name] = parsed[0]
        else:
            axes.append(text)
    return axes, fixed, policies


def _recording(args: argparse.Namespace) -> tuple[Path | None, str]:
    """``--store``/``--store-mode``, with every command's ``--record``/``--no-record``/``--replay`` as aliases.

    ``--record FILE`` is ``--store FILE``; ``--no-record`` is ``--store-mode off``;
    ``--replay FILE [--replay-fill]`` is ``--store FILE --store-mode replay`` (``replay-fill``).
    A contradiction with ``--store``/``--store-mode`` given too is refused.
    """
    store, store_mode = args.store, args.store_mode or "auto"
    if not recording_requested(args):
        return (None if store is None else Path(store)), store_mode
    path, mode = recording_from_args(args, default=None)
    option = "--no-record" if mode == "off" else "--record" if mode == "record" else "--replay"
    allowed = ("auto", "record") if mode == "record" else ("auto", mode)
    if store_mode not in allowed:
        raise SweepError(f"--store-mode {store_mode} contradicts {option}; give one of them")
    if path is None:
        if store is not None:
            raise SweepError("--no-record excludes --store; give one of them")
    elif store is not None and Path(store) != Path(path):
        raise SweepError(f"--store {store} and {option} {path} name different files; give one")
    else:
        store = path
    return (None if store is None else Path(store)), (store_mode if mode == "record" else mode)


def spec_from_args(args: argparse.Namespace) -> SweepSpec:
    """The sweep the command line (and its experiment file) describes; ``args`` is only read."""
    store, store_mode = _recording(args)
    experiment = None
    if args.experiment:
        several = [text for text in args.axes if "," in text.partition("=")[2]]
        for option, value in (("--conditions", args.conditions), ("--set NAME=V1,V2", several), ("--seeds", args.seeds)):
            if value:
                raise ExperimentError(f"{option} and an experiment file exclude each other: the file defines the "
                                      "grid; edit it (or override with --repetitions, --set NAME=V, --policies and "
                                      "the endpoint options)")
        experiment = load_experiment(args.experiment)
        if args.game is not None and args.game != experiment.game.name:
            raise ExperimentError(f"--game {args.game} contradicts the file's game = \"{experiment.game.name}\"")
        if args.repetitions is not None:
            if not 1 <= args.repetitions <= MAX_REPETITIONS:
                raise ExperimentError(f"--repetitions must be a whole number from 1 to {MAX_REPETITIONS:,} "
                                      f"(got {args.repetitions:,})")
            experiment.repetitions = args.repetitions
    elif args.repetitions is not None:
        raise SweepError("--repetitions applies to an experiment file; without one, give --seeds")
    game = experiment.game if experiment is not None else default_game(args.game)
    axes, fixed, set_policies = _axes_and_fixed(game, args.axes)
    selection: Any = None
    if args.policies is not None or set_policies:
        selection = ";".join([*([args.policies] if args.policies is not None else []), *set_policies])
    if selection is None:
        selection = experiment.policies if experiment is not None else "rules"
    values = endpoint_values(game, experiment, args)
    policies = build_policies(game, selection, values)
    saved = experiment.execution if experiment is not None else {}
    execution = Execution(**{k: getattr(args, k) if getattr(args, k) is not None else saved[k]
                             for k in EXECUTION_OPTIONS if getattr(args, k) is not None or k in saved})
    tables = [t.strip() for t in args.tables.split(",") if t.strip()] if args.tables is not None else \
        (experiment.tables if experiment is not None else [])
    budget = {**(experiment.budget if experiment is not None else {}),
              **{k: getattr(args, k) for k in ("max_tokens", "max_cost") if getattr(args, k) is not None}}
    if experiment is not None:  # one value set on the command line overrides the file's, seeds stay the file's
        seeds: Any = experiment.seeds()
        conditions: Any = {name: {**parameters, **fixed} for name, parameters in experiment.conditions.items()}
        fixed = {}
    else:
        conditions = args.conditions
        if conditions is None and not axes and game.design.groups.get("study"):
            conditions = "study"
        seeds = args.seeds or "30"
    out = args.out
    if not out:
        if not args.dry_run:
            raise SweepError("no output given; pass --out DIR (a new or earlier sweep's directory) or --out FILE.parquet")
        out = "."
    return SweepSpec.of(conditions, policies, seeds, out, game=game, axes=axes, fixed=fixed, tables=tables,
                        execution=execution, store=store, store_mode=store_mode, budget=budget,
                        experiment=None if experiment is None else experiment.record(), extend=args.extend,
                        command=tuple(getattr(args, "_argv", None) or sys.argv[1:]))


def run(args: argparse.Namespace) -> int:
    if args.list:
        if args.experiment:
            raise ExperimentError("--list and an experiment file exclude each other: --list shows a game's grid")
        print(list_grid(default_game(args.game)))
        return 0
    spec = spec_from_args(args)
    if args.dry_run:
        print(dry_run(spec, args.latency))
        return 0
    _warn_if_capped(spec)
    progress = None if args.quiet else SweepProgress(describe=lambda row: declared.outcome(spec.game, row))
    try:
        result = play_sweep(spec, progress)
    except BudgetReached:
        if progress is not None:
            progress.close()
        raise
    finally:
        if progress is not None:
            progress.close()
    failed = failed_decisions(result.results)
    said = f"; {failed:,} failed LLM decisions" if spec.endpoints or failed else ""
    print(f"{result.played} games played, {result.skipped} already present, in {_duration(result.wall_s)}{said}; "
          f"results in {result.out}")
    print(result.headline())
    invalid = closing_line(result.results)
    if invalid is not None:
        print(invalid)  # the last line says how many games are invalid ...
    check_finished(result.results)  # ... and every game invalid is exit 3
    return 0


def dry_run(spec: SweepSpec, latency_s: float) -> str:
    """The grid multiplied out, priced and timed; nothing is contacted. A grid the sweep would refuse
    (a condition the game cannot build) is refused here too, in the same line."""
    from llm_mesa.sweep.dry_run import estimate_sweep, format_estimate
    from llm_mesa.sweep.engine import check_conditions

    check_conditions(spec.game, spec.conditions, spec.seeds)

    in_flight = spec.execution.games_in_flight
    estimate = estimate_sweep(spec.game, spec.conditions, spec.seeds, spec.policies, latency_s=latency_s,
                              games_in_flight=in_flight)
    return format_estimate(estimate, latency_s=latency_s, games_in_flight=in_flight,
                           concurrency=shared_concurrency(ep.concurrency for ep in spec.endpoints.values()),
                           game_name=spec.game.name)


__all__ = ["build_policies", "configure", "dry_run", "list_grid", "run", "spec_from_args"]


if __name__ == "__main__":
    from llm_mesa.cli import main

    sys.exit(main(["sweep", *sys.argv[1:]]))
