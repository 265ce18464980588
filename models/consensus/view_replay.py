"""A recorded consensus game, round by round: a run directory (``llm-mesa consensus --out``) or a sweep's game.

The run keeps the per-round measures (``rounds``), every agent's colour each round
(``agents``), the network with its layout (``nodes``, ``edges``), the messages and, for
LLM games, the transcript of every decision. That is all a replay needs: it calls no
endpoint and plays nothing; who is locally satisfied comes from ``measures``. The
agent panel reads the transcript: an LLM agent's reason, message and diary at the
round shown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import networkx as nx
import pandas as pd

from llm_mesa.graphs import seeded_layout
from llm_mesa.views.agent_panel import decision_heading, recorded_rows
from llm_mesa.views.charts import numeric_rounds
from llm_mesa.views.controls import shorten
from llm_mesa.views.layout import QUICK_ABOVE, quick_layout
from llm_mesa.views.runs import Recording, ReplayError, read_manifest, read_table, run_directory
from llm_mesa.views.sweeps import game_label

from . import measures
from .view import chamber_words, consensus_picture

#: the tables a replay cannot do without (``messages`` and ``transcript`` are optional)
REQUIRED_TABLES = ("rounds", "agents", "nodes", "edges")


def _flipper_list(value: Any) -> tuple[int, ...]:
    """The ``flippers`` cell: a JSON list as written by the run output, or a list."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ()
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else []
    return tuple(int(v) for v in value)


