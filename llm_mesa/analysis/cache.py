"""What ``llm-mesa analyze`` computed, kept for ``llm-mesa report``: a cache addressed by content.

A game's statistics over a large sweep take seconds to minutes (mixed-effects fits), and a
report drawn right after an analysis would pay them again. The report JSON is kept under a
key that hashes everything it depends on: the bytes of every data file of every sweep
analysed (tables, manifests; not the LLM call store, which no statistic reads), the sweeps'
labels, the game, its analysis options, and the source of the code that computes it (the
core's ``llm_mesa/analysis`` and the folder of the game's analysis module) with llm-mesa's
version. Any change to any of them is another key, so a stale result is never read; there
is nothing to invalidate by hand. Entries live beside the first sweep
(``DIR/analysis-cache/KEY.json``, or ``FILE.analysis-cache/`` for a single-file sweep); the
newest ``KEEP`` are kept. A sweep on a read-only disk is analysed every time.

An entry proves what it holds (``ENTRY_FORMAT``): it carries the whole digest of what it was
computed from (``inputs``; its file name is a prefix of it) and a digest of its report's content
(``boundary.seal``), and it is read within the boundary's bounds (size, nesting). An entry that
is not one (not JSON, nested too deep, of another shape, another format), that was computed
from other inputs, or whose report no longer matches its digest (edited, damaged, false
numbers under the right name) is computed again and replaced, never shown.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
from collections.abc import Iterator, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from llm_mesa.analysis import game_analysis
from llm_mesa.analysis.sweep_data import SweepData
from llm_mesa.boundary import OutsideDataError, check_seal, read_json_file, seal

__all__ = ["CACHE_DIR", "KEEP", "analysis_key", "cache_folder", "cached_analysis", "default_options"]

CACHE_DIR = "analysis-cache"
#: what an entry is: {"format": ENTRY_FORMAT, "inputs": the key's whole digest, "report": {...}, "digest": ...}
ENTRY_FORMAT = "llm-mesa-analysis-2"
#: cached reports kept per sweep (the newest)
KEEP = 8
#: files of a sweep that no statistic reads: the LLM call store and the sweep's lock
_IGNORED = ("calls.sqlite", ".lock")


def cache_folder(path: Path) -> Path:
    """Where the cached reports of the sweep at ``path`` live."""
    return path / CACHE_DIR if path.is_dir() else path.with_name(f"{path.stem}.{CACHE_DIR}")


def _data_files(path: Path) -> Iterator[Path]:
    """Every file of a sweep that its analysis may read, in a fixed order."""
    if path.is_dir():
        candidates = (p for p in path.rglob("*") if CACHE_DIR not in p.relative_to(path).parts)
    else:
        candidates = (p for p in path.parent.glob(f"{path.stem}*") if not p.name.startswith(f"{path.stem}.{CACHE_DIR}"))
    for file in sorted(candidates):
        if file.is_file() and not file.name.startswith(_IGNORED):
            yield file


def _code_fingerprint(game: Any) -> str:
    """A hash of the source that computes the game's report (core analysis and the game's analysis folder)."""
    try:
        version = metadata.version("llm-mesa")
    except metadata.PackageNotFoundError:  # a bare checkout
        version = "0+unknown"
    folders = {Path(__file__).parent}
    module = game.extensions.analysis or "llm_mesa.analysis.generic"
    spec = importlib.util.find_spec(module)
    if spec is not None and spec.origin:
        folders.add(Path(spec.origin).parent)
    digest = hashlib.sha256(version.encode())
    for folder in sorted(folders):
        for source in sorted(folder.glob("*.py")):
            digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


def analysis_key(sweep: SweepData, game: Any, options: Mapping[str, Any]) -> str:
    """The content address of the report of ``sweep`` by ``game`` with ``options`` (see the module doc):
    the whole SHA-256 of its inputs (an entry's file is named by its first 32 digits)."""
    declared = {"measures": {k: repr(v) for k, v in getattr(game, "measures", {}).items()},
                "headline": getattr(game, "headline_measure", None)}  # what the report draws a column as
    digest = hashlib.sha256(json.dumps({"game": game.name, "options": dict(options), "labels": sweep.labels,
                                        "code": _code_fingerprint(game), "declared": declared},
                                       sort_keys=True, default=str).encode())
    for path in sweep.paths:
        for file in _data_files(Path(path)):
            digest.update(str(file.relative_to(Path(path).parent)).encode() + b"\0")
            with open(file, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


def default_options(game: Any) -> dict[str, Any]:
    """The game's analysis options at their defaults, as ``llm-mesa analyze`` gives them when none is passed."""
    group = argparse.ArgumentParser(add_help=False).add_argument_group(game.name)
    game_analysis.configure(game, group)
    return {action.dest: action.default for action in group._group_actions}


def cached_analysis(sweep: SweepData, game: Any, options: Mapping[str, Any], compute, *, use: bool = True) -> dict:
    """The report of ``sweep``: read from the cache when its key is there, else ``compute()``d and kept."""
    if not use:
        return compute()
    inputs = analysis_key(sweep, game, options)
    folder = cache_folder(Path(sweep.paths[0]))
    entry = folder / f"{inputs[:32]}.json"
    held = _proven(entry, inputs)
    if held is not None:
        return held
    report = compute()
    try:
        from llm_mesa.files import write_text_atomic

        folder.mkdir(exist_ok=True)
        write_text_atomic(entry, json.dumps(seal({"format": ENTRY_FORMAT, "inputs": inputs, "report": report})))
        for old in sorted(folder.glob("*.json"), key=os.path.getmtime, reverse=True)[KEEP:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass  # a read-only sweep: analysed every time
    return report


def _proven(entry: Path, inputs: str) -> dict | None:
    """The report ``entry`` holds when it proves it: the format, these inputs, a report whose content
    matches its digest; None (compute it again) for anything else, whatever the file holds."""
    if not entry.is_file():
        return None
    try:
        held = read_json_file(entry, "an analysis cache entry", fix="it is computed again")
        check_seal(held, entry, "an analysis cache entry", fix="it is computed again")
    except OutsideDataError:
        return None
    if held.get("format") != ENTRY_FORMAT or held.get("inputs") != inputs or "digest" not in held:
        return None
    report = held.get("report")
    return report if isinstance(report, dict) else None
