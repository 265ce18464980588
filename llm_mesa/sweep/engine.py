"""The sweep engine: every (condition x policy x seed) game of any game, resumable.

Why a runner of our own beside Mesa's ``batch_run`` (which works on the models
unchanged, see ``examples/batch_run_consensus.py``):

* **Nothing is lost.** Each finished game's rows are appended to the output at
  once (``output.SweepOutput``), so an interrupted sweep loses at most the games
  in flight; a rerun with the same output skips every game already present
  (resume by key: condition, policy, seed).
* **LLM sweeps need games in flight, not processes.** ``games_in_flight`` plays
  that many games in threads of one process; each game's round gathers its LLM
  calls on the process's shared event loop (``llm_mesa.llm.runtime``), so 30
  games of 36 agents keep up to 1,080 calls in flight against one endpoint
  (bounded by the endpoint's ``concurrency``). Every call is recorded to one
  ``ResponseStore``; a resumed sweep replays what it already paid for.
* **Rule sweeps play games together.** A game plays a batch at once
  (``Game.play_batch``, chunks of ``Game.batch_size``: consensus rule games run as
  arrays); ``processes`` spreads batches over a spawn-started process pool.

The engine knows no game: it asks the game (``llm_mesa.games.Game``, found by
name) to check its parameters, to play one game from parameters and a seed,
and for its headline table.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from llm_mesa.games import Game, GameResult, get_game
from llm_mesa.run_output import package_versions

from .execution import (
    GameTask,
    StoreOptions,
    check_executor,
    close_process_stores,
    limit_blas_threads,
    run_here,
    run_in_processes,
    run_on_dask,
)
from .grid import (
    build_conditions,
    check_grid_unchanged,
    check_same_grid,
    grid_policy_entry,
    plan_policy,
    resolve_policies,
    resolve_seeds,
)
from .output import KEY, SweepError, SweepOutput

STORE_MODES = ("auto", "record", "replay", "replay-fill", "off")
#: exit status of a sweep stopped by its budget (resumable: rerun with a larger budget)
BUDGET_STATUS = 4


class BudgetReached(SweepError):
    """The sweep's token or cost budget is spent; the games played so far are kept."""


# --- the runner ----------------------------------------------------------------------


@dataclass
class SweepResult:
    """What ``run_sweep`` did: the complete results table and its counts."""

    game: Game
    results: pd.DataFrame
    played: int
    skipped: int
    out: Path
    wall_s: float
    conditions: list[str]
    policies: list[str]

    def headline(self) -> str:
        return self.game.headline(self.results, self.conditions, self.policies)


Progress = Callable[[int, int, dict[str, Any]], None]


