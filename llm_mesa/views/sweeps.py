"""A sweep's results as the sweep browser reads them, for any game (no drawing here).

``llm-mesa sweep --out DIR`` writes one row per game (``games``: condition, policy,
seed, measures) and, when asked with ``--tables``, each game's per-round tables.
Everything is read with ``llm_mesa.sweep.read_sweep``; the game is the one the
manifest names, and its ``GameView`` makes the table per condition x policy and
replays one game. A game is named by its key (condition, policy, seed), never by
parsing a label: condition names may hold any character (``ba-local|n=20``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from llm_mesa.errors import LlmMesaError
from llm_mesa.views.charts import KEY, repetitions
from llm_mesa.views.runs import read_manifest

#: the environment variable through which ``llm-mesa viz --sweep DIR`` names the sweep
SWEEP_DIR_ENV = "LLM_MESA_SWEEP_DIR"


class SweepViewError(LlmMesaError):
    """A sweep the browser cannot open or a game it cannot replay; the message names the fix."""


def game_label(condition: str, policy: str, seed: int) -> str:
    return f"{condition} · {policy} · seed {int(seed)}"


@dataclass
class SweepGames:
    """One sweep directory (or single ``.parquet`` file), its games and manifest; other tables on first use."""

    path: Path
    games: pd.DataFrame
    manifest: dict[str, Any] = field(default_factory=dict)
    _tables: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, path: str | Path) -> SweepGames:
        from llm_mesa.sweep import SweepError, read_sweep

        path = Path(str(path).strip()).expanduser()
        if not str(path).strip() or not path.exists():
            raise SweepViewError(f"{str(path)!r} does not exist; give the directory passed to llm-mesa sweep --out")
        if path.is_dir() and not (path / "games").is_dir():
            found = ", ".join(sorted(p.name for p in path.iterdir())[:8]) or "nothing"
            raise SweepViewError(f"{path} holds no sweep results (no games/ folder; found: {found}); "
                                 "give the directory passed to llm-mesa sweep --out")
        try:
            games = read_sweep(path, "games")
        except (SweepError, OSError, ValueError) as exc:
            raise SweepViewError(f"cannot read the sweep at {path}: {exc}") from None
        if games.empty:
            raise SweepViewError(f"{path} holds no finished games yet (games/ is empty); run or resume the sweep")
        manifest_path = path / "manifest.json" if path.is_dir() else path.with_name(path.stem + ".manifest.json")
        try:
            manifest = read_manifest(manifest_path)
        except LlmMesaError as exc:
            raise SweepViewError(str(exc)) from None
        games = games.astype({"condition": str, "policy": str})
        return cls(path=path, games=games.reset_index(drop=True), manifest=manifest)

    @property
    def game_name(self) -> str | None:
        return self.manifest.get("game") or self.manifest.get("grid", {}).get("game")

    @property
    def conditions(self) -> list[str]:
        listed = list(self.manifest.get("grid", {}).get("conditions", {}))
        present = list(dict.fromkeys(self.games["condition"]))
        return [c for c in listed if c in present] + [c for c in present if c not in listed]

    @property
    def policies(self) -> list[str]:
        listed = list(self.manifest.get("grid", {}).get("policies", {}))
        present = list(dict.fromkeys(self.games["policy"]))
        return [p for p in listed if p in present] + [p for p in present if p not in listed]

    @property
    def kept_tables(self) -> list[str]:
        """The per-game tables the sweep kept: its folders of Parquet parts (never another folder, such as the
        statistics ``llm-mesa analyze`` keeps in ``analysis-cache``)."""
        folders = [p.name for p in self.path.iterdir() if p.is_dir() and any(p.glob("*.parquet"))] \
            if self.path.is_dir() else []
        siblings = [p.name.split(".")[-2] for p in self.path.parent.glob(self.path.stem + ".*.parquet")] \
            if self.path.is_file() else []
        return sorted(t for t in set(folders + siblings) if t != "games" and not t.startswith("."))

    def describe(self) -> str:
        cells = self.games.groupby(["condition", "policy"]).ngroups
        kept = ", ".join(self.kept_tables) or "none (games replay from their seeds; rule policies only)"
        return (f"{self.game_name or 'a'} sweep at {self.path}: {len(self.games)} games in {cells} cells "
                f"({len(self.conditions)} conditions × {len(self.policies)} policies), {repetitions(self.games)}; "
                f"per-game tables kept: {kept}")

    def filtered(self, conditions: list[str] | None, policies: list[str] | None) -> pd.DataFrame:
        games = self.games
        if conditions:
            games = games[games["condition"].isin(conditions)]
        if policies:
            games = games[games["policy"].isin(policies)]
        return games.reset_index(drop=True)

    # --- one game ----------------------------------------------------------------------
    def label(self, condition: str, policy: str, seed: int) -> str:
        return f"{self.path} · {game_label(condition, policy, seed)}"

    def parameters_of(self, condition: str) -> dict[str, Any]:
        conditions = self.manifest.get("grid", {}).get("conditions", {})
        if condition not in conditions:
            raise SweepViewError(f"the manifest of {self.path} does not list condition {condition!r}; "
                                 "the game cannot be played again")
        return dict(conditions[condition])

    def policy_spec(self, policy: str) -> str:
        return str(self.manifest.get("grid", {}).get("policies", {}).get(policy, policy))

    def table(self, name: str) -> pd.DataFrame:
        if name not in self._tables:
            from llm_mesa.sweep import SweepError, read_sweep

            try:
                self._tables[name] = read_sweep(self.path, name) if name in self.kept_tables else pd.DataFrame()
            except (SweepError, OSError, ValueError):
                self._tables[name] = pd.DataFrame()
        return self._tables[name]

    def of_game(self, name: str, condition: str, policy: str, seed: int) -> pd.DataFrame:
        table = self.table(name)
        if table.empty:
            return table
        chosen = ((table["condition"].astype(str) == condition) & (table["policy"].astype(str) == policy)
                  & (table["seed"] == int(seed)))
        return table.loc[chosen].drop(columns=list(KEY)).reset_index(drop=True)

    def row(self, condition: str, policy: str, seed: int) -> dict[str, Any]:
        games = self.games
        found = games[(games["condition"] == condition) & (games["policy"] == policy) & (games["seed"] == int(seed))]
        if found.empty:
            raise SweepViewError(f"no game {game_label(condition, policy, seed)} in this sweep")
        return {k: (None if (not isinstance(v, (list, tuple, dict)) and pd.isna(v)) else v)
                for k, v in found.iloc[0].to_dict().items()}


__all__ = ["SWEEP_DIR_ENV", "SweepGames", "SweepViewError", "game_label"]
