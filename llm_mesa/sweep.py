"""Sweeps of the consensus game: every (condition x policy x seed) game, resumable.

Why a runner of our own beside Mesa's ``batch_run`` (which works with
``ConsensusModel`` unchanged, see ``examples/batch_run_consensus.py``):

* **Nothing is lost.** Each finished game's summary row is appended to the
  output at once (a Parquet part file written to a temporary name and renamed
  into place), so an interrupted sweep loses at most the games in flight; a
  rerun with the same output skips every game already present (resume by key:
  condition, policy, seed).
* **LLM sweeps need games in flight, not processes.** ``games_in_flight`` plays
  that many games in threads of one process; each game's round gathers its LLM
  calls on the process's shared event loop (``llm_mesa.llm.runtime``), so 30
  games of 36 agents keep up to 1,080 calls in flight against one endpoint
  (bounded by the endpoint's ``concurrency``). Every call is recorded to one
  ``ResponseStore``; a resumed sweep replays what it already paid for.
* **Rule sweeps need processes.** ``processes`` runs games in a spawn-started
  process pool, sent in batches (per-task overhead would otherwise dominate
  games that last a tenth of a second).

Output (``out`` a directory)::

    out/manifest.json          versions, grid, seeds, endpoint (never a key), store
    out/manifest-history.jsonl one line per start (resumes included)
    out/games/part-*.parquet   one row per game: condition, policy, seed, summary
    out/<table>/part-*.parquet per-game tables when asked (rounds, agents, ...)
    out/calls.sqlite           recorded LLM calls (LLM sweeps)

``out`` ending in ``.parquet`` names a single file instead: parts are gathered
in ``<out>.parts/`` while the sweep runs and compacted into the file at the end.
Read results with ``read_sweep(out)``; every part has the same column types,
so ``pandas.read_parquet(out / "games")`` works as well.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import multiprocessing
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from llm_mesa.policy import PolicyError, make_policy, parse_policy_spec
from llm_mesa.run_output import package_versions, parquet_ready
from llm_mesa.study_conditions import RULE_CONFIGURATIONS, resolve_conditions

KEY = ("condition", "policy", "seed")
TABLES = ("rounds", "agents", "messages", "transcript", "edges")
_TRANSPORT_FIELDS = ("base_url", "api_key_env", "concurrency", "timeout", "max_attempts", "price")
STORE_MODES = ("auto", "record", "replay", "replay-fill", "off")
#: columns whose values may all be missing in one part: their type is fixed here
_NULLABLE_TYPES = {
    "winner": "string", "stop_reason": "string", "largest_component_colour": "string",
    "winner_is_majority_preference": "boolean", "largest_component_baseline_mean": "float64",
    "largest_component_baseline_p": "float64", "distinct_share": "float64",
    "template_similarity": "float64", "stubbornness": "float64", "model": "string", "message": "string", "reason": "string",
    "diary": "string", "answer": "string", "outcome": "string", "failed": "string",
    "text": "string", "to": "Int64", "message_to": "Int64",
}


class SweepError(ValueError):
    """A sweep that cannot run as asked; the message names the fix."""


# --- what one game is ----------------------------------------------------------------


@dataclass(frozen=True)
class GameTask:
    """One game of the grid: its key and how to build it (picklable, for workers)."""

    condition: str
    policy: str  # the label in the results
    seed: int
    model_kwargs: dict[str, Any]
    policy_spec: str  # a rule policy spec, or "llm" with ``endpoint`` set
    endpoint: Any = None  # an llm_mesa.llm.endpoint.Endpoint for LLM policies

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.condition, self.policy, self.seed)


@dataclass(frozen=True)
class StoreOptions:
    """Where worker processes record LLM calls: one SQLite file shared by all."""

    path: str | None
    mode: str = "record"


@dataclass
class GameResult:
    row: dict[str, Any]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)


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
    from llm_mesa.models.consensus import ConsensusModel

    policy: Any = task.policy_spec
    llm_policy = None
    if task.endpoint is not None:
        from llm_mesa.llm.consensus_policy import LLMConsensusPolicy

        llm_policy = policy = LLMConsensusPolicy(task.endpoint, store=_process_store(store))
    started = time.perf_counter()
    model = ConsensusModel(policy=policy, rng=task.seed, **task.model_kwargs)
    model.run()
    summary = model.summary()
    wall = time.perf_counter() - started
    row = {"condition": task.condition, "policy": task.policy, "seed": task.seed}
    for name, value in summary.items():
        if name == "policy":
            row["policy_spec"] = value
        elif name != "seed":
            row[name] = value
    if llm_policy is not None:
        row["model"] = task.endpoint.model
        row["replayed_calls"] = llm_policy.usage.replayed
    row["wall_s"] = wall
    out: dict[str, pd.DataFrame] = {}
    for name in tables:
        if name == "rounds":
            df = model.rounds_table()
        elif name == "agents":
            df = model.agents_table()
        elif name == "messages":
            df = model.messages_table()
        elif name == "edges":
            df = model.graph_table()[1]
        else:
            df = pd.DataFrame(model.transcript)
        out[name] = df.assign(condition=task.condition, policy=task.policy, seed=task.seed)
    return GameResult(row, out)


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
    """A worker's share: a batch of games, ``games_in_flight`` at a time in threads.

    Returns the games that finished and the first error, so that one failing game
    never takes the finished games of its batch down with it.
    """
    results: list[GameResult] = []
    error: BaseException | None = None

    def play(task: GameTask) -> GameResult | None:
        nonlocal error
        try:
            return play_game(task, store, tables)
        except Exception as exc:  # noqa: BLE001  (reported to the parent, after the batch)
            error = error or exc
            return None

    try:
        if games_in_flight <= 1 or len(tasks) == 1:
            for task in tasks:
                result = play(task)
                if result is None:
                    break  # stop this batch at its first failure, like a sequential sweep
                results.append(result)
        else:
            with ThreadPoolExecutor(min(games_in_flight, len(tasks)), thread_name_prefix="game") as pool:
                results = [r for r in pool.map(play, tasks) if r is not None]
        return results, error
    finally:
        _close_process_stores()


# --- the grid ------------------------------------------------------------------------


def resolve_seeds(seeds: int | str | Iterable[int]) -> list[int]:
    """``30`` -> 0..29; ``"1-30"`` -> 1..30; ``"1,5,9"`` or a list as given (repeats dropped)."""
    if isinstance(seeds, bool):
        raise SweepError("seeds must be a count, a range A-B or a list of integers")
    if isinstance(seeds, str):
        text = seeds.strip()
        try:
            if "-" in text.lstrip("-") and "," not in text:
                first, _, last = text.partition("-")
                values = list(range(int(first), int(last) + 1))
            elif "," in text:
                values = [int(s) for s in text.split(",") if s.strip()]
            else:
                values = None
                count = int(text)
        except ValueError:
            raise SweepError(f"--seeds {seeds!r}: give a count (30), a range (1-30) or a list (1,5,9)") from None
        if values is None:
            return resolve_seeds(count)
    elif isinstance(seeds, int):
        if seeds < 1:
            raise SweepError(f"seeds must be at least 1 game per cell (got {seeds})")
        values = list(range(seeds))
    else:
        values = [int(s) for s in seeds]
    values = list(dict.fromkeys(values))
    if not values:
        raise SweepError("no seeds given; pass e.g. --seeds 30")
    if min(values) < 0:
        raise SweepError(f"seeds must be non-negative integers (got {min(values)})")
    return values


def policy_label(spec: str) -> str:
    """The name a policy spec goes by in results.

    LLM specs keep what shapes the answers (model, sampling) and lose where and how
    calls are made (URL, key variable, concurrency, timeouts, price), so a sweep
    resumed against a moved server still finds its games.
    """
    name, kwargs = parse_policy_spec(spec)
    if name != "llm":
        return spec.strip()
    kept = {k: v for k, v in kwargs.items() if k not in _TRANSPORT_FIELDS}
    return "llm" + (":" + ",".join(f"{k}={v}" for k, v in kept.items()) if kept else "")


def resolve_policies(policies: str | Sequence[str] | Mapping[str, Any]) -> dict[str, Any]:
    """Labels and what they stand for: a rule spec, an LLM spec, or an ``Endpoint``.

    A string is ``;``-separated (specs contain commas). ``rules`` stands for the
    six default rule configurations; a configuration name for its spec.
    """
    if isinstance(policies, Mapping):
        return dict(policies)
    items = [p.strip() for p in (policies.split(";") if isinstance(policies, str) else policies)]
    chosen: dict[str, Any] = {}
    for item in items:
        if not item:
            continue
        if item == "rules":
            for label, spec in RULE_CONFIGURATIONS.items():
                chosen.setdefault(label, spec)
        elif item in RULE_CONFIGURATIONS:
            chosen.setdefault(item, RULE_CONFIGURATIONS[item])
        else:
            chosen.setdefault(policy_label(item), item)
    if not chosen:
        raise SweepError("no policies given; pass e.g. --policies rules or --policies 'majority-inertia:inertia=0.5;voter'")
    return chosen


def llm_endpoint(spec: str, base: Any = None):
    """The ``Endpoint`` an ``llm[:k=v,...]`` spec describes, on top of ``base`` (an Endpoint or None)."""
    from llm_mesa.llm.endpoint import Endpoint

    _, kwargs = parse_policy_spec(spec)
    known = {f.name for f in dataclasses.fields(Endpoint)}
    unknown = sorted(set(kwargs) - known)
    if unknown:
        raise PolicyError(f"unknown llm option(s) {', '.join(unknown)} in {spec!r}; "
                          f"use endpoint fields such as model, temperature, top_p, seed, concurrency")
    if "model" in kwargs:
        kwargs["model"] = str(kwargs["model"])
    if base is None:
        return Endpoint.from_url_and_env(kwargs.pop("base_url", None), kwargs.pop("model", None), **kwargs)
    return dataclasses.replace(base, **kwargs)


def _plan_policy(label: str, target: Any, endpoint: Any) -> tuple[str, Any]:
    """(spec, endpoint-or-None) for one policy; checks it builds, before any game runs."""
    from llm_mesa.policy import Policy

    if isinstance(target, Policy):
        raise SweepError(f"policy {label!r}: give a spec string (or an Endpoint for LLM agents), "
                         "not a Policy object, so that worker processes can rebuild it")
    if type(target).__name__ == "Endpoint":
        return "llm", target
    spec = str(target)
    if parse_policy_spec(spec)[0] == "llm":
        return "llm", llm_endpoint(spec, endpoint)
    make_policy(spec)  # raises PolicyError naming the fix
    return spec, None


def _grid_policy_entry(spec: str, endpoint: Any) -> Any:
    if endpoint is None:
        return spec
    manifest = endpoint.manifest()
    return {"llm": {k: manifest[k] for k in ("model", "sampling_params", "dialect", "prompt_mode")}}


# --- output --------------------------------------------------------------------------


_ARROW_TYPES = {"string": "string", "boolean": "bool", "float64": "float64", "Int64": "int64"}


def _rows_table(rows: Sequence[dict[str, Any]]):
    """Game rows as an Arrow table with the same column types in every part (fast for few rows)."""
    import pyarrow as pa

    records = [{k: (json.dumps(v, default=str) if isinstance(v, (list, tuple, dict)) else v) for k, v in r.items()}
               for r in rows]
    table = pa.Table.from_pylist(records)
    for i, name in enumerate(table.column_names):
        wanted = _NULLABLE_TYPES.get(name)
        if wanted is not None:
            table = table.set_column(i, name, table.column(i).cast(_ARROW_TYPES[wanted]))
        elif pa.types.is_null(table.column(i).type):
            table = table.set_column(i, name, table.column(i).cast("string"))
    return table


def _write_atomic(path: Path, data: pd.DataFrame | Sequence[dict[str, Any]]) -> None:
    import pyarrow.parquet as pq

    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".parquet", dir=path.parent)
    os.close(fd)
    try:
        if isinstance(data, pd.DataFrame):
            parquet_ready(data, _NULLABLE_TYPES).to_parquet(tmp, index=False)
        else:
            pq.write_table(_rows_table(data), tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_text_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=path.suffix, dir=path.parent)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _read_parts(folder: Path, extra: Iterable[Path] = ()) -> pd.DataFrame:
    files = [p for p in extra if p.exists()]
    if folder.is_dir():
        files += sorted(p for p in folder.glob("*.parquet") if not p.name.startswith((".", "_")))
    frames = [pd.read_parquet(p) for p in files]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


class SweepOutput:
    """A sweep's output, a dataset directory or a single Parquet file (see module doc)."""

    def __init__(self, out: str | os.PathLike[str]) -> None:
        self.out = Path(out)
        self.single_file = self.out.suffix == ".parquet"
        if self.single_file:
            if self.out.exists() and self.out.is_dir():
                raise SweepError(f"{str(self.out)!r} is a directory; name a file ending in .parquet or drop the suffix")
            self.root = self.out.with_name(self.out.name + ".parts")
            self.manifest_path = self.out.with_name(self.out.stem + ".manifest.json")
            self.default_store = self.out.with_name(self.out.stem + ".calls.sqlite")
        else:
            if self.out.exists() and not self.out.is_dir():
                raise SweepError(f"{str(self.out)!r} is a file; give a directory for --out (or a name ending in .parquet)")
            self.root = self.out
            self.manifest_path = self.out / "manifest.json"
            self.default_store = self.out / "calls.sqlite"
        if not self.out.parent.exists():
            raise SweepError(f"parent folder of {str(self.out)!r} does not exist; create it first")
        if not self.manifest_path.exists():
            if not self.single_file and self.out.is_dir() and any(self.out.iterdir()):
                raise SweepError(f"{str(self.out)!r} holds files but no sweep manifest; choose a new --out directory")
            if self.single_file and (self.out.exists() or self.root.exists()):
                raise SweepError(f"{str(self.out)!r} exists but has no sweep manifest beside it; choose a new --out file")
        self._sequence = 0

    def folder(self, table: str) -> Path:
        return self.root / table

    def _compacted(self, table: str) -> Path | None:
        if not self.single_file:
            return None
        return self.out if table == "games" else self.out.with_name(f"{self.out.stem}.{table}.parquet")

    def read(self, table: str = "games") -> pd.DataFrame:
        """All rows of ``table`` written so far, without duplicates, sorted by key."""
        compacted = self._compacted(table)
        df = _read_parts(self.folder(table), [compacted] if compacted else [])
        if df.empty:
            return df
        key = list(KEY) + (["round"] if table == "rounds" else [])
        if table in ("games", "rounds"):
            df = df.drop_duplicates(subset=key, keep="first")
        return df.sort_values(list(KEY), kind="stable").reset_index(drop=True)

    def keys(self) -> set[tuple[str, str, int]]:
        df = self.read("games")
        if df.empty:
            return set()
        return set(zip(df["condition"], df["policy"], df["seed"].astype(int)))

    def append(self, results: Sequence[GameResult]) -> None:
        """Write finished games: their tables first, then the rows that mark them done."""
        if not results:
            return
        self._sequence += 1
        name = f"part-{time.strftime('%Y%m%dT%H%M%S')}-{self._sequence:05d}-{uuid.uuid4().hex[:8]}.parquet"
        tables: dict[str, list[pd.DataFrame]] = {}
        for result in results:
            for table, df in result.tables.items():
                tables.setdefault(table, []).append(df)
        for table, frames in tables.items():
            frames = [f for f in frames if len(f)]
            if frames:
                self.folder(table).mkdir(parents=True, exist_ok=True)
                _write_atomic(self.folder(table) / name, pd.concat(frames, ignore_index=True))
        self.folder("games").mkdir(parents=True, exist_ok=True)
        _write_atomic(self.folder("games") / name, [r.row for r in results])

    def compact(self) -> None:
        """Merge each table's parts into one (a single file: into ``out`` and its siblings)."""
        if not self.root.is_dir():
            return
        for folder in sorted(p for p in self.root.iterdir() if p.is_dir()):
            table = folder.name
            parts = sorted(p for p in folder.glob("*.parquet") if not p.name.startswith((".", "_")))
            target = self._compacted(table)
            if target is None and len(parts) <= 1:
                continue
            merged = self.read(table)
            if target is None:
                target = folder / f"part-compacted-{uuid.uuid4().hex[:8]}.parquet"
            _write_atomic(target, merged)  # duplicates, not losses, if interrupted here
            for part in parts:
                part.unlink()
            if self.single_file:
                folder.rmdir()
        if self.single_file and self.root.is_dir() and not any(self.root.iterdir()):
            self.root.rmdir()

    def previous_manifest(self) -> dict[str, Any] | None:
        if not self.manifest_path.exists():
            return None
        try:
            return json.loads(self.manifest_path.read_text())
        except (OSError, json.JSONDecodeError):
            raise SweepError(f"cannot read {self.manifest_path}; it is not a sweep manifest") from None

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        self.manifest_path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(manifest, indent=2, default=str) + "\n"
        _write_text_atomic(self.manifest_path, text)
        history = self.manifest_path.with_name(self.manifest_path.stem.replace("manifest", "manifest-history") + ".jsonl")
        with open(history, "a") as fh:
            fh.write(json.dumps(manifest, default=str) + "\n")


