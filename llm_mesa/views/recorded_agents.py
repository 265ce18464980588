"""A run's ``agents`` table read against its space: every round's picture of a finished game, without playing it.

A game that keeps one row per agent and round (``round``, ``agent`` and its fields) is
replayed from that table alone, LLM games included: the space (the network and its
layout, or the grid) comes from building the game again from its parameters and seed
(no round is played, no endpoint is called), each agent's state each round from the
table. The state is the table's ``state`` column, else the column that holds each
agent's ``state`` at round 0; a grid's agents are placed by the table's ``x`` and ``y``
(or ``cell``, ``coordinate``, ``pos``, ``position``) columns when it keeps them, else
where they stood at the start. Agents are matched by node id, by Mesa ``unique_id``, or
by number, whichever the table's ``agent`` column holds.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from llm_mesa.views.pictures import GridPicture, NetworkPicture, label
from llm_mesa.views.spaces import combined

#: columns that may hold a grid agent's cell, as one value
CELL_COLUMNS = ("cell", "coordinate", "pos", "position")
KEYS = ("round", "agent")


@dataclass
class AgentStates:
    """Per round: each agent's state, its cell (grids) and its row of the table, in the view's agent order."""

    column: str
    states: dict[int, list[Any]]
    cells: dict[int, list[tuple[int, int] | None]] | None = None
    rows: dict[int, list[dict[str, Any]]] = field(default_factory=dict)


def _scalar(value: Any) -> Any:
    value = value.item() if hasattr(value, "item") else value
    return None if isinstance(value, float) and value != value else value


def _cell(value: Any) -> tuple[int, int] | None:
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            return None
    try:
        x, y = (int(c) for c in value)
    except (TypeError, ValueError):
        return None
    return x, y


def agent_numbers(ids: Sequence[Any], agents: Sequence[Any], nodes: Sequence[Any] | None) -> dict[Any, int] | None:
    """The view's number of each agent id of the table: node ids (a network), Mesa ids, or numbers 0..n-1."""
    wanted = set(ids)
    if nodes is not None and wanted <= set(nodes):
        return {v: i for i, v in enumerate(nodes)}
    mesa_ids = {getattr(a, "unique_id", None): i for i, a in enumerate(agents) if a is not None}
    if wanted <= set(mesa_ids):
        return mesa_ids
    if wanted <= set(range(len(agents))):
        return {i: i for i in range(len(agents))}
    return None


def state_column(table: pd.DataFrame, first: Mapping[int, Any]) -> str | None:
    """The column holding the agents' ``state``: named so, else the one equal to it at round 0."""
    fields = [c for c in table.columns if c not in KEYS]
    if "state" in fields:
        return "state"
    start = table[table["round"] == table["round"].min()]
    for column in fields:
        held = {int(n): label(_scalar(v)) for n, v in zip(start["_number"], start[column])}
        if held and all(held.get(n) == label(s) for n, s in first.items() if s is not None):
            return column
    return None


def read_agents(table: pd.DataFrame, agents: Sequence[Any], state_of: Any, *, nodes: Sequence[Any] | None = None,
                grid: bool = False) -> AgentStates | str:
    """The table's states per round in the view's agent order, or why they cannot be read (a sentence)."""
    if table is None or table.empty or not set(KEYS) <= set(table.columns):
        return "the run kept no agents table (one row per agent and round)"
    table = table.dropna(subset=list(KEYS))
    ids = [_scalar(v) for v in table["agent"]]
    numbers = agent_numbers(ids, agents, nodes)
    if numbers is None:
        return "its agents table names agents the game does not have"
    table = table.assign(_number=[numbers[i] for i in ids], round=table["round"].astype(int))
    column = state_column(table, {i: state_of(a) for i, a in enumerate(agents)})
    if column is None:
        return "no column of its agents table holds the agents' state"
    position = [c for c in CELL_COLUMNS if c in table.columns]
    count = len(agents)
    out = AgentStates(column, {}, {} if grid else None)
    fields = [c for c in table.columns if c not in (*KEYS, "_number")]
    for round_number, part in table.groupby("round", sort=True):
        states: list[Any] = [None] * count
        rows: list[dict[str, Any]] = [{} for _ in range(count)]
        cells: list[tuple[int, int] | None] = [None] * count
        for record in part.to_dict("records"):
            i = int(record["_number"])
            states[i] = _scalar(record[column])
            rows[i] = {k: _scalar(record[k]) for k in fields}
            if grid and {"x", "y"} <= set(record):
                cells[i] = _cell((record["x"], record["y"]))
            elif grid and position:
                cells[i] = _cell(record[position[0]])
        out.states[int(round_number)] = states
        out.rows[int(round_number)] = rows
        if out.cells is not None:
            out.cells[int(round_number)] = cells if any(c is not None for c in cells) else []
    return out


def network_at(base: NetworkPicture, states: Sequence[Any], rows: Sequence[Mapping[str, Any]],
               round_number: int, key: Any, policies: Sequence[str]) -> NetworkPicture:
    details = [{"policy": p, **{k: v for k, v in r.items()}} for p, r in zip(policies, rows)]
    return replace(base, state=list(states), round_number=round_number, key=key, details=details)


def grid_at(base: GridPicture, states: Sequence[Any], cells: Sequence[tuple[int, int] | None],
            rows: Sequence[Mapping[str, Any]], round_number: int, key: Any, policies: Sequence[str]) -> GridPicture:
    """The grid with each agent in its recorded cell (else where it started) and the recorded state."""
    where: dict[int, tuple[int, int]] = {}
    for cell, members in zip(base.coordinates, base.agents):
        for i in members:
            where[i] = cell
    for i, cell in enumerate(cells):
        if cell is not None:
            where[i] = cell
    inside: dict[tuple[int, int], list[int]] = {}
    for i, cell in sorted(where.items()):
        inside.setdefault(cell, []).append(i)
    members = [tuple(inside.get(c, ())) for c in base.coordinates]
    fill = [combined([states[i] for i in m]) for m in members]
    details = []
    for coordinate, agents in zip(base.coordinates, members):
        detail: dict[str, Any] = {"cell": f"({coordinate[0]}, {coordinate[1]})"}
        if len(agents) == 1:
            detail.update({"agent": base.name(agents[0]), "policy": policies[agents[0]], **rows[agents[0]]})
        elif agents:
            detail.update({"agents here": len(agents), "their states": ", ".join(label(states[i]) for i in agents[:12])})
        details.append(detail)
    return replace(base, state=fill, agents=members, round_number=round_number, key=key, details=details,
                   agent_states=[states[i] for m in members for i in m])


__all__ = ["AgentStates", "agent_numbers", "grid_at", "network_at", "read_agents", "state_column"]
