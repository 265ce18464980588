"""A finished sweep as a game's analysis reads it: manifest, games table, other tables on demand."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["AnalyzeError", "SweepData", "open_sweep"]

#: sweeps written before games were plugins have no "game" in their manifest: all were consensus sweeps
DEFAULT_GAME = "consensus"
#: the manifest's grid lists a sweep's conditions and policies in their order
_GRID_KEYS = {"condition": "conditions", "policy": "policies"}


class AnalyzeError(ValueError):
    """A sweep directory that cannot be analysed; the message names the fix."""


@dataclass
class SweepData:
    """One sweep's output (``llm-mesa sweep --out``): what ``Game.analyze`` is given.

    ``path`` is the sweep's ``--out`` (a directory, or a ``.parquet`` file),
    ``manifest`` its manifest, ``game`` the name of the game it played and
    ``games`` its games table (one row per finished game).
    """

    path: Path
    manifest: dict[str, Any]
    games: pd.DataFrame
    _tables: dict[str, pd.DataFrame | None] = field(default_factory=dict, repr=False)

    @property
    def game(self) -> str:
        return str(self.manifest.get("game") or DEFAULT_GAME)

    def table(self, name: str) -> pd.DataFrame | None:
        """A per-game table the sweep kept (``agents``, ``rounds``, ``edges``...), or None."""
        if name not in self._tables:
            from llm_mesa.sweep import read_sweep

            frame = read_sweep(self.path, name)
            self._tables[name] = None if frame.empty else frame
        return self._tables[name]

    def ordered(self, column: str, games: pd.DataFrame | None = None) -> list[str]:
        """The values of ``column`` (``condition``, ``policy``) in the grid's order; others sorted after.

        ``games``: a subset of the games table (default: all of it).
        """
        present = list(dict.fromkeys((self.games if games is None else games)[column].astype(str)))
        preferred = list((self.manifest.get("grid") or {}).get(_GRID_KEYS.get(column, column)) or [])
        return [v for v in preferred if v in present] + sorted(v for v in present if v not in preferred)


def _manifest_path(out: Path) -> Path:
    return out.with_name(out.stem + ".manifest.json") if out.suffix == ".parquet" else out / "manifest.json"


def open_sweep(path: str | os.PathLike[str]) -> SweepData:
    """Read a sweep's manifest and games table; refuse what is not a sweep with games."""
    from llm_mesa.sweep import read_sweep

    out = Path(path)
    manifest_path = _manifest_path(out)
    if not out.exists() and not Path(str(out) + ".parts").exists():
        raise AnalyzeError(f"no sweep output at {str(out)!r}; pass the --out of `llm-mesa sweep`")
    if not manifest_path.exists():
        raise AnalyzeError(f"{str(out)!r} is not a sweep's output (no {manifest_path.name}); "
                           "pass the --out of `llm-mesa sweep`")
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, json.JSONDecodeError):
        raise AnalyzeError(f"cannot read {manifest_path}; it is not a sweep manifest") from None
    if not isinstance(manifest, dict):
        raise AnalyzeError(f"cannot read {manifest_path}; it is not a sweep manifest")
    games = read_sweep(out, "games")
    if games.empty:
        raise AnalyzeError(f"{str(out)!r} holds no finished game: run (or resume) the sweep")
    return SweepData(out, manifest, games)
