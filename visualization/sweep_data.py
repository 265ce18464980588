"""A sweep's results as the sweep browser reads them (no drawing here).

``llm-mesa sweep --out DIR`` writes one row per game (``games``: condition,
policy, seed, outcome and measures) and, when asked with ``--tables
agents,rounds``, each game's per-round tables (``rounds``, ``agents``, and the
network's ``edges``). Everything is read with ``llm_mesa.sweep.read_sweep``; one
consensus game of a sweep becomes a ``RecordedGame``, so it replays with the very
viewer of a single run. A naming sweep replays from its ``rounds`` table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import networkx as nx
import pandas as pd

from llm_mesa.errors import LlmMesaError
from llm_mesa.graphs import seeded_layout
from llm_mesa.sweep import SweepError, read_sweep

from .layout import QUICK_ABOVE, quick_layout
from .replay import RecordedGame

KEY = ("condition", "policy", "seed")
#: games-table columns that are not measures worth a distribution
NOT_MEASURES = {"seed", "n", "minority", "max_rounds", "cost", "wall_s", "decisions", "direct_messages"}


class SweepViewError(LlmMesaError):
    """A sweep the browser cannot open or a game it cannot replay; the message names the fix."""


def game_label(condition: str, policy: str, seed: int) -> str:
    return f"{condition} | {policy} | seed {int(seed)}"


@dataclass
class SweepView:
    """One sweep directory (or single ``.parquet`` file) and its tables, read on first use."""

    path: Path
    games: pd.DataFrame
    manifest: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def open(cls, path: str | Path) -> "SweepView":
        path = Path(str(path).strip()).expanduser()
        if not str(path).strip() or not path.exists():
            raise SweepViewError(f"{str(path)!r} does not exist; give the directory passed to llm-mesa sweep --out")
        try:
            games = read_sweep(path, "games")
        except (SweepError, OSError, ValueError) as exc:
            raise SweepViewError(f"cannot read the sweep at {path}: {exc}") from None
        if games.empty:
            raise SweepViewError(f"{path} holds no finished games yet (games/ is empty); run or resume the sweep")
        manifest_path = path / "manifest.json" if path.is_dir() else path.with_name(path.stem + ".manifest.json")
        manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
        return cls(path=path, games=games, manifest=manifest)

    @property
    def game(self) -> str:
        return str(self.manifest.get("game") or ("naming" if "agreement_final" in self.games.columns else "consensus"))

    @property
    def conditions(self) -> list[str]:
        return list(dict.fromkeys(self.games["condition"].astype(str)))

    @property
    def policies(self) -> list[str]:
        return list(dict.fromkeys(self.games["policy"].astype(str)))

    @property
    def kept_tables(self) -> list[str]:
        folders = [p.name for p in self.path.iterdir() if p.is_dir()] if self.path.is_dir() else []
        siblings = [p.name.split(".")[-2] for p in self.path.parent.glob(self.path.stem + ".*.parquet")] \
            if self.path.is_file() else []
        return sorted(t for t in set(folders + siblings) if t != "games")

    def describe(self) -> str:
        seeds = self.games["seed"].nunique()
        kept = ", ".join(self.kept_tables) or "none (re-run with --tables agents,rounds to replay games)"
        return (f"{self.game} sweep at {self.path}: {len(self.games)} games, {len(self.conditions)} conditions × "
                f"{len(self.policies)} policies × {seeds} seeds; per-game tables kept: {kept}")

    def filtered(self, conditions: list[str] | None, policies: list[str] | None) -> pd.DataFrame:
        games = self.games
        if conditions:
            games = games[games["condition"].isin(conditions)]
        if policies:
            games = games[games["policy"].isin(policies)]
        return games.reset_index(drop=True)

    def measures(self) -> list[str]:
        """Numeric and yes/no columns of the games table worth a distribution."""
        out = []
        for column in self.games.columns:
            if column in NOT_MEASURES or column in KEY:
                continue
            dtype = self.games[column].dtype
            if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
                if self.games[column].notna().any():
                    out.append(column)
        return out

    def headline(self, games: pd.DataFrame) -> pd.DataFrame:
        """The consensus table (successes / games) or, for SIGN, final agreement per cell."""
        if games.empty:
            return pd.DataFrame()
        if self.game == "consensus":
            from llm_mesa.models.consensus.tables import consensus_table

            return consensus_table(games).reset_index()
        grouped = games.groupby(["condition", "policy"], sort=False)
        return pd.DataFrame({
            "games": grouped.size(),
            "agreement_final (mean)": grouped["agreement_final"].mean().round(3),
            "sd": grouped["agreement_final"].std(ddof=1).round(3),
            "reached 50%": grouped["rounds_to_50"].count(),
        }).reset_index()

    # --- per-game tables -------------------------------------------------------------

    @cached_property
    def _tables(self) -> dict[str, pd.DataFrame]:
        return {}

    def table(self, name: str) -> pd.DataFrame:
        if name not in self._tables:
            try:
                self._tables[name] = read_sweep(self.path, name)
            except (SweepError, OSError, ValueError):
                self._tables[name] = pd.DataFrame()
        return self._tables[name]

    def _of_game(self, name: str, condition: str, policy: str, seed: int) -> pd.DataFrame:
        table = self.table(name)
        if table.empty:
            return table
        chosen = (table["condition"] == condition) & (table["policy"] == policy) & (table["seed"] == int(seed))
        return table.loc[chosen].drop(columns=list(KEY)).reset_index(drop=True)

    def row(self, condition: str, policy: str, seed: int) -> dict[str, Any]:
        games = self.games
        found = games[(games["condition"] == condition) & (games["policy"] == policy) & (games["seed"] == int(seed))]
        if found.empty:
            raise SweepViewError(f"no game {game_label(condition, policy, seed)} in this sweep")
        return {k: (None if (not isinstance(v, (list, tuple)) and pd.isna(v)) else v)
                for k, v in found.iloc[0].to_dict().items()}

    def rounds_of(self, condition: str, policy: str, seed: int) -> pd.DataFrame:
        rounds = self._of_game("rounds", condition, policy, seed)
        if rounds.empty:
            raise SweepViewError("this sweep kept no per-round table; re-run it with --tables rounds "
                                 "(consensus games: --tables agents,rounds) to replay its games")
        return rounds.sort_values("round").reset_index(drop=True)

    def recorded_game(self, condition: str, policy: str, seed: int) -> RecordedGame:
        """One consensus game of the sweep as the replay viewer's ``RecordedGame``."""
        rounds = self.rounds_of(condition, policy, seed)
        agents = self._of_game("agents", condition, policy, seed)
        edges = self._of_game("edges", condition, policy, seed)
        if agents.empty or edges.empty:
            raise SweepViewError("this sweep kept no agents or edges tables; re-run it with --tables agents,rounds "
                                 "to replay its games")
        first = agents[agents["round"] == agents["round"].min()].sort_values("node")
        graph = nx.Graph()
        graph.add_nodes_from(int(v) for v in first["node"])
        graph.add_edges_from((int(u), int(v)) for u, v in zip(edges["source"], edges["target"]))
        layout = (seeded_layout(graph, int(seed)) if graph.number_of_nodes() <= QUICK_ABOVE
                  else quick_layout(graph, int(seed)))
        row = self.row(condition, policy, seed)
        nodes = pd.DataFrame({"node": first["node"].astype(int), "preference": first["preference"].astype(str),
                              "x": [layout[int(v)][0] for v in first["node"]],
                              "y": [layout[int(v)][1] for v in first["node"]],
                              "policy": row.get("policy_spec") or policy})
        parameters = dict(self.manifest.get("grid", {}).get("conditions", {}).get(condition, {}))
        messages = self._of_game("messages", condition, policy, seed)
        transcript = self._of_game("transcript", condition, policy, seed)
        return RecordedGame(
            path=Path(f"{self.path}#{game_label(condition, policy, seed)}"), rounds=rounds,
            agents=agents.astype({"round": int, "node": int}), nodes=nodes.reset_index(drop=True), edges=edges,
            messages=messages if not messages.empty else pd.DataFrame(columns=["round", "sender", "to", "text"]),
            transcript=None if transcript.empty else transcript, summary={**row, "policy": row.get("policy_spec")},
            manifest={"kind": "consensus", "parameters": parameters})


__all__ = ["SweepView", "SweepViewError", "game_label"]
