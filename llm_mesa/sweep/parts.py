"""Part files of a sweep's tables: atomic writes, commits, compaction that survives a kill, a lock.

A finished game's rows go into one part file per table, all under the same name;
the ``games`` part is renamed into place last and is the commit: a part of another
table whose ``games`` part is missing belongs to games that never finished, is never
read, and is removed when the next sweep starts. Compaction writes its merged parts
under ``*.parquet.new`` names, records in a journal that they are complete, then
renames them and deletes the parts they replace; a kill at any point is rolled
forward (journal complete) or back (not complete) by the next sweep or reader, so
no row is ever lost or read twice. One sweep at a time holds the directory's lock.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from llm_mesa.files import replace_atomically, write_text_atomic

from .columns import CORE_TYPES, SweepError, rows_table

JOURNAL = ".compaction.json"
LOCK = ".lock"


def write_atomic(path: Path, data: pd.DataFrame | Sequence[dict[str, Any]],
                 types: Mapping[str, str] | None = None) -> None:
    """Write a Parquet file under a temporary name and rename it into place (``types``: of nullable columns)."""
    import pyarrow.parquet as pq

    from llm_mesa.run_output import parquet_ready

    def write(tmp: Path) -> None:
        if isinstance(data, pd.DataFrame):
            parquet_ready(data, types or CORE_TYPES).to_parquet(tmp, index=False)
        else:
            pq.write_table(rows_table(data, types), tmp)

    replace_atomically(path, write)


def part_files(folder: Path) -> list[Path]:
    """The readable part files of a table folder, in name order."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob("*.parquet") if not p.name.startswith((".", "_")))


def read_parts(files: Iterable[Path], types: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The rows of ``files``, concatenated; an unreadable part is one error line that names it."""
    frames = []
    for path in files:
        if not path.exists():
            continue
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # noqa: BLE001  (pyarrow raises several kinds for a damaged file)
            raise DamagedPart(path, type(exc).__name__) from None
        if len(frame):
            frames.append(frame)
    if not frames:
        return pd.DataFrame()
    df = pd.concat(frames, ignore_index=True)
    # A part written from rows and one written from a data frame (a compaction) read back
    # with different dtypes for the same column (object or boolean, NA- or NaN-missing
    # strings); results must not depend on how many parts a sweep wrote, or how.
    for column in df.columns:
        wanted = (types or CORE_TYPES).get(column)
        if wanted is not None:
            try:
                df[column] = df[column].astype(wanted)
            except (TypeError, ValueError):
                pass
        elif isinstance(df[column].dtype, pd.StringDtype):
            df[column] = df[column].astype(pd.StringDtype())
    return df


class DamagedPart(SweepError):
    """A part file that does not read as Parquet; ``SweepOutput`` says what to move aside with it."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path} is not a readable Parquet part ({reason})")
        self.path, self.reason = path, reason


def commit_parts(name: str, tables: dict[str, pd.DataFrame], rows: Sequence[dict[str, Any]],
                 folder: Callable[[str], Path], types: Mapping[str, str] | None = None) -> None:
    """Write one batch of finished games: every table's part, then the ``games`` part (the commit)."""
    for table, df in tables.items():
        folder(table).mkdir(parents=True, exist_ok=True)
        write_atomic(folder(table) / name, df, types)
    folder("games").mkdir(parents=True, exist_ok=True)
    write_atomic(folder("games") / name, rows, types)


def remove_uncommitted(root: Path) -> list[Path]:
    """Delete temporary files and parts of games that never committed; return what was removed."""
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    games = root / "games"
    for folder in (p for p in root.iterdir() if p.is_dir() and p.name != "quarantine"):
        for path in folder.iterdir():
            orphan = folder != games and path.suffix == ".parquet" and not path.name.startswith(".") \
                and not (games / path.name).exists() and not path.name.startswith("part-compacted-")
            if path.name.startswith(".tmp-") or orphan:
                path.unlink(missing_ok=True)
                removed.append(path)
    return removed


class Compaction:
    """Replace many parts by one per table, rolled forward or back if a kill interrupts it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.journal = root / JOURNAL

    def run(self, plan: dict[Path, tuple[pd.DataFrame, list[Path]]], types: Mapping[str, str] | None = None) -> None:
        """``plan``: target file -> (its merged rows, the parts it replaces)."""
        if not plan:
            return
        record = {"complete": False, "targets": [str(t) for t in plan],
                  "replaced": sorted({str(p) for _, parts in plan.values() for p in parts})}
        write_text_atomic(self.journal, json.dumps(record))
        for target, (merged, _) in plan.items():
            staged = target.with_name(target.name + ".new")
            write_atomic(staged, merged, types)
        record["complete"] = True
        write_text_atomic(self.journal, json.dumps(record))
        self.recover()

    def recover(self) -> None:
        """Finish (journal complete) or undo (not complete) a compaction a kill interrupted."""
        if not self.journal.exists():
            return
        record = self._journal_record()
        for target in map(Path, record.get("targets", [])):
            staged = target.with_name(target.name + ".new")
            if record.get("complete"):
                if staged.exists():
                    os.replace(staged, target)
            else:
                staged.unlink(missing_ok=True)
        if record.get("complete"):
            targets = set(record.get("targets", []))
            for part in record.get("replaced", []):
                if part not in targets:
                    Path(part).unlink(missing_ok=True)
        self.journal.unlink(missing_ok=True)

    def _journal_record(self) -> dict[str, Any]:
        """The journal as written, or an empty undo: it is read back as a list of files to move and delete,
        so only a record of its own shape that names files inside this sweep's folder is acted on."""
        from llm_mesa.boundary import OutsideDataError, read_json_file

        nothing: dict[str, Any] = {"complete": False, "targets": []}
        try:
            record = read_json_file(self.journal, "a compaction journal", fix="it is ignored")
        except OutsideDataError:
            return nothing
        root = self.root.resolve()
        single = root.with_name(root.name.removesuffix(".parts")) if root.name.endswith(".parts") else None

        def ours(path: object) -> bool:  # in the sweep's folder, or the one file a single-file sweep compacts to
            return isinstance(path, str) and (Path(path).resolve().is_relative_to(root) or Path(path).resolve() == single)

        lists = [record.get("targets"), record.get("replaced", [])]
        if not isinstance(record.get("complete"), bool) or not all(isinstance(v, list) for v in lists):
            return nothing
        if not all(ours(p) for v in lists for p in v):
            return nothing  # a file outside the sweep is never moved or deleted on a journal's word
        return record


class SweepLock:
    """An exclusive lock on a sweep's output while a sweep writes it (released on exit or death)."""

    def __init__(self, root: Path) -> None:
        self.path = root / LOCK
        self.handle = None

    def __enter__(self) -> SweepLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.handle = open(self.path, "a+")
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.handle.seek(0)
            holder = self.handle.read().strip() or "another process"
            self.handle.close()
            self.handle = None
            raise SweepError(f"another sweep ({holder}) is writing to {self.path.parent}; wait for it to finish "
                             "or choose another --out") from None
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.write(f"pid {os.getpid()}")
        self.handle.flush()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None
