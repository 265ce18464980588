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
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

VERSIONED_PACKAGES = ("llm-mesa", "mesa", "networkx", "numpy", "pandas", "pyarrow", "scipy", "statsmodels", "openai")


class OutputError(ValueError):
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
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": sys.argv,
        "versions": package_versions(),
        "parameters": parameters,
        **extra,
    }


def check_output_dir(path: str | Path) -> Path:
    """Refuse, before a run starts, a destination that would be overwritten."""
    path = Path(path)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise OutputError(f"{str(path)!r} already exists and is not empty; choose a new --out directory")
    for parent in path.parents:  # a parent that is a file can never hold the run
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(f"{str(parent)!r} is a file, so {str(path)!r} cannot be written; choose another --out")
            break
    return path


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
                df[col] = df[col].map(lambda v: None if v is None or (isinstance(v, float) and math.isnan(v))
                                      else str(v)).astype("string")
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
              manifest: dict[str, Any]) -> Path:
    """Write tables (Parquet), summary.json and manifest.json into ``path`` atomically."""
    path = check_output_dir(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        for name, df in tables.items():
            parquet_ready(df).to_parquet(staging / f"{name}.parquet", index=False)
        (staging / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
        if path.exists():
            path.rmdir()  # empty, checked above
        os.replace(staging, path)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return path
