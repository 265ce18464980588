"""Writing a run: its tables, summary and manifest, all or nothing.

A run directory is staged next to its destination and renamed into place in one
step, so an interrupted or failed run never leaves a half-written result.
"""

from __future__ import annotations

import json
import math
import os
import platform
import shutil
import sys
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llm_mesa.boundary import content_digest, seal
from llm_mesa.errors import LlmMesaError
from llm_mesa.files import new_folder

if TYPE_CHECKING:
    import pandas as pd

VERSIONED_PACKAGES = ("llm-mesa", "mesa", "networkx", "numpy", "pandas", "pyarrow", "scipy", "statsmodels", "openai")


#: the longest file name (bytes) we write; Linux file systems allow 255
NAME_MAX = 255


class OutputError(LlmMesaError):
    """A run cannot be written where asked; the message names the fix."""


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def build_manifest(kind: str, parameters: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """What a run needs to be understood and repeated: versions, parameters, seeds."""
    return {
        "kind": kind,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": sys.argv,
        "versions": package_versions(),
        "parameters": parameters,
        **extra,
    }


def check_output_dir(path: str | Path) -> Path:
    """Refuse, before a run starts, a destination that would be overwritten or cannot be written.

    Checked before a game is played, so that a long (and perhaps paid) game is never
    lost to an output that was never writable: an empty name, an existing non-empty
    directory, a parent that is a file, a name too long for the file system, or a
    folder this process cannot create files in (read-only, ``/proc``...).
    """
    if str(path).strip() == "":
        raise OutputError("--out is empty; give the directory to write the run to, e.g. --out runs/game1")
    path = Path(path)
    too_long = [part for part in (*path.parts, f".{path.name}.staging") if len(part.encode()) > NAME_MAX]
    if too_long:
        raise OutputError(f"the name {too_long[0][:40]!r}... is longer than file systems allow ({NAME_MAX} bytes); "
                          "choose a shorter --out")
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise OutputError(f"{str(path)!r} already exists and is not empty; choose a new --out directory")
    existing = next(p for p in (path, *path.parents) if p.exists())
    if not existing.is_dir():
        raise OutputError(f"{str(existing)!r} is a file, so {str(path)!r} cannot be written; choose another --out")
    try:
        os.rmdir(new_folder(existing, ".llm-mesa-probe-"))
    except OSError as exc:
        raise OutputError(f"cannot write in {str(existing)!r} ({exc.strerror or exc}); choose another --out") from None
    return path


def _missing(value: Any) -> bool:
    """None, NaN or pandas' NA: a value that must stay missing, never become the text "<NA>"."""
    import pandas as pd

    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def parquet_ready(df: pd.DataFrame, types: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Columns Parquet can hold with stable types: lists and dicts as JSON, strings as strings.

    ``types`` fixes the type of columns whose values may all be missing in one
    table (a sweep writes many parts that must agree).
    """
    types = types or {}
    df = df.copy()
    for col in df.columns:
        if col in types:
            kind = types[col]
            if kind == "string":
                df[col] = df[col].map(lambda v: None if _missing(v) else str(v)).astype("string")
            else:
                df[col] = df[col].astype(kind)
        elif df[col].dtype == object:
            values = df[col].dropna()
            if values.map(lambda v: isinstance(v, (list, tuple, dict))).any():
                df[col] = df[col].map(lambda v: json.dumps(v, default=str) if v is not None else None).astype("string")
            elif len(values) and values.map(lambda v: isinstance(v, str)).all():
                df[col] = df[col].astype("string")
    return df


def write_run(path: str | Path, tables: dict[str, pd.DataFrame], summary: dict[str, Any],
               manifest: dict[str, Any], *, private: bool = False) -> Path:
    """Write tables (Parquet), summary.json and manifest.json into ``path`` atomically.

    The run is staged next to ``path`` and renamed into place in one step. If the
    rename fails, the staged run stays where it is; if staging fails (a full disk, a
    folder that became read-only), the run is written to the system's temporary
    folder instead. Either way the error says where, so a played game is never lost.
    The folder and its files are made as the umask says, as any tool's output, unless
    ``private``: then the folder is its owner's alone whatever the umask (a lab's run,
    which holds people's data).
    """
    path = check_output_dir(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = _stage(tables, summary, manifest, path.parent, path.name, private)
    except OSError as exc:
        reason = exc.strerror or str(exc)
    else:
        try:
            if path.exists():
                path.rmdir()  # empty, checked above
            os.replace(staging, path)
            return path
        except OSError as exc:
            raise OutputError(f"cannot move the run into {str(path)!r} ({exc.strerror or exc}); "
                              f"it is complete in {staging}") from None
        except BaseException:  # an interrupt (Ctrl-C, SIGTERM) between staging and the move: no hidden leftover
            shutil.rmtree(staging, ignore_errors=True)
            raise
    try:
        kept = _stage(tables, summary, manifest, Path(tempfile.gettempdir()), path.name, private)
    except OSError:
        raise OutputError(f"cannot write the run to {str(path)!r} ({reason}), nor to the temporary folder") from None
    raise OutputError(f"cannot write the run to {str(path)!r} ({reason}); it was saved in {kept} instead")


def _stage(tables: dict[str, pd.DataFrame], summary: dict[str, Any], manifest: dict[str, Any],
           folder: Path, name: str, private: bool = False) -> Path:
    """Every file of the run in a new hidden folder inside ``folder`` (removed again if writing fails)."""
    staging = new_folder(folder, f".{name}.", private=private)
    try:
        for table, df in tables.items():
            parquet_ready(df).to_parquet(staging / f"{table}.parquet", index=False)
        (staging / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
        # sealed: a reader proves it holds what was written (llm_mesa.boundary.check_seal), and the summary beside it
        held = seal({**manifest, "summary_digest": content_digest(json.loads(json.dumps(summary, default=str)))})
        (staging / "manifest.json").write_text(json.dumps(held, indent=2) + "\n")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return staging