def read_sweep(out: str | os.PathLike[str], table: str = "games") -> pd.DataFrame:
    """A sweep's results (``games``) or one of its per-game tables, deduplicated."""
    if not Path(out).exists() and not Path(str(out) + ".parts").exists():
        raise SweepError(f"no sweep output at {str(out)!r}; run `llm-mesa sweep --out {out}` first")
    return SweepOutput(out).read(table)


def _check_grid_unchanged(previous: dict[str, Any] | None, grid: dict[str, Any]) -> None:
    """A resumed sweep must mean the same thing by each condition and policy name."""
    if not previous:
        return
    old = previous.get("grid", {})
    for section, what in (("conditions", "condition"), ("policies", "policy")):
        for name, value in grid[section].items():
            before = old.get(section, {}).get(name)
            if before is not None and json.loads(json.dumps(before, default=str)) != json.loads(json.dumps(value, default=str)):
                raise SweepError(f"{what} {name!r} was defined differently when this sweep started; "
                                 "choose a new --out directory (or restore the old definition)")


# --- the runner ----------------------------------------------------------------------


@dataclass
class SweepResult:
    """What ``run_sweep`` did: the complete results table and its counts."""

    results: pd.DataFrame
    played: int
    skipped: int
    out: Path
    wall_s: float
    conditions: list[str]
    policies: list[str]

    def consensus_table(self) -> pd.DataFrame:
        return consensus_table(self.results, self.conditions, self.policies)


