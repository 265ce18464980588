"""A sweep's results on disk: one Parquet dataset per table, appended game by game.

Layout (``out`` a directory)::

    out/manifest.json          versions, game, grid, seeds, endpoint (never a key), store
    out/manifest-history.jsonl one line per start (resumes included)
    out/games/part-*.parquet   one row per game: condition, policy, seed, summary
    out/<table>/part-*.parquet per-game tables when asked (rounds, agents, ...)
    out/calls.sqlite           recorded LLM calls (LLM sweeps)

``out`` ending in ``.parquet`` names a single file instead: parts are gathered
in ``<out>.parts/`` while the sweep runs and compacted into the file at the end.
Every part has the same column types, so ``pandas.read_parquet(out / "games")``
works as well as ``read_sweep(out)``. Nothing here knows which game was played.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from llm_mesa.games import GameResult
from llm_mesa.run_output import parquet_ready

#: the key of a game in every table
KEY = ("condition", "policy", "seed")
#: columns that may be all missing in one part (a game's winner, a model name...):
#: their type is fixed so that every part of a dataset reads back alike
NULLABLE_TYPES: dict[str, str] = {
    "winner": "string", "stop_reason": "string", "largest_component_colour": "string",
    "winner_is_majority_preference": "boolean", "largest_component_baseline_mean": "float64",
    "largest_component_baseline_p": "float64", "distinct_share": "float64",
    "template_similarity": "float64", "stubbornness": "float64", "model": "string", "message": "string",
    "reason": "string", "diary": "string", "answer": "string", "outcome": "string", "failed": "string",
    "text": "string", "to": "Int64", "message_to": "Int64",
    "tokens_to_50": "float64", "tokens_to_60": "float64", "tokens_to_70": "float64",
    "total_tokens_to_50": "float64", "total_tokens_to_60": "float64", "total_tokens_to_70": "float64",
    "rounds_to_50": "float64", "rounds_to_60": "float64", "rounds_to_70": "float64",
}


class SweepError(ValueError):
    """A sweep that cannot run as asked; the message names the fix."""


_ARROW_TYPES = {"string": "string", "boolean": "bool", "float64": "float64", "Int64": "int64"}


def _rows_table(rows: Sequence[dict[str, Any]]):
    """Game rows as an Arrow table with the same column types in every part (fast for few rows)."""
    import pyarrow as pa

    records = [{k: (json.dumps(v, default=str) if isinstance(v, (list, tuple, dict)) else v) for k, v in r.items()}
               for r in rows]
    table = pa.Table.from_pylist(records)
    for i, name in enumerate(table.column_names):
        wanted = NULLABLE_TYPES.get(name)
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
            parquet_ready(data, NULLABLE_TYPES).to_parquet(tmp, index=False)
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
            if target is None and (not parts or (len(parts) == 1 and parts[0].name.startswith("part-compacted"))):
                continue  # already one compacted part (a lone written part is rewritten: the same types as merged ones)
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