def run_sweep(
    conditions: str | Sequence[str] | Mapping[str, Mapping[str, Any]] | None,
    policies: str | Sequence[str] | Mapping[str, Any],
    seeds: int | str | Iterable[int] | Mapping[str, Sequence[int]],
    out: str | os.PathLike[str],
    processes: int = 1,
    games_in_flight: int = 1,
    *,
    game: str | Game = "consensus",
    axes: Sequence[str] | Mapping[str, Sequence[Any]] = (),
    batch_size: int | None = None,
    model_options: Mapping[str, Any] | None = None,
    tables: Sequence[str] = (),
    endpoint: Any = None,
    store: str | os.PathLike[str] | None = None,
    store_mode: str = "auto",
    check_endpoints: bool = True,
    compact: bool = True,
    blas_threads: int | None = 1,
    progress: Progress | None = None,
    command: Sequence[str] | None = None,
    budget: Mapping[str, float] | None = None,
    experiment: Mapping[str, Any] | None = None,
    extend: bool = False,
    executor: str = "local",
) -> SweepResult:
    """Play every (condition x policy x seed) game not yet in ``out``; return all results.

    Args:
        conditions: ``{name: game parameters}``, names of the game's conditions
            or a group (``"study"``), or None for one condition of defaults.
        policies: ``{label: spec or Endpoint}``, or specs / configuration names
            (a group such as ``"rules"``; ``;`` separates in a string). LLM specs
            (``llm:base_url=...,model=...``) build on ``endpoint``.
        seeds: a count (0..K-1), ``"A-B"``, or seeds, the same for every condition; or
            ``{condition: seeds}`` (an experiment's seeds derived per condition).
        out: a dataset directory, or a file ending in ``.parquet``.
        processes: worker processes (spawn); games go to them in batches of
            ``batch_size`` (default: about four batches per process, at most 25 games).
        games_in_flight: games played at once in threads of each process
            (what LLM sweeps need: their calls overlap on one event loop).
        game: the game's name (``consensus``, ``naming``) or a ``Game``.
        axes: ``NAME=V1,V2`` texts (or ``{name: values}``) crossed with every condition.
        model_options: parameters added to every condition (e.g. ``max_rounds``).
        tables: per-game tables to save too (the game's ``tables``; the consensus
            game's ``agents`` bring its ``edges``).
        endpoint: the base ``Endpoint`` of LLM specs that give no URL.
        store: the SQLite file LLM calls are recorded to (default ``out/calls.sqlite``).
        store_mode: ``auto`` (record; ``replay-fill`` when resuming into an existing
            store, so a crashed sweep never pays twice), ``record``, ``replay``,
            ``replay-fill`` or ``off``.
        check_endpoints: check each LLM endpoint answers before the first game.
        compact: merge the part files into one per table at the end.
        blas_threads: BLAS threads per process while games run (None: leave as is);
            see ``limit_blas_threads``.
        progress: called as ``progress(done, total, row)`` after each finished game.
        budget: ``max_tokens`` and/or ``max_cost`` over the whole sweep (games already
            present count): once reached, no new game starts, the games in flight
            finish and are kept, and ``BudgetReached`` is raised (rerun to resume).
        experiment: what the experiment file said (written to the manifest).
        extend: allow a grid other than the one ``out`` was started with (its
            conditions, policies and seeds are added to the sweep's); without it a
            different grid is refused, so two studies never mix in one directory.
    """
    started = time.perf_counter()
    game = get_game(game) if isinstance(game, str) else game
    executor = check_executor(executor)
    if processes < 1 or games_in_flight < 1:
        raise SweepError("processes and games in flight must each be at least 1")
    if batch_size is not None and batch_size < 1:
        raise SweepError(f"batch size must be at least 1 (got {batch_size})")
    bad_tables = sorted(set(tables) - set(game.tables))
    if bad_tables:
        raise SweepError(f"unknown table(s) {', '.join(bad_tables)} of the {game.name} game; "
                         f"choose among: {', '.join(game.tables)}")
    if store_mode not in STORE_MODES:
        raise SweepError(f"unknown store mode {store_mode!r}; choose one of: {', '.join(STORE_MODES)}")
    condition_parameters = build_conditions(game, conditions, axes, model_options)
    plan = {label: plan_policy(game, label, target, endpoint)
            for label, target in resolve_policies(game, policies).items()}
    if isinstance(seeds, Mapping):
        missing = sorted(set(condition_parameters) - set(seeds))
        if missing:
            raise SweepError(f"no seeds given for condition(s) {', '.join(missing)}")
        seeds_of = {c: resolve_seeds(list(seeds[c])) for c in condition_parameters}
    else:
        shared = resolve_seeds(seeds)
        seeds_of = {c: shared for c in condition_parameters}
    if "agents" in tables and "edges" in game.tables:  # per-agent rows are read against the network
        tables = (*tables, "edges")
    tables = tuple(dict.fromkeys(tables))

    output = SweepOutput(out)
    with limit_blas_threads(blas_threads):
        _check_conditions(game, condition_parameters, seeds_of)
    endpoints = {label: ep for label, (_, ep) in plan.items() if ep is not None}
    store_options = None
    if endpoints:
        store_path = Path(store) if store is not None else output.default_store
        mode = store_mode
        if mode == "auto":
            mode = "replay-fill" if store_path.exists() else "record"
        if mode == "replay" and not store_path.exists():
            raise SweepError(f"replay store {store_path} does not exist; record the sweep first (store mode record)")
        store_options = StoreOptions(None if mode == "off" else str(store_path), mode)
        if check_endpoints and mode != "replay":
            from llm_mesa.llm.client import preflight

            for ep in dict.fromkeys(e for each in endpoints.values() for e in getattr(each, "endpoints", (each,))):
                preflight(ep)

    grid = {
        "game": game.name,
        "conditions": condition_parameters,
        "policies": {label: grid_policy_entry(spec, ep) for label, (spec, ep) in plan.items()},
        "seeds": seeds_of if isinstance(seeds, Mapping) else next(iter(seeds_of.values())),
        "model_options": dict(model_options or {}),
    }
    if not output.single_file:
        output.out.mkdir(exist_ok=True)
    else:
        output.root.mkdir(exist_ok=True)
    with output.lock():
        output.recover()  # a kill's leftovers: an unfinished compaction, uncommitted parts, temporary files
        previous = output.previous_manifest()
        check_grid_unchanged(previous, grid)
        grid = check_same_grid(previous, grid, extend)

        done_keys = output.keys()
        tasks = [GameTask(game.name, c, label, seed, condition_parameters[c], spec, ep)
                 for c in condition_parameters for label, (spec, ep) in plan.items() for seed in seeds_of[c]
                 if (c, label, seed) not in done_keys]
        total = sum(len(seeds_of[c]) for c in condition_parameters) * len(plan)
        skipped = total - len(tasks)
        spent = {"tokens": 0.0, "cost": 0.0}
        if budget and done_keys:
            present = output.read("games")
            for column, key in (("prompt_tokens", "tokens"), ("completion_tokens", "tokens"), ("cost", "cost")):
                if column in present:
                    spent[key] += float(pd.to_numeric(present[column], errors="coerce").fillna(0).sum())
        _check_budget(budget, spent)
        output.write_manifest({
            "kind": f"{game.name}-sweep",
            "experiment": dict(experiment) if experiment else None,
            "budget": dict(budget) if budget else None,
            "game": game.name,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": list(command) if command is not None else sys.argv,
            "versions": package_versions(),
            "grid": grid,
            "execution": {"processes": processes, "games_in_flight": games_in_flight, "batch_size": batch_size,
                          "tables": list(tables)},
            "endpoints": {label: ep.manifest() for label, ep in endpoints.items()},
            "store": None if store_options is None else {"path": store_options.path, "mode": store_options.mode},
            "games_total": total,
            "games_present_at_start": skipped,
            "previous_starts": ([*previous.get("previous_starts", []), previous.get("created")] if previous else []),
        })

        played = 0

        def finished(results: Sequence[GameResult]) -> None:
            nonlocal played
            output.append(results)
            for result in results:
                played += 1
                spent["tokens"] += (result.row.get("prompt_tokens") or 0) + (result.row.get("completion_tokens") or 0)
                spent["cost"] += result.row.get("cost") or 0.0
                if progress is not None:
                    progress(skipped + played, total, result.row)
            _check_budget(budget, spent, played, total - skipped)

        try:
            with limit_blas_threads(blas_threads):
                if executor != "local":
                    run_on_dask(tasks, store_options, tables, games_in_flight, executor, batch_size, blas_threads,
                                finished)
                elif processes == 1:
                    run_here(tasks, store_options, tables, games_in_flight, finished, batch_size)
                else:
                    run_in_processes(tasks, store_options, tables, games_in_flight, processes, batch_size,
                                      blas_threads, finished)
        finally:
            if processes == 1:
                close_process_stores()
        if compact:
            output.compact()
    return SweepResult(game, output.read("games"), played, skipped, output.out, time.perf_counter() - started,
                       list(condition_parameters), list(plan))


