"""A recorded consensus game, read back from its run directory for the replay viewer.

``llm-mesa consensus ... --out DIR`` writes the per-round measures
(``rounds.parquet``), every agent's colour each round (``agents.parquet``), the
network with its layout (``nodes.parquet``, ``edges.parquet``), the messages, the
summary and manifest, and for LLM games the transcript. That is all the viewer
needs: it calls no endpoint and plays no game logic; the few quantities not stored
per round (who is locally satisfied) come from ``llm_mesa.models.consensus.measures``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import networkx as nx
import pandas as pd

from llm_mesa.errors import LlmMesaError
from llm_mesa.models.consensus import measures

from .network_view import NetworkState

#: The tables a replay cannot do without (``messages`` and ``transcript`` are optional).
REQUIRED_TABLES = ("rounds", "agents", "nodes", "edges")
#: The environment variable through which ``llm-mesa viz --replay DIR`` names the run.
REPLAY_DIR_ENV = "LLM_MESA_REPLAY_DIR"


class ReplayError(LlmMesaError):
    """A run directory the viewer cannot open; the message names the fix."""


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ReplayError(f"{path} is not valid JSON ({exc}); re-run the game with --out") from None


def _flipper_list(value: Any) -> tuple[int, ...]:
    """The ``flippers`` cell: a JSON list as written by the run output, or a list."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ()
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else []
    return tuple(int(v) for v in value)