@dataclass
class ConsensusRun(Recording):
    """One consensus game's tables, with what each round looked like."""

    agents: pd.DataFrame = field(default_factory=pd.DataFrame)
    nodes: pd.DataFrame = field(default_factory=pd.DataFrame)
    edges: pd.DataFrame = field(default_factory=pd.DataFrame)
    table_rows: pd.DataFrame = field(default_factory=pd.DataFrame)  # the rounds table as written (flippers kept)
    sent: pd.DataFrame = field(default_factory=pd.DataFrame)
    transcript: pd.DataFrame | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def load(cls, view, path: str | Path) -> ConsensusRun:
        """Read a run directory written by ``llm-mesa consensus --out DIR``."""
        path, manifest = run_directory(path)
        if manifest.get("kind") != "consensus":
            raise ReplayError(f"{path} holds a {manifest.get('kind')} run, not a consensus one")
        missing = [f"{t}.parquet" for t in REQUIRED_TABLES if not (path / f"{t}.parquet").is_file()]
        if missing:
            found = ", ".join(sorted(p.name for p in path.iterdir() if p.suffix == ".parquet")) or "no tables"
            raise ReplayError(f"{path} has no {', '.join(missing)} (found: {found}); record the game with "
                              "llm-mesa consensus --out DIR")
        tables = {name: read_table(path, name) for name in (*REQUIRED_TABLES, "messages", "transcript")}
        if tables["agents"].empty:
            raise ReplayError(f"{path}/agents.parquet is empty: the game was run without per-agent records; "
                              "re-run it with agent collection on")
        summary = read_manifest(path / "summary.json")
        return cls.of_tables(view, str(path), tables, summary, manifest.get("parameters", {}))

    @classmethod
    def of_tables(cls, view, key: str, tables: dict[str, pd.DataFrame | None], summary: dict[str, Any],
                  parameters: dict[str, Any]) -> ConsensusRun:
        rounds = tables["rounds"].sort_values("round").reset_index(drop=True)
        shown = numeric_rounds(rounds)
        shown.attrs["n"] = len(tables["nodes"])
        messages = tables.get("messages")
        if messages is None or messages.empty:
            messages = pd.DataFrame(columns=["round", "sender", "to", "text"])
        transcript = tables.get("transcript")
        return cls(view, key, shown, summary, agents=tables["agents"].astype({"round": int, "node": int}),
                   nodes=tables["nodes"].sort_values("node").reset_index(drop=True), edges=tables["edges"],
                   table_rows=rounds, sent=messages, parameters=dict(parameters),
                   transcript=None if transcript is None or transcript.empty else transcript)

    # --- the network ---------------------------------------------------------------------
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
        return list(self.nodes["preference"])

    @cached_property
    def _colours_by_round(self) -> dict[int, list[str]]:
        ordered = self.agents.sort_values(["round", "node"])
        return {int(r): list(group["colour"]) for r, group in ordered.groupby("round", sort=True)}

    def colours_at(self, round_number: int) -> list[str]:
        """Every node's colour after ``round_number`` (0: the initial colours)."""
        return self._colours_by_round[self.check_round(round_number)]

    def row(self, round_number: int) -> pd.Series:
        return self.table_rows.loc[self.table_rows["round"] == self.check_round(round_number)].iloc[0]

    def flippers_at(self, round_number: int) -> tuple[int, ...]:
        return _flipper_list(self.row(round_number).get("flippers"))

    def satisfied_at(self, round_number: int) -> list[bool]:
        threshold = float(self.parameters.get("satisfied_threshold", 0.5))
        return measures.locally_satisfied(self.graph, self.colours_at(round_number), threshold).tolist()

    def transcript_at(self, round_number: int) -> pd.DataFrame | None:
        """The LLM agents' decisions that produced ``round_number`` (None for rule games)."""
        if self.transcript is None:
            return None
        return self.transcript.loc[self.transcript["round"] == self.check_round(round_number)]

    def details_at(self, round_number: int) -> list[dict[str, Any]]:
        """Per agent: policy and the reason of the decision that made this round (LLM games)."""
        policies = list(self.nodes["policy"]) if "policy" in self.nodes.columns else [self.summary.get("policy", "-")] * len(self.nodes)
        reasons: dict[int, str] = {}
        decisions = self.transcript_at(round_number)
        if decisions is not None and "reason" in decisions.columns:
            reasons = {int(a): r for a, r in zip(decisions["agent"], decisions["reason"]) if isinstance(r, str) and r}
        return [{"policy": policies[v], "last reason": reasons.get(v)} for v in range(len(self.nodes))]

    # --- the page's questions ----------------------------------------------------------------
    def picture(self, round_number: int):
        return consensus_picture(self.graph, self.layout, self.colours_at(round_number), self.preferences,
                                 int(round_number), flippers=self.flippers_at(round_number),
                                 satisfied=self.satisfied_at(round_number), details=self.details_at(round_number),
                                 key=self.key)

    def banners(self, round_number: int):
        return [chamber_words(self.graph, self.colours_at(round_number), self.flippers_at(round_number),
                              self.satisfied_at(round_number), int(round_number),
                              bool(self.row(round_number).get("pseudo_equilibrium", False)))]

    def agent_count(self) -> int:
        return len(self.nodes)

    def agent_rows(self, round_number: int, index: int) -> dict[str, str]:
        """The agent at the round shown: its colour, neighbours, the decision it made in that round (an LLM
        agent's reason, message and diary) and, for a lab's seat, how long the person took or that they missed
        the deadline."""
        colours = self.colours_at(round_number)
        neighbours = sorted(self.graph.neighbors(index))
        same = sum(colours[v] == colours[index] for v in neighbours)
        rows = {"agent": str(index), "colour / preference": f"{colours[index]} / {self.preferences[index]}",
                "policy": str(self.details_at(round_number)[index]["policy"]),
                "neighbours": ", ".join(map(str, neighbours[:40])) or "-",
                "neighbours on its colour": f"{same} of {len(neighbours)}"}
        if round_number <= 0:
            return rows
        said = decision_heading(round_number)
        decisions = self.transcript_at(round_number)
        if decisions is not None:
            mine = decisions[decisions["agent"] == index]
            if len(mine):
                row = mine.iloc[-1]
                for column, label in (("colour_before", "held before"), ("colour", "chose"), ("reason", "reason"),
                                      ("message", "message"), ("diary", "diary"), ("failed", "failure")):
                    if column in row.index:
                        value = row[column]
                        rows[f"{said} · {label}"] = "-" if value is None or (isinstance(value, float) and pd.isna(value)) \
                            else shorten(value, 800)
        seat = self._seat_row(round_number, index)
        if seat:
            rows.update({f"{said} · {k}": v for k, v in recorded_rows(seat).items()})
        return rows

    def _seat_row(self, round_number: int, index: int) -> dict[str, Any]:
        """A lab's columns of the agents table for this agent and round (who decided, the person's time, a
        missed deadline); {} for a run without people."""
        if "label" not in self.agents.columns:
            return {}
        mine = self.agents[(self.agents["round"] == round_number) & (self.agents["node"] == index)]
        if mine.empty or str(mine.iloc[0]["label"]) != "human":
            return {}
        row = mine.iloc[0]
        return {c: (None if pd.isna(row[c]) else row[c]) for c in ("seat", "response_s", "timeout") if c in row.index}

    def messages(self, round_number: int) -> pd.DataFrame | None:
        sent = self.sent.loc[self.sent["round"] == self.check_round(round_number)]
        return sent.assign(to=sent["to"].map(lambda v: "neighbours/all" if pd.isna(v) else str(int(v))))

    def outline(self) -> str:
        s = self.summary
        if not s:
            return f"{self.last_round} rounds"
        head = (f"{s.get('topology')} graph, {s.get('n')} agents, policy {s.get('policy_spec') or s.get('policy')}, "
                f"communication {s.get('communication')}, seed {s.get('seed')}")
        if s.get("consensus"):
            return f"{head}: consensus on {s.get('winner')} after {s.get('rounds')} rounds"
        return f"{head}: no consensus after {s.get('rounds')} rounds ({s.get('stop_reason')})"


