"""The sweep engine: every (condition x policy x seed) game of any game, resumable.

Why a runner of our own beside Mesa's ``batch_run`` (which works on the models
unchanged, see ``examples/batch_run_consensus.py``):

* **Nothing is lost.** Finished games' rows are appended to the output at once
  (``output.SweepOutput``): an interrupted sweep loses at most the games in flight
  (or in one batch); a rerun skips every game present (key: condition, policy, seed).
* **LLM sweeps need games in flight, not processes.** ``games_in_flight`` plays
  that many games in threads of one process; each game's round gathers its LLM
  calls on the process's shared event loop (``llm_mesa.llm.runtime``), so 30
  games of 36 agents keep up to 1,080 calls in flight against one endpoint
  (bounded by the endpoint's ``concurrency``). Every call is recorded to one
  ``ResponseStore``; a resumed sweep replays what it already paid for.
* **Rule sweeps play games together.** A game plays a batch at once
  (``Game.play_batch``, chunks of ``Game.batch_size``: consensus rule games run as
  arrays); ``processes`` spreads batches over a spawn-started process pool.

The engine knows no game: it asks the game (``llm_mesa.games.Game``, found by name)
to check its parameters, to play games from parameters and seeds, for its headline.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from llm_mesa.games import Game, GameResult, PlayRequest, get_game
from llm_mesa.run_output import package_versions

from .grid import (
    build_conditions,
    check_grid_unchanged,
    grid_policy_entry,
    plan_policy,
    resolve_policies,
    resolve_seeds,
)
from .output import KEY, SweepError, SweepOutput

STORE_MODES = ("auto", "record", "replay", "replay-fill", "off")


@dataclass(frozen=True)
class GameTask:
    """One game of the grid: its key and how to build it (picklable, for workers)."""

    game: str
    condition: str
    policy: str  # the label in the results
    seed: int
    parameters: dict[str, Any]
    policy_spec: str  # a rule policy spec, or "llm" with ``endpoint`` set
    endpoint: Any = None  # an llm_mesa.llm.endpoint.Endpoint for LLM policies

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.condition, self.policy, self.seed)

    def request(self, store: StoreOptions | None = None, tables: Sequence[str] = ()) -> PlayRequest:
        return PlayRequest(self.parameters, self.policy_spec, self.seed, tuple(tables), self.endpoint,
                           _process_store(store) if self.endpoint is not None else None)

    def keyed(self, result: GameResult, wall_s: float) -> GameResult:  # row and tables with the key
        key = {"condition": self.condition, "policy": self.policy, "seed": self.seed}
        row = {**key, **{k: v for k, v in result.row.items() if k not in key}, "wall_s": wall_s}
        return GameResult(row, {name: df.assign(**key) for name, df in result.tables.items()})


@dataclass(frozen=True)
class StoreOptions:
    """Where worker processes record LLM calls: one SQLite file shared by all."""

    path: str | None
    mode: str = "record"


_stores: dict[tuple[str, str, int], Any] = {}
_stores_lock = threading.Lock()


def _process_store(options: StoreOptions | None):
    """This process's ResponseStore for ``options`` (one per process, shared by its threads)."""
    if options is None or options.path is None or options.mode == "off":
        return None
    from llm_mesa.llm.store import ResponseStore

    key = (options.path, options.mode, os.getpid())
    with _stores_lock:
        store = _stores.get(key)
        if store is None:
            store = _stores[key] = ResponseStore(options.path, options.mode)
        return store


def _close_process_stores() -> None:
    with _stores_lock:
        for key in [k for k in _stores if k[2] == os.getpid()]:
            _stores.pop(key).close()


def play_game(task: GameTask, store: StoreOptions | None = None, tables: Sequence[str] = ()) -> GameResult:
    """Play one game to its end; its summary row (with the key) and the asked tables."""
    started = time.perf_counter()
    return task.keyed(get_game(task.game).play(task.request(store, tables)), time.perf_counter() - started)