@dataclass(frozen=True)
class RecordedGame:
    """One consensus game's run directory, with what each round looked like."""

    path: Path
    rounds: pd.DataFrame
    agents: pd.DataFrame
    nodes: pd.DataFrame
    edges: pd.DataFrame
    messages: pd.DataFrame
    transcript: pd.DataFrame | None
    summary: dict[str, Any]
    manifest: dict[str, Any]

    @classmethod
    def load(cls, path: str | Path) -> "RecordedGame":
        """Read a run directory written by ``llm-mesa consensus --out DIR``."""
        path = Path(str(path).strip()).expanduser()
        if not str(path) or not path.is_dir():
            raise ReplayError(f"{str(path)!r} is not a directory; give the folder passed to "
                              "llm-mesa consensus --out")
        manifest = _read_json(path / "manifest.json")
        if manifest.get("kind", "consensus") != "consensus":
            raise ReplayError(f"{path} holds a {manifest['kind']} run; the replay viewer shows consensus games "
                              "(llm-mesa consensus --out DIR)")
        missing = [f"{t}.parquet" for t in REQUIRED_TABLES if not (path / f"{t}.parquet").is_file()]
        if missing:
            raise ReplayError(f"{path} has no {', '.join(missing)}; it is not a consensus run directory "
                              "(record one with llm-mesa consensus --out DIR)")
        try:
            tables = {name: pd.read_parquet(path / f"{name}.parquet") for name in REQUIRED_TABLES}
            optional = {name: pd.read_parquet(path / f"{name}.parquet") if (path / f"{name}.parquet").is_file()
                        else None for name in ("messages", "transcript")}
        except (OSError, ValueError) as exc:
            raise ReplayError(f"cannot read the tables of {path} ({exc}); re-run the game with --out") from None
        if tables["agents"].empty:
            raise ReplayError(f"{path}/agents.parquet is empty: the game was run without per-agent "
                              "records; re-run it with agent collection on")
        messages = optional["messages"]
        if messages is None:
            messages = pd.DataFrame(columns=["round", "sender", "to", "text"])
        return cls(path=path, **tables, messages=messages, transcript=optional["transcript"],
                   summary=_read_json(path / "summary.json"), manifest=manifest)

    # --- the network ---------------------------------------------------------------

    @cached_property
    def graph(self) -> nx.Graph:
        graph = nx.Graph()
        graph.add_nodes_from(int(v) for v in self.nodes["node"])
        graph.add_edges_from((int(u), int(v)) for u, v in zip(self.edges["source"], self.edges["target"]))
        return graph

    @cached_property
    def layout(self) -> dict[int, tuple[float, float]]:
        return {int(v): (float(x), float(y)) for v, x, y in zip(self.nodes["node"], self.nodes["x"], self.nodes["y"])}

    @cached_property
    def preferences(self) -> list[str]:
        return list(self.nodes.sort_values("node")["preference"])

    @property
    def parameters(self) -> dict[str, Any]:
        return self.manifest.get("parameters", {})

    @property
    def satisfied_threshold(self) -> float:
        return float(self.parameters.get("satisfied_threshold", 0.5))

    # --- one round -----------------------------------------------------------------

    @property
    def last_round(self) -> int:
        return int(self.rounds["round"].max())

    def _check_round(self, round_number: int) -> int:
        round_number = int(round_number)
        if not 0 <= round_number <= self.last_round:
            raise ReplayError(f"round {round_number} is outside this game (rounds 0..{self.last_round})")
        return round_number

    def round_row(self, round_number: int) -> pd.Series:
        round_number = self._check_round(round_number)
        return self.rounds.loc[self.rounds["round"] == round_number].iloc[0]

    @cached_property
    def _colours_by_round(self) -> dict[int, list[str]]:
        ordered = self.agents.sort_values(["round", "node"])
        return {int(r): list(group["colour"]) for r, group in ordered.groupby("round", sort=True)}

    def colours_at(self, round_number: int) -> list[str]:
        """Every node's colour after ``round_number`` (0: the initial colours)."""
        return self._colours_by_round[self._check_round(round_number)]

    def flippers_at(self, round_number: int) -> tuple[int, ...]:
        return _flipper_list(self.round_row(round_number).get("flippers"))

    def satisfied_at(self, round_number: int) -> list[bool]:
        return measures.locally_satisfied(self.graph, self.colours_at(round_number),
                                          self.satisfied_threshold).tolist()

    def state_at(self, round_number: int, details=None) -> NetworkState:
        """What the live explorer draws, for a recorded round."""
        row = self.round_row(round_number)
        return NetworkState(graph=self.graph, layout=self.layout, colours=self.colours_at(round_number),
                            preferences=self.preferences, round_number=int(round_number),
                            flippers=self.flippers_at(round_number), satisfied=self.satisfied_at(round_number),
                            pseudo_equilibrium=bool(row.get("pseudo_equilibrium", False)), details=details,
                            key=str(self.path))

    def details_at(self, round_number: int) -> list[dict[str, Any]]:
        """Per agent: policy and the reason of the decision that made this round (LLM games)."""
        policies = (list(self.nodes.sort_values("node")["policy"]) if "policy" in self.nodes.columns
                    else [self.summary.get("policy", "-")] * len(self.preferences))
        reasons: dict[int, str] = {}
        decisions = self.transcript_at(round_number)
        if decisions is not None and "reason" in decisions.columns:
            reasons = {int(a): r for a, r in zip(decisions["agent"], decisions["reason"]) if isinstance(r, str) and r}
        return [{"policy": policies[v], "reason": reasons.get(v)} for v in range(len(self.preferences))]

    def messages_at(self, round_number: int) -> pd.DataFrame:
        return self.messages.loc[self.messages["round"] == self._check_round(round_number)]

    def transcript_at(self, round_number: int) -> pd.DataFrame | None:
        """The LLM agents' decisions that produced ``round_number`` (None for rule games)."""
        if self.transcript is None:
            return None
        return self.transcript.loc[self.transcript["round"] == self._check_round(round_number)]

    def outcome_line(self) -> str:
        """The game in one line, from its summary."""
        s = self.summary
        if not s:
            return f"{self.last_round} rounds"
        head = (f"{s.get('topology')} graph, {s.get('n')} agents, policy {s.get('policy')}, "
                f"communication {s.get('communication')}, seed {s.get('seed')}")
        if s.get("consensus"):
            return f"{head}: consensus on {s.get('winner')} after {s.get('rounds')} rounds"
        return f"{head}: no consensus after {s.get('rounds')} rounds ({s.get('stop_reason')})"


def load_recorded_game(path: str | Path) -> RecordedGame:
    return RecordedGame.load(path)


__all__ = ["REPLAY_DIR_ENV", "RecordedGame", "ReplayError", "load_recorded_game"]