Progress = Callable[[int, int, dict[str, Any]], None]


def run_sweep(
    conditions: str | Sequence[str] | Mapping[str, Mapping[str, Any]],
    policies: str | Sequence[str] | Mapping[str, Any],
    seeds: int | str | Iterable[int],
    out: str | os.PathLike[str],
    processes: int = 1,
    games_in_flight: int = 1,
    *,
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
        conditions: ``{name: ConsensusModel kwargs}``, names of
            ``llm_mesa.study_conditions`` or a group (``"study"``).
        policies: ``{label: spec or Endpoint}``, or specs / rule configuration
            names (``"rules"`` for the six defaults; ``;`` separates in a string).
            LLM specs (``llm:base_url=...,model=...``) build on ``endpoint``.
        seeds: a count (0..K-1), ``"A-B"``, or seeds.
        out: a dataset directory, or a file ending in ``.parquet``.
        processes: worker processes (spawn); games go to them in batches of
            ``batch_size`` (default: about four batches per process, at most 25 games).
        games_in_flight: games played at once in threads of each process
            (what LLM sweeps need: their calls overlap on one event loop).
        model_options: keyword arguments added to every condition (e.g. ``max_rounds``).
        tables: per-game tables to save too: ``rounds``, ``agents``, ``messages``, ``transcript``,
            ``edges`` (saved with ``agents`` anyway).
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
    if processes < 1 or games_in_flight < 1:
        raise SweepError("processes and games in flight must each be at least 1")
    if batch_size is not None and batch_size < 1:
        raise SweepError(f"batch size must be at least 1 (got {batch_size})")
    bad_tables = sorted(set(tables) - set(TABLES))
    if bad_tables:
        raise SweepError(f"unknown table(s) {', '.join(bad_tables)}; choose among: {', '.join(TABLES)}")
    if store_mode not in STORE_MODES:
        raise SweepError(f"unknown store mode {store_mode!r}; choose one of: {', '.join(STORE_MODES)}")
    condition_kwargs = (resolve_conditions(conditions) if not isinstance(conditions, Mapping)
                        else {str(k): dict(v) for k, v in conditions.items()})
    if not condition_kwargs:
        raise SweepError("no conditions given")
    options = dict(model_options or {})
    for name in condition_kwargs:
        for reserved in ("policy", "rng"):
            if reserved in condition_kwargs[name] or reserved in options:
                raise SweepError(f"condition {name!r} sets {reserved!r}; policies and seeds belong to the sweep's grid")
        condition_kwargs[name] = {**condition_kwargs[name], **options}
    policy_targets = resolve_policies(policies)
    plan = {label: _plan_policy(label, target, endpoint) for label, target in policy_targets.items()}
    seed_list = resolve_seeds(seeds)
    if "agents" in tables:  # per-agent rows are read against the network: keep its edges
        tables = (*tables, "edges")
    tables = tuple(dict.fromkeys(tables))

    output = SweepOutput(out)
    with limit_blas_threads(blas_threads):
        _check_conditions(condition_kwargs, seed_list[0])
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
        "conditions": condition_kwargs,
        "policies": {label: _grid_policy_entry(spec, ep) for label, (spec, ep) in plan.items()},
        "seeds": seed_list,
        "model_options": options,
    }
    previous = output.previous_manifest()
    _check_grid_unchanged(previous, grid)

    done_keys = output.keys()
    tasks = [GameTask(c, label, seed, condition_kwargs[c], spec, ep)
             for c in condition_kwargs for label, (spec, ep) in plan.items() for seed in seed_list
             if (c, label, seed) not in done_keys]
    total = len(condition_kwargs) * len(plan) * len(seed_list)
    skipped = total - len(tasks)
    if not output.single_file:
        output.out.mkdir(exist_ok=True)
    else:
        output.root.mkdir(exist_ok=True)
    output.write_manifest({
        "kind": "consensus-sweep",
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
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
                _run_here(tasks, store_options, tables, games_in_flight, finished)
            else:
                _run_in_processes(tasks, store_options, tables, games_in_flight, processes, batch_size,
                                  blas_threads, finished)
    finally:
        if processes == 1:
            _close_process_stores()
    if compact:
        output.compact()
    return SweepResult(output.read("games"), played, skipped, output.out, time.perf_counter() - started,
                       list(condition_kwargs), list(plan))


def _check_conditions(condition_kwargs: dict[str, dict[str, Any]], seed: int) -> None:
    """Build each condition's game once with a rule policy: bad input fails before any game."""
    from llm_mesa.models.consensus import ConsensusModel

    for name, kwargs in condition_kwargs.items():
        try:
            ConsensusModel(policy="stubborn", rng=seed, **{**kwargs, "baseline_permutations": 0})
        except TypeError as exc:
            raise SweepError(f"condition {name!r}: {exc}; use ConsensusModel keyword arguments") from None
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


def _run_here(tasks: list[GameTask], store: StoreOptions | None, tables: tuple[str, ...],
              games_in_flight: int, finished: Callable[[Sequence[GameResult]], None]) -> None:
    if games_in_flight == 1:
        for task in tasks:
            finished([play_game(task, store, tables)])
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


# --- the headline table --------------------------------------------------------------


def consensus_table(results: pd.DataFrame, conditions: Sequence[str] | None = None,
                    policies: Sequence[str] | None = None) -> pd.DataFrame:
    """Successes / games per condition (rows) and policy (columns), the study's layout.

    Adds an ``all`` column per condition and an ``all`` row per policy.
    """
    if results.empty:
        return pd.DataFrame()
    conditions = list(conditions) if conditions is not None else list(dict.fromkeys(results["condition"]))
    policies = list(policies) if policies is not None else list(dict.fromkeys(results["policy"]))
    grouped = results.groupby(["condition", "policy"])["consensus"].agg(["sum", "count"])

    def cell(wins: int, games: int) -> str:
        return f"{wins}/{games}" if games else "-"

    rows = {}
    for c in conditions:
        row = {}
        for p in policies:
            wins, games = (int(grouped.loc[(c, p), "sum"]), int(grouped.loc[(c, p), "count"])) \
                if (c, p) in grouped.index else (0, 0)
            row[p] = cell(wins, games)
        sub = results[(results["condition"] == c) & results["policy"].isin(policies)]
        row["all"] = cell(int(sub["consensus"].sum()), len(sub))
        rows[c] = row
    total = {}
    for p in policies:
        sub = results[(results["policy"] == p) & results["condition"].isin(conditions)]
        total[p] = cell(int(sub["consensus"].sum()), len(sub))
    sub = results[results["policy"].isin(policies) & results["condition"].isin(conditions)]
    total["all"] = cell(int(sub["consensus"].sum()), len(sub))
    rows["all"] = total
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "condition"
    return table


def format_consensus_table(table: pd.DataFrame) -> str:
    """The table as aligned text, for terminals and logs."""
    if table.empty:
        return "(no games)"
    return table.to_string()


__all__ = ["run_sweep", "read_sweep", "consensus_table", "format_consensus_table", "SweepResult",
           "SweepError", "SweepOutput", "GameTask", "play_game", "resolve_policies", "resolve_seeds",
           "policy_label", "llm_endpoint", "limit_blas_threads", "KEY", "TABLES"]