def _play_together(tasks: list[GameTask], store: StoreOptions | None,
                   tables: tuple[str, ...]) -> tuple[list[GameResult], BaseException | None]:
    """Games played together (``Game.play_batch``), else one by one: those that finished, the first error."""
    started = time.perf_counter()
    try:
        results = get_game(tasks[0].game).play_batch([t.request(store, tables) for t in tasks])
        wall_s = (time.perf_counter() - started) / len(tasks)
        return [t.keyed(r, wall_s) for t, r in zip(tasks, results, strict=True)], None
    except Exception as exc:  # noqa: BLE001  (replayed one by one, to keep the finished games)
        if len(tasks) == 1:
            return [], exc
    results: list[GameResult] = []
    for task in tasks:
        try:
            results.append(play_game(task, store, tables))
        except Exception as exc:  # noqa: BLE001  (reported after the games that finished)
            return results, exc
    return results, None


_blas_limit: Any = None


def limit_blas_threads(threads: int | None):
    """Cap BLAS threads (numpy/scipy) at ``threads`` while a sweep runs.

    Games run in parallel at the game level; on a loaded machine, BLAS thread
    pools in every game (scipy's optimiser behind network layouts) oversubscribe
    the cores and made 36-agent games about ten times slower here. Uses
    ``threadpoolctl`` when installed; otherwise does nothing.
    """
    if threads is None:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=threads)


def _init_worker(blas_threads: int | None) -> None:
    global _blas_limit
    _blas_limit = limit_blas_threads(blas_threads)  # kept for the worker's life


