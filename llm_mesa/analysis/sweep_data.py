"""Finished sweeps as a game's analysis reads them: manifests, games table, other tables on demand.

One sweep or several analysed together (an LLM sweep and its rule baselines):
:func:`open_sweeps` joins their tables, each row keeping the ``sweep`` it came
from, and names every game's ``model``: the LLM model's name for LLM policies,
the policy's label (the rule configuration, e.g. ``mi-0.2``) for rule policies.
Sweeps of different games cannot be analysed together.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from llm_mesa.analysis.checks import AnalysisError

__all__ = ["AnalysisError", "SweepData", "model_labels", "open_sweep", "open_sweeps"]

#: the manifest's grid lists a sweep's conditions and policies in their order
_GRID_KEYS = {"condition": "conditions", "policy": "policies"}
#: what identifies one game across several sweeps
GAME_KEY = ("sweep", "condition", "policy", "seed")


@dataclass
class SweepData:
    """One or several sweeps' output (``llm-mesa sweep --out``): what ``Game.analyze`` is given.

    ``path`` is the first sweep's ``--out`` (a directory, or a ``.parquet`` file) and
    ``manifest`` its manifest; ``paths``/``manifests`` list every sweep. ``games`` is
    the games table (one row per finished game) with two added columns: ``sweep``
    (the sweep's label, see ``labels``) and ``model`` (see :func:`model_labels`).
    ``game`` is the name of the game they played.
    """

    path: Path
    manifest: dict[str, Any]
    games: pd.DataFrame
    paths: list[Path] = field(default_factory=list)
    manifests: list[dict[str, Any]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    _tables: dict[str, pd.DataFrame | None] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.paths:
            self.paths, self.manifests = [self.path], [self.manifest]
        if not self.labels:
            self.labels = _sweep_labels(self.paths)
        if "sweep" not in self.games.columns:
            self.games = self.games.assign(sweep=self.labels[0])
        if "model" not in self.games.columns or self.games["model"].isna().any():
            self.games = self.games.assign(model=model_labels(self.games))

    @property
    def game(self) -> str:
        return str(self.manifest.get("game") or "")

    @property
    def name(self) -> str:
        """The sweeps' paths, as one line."""
        return ", ".join(map(str, self.paths))

    def table(self, name: str) -> pd.DataFrame | None:
        """A per-game table the sweeps kept (``agents``, ``rounds``, ``edges``...) with its ``sweep`` column, or None."""
        if name not in self._tables:
            from llm_mesa.sweep import read_sweep

            frames = [read_sweep(path, name).assign(sweep=label) for path, label in zip(self.paths, self.labels)]
            frames = [f for f in frames if not f.empty]
            self._tables[name] = pd.concat(frames, ignore_index=True) if frames else None
        return self._tables[name]

    def ordered(self, column: str, games: pd.DataFrame | None = None) -> list[str]:
        """The values of ``column`` (``condition``, ``policy``, ``model``) in the grids' order; others sorted after.

        ``games``: a subset of the games table (default: all of it).
        """
        frame = self.games if games is None else games
        present = list(dict.fromkeys(frame[column].astype(str)))
        preferred: list[str] = []
        for manifest, label in zip(self.manifests, self.labels):
            listed = list((manifest.get("grid") or {}).get(_GRID_KEYS.get(column, column)) or [])
            if column == "model":  # a grid lists policies; their models follow that order
                mine = frame[frame["sweep"] == label] if "sweep" in frame.columns else frame
                order = {p: i for i, p in enumerate((manifest.get("grid") or {}).get("policies") or [])}
                listed = list(dict.fromkeys(mine.assign(_o=mine["policy"].map(order)).sort_values("_o", kind="stable")
                                            ["model"].astype(str)))
            preferred += [v for v in listed if v not in preferred]
        return [v for v in preferred if v in present] + sorted(v for v in present if v not in preferred)


def model_labels(games: pd.DataFrame) -> pd.Series:
    """Each game's model: its LLM model name, else its policy label (a rule configuration).

    Two policies of one sweep that name the same LLM model (e.g. at two
    temperatures) stay apart as ``model (policy)``.
    """
    policy = games["policy"].astype(str)
    if "model" not in games.columns:
        return policy.rename("model")
    model = games["model"].astype("string").fillna(policy).astype(str)
    by = [games["sweep"], model] if "sweep" in games.columns else [model]
    shared = policy.groupby(by).transform("nunique") > 1
    return model.where(~shared, model + " (" + policy + ")").rename("model")


def _sweep_labels(paths: Sequence[Path]) -> list[str]:
    """Short names of sweeps: the directory's name, or its path where two share a name."""
    names = [p.stem if p.suffix == ".parquet" else p.name for p in paths]
    return [n if names.count(n) == 1 else str(p) for n, p in zip(names, paths)]


def _manifest_path(out: Path) -> Path:
    return out.with_name(out.stem + ".manifest.json") if out.suffix == ".parquet" else out / "manifest.json"


def open_sweep(path: str | os.PathLike[str]) -> SweepData:
    """Read a sweep's manifest and games table; refuse what is not a sweep with games."""
    from llm_mesa.sweep import read_sweep

    out = Path(path)
    manifest_path = _manifest_path(out)
    if not out.exists() and not Path(str(out) + ".parts").exists():
        raise AnalysisError(f"no sweep output at {str(out)!r}; pass the --out of `llm-mesa sweep`")
    if not manifest_path.exists():
        raise AnalysisError(f"{str(out)!r} is not a sweep's output (no {manifest_path.name}); "
                           "pass the --out of `llm-mesa sweep`")
    from llm_mesa.errors import LlmMesaError
    from llm_mesa.sweep.output import foreign_rows, read_sweep_manifest

    try:
        manifest = read_sweep_manifest(manifest_path)
    except LlmMesaError as exc:
        raise AnalysisError(str(exc)) from None
    if not str(manifest.get("kind", "")).endswith("-sweep"):
        raise AnalysisError(f"{manifest_path} is not a sweep manifest (a single game's --out, or another file); "
                            "pass the --out of `llm-mesa sweep`")
    if not isinstance(manifest.get("game"), str) or not manifest["game"]:
        raise AnalysisError(f"{manifest_path} names no game (a sweep of an older llm-mesa); play it again with "
                            "`llm-mesa sweep`")
    games = read_sweep(out, "games")
    if games.empty:
        raise AnalysisError(f"{str(out)!r} holds no finished game: run (or resume) the sweep")
    foreign = foreign_rows(games, manifest)
    if foreign:
        raise AnalysisError(f"{str(out)!r} is a {manifest['game']} sweep, but {foreign}; move the part files that "
                            f"hold them out of {out}, or analyse the sweep they came from")
    return SweepData(out, manifest, games)


def open_sweeps(paths: Sequence[str | os.PathLike[str]]) -> SweepData:
    """Several sweeps of one game as one: their games tables joined, each row with its ``sweep`` and ``model``.

    The same directory given twice, or sweeps of different games, are bad input.
    """
    if not paths:
        raise AnalysisError("no sweep given; pass one or more --out directories of `llm-mesa sweep`")
    resolved = [Path(p).resolve() for p in paths]
    if len(set(resolved)) != len(resolved):
        twice = next(str(p) for p in paths if resolved.count(Path(p).resolve()) > 1)
        raise AnalysisError(f"{twice!r} is given twice; pass each sweep once")
    sweeps = [open_sweep(p) for p in paths]
    if len(sweeps) == 1:
        return sweeps[0]
    games = {s.game for s in sweeps}
    if len(games) > 1:
        listed = ", ".join(f"{str(s.path)!r} is a {s.game} sweep" for s in sweeps)
        raise AnalysisError(f"sweeps of different games cannot be analysed together ({listed}); analyse each game's apart")
    labels = _sweep_labels([s.path for s in sweeps])
    frames = [s.games.drop(columns=["sweep", "model"]).assign(sweep=label)
              .assign(model=s.games["model"].to_numpy()) for s, label in zip(sweeps, labels)]
    return SweepData(sweeps[0].path, sweeps[0].manifest, pd.concat(frames, ignore_index=True),
                     paths=[s.path for s in sweeps], manifests=[s.manifest for s in sweeps], labels=labels)