def _check_budget(budget: Mapping[str, float] | None, spent: Mapping[str, float], played: int = 0,
                  to_play: int | None = None) -> None:
    """Raise ``BudgetReached`` once the tokens or the cost reach the budget."""
    if not budget:
        return
    for key, used, what in (("max_tokens", spent["tokens"], "tokens"), ("max_cost", spent["cost"], "cost")):
        limit = budget.get(key)
        if limit is not None and used >= limit:
            where = f"after {played} of {to_play} games" if to_play is not None else "before any game"
            raise BudgetReached(f"budget reached: {used:,.6g} {what} of {limit:,.6g} ({where}); the games played are "
                                "kept: rerun the same command with a larger budget to resume")


def _check_conditions(game: Game, condition_parameters: dict[str, dict[str, Any]],
                      seeds_of: Mapping[str, Sequence[int]]) -> None:
    """Build each condition's game once with a rule policy: bad input fails before any game."""
    for name, parameters in condition_parameters.items():
        try:
            game.check(parameters, seeds_of[name][0])
        except TypeError as exc:
            raise SweepError(f"condition {name!r}: {exc}; use the {game.name} game's parameters") from None
        except ValueError as exc:
            if type(exc).__module__.startswith(("llm_mesa", "models")):
                raise type(exc)(f"condition {name!r}: {exc}") from None
            raise SweepError(f"condition {name!r}: {exc}") from None


def read_sweep(out: str | os.PathLike[str], table: str = "games") -> pd.DataFrame:
    """A sweep's results (``games``) or one of its per-game tables, deduplicated."""
    if not Path(out).exists() and not Path(str(out) + ".parts").exists():
        raise SweepError(f"no sweep output at {str(out)!r}; run `llm-mesa sweep --out {out}` first")
    return SweepOutput(out).read(table)


__all__ = ["BUDGET_STATUS", "BudgetReached", "run_sweep", "read_sweep", "SweepResult", "SweepError", "SweepOutput",
           "KEY", "STORE_MODES"]
