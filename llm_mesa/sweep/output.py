"""A sweep's results on disk: one Parquet dataset per table, appended game by game.

Layout (``out`` a directory)::

    out/manifest.json          versions, game, grid, seeds, endpoint (never a key), store
    out/manifest-history.jsonl one line per start (resumes included)
    out/games/part-*.parquet   one row per game: condition, policy, seed, summary
    out/<table>/part-*.parquet per-game tables when asked (rounds, agents, ...)
    out/calls.sqlite           recorded LLM calls (LLM sweeps)

``out`` ending in ``.parquet`` names a single file instead: parts are gathered
in ``<out>.parts/`` while the sweep runs and compacted into the file at the end.
A game's rows in all tables commit together or not at all (``parts``). Nothing
here knows which game was played.
"""

from __future__ import annotations

import json
import os
import shlex
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from llm_mesa.boundary import check_seal, read_json_file, seal
from llm_mesa.errors import LlmMesaError
from llm_mesa.files import write_text_atomic
from llm_mesa.games import GameResult

from .columns import CORE_TYPES, KEY, SweepError
from .parts import Compaction, DamagedPart, SweepLock, commit_parts, part_files, read_parts, remove_uncommitted

__all__ = ["KEY", "SweepError", "SweepOutput", "foreign_rows", "read_sweep", "read_sweep_manifest"]