def sweep_game(view, sweep, condition: str, policy: str, seed: int) -> Recording:
    """A sweep's game from its kept tables (``--tables agents,rounds``), else played again from its seed."""
    from llm_mesa.views.runs import sweep_game as played_again

    rounds = sweep.of_game("rounds", condition, policy, seed)
    agents = sweep.of_game("agents", condition, policy, seed)
    edges = sweep.of_game("edges", condition, policy, seed)
    if rounds.empty or agents.empty or edges.empty:
        return played_again(view, sweep, condition, policy, seed)
    first = agents[agents["round"] == agents["round"].min()].sort_values("node")
    graph = nx.Graph()
    graph.add_nodes_from(int(v) for v in first["node"])
    graph.add_edges_from((int(u), int(v)) for u, v in zip(edges["source"], edges["target"]))
    layout = seeded_layout(graph, int(seed)) if graph.number_of_nodes() <= QUICK_ABOVE else quick_layout(graph, int(seed))
    row = sweep.row(condition, policy, seed)
    nodes = pd.DataFrame({"node": first["node"].astype(int), "preference": first["preference"].astype(str),
                          "x": [layout[int(v)][0] for v in first["node"]], "y": [layout[int(v)][1] for v in first["node"]],
                          "policy": row.get("policy_spec") or sweep.policy_spec(policy)})
    tables = {"rounds": rounds, "agents": agents, "nodes": nodes, "edges": edges,
              "messages": sweep.of_game("messages", condition, policy, seed),
              "transcript": sweep.of_game("transcript", condition, policy, seed)}
    parameters = dict(sweep.manifest.get("grid", {}).get("conditions", {}).get(condition, {}))
    return ConsensusRun.of_tables(view, f"{sweep.path} · {game_label(condition, policy, seed)}", tables,
                                  {**row, "policy": row.get("policy_spec")}, parameters)


__all__ = ["ConsensusRun", "REQUIRED_TABLES", "sweep_game"]