def _play_batch(tasks: list[GameTask], store: StoreOptions | None, tables: tuple[str, ...],
                games_in_flight: int) -> tuple[list[GameResult], BaseException | None]:
    """A worker's share: a batch played together, or ``games_in_flight`` games at a time in threads.
    Returns the games that finished and the first error (one failure never loses the others)."""
    try:
        if games_in_flight <= 1 or len(tasks) == 1:  # together; stops at its first failure, like a sequential sweep
            return _play_together(tasks, store, tables)
        with ThreadPoolExecutor(min(games_in_flight, len(tasks)), thread_name_prefix="game") as pool:
            outcomes = list(pool.map(lambda task: _play_together([task], store, tables), tasks))
        return [r for done, _ in outcomes for r in done], next((e for _, e in outcomes if e is not None), None)
    finally:
        _close_process_stores()


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
    seeds: int | str | Iterable[int],
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
) -> SweepResult:
    """Play every (condition x policy x seed) game not yet in ``out``; return all results.

    Args:
        conditions: ``{name: game parameters}``, names of the game's conditions
            or a group (``"study"``), or None for one condition of defaults.
        policies: ``{label: spec or Endpoint}``, or specs / configuration names
            (a group such as ``"rules"``; ``;`` separates in a string). LLM specs
            (``llm:base_url=...,model=...``) build on ``endpoint``.
        seeds: a count (0..K-1), ``"A-B"``, or seeds.
        out: a dataset directory, or a file ending in ``.parquet``.
        processes: worker processes (spawn); games go to them in batches of ``batch_size``
            (default: about four per process, at most 25 games); in one process, at most
            ``batch_size`` games are played together (default: the game's ``batch_size``).
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
    """
    started = time.perf_counter()
    game = get_game(game) if isinstance(game, str) else game
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
    seed_list = resolve_seeds(seeds)
    if "agents" in tables and "edges" in game.tables:  # per-agent rows are read against the network
        tables = (*tables, "edges")
    tables = tuple(dict.fromkeys(tables))

    output = SweepOutput(out)
    with limit_blas_threads(blas_threads):
        _check_conditions(game, condition_parameters, seed_list[0])
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

            for ep in dict.fromkeys(endpoints.values()):
                preflight(ep)

    grid = {
        "game": game.name,
        "conditions": condition_parameters,
        "policies": {label: grid_policy_entry(spec, ep) for label, (spec, ep) in plan.items()},
        "seeds": seed_list,
        "model_options": dict(model_options or {}),
    }
    previous = output.previous_manifest()
    check_grid_unchanged(previous, grid)

    done_keys = output.keys()
    tasks = [GameTask(game.name, c, label, seed, condition_parameters[c], spec, ep)
             for c in condition_parameters for label, (spec, ep) in plan.items() for seed in seed_list
             if (c, label, seed) not in done_keys]
    total = len(condition_parameters) * len(plan) * len(seed_list)
    skipped = total - len(tasks)
    if not output.single_file:
        output.out.mkdir(exist_ok=True)
    else:
        output.root.mkdir(exist_ok=True)
    output.write_manifest({
        "kind": f"{game.name}-sweep",
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
            if progress is not None:
                progress(skipped + played, total, result.row)

    try:
        with limit_blas_threads(blas_threads):
            if processes == 1:
                _run_here(tasks, store_options, tables, games_in_flight, finished, batch_size)
            else:
                _run_in_processes(tasks, store_options, tables, games_in_flight, processes, batch_size,
                                  blas_threads, finished)
    finally:
        if processes == 1:
            _close_process_stores()
    if compact:
        output.compact()
    return SweepResult(game, output.read("games"), played, skipped, output.out, time.perf_counter() - started,
                       list(condition_parameters), list(plan))


def _check_conditions(game: Game, condition_parameters: dict[str, dict[str, Any]], seed: int) -> None:
    """Build each condition's game once with a rule policy: bad input fails before any game."""
    for name, parameters in condition_parameters.items():
        try:
            game.check(parameters, seed)
        except TypeError as exc:
            raise SweepError(f"condition {name!r}: {exc}; use the {game.name} game's parameters") from None
        except ValueError as exc:
            if type(exc).__module__.startswith(("llm_mesa", "models")):
                raise type(exc)(f"condition {name!r}: {exc}") from None
            raise SweepError(f"condition {name!r}: {exc}") from None


def _deliver(done: Iterable[Any], finished: Callable[[Sequence[GameResult]], None], batched: bool) -> None:
    """Write every game that finished well, then raise the first error among the rest."""
    results: list[GameResult] = []
    error: BaseException | None = None
    for future in done:
        if future.cancelled():
            continue
        exc = future.exception()
        if exc is not None:
            error = error or exc
        elif batched:
            finished_games, batch_error = future.result()
            results.extend(finished_games)
            error = error or batch_error
        else:
            results.append(future.result())
    finished(results)
    if error is not None:
        raise error


def _run_here(tasks: list[GameTask], store: StoreOptions | None, tables: tuple[str, ...], games_in_flight: int,
              finished: Callable[[Sequence[GameResult]], None], batch_size: int | None = None) -> None:
    if games_in_flight == 1:  # in chunks the game plays together (Game.batch_size; 1: each written as it ends)
        while tasks:
            size = max(1, min(batch_size or len(tasks), get_game(tasks[0].game).batch_size(tasks[0].request())))
            chunk, tasks = tasks[:size], tasks[size:]
            results, error = _play_together(chunk, store, tables)
            finished(results)
            if error is not None:
                raise error
        return
    pool = ThreadPoolExecutor(games_in_flight, thread_name_prefix="game")
    pending = {pool.submit(play_game, t, store, tables) for t in tasks}
    try:
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            _deliver(done, finished, batched=False)
    except BaseException:
        # stop starting games; the ones already running finish and are kept
        for future in pending:
            future.cancel()
        running = [f for f in pending if not f.cancelled()]
        if running:
            done, _ = wait(running)
            try:
                _deliver(done, finished, batched=False)
            except Exception:
                pass  # the first error is the one to report
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _run_in_processes(tasks: list[GameTask], store: StoreOptions | None, tables: tuple[str, ...],
                      games_in_flight: int, processes: int, batch_size: int | None,
                      blas_threads: int | None, finished: Callable[[Sequence[GameResult]], None]) -> None:
    if not tasks:
        return
    size = batch_size or max(1, min(25, math.ceil(len(tasks) / (processes * 4))))
    batches = [tasks[i:i + size] for i in range(0, len(tasks), size)]
    pool = ProcessPoolExecutor(min(processes, len(batches)), mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_worker, initargs=(blas_threads,))
    try:
        pending = {pool.submit(_play_batch, b, store, tables, games_in_flight) for b in batches}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            _deliver(done, finished, batched=True)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def read_sweep(out: str | os.PathLike[str], table: str = "games") -> pd.DataFrame:
    """A sweep's results (``games``) or one of its per-game tables, deduplicated."""
    if not Path(out).exists() and not Path(str(out) + ".parts").exists():
        raise SweepError(f"no sweep output at {str(out)!r}; run `llm-mesa sweep --out {out}` first")
    return SweepOutput(out).read(table)


__all__ = ["run_sweep", "read_sweep", "SweepResult", "SweepError", "SweepOutput", "GameTask", "play_game",
           "limit_blas_threads", "KEY", "STORE_MODES"]