class SweepOutput:
    """A sweep's output, a dataset directory or a single Parquet file (see module doc).

    ``types``: the pandas types of columns that may be all missing in one part (the
    game's, see ``Game.row_types`` and ``Table.types``); by default those the sweep's manifest recorded.
    ``keys``: per table, the columns that key a row within a game (one-column keys:
    per-round tables, small enough to deduplicate on reading).
    """

    def __init__(self, out: str | os.PathLike[str], types: Mapping[str, str] | None = None,
                 keys: Mapping[str, Sequence[str]] | None = None) -> None:
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
            if not self.single_file and self.out.is_dir() and any(not p.name.startswith(".") for p in self.out.iterdir()):
                raise SweepError(f"{str(self.out)!r} holds files but no sweep manifest; choose a new --out directory")
            if self.single_file and (self.out.exists() or self.root.exists()):
                raise SweepError(f"{str(self.out)!r} exists but has no sweep manifest beside it; choose a new --out file")
        self._sequence = 0
        recorded = self._recorded_layout() if types is None or keys is None else {}
        self.types = {**CORE_TYPES, **(types if types is not None else recorded.get("column_types") or {})}
        self.table_keys = {k: tuple(v) for k, v in (keys if keys is not None else recorded.get("table_keys") or {}).items()}

    def _recorded_layout(self) -> dict[str, Any]:
        """What the manifest says of the tables' columns (sweeps of older versions say nothing)."""
        try:
            manifest = read_sweep_manifest(self.manifest_path) if self.manifest_path.exists() else {}
        except LlmMesaError:
            return {}
        layout = manifest.get("layout")
        if not isinstance(layout, dict):
            return {}
        return {k: v for k, v in layout.items() if isinstance(v, dict)}

    def folder(self, table: str) -> Path:
        return self.root / table

    def _compacted(self, table: str) -> Path | None:
        if not self.single_file:
            return None
        return self.out if table == "games" else self.out.with_name(f"{self.out.stem}.{table}.parquet")

    def lock(self) -> SweepLock:
        return SweepLock(self.root)

    def recover(self) -> list[Path]:
        """Undo or finish an interrupted compaction, and remove what uncommitted games left."""
        Compaction(self.root).recover()
        return remove_uncommitted(self.root)

    def _committed(self, table: str) -> list[Path]:
        parts = part_files(self.folder(table))
        if table == "games":
            return parts
        games = self.folder("games")
        return [p for p in parts if (games / p.name).exists()]

    def read(self, table: str = "games") -> pd.DataFrame:
        """All committed rows of ``table``, without duplicates, sorted by key."""
        Compaction(self.root).recover()
        compacted = self._compacted(table)
        try:
            df = read_parts([*([compacted] if compacted else []), *self._committed(table)], self.types)
        except DamagedPart as damaged:
            raise SweepError(self._damage_advice(damaged, table)) from None
        if df.empty:
            return df
        within = self.table_keys.get(table, ())
        if table == "games" or (len(within) == 1 and within[0] in df.columns):
            df = df.drop_duplicates(subset=[*KEY, *within], keep="first")
        return df.sort_values(list(KEY), kind="stable").reset_index(drop=True)

    def _damage_advice(self, damaged: DamagedPart, table: str) -> str:
        """How to set a damaged part aside without losing a game: with every part written with it.

        A part's games are committed by the ``games`` part of the same name; set aside alone,
        a damaged ``agents`` part would leave its games counted as done and their agents rows
        gone for good. Set aside together (every table's part of that name, or every
        compacted file of a single-file sweep), the games are no longer done, so the rerun
        plays them again and writes all their tables (recorded LLM calls replay).
        """
        path = damaged.path
        if path == self._compacted(table):
            batch = [f for f in (self._compacted(t) for t in self._tables()) if f is not None and f.exists()]
        else:
            batch = [p / path.name for p in sorted(self.root.iterdir())
                     if p.is_dir() and p.name != "quarantine" and (p / path.name).exists()]
        batch = [path, *(p for p in batch if p != path)]
        quarantine = self.root / "quarantine"
        # one folder a table: the parts of one batch share their name
        places = {p: quarantine / (p.parent.name if p.parent != self.out.parent else "compacted") for p in batch}
        command = " && ".join([f"mkdir -p {' '.join(shlex.quote(str(q)) for q in dict.fromkeys(places.values()))}",
                               *(f"mv {shlex.quote(str(p))} {shlex.quote(str(q))}/" for p, q in places.items())])
        return (f"{path} is not a readable Parquet part ({damaged.reason}); set it aside with the parts written with "
                f"it, `{command}`, and "
                "rerun the sweep: their games are played again and every table of them written anew (recorded LLM "
                "calls replay)")

    def _tables(self) -> list[str]:
        """The tables this output holds parts or compacted files of."""
        names = {p.name for p in self.root.iterdir() if p.is_dir() and p.name != "quarantine"} \
            if self.root.is_dir() else set()
        if self.single_file:
            names |= {"games"} | {p.name[len(self.out.stem) + 1:-len(".parquet")]
                                  for p in self.out.parent.glob(f"{self.out.stem}.*.parquet")}
        return sorted(names)

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
        frames: dict[str, list[pd.DataFrame]] = {}
        for result in results:
            for table, df in result.tables.items():
                if len(df):
                    frames.setdefault(table, []).append(df)
        tables = {table: pd.concat(dfs, ignore_index=True) for table, dfs in frames.items()}
        commit_parts(name, tables, [r.row for r in results], self.folder, self.types)

    def compact(self) -> None:
        """Merge each table's parts into one (a single file: into ``out`` and its siblings)."""
        if not self.root.is_dir():
            return
        self.recover()
        folders = {p.name: part_files(p) for p in sorted(self.root.iterdir()) if p.is_dir() and p.name != "quarantine"}
        if not self.single_file and all(len(parts) <= 1 for parts in folders.values()):
            return
        # every table at once, under one name: a table's parts commit by the name of a games part
        name = f"part-compacted-{uuid.uuid4().hex[:8]}.parquet"
        plan = {self._compacted(table) or self.folder(table) / name: (self.read(table), parts)
                for table, parts in folders.items() if parts}
        Compaction(self.root).run(plan, self.types)
        if self.single_file:
            for folder in [p for p in self.root.iterdir() if p.is_dir()]:
                if not any(folder.iterdir()):
                    folder.rmdir()
            leftovers = [p for p in self.root.iterdir() if p.name != ".lock"]
            if not leftovers:
                (self.root / ".lock").unlink(missing_ok=True)
                self.root.rmdir()

    def previous_manifest(self) -> dict[str, Any] | None:
        if not self.manifest_path.exists():
            return None
        return read_sweep_manifest(self.manifest_path)

    def write_manifest(self, manifest: dict[str, Any], history: bool = True) -> None:
        """Write the manifest; ``history``: and add it to the history (one line per start)."""
        self.manifest_path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(seal(manifest), indent=2) + "\n"  # a reader proves it holds what was written
        write_text_atomic(self.manifest_path, text)
        if not history:
            return
        log = self.manifest_path.with_name(self.manifest_path.stem.replace("manifest", "manifest-history") + ".jsonl")
        with open(log, "a") as fh:
            fh.write(json.dumps(manifest, default=str) + "\n")


