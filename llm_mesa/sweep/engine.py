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
  (``llm_mesa.play.play_batch``, chunks of ``llm_mesa.play.batch_size``: rule games of a game on a graph may run as
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

from llm_mesa import declared, play
from llm_mesa.errors import BUDGET_REACHED, LlmMesaError, one_line
from llm_mesa.games import Game, GameResult
from llm_mesa.llm.limits import limits_in_use
from llm_mesa.prompt_templates import check_template_files, template_files
from llm_mesa.run_output import package_versions

from .breaker import CircuitBreaker
from .execution import (
    GameTask,
    StoreOptions,
    close_process_stores,
    limit_blas_threads,
    run_here,
    run_in_processes,
    run_on_dask,
)
from .grid import check_grid_unchanged, check_same_grid, grid_policy_entry, policy_manifest
from .output import KEY, SweepError, SweepOutput
from .spec import STORE_MODES, Execution, SweepSpec

#: exit status of a sweep stopped by its budget (resumable: rerun with a larger budget)
BUDGET_STATUS = BUDGET_REACHED


class BudgetReached(SweepError):
    """The sweep's token or cost budget is spent; the games played so far are kept."""

    exit_status = BUDGET_STATUS


# --- the runner ----------------------------------------------------------------------


@dataclass
class SweepResult:
    """What ``run_sweep`` did: the complete results table and its counts.

    Attributes:
        game: The game swept.
        results: Every game's row, those of earlier runs of the sweep included.
        played: Games played by this call.
        skipped: Games found already in the output (a resumed sweep).
        out: The output.
        wall_s: The call's wall time in seconds.
        conditions: The conditions' names.
        policies: The policies' labels.
    """

    game: Game
    results: pd.DataFrame
    played: int
    skipped: int
    out: Path
    wall_s: float
    conditions: list[str]
    policies: list[str]

    def headline(self) -> str:
        """The closing table, its rows in the grid's order of conditions and policies (``traits=2, 5, 15`` as
        listed, as ``analyze`` and ``report`` order them; never as text sorts them)."""
        games = self.in_grid_order()
        own = declared.headline(self.game, games, self.conditions, self.policies)
        if own is not None:
            return own
        from llm_mesa.analysis.generic import headline_table

        return headline_table(games)

    def in_grid_order(self) -> pd.DataFrame:
        """The results, their rows ordered by the grid's conditions, then policies (seeds as they came)."""
        frame = self.results
        if frame.empty or not {"condition", "policy"} <= set(frame.columns):
            return frame
        rank = {c: i for i, c in enumerate(self.conditions)}
        lane = {p: i for i, p in enumerate(self.policies)}
        order = frame["condition"].astype(str).map(rank).fillna(len(rank)) * (len(lane) + 1) \
            + frame["policy"].astype(str).map(lane).fillna(len(lane))
        return frame.iloc[order.argsort(kind="stable")].reset_index(drop=True)


Progress = Callable[[int, int, dict[str, Any]], None]


def run_sweep(
    conditions: str | Sequence[str] | Mapping[str, Mapping[str, Any]] | None,
    policies: str | Sequence[str] | Mapping[str, Any],
    seeds: int | str | Iterable[int] | Mapping[str, Sequence[int]],
    out: str | os.PathLike[str],
    processes: int = 1,
    games_in_flight: int = 1,
    *,
    game: str | Game | None = None,
    axes: Sequence[str] | Mapping[str, Sequence[Any]] = (),
    batch_size: int | None = None,
    model_options: Mapping[str, Any] | None = None,
    executor: str = "local",
    blas_threads: int | None = 1,
    progress: Progress | None = None,
    **options: Any,
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
        processes, games_in_flight, batch_size, executor, blas_threads: how the games
            are played (``spec.Execution``).
        game: the game's name or a ``Game`` (default: the only game installed).
        axes: ``NAME=V1,V2`` texts (or ``{name: values}``) crossed with every condition.
        model_options: parameters fixed for every condition (a round limit, say).
        progress: called as ``progress(done, total, row)`` after each finished game.
        options: the rest of ``SweepSpec``: ``tables`` (per-game tables to keep, with
            the tables they need), ``endpoint`` (the base of LLM specs that give no
            URL), ``store`` and ``store_mode`` (``auto``: record, ``replay-fill`` when
            resuming; ``record``, ``replay``, ``replay-fill``, ``off``), ``budget``
            (``max_tokens``/``max_cost`` over the sweep: once reached no new game
            starts, the games in flight are kept, ``BudgetReached`` is raised),
            ``check_endpoints``, ``compact``, ``command``, ``experiment``, ``extend``
            (add conditions, policies or seeds to a sweep started with another grid).

    Returns:
        What the sweep did: the game, every game's row (those played before included), how many
        games were played and skipped, the output, the wall time, the conditions and policies.

    Raises:
        SweepError: A grid, policy or output the sweep cannot play or write; the message names the fix.
        BudgetReached: The budget was spent (the games played are kept; the same call resumes).
    """
    execution = Execution(processes, games_in_flight, batch_size, executor, blas_threads)
    command = options.pop("command", None)
    spec = SweepSpec.of(conditions, policies, seeds, out, game=game, axes=axes, fixed=model_options,
                        execution=execution, command=tuple(command if command is not None else sys.argv), **options)
    return play_sweep(spec, progress)


def play_sweep(spec: SweepSpec, progress: Progress | None = None) -> SweepResult:
    """Play the games of ``spec`` not yet in its output; return all results (see ``run_sweep``)."""
    started = time.perf_counter()
    spec.check_playable()
    game, execution, tables = spec.game, spec.execution, spec.tables
    output = SweepOutput(spec.out, types=declared.column_types(game), keys={t.name: t.key for t in game.tables})
    with limit_blas_threads(execution.blas_threads):
        check_conditions(game, spec.conditions, spec.seeds)
    endpoints = spec.endpoints
    store_options = None
    if endpoints:
        store_path = spec.store if spec.store is not None else output.default_store
        mode = spec.store_mode
        if mode == "auto":
            mode = "replay-fill" if store_path.exists() else "record"
        if mode == "replay" and not store_path.exists():
            raise SweepError(f"replay store {store_path} does not exist; record the sweep first (store mode record)")
        store_options = StoreOptions(None if mode == "off" else str(store_path), mode)
        if store_options.path is not None:  # a folder, a device, another schema, read-only: refused before any call
            from llm_mesa.llm.store import ResponseStore

            ResponseStore(store_options.path, mode).close()
        if spec.check_endpoints and mode != "replay":
            from llm_mesa.llm.preflight_check import preflight, schedule

            for ep in dict.fromkeys(e for each in endpoints.values() for e in getattr(each, "endpoints", (each,))):
                if mode == "replay-fill" and execution.processes == 1 and execution.executor == "local":
                    schedule(ep, lazy=True)  # a resumed sweep contacts the endpoint only for what it lacks
                else:
                    preflight(ep)

    grid = {
        "game": game.name,
        "conditions": spec.conditions,
        "policies": {label: grid_policy_entry(s, ep) for label, (s, ep) in spec.policies.items()},
        "seeds": spec.shared_seeds if spec.shared_seeds is not None else {c: list(v) for c, v in spec.seeds.items()},
    }
    # the prompt template files the conditions name: their text and hash, kept so the sweep can be replayed
    templates = template_files(game.parameters, spec.conditions)
    output.previous_manifest()  # a manifest that is not one is refused before anything is made
    if not output.single_file:
        output.out.mkdir(exist_ok=True)
    else:
        output.root.mkdir(exist_ok=True)
    with output.lock():
        output.recover()  # a kill's leftovers: an unfinished compaction, uncommitted parts, temporary files
        previous = output.previous_manifest()
        check_grid_unchanged(previous, grid)
        check_template_files((previous or {}).get("templates"), templates)
        grid = check_same_grid(previous, grid, spec.extend)
        templates = {**(previous or {}).get("templates", {}), **templates}

        done_keys = output.keys()
        tasks = [GameTask(game.name, c, label, seed, spec.conditions[c], s, ep)
                 for c in spec.conditions for label, (s, ep) in spec.policies.items() for seed in spec.seeds[c]
                 if (c, label, seed) not in done_keys]
        total = spec.games_total
        skipped = total - len(tasks)
        budget = spec.budget
        spent = {"tokens": 0.0, "cost": 0.0}
        if budget and done_keys:
            present = output.read("games")
            for column, key in (("prompt_tokens", "tokens"), ("completion_tokens", "tokens"), ("cost", "cost")):
                if column in present:
                    spent[key] += float(pd.to_numeric(present[column], errors="coerce").fillna(0).sum())
        _check_budget(budget, spent)
        manifest = {
            "kind": f"{game.name}-sweep",
            "experiment": dict(spec.experiment) if spec.experiment else None,
            "budget": dict(budget) if budget else None,
            "game": game.name,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "command": list(spec.command),
            "versions": package_versions(),
            "grid": grid,
            "templates": templates,
            "execution": {"processes": execution.processes, "games_in_flight": execution.games_in_flight,
                          "batch_size": execution.batch_size, "executor": execution.executor, "tables": list(tables)},
            "layout": {"column_types": output.types, "table_keys": {k: list(v) for k, v in output.table_keys.items()}},
            "endpoints": {label: policy_manifest(ep) for label, ep in endpoints.items()},
            "store": None if store_options is None else {"path": store_options.path, "mode": store_options.mode},
            "games_total": total,
            "games_present_at_start": skipped,
            "previous_starts": ([*previous.get("previous_starts", []), previous.get("created")] if previous else []),
        }
        output.write_manifest(manifest)

        played = 0
        breaker = CircuitBreaker(execution.games_in_flight, output.out)

        def finished(results: Sequence[GameResult]) -> None:
            nonlocal played
            output.append(results)
            for result in results:
                played += 1
                breaker.see(result.row)  # after the write: a tripped sweep keeps what it played
                spent["tokens"] += (result.row.get("prompt_tokens") or 0) + (result.row.get("completion_tokens") or 0)
                spent["cost"] += result.row.get("cost") or 0.0
                if progress is not None:
                    progress(skipped + played, total, result.row)
            _check_budget(budget, spent, played, total - skipped)

        in_flight = execution.games_in_flight
        try:
            with limit_blas_threads(execution.blas_threads):
                if execution.executor != "local":
                    run_on_dask(tasks, store_options, tables, in_flight, execution.executor, execution.batch_size,
                                execution.blas_threads, finished)
                elif execution.processes == 1:
                    run_here(tasks, store_options, tables, in_flight, finished, execution.batch_size)
                else:
                    run_in_processes(tasks, store_options, tables, in_flight, execution.processes,
                                     execution.batch_size, execution.blas_threads, finished)
        finally:
            if execution.processes == 1:
                close_process_stores()
            _record_limits(output, manifest, endpoints)
        if spec.compact:
            output.compact()
    return SweepResult(game, output.read("games"), played, skipped, output.out, time.perf_counter() - started,
                       list(spec.conditions), list(spec.policies))


def _record_limits(output: SweepOutput, manifest: dict[str, Any], endpoints: Mapping[str, Any]) -> None:
    """The manifest, once the games have played, says each server's concurrency limit (what auto found)."""
    urls = {url for ep in endpoints.values() for e in getattr(ep, "endpoints", (ep,)) for url in e.base_urls}
    used = limits_in_use(urls)
    if used:
        output.write_manifest({**manifest, "concurrency_limits": used}, history=False)


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


def check_conditions(game: Game, condition_parameters: dict[str, dict[str, Any]],
                      seeds_of: Mapping[str, Sequence[int]]) -> None:
    """Build each condition's game once with a rule policy: bad input fails before any game."""
    for name, parameters in condition_parameters.items():
        try:
            play.check(game, parameters, seeds_of[name][0])
        except TypeError as exc:
            raise SweepError(f"condition {name!r}: {exc}; use the {game.name} game's parameters") from None
        except LlmMesaError as exc:
            raise SweepError(f"condition {name!r}: {one_line(exc)}") from None
        except ValueError as exc:  # a game's model refusing a value with an error of its own
            raise SweepError(f"condition {name!r}: {exc}") from None


def read_sweep(out: str | os.PathLike[str], table: str = "games") -> pd.DataFrame:
    """A sweep's results, or one of its per-game tables, read back.

    Args:
        out: The sweep's output (``llm-mesa sweep --out``).
        table: ``games`` (one row a game) or a per-game table the sweep kept (``rounds``, ``agents``).

    Returns:
        The table, each game's rows once (a game written twice by a resumed run counts once).

    Raises:
        SweepError: No sweep output there.
    """
    if not Path(out).exists() and not Path(str(out) + ".parts").exists():
        raise SweepError(f"no sweep output at {str(out)!r}; run `llm-mesa sweep --out {out}` first")
    return SweepOutput(out).read(table)


__all__ = ["BUDGET_STATUS", "KEY", "STORE_MODES", "BudgetReached", "Execution", "SweepError", "SweepOutput",
           "SweepResult", "SweepSpec", "play_sweep", "read_sweep", "run_sweep"]