_FIX = "choose a new --out (or restore the sweep's manifest from a copy)"


def read_sweep_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A sweep's manifest, read within the boundary's bounds and of a sweep manifest's shape, or one line.

    What code behind this may rely on: a JSON object whose ``grid`` (when present) is an
    object with ``conditions`` (name -> parameters object), ``policies`` (an object) and
    ``seeds`` (whole numbers, or condition -> whole numbers); ``kind`` and ``game`` texts.
    """
    manifest = check_seal(read_json_file(path, "a sweep manifest", fix=_FIX), path, "a sweep manifest", fix=_FIX)
    for key in ("kind", "game", "created"):
        if manifest.get(key) is not None and not isinstance(manifest[key], str):
            raise SweepError(f"{path} is not a sweep manifest: {key!r} is not a text; {_FIX}")
    grid = manifest.get("grid")
    if grid is None:
        return manifest
    if not isinstance(grid, dict):
        raise SweepError(f"{path} is not a sweep manifest: 'grid' is not an object; {_FIX}")
    for key in ("conditions", "policies"):
        value = grid.get(key, {})
        if not isinstance(value, dict) or (key == "conditions" and not all(isinstance(v, dict) for v in value.values())):
            raise SweepError(f"{path} is not a sweep manifest: its grid's {key!r} is not an object of names; {_FIX}")
    seeds = grid.get("seeds", [])
    lists = seeds.values() if isinstance(seeds, dict) else [seeds]
    if not all(isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v) for v in lists):
        raise SweepError(f"{path} is not a sweep manifest: its grid's 'seeds' are not whole numbers; {_FIX}")
    return manifest


def foreign_rows(games: pd.DataFrame, manifest: Mapping[str, Any]) -> str | None:
    """What, in a games table, is not a game of the manifest's grid (rows copied in from another
    sweep, another game's among them), in words; None when every row belongs."""
    grid = manifest.get("grid")
    if not isinstance(grid, dict) or games.empty or not {"condition", "policy"} <= set(games.columns):
        return None
    outside = ~games["condition"].astype(str).isin(list(grid.get("conditions", {}))) \
        | ~games["policy"].astype(str).isin(list(grid.get("policies", {})))
    if not outside.any():
        return None
    found = games[outside]
    conditions = ", ".join(sorted(map(str, found["condition"].unique()))[:5])
    policies = ", ".join(sorted(map(str, found["policy"].unique()))[:5])
    return (f"{int(outside.sum())} of its {len(games)} game rows are not games of its grid (conditions {conditions}; "
            f"policies {policies}), perhaps another sweep's or another game's rows copied in")


def read_sweep(out: str | os.PathLike[str], table: str = "games") -> pd.DataFrame:
    """A sweep's results (``games``) or one of its per-game tables, deduplicated."""
    if not Path(out).exists() and not Path(str(out) + ".parts").exists():
        raise SweepError(f"no sweep output at {str(out)!r}; run `llm-mesa sweep --out {out}` first")
    return SweepOutput(out).read(table)
