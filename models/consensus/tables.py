"""The consensus game's result tables: per-game tables for sweeps, the headline table."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd


def game_tables(model, names: Sequence[str]) -> dict[str, pd.DataFrame]:
    """The per-game tables a sweep asked for (``rounds``, ``agents``, ``messages``, ``transcript``, ``edges``)."""
    makers = {
        "rounds": model.rounds_table,
        "agents": model.agents_table,
        "messages": model.messages_table,
        "edges": lambda: edges_table(model.graph),  # no layout: a sweep never draws
        "transcript": lambda: pd.DataFrame(model.transcript),
    }
    return {name: makers[name]() for name in names}


def run_tables(model) -> dict[str, pd.DataFrame]:
    """A run folder's tables (``--out``): rounds, agents, the network with its layout (``nodes``, ``edges``),
    messages and, when LLM agents decided, the transcript; all a replay reads."""
    nodes, edges = model.graph_table()
    tables = {"rounds": model.rounds_table(), "agents": model.agents_table(), "nodes": nodes, "edges": edges,
              "messages": model.messages_table()}
    if model.transcript:
        tables["transcript"] = pd.DataFrame(model.transcript)
    return tables


def edges_table(graph) -> pd.DataFrame:
    """Each undirected edge once, as (source < target), in order."""
    return pd.DataFrame(sorted(tuple(sorted(e)) for e in graph.edges), columns=["source", "target"])


def consensus_table(results: pd.DataFrame, conditions: Sequence[str] | None = None,
                    policies: Sequence[str] | None = None) -> pd.DataFrame:
    """Successes / games per condition (rows) and policy (columns), the study's layout.

    Adds an ``all`` column per condition and an ``all`` row per policy.
    """
    if results.empty:
        return pd.DataFrame()
    conditions = list(conditions) if conditions is not None else list(dict.fromkeys(results["condition"]))
    policies = list(policies) if policies is not None else list(dict.fromkeys(results["policy"]))
    grouped = results.groupby(["condition", "policy"])["consensus"].agg(["sum", "count"])

    def cell(wins: int, games: int) -> str:
        return f"{wins}/{games}" if games else "-"

    rows = {}
    for c in conditions:
        row = {}
        for p in policies:
            wins, games = (int(grouped.loc[(c, p), "sum"]), int(grouped.loc[(c, p), "count"])) \
                if (c, p) in grouped.index else (0, 0)
            row[p] = cell(wins, games)
        sub = results[(results["condition"] == c) & results["policy"].isin(policies)]
        row["all"] = cell(int(sub["consensus"].sum()), len(sub))
        rows[c] = row
    total = {}
    for p in policies:
        sub = results[(results["policy"] == p) & results["condition"].isin(conditions)]
        total[p] = cell(int(sub["consensus"].sum()), len(sub))
    sub = results[results["policy"].isin(policies) & results["condition"].isin(conditions)]
    total["all"] = cell(int(sub["consensus"].sum()), len(sub))
    rows["all"] = total
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "condition"
    return table


def format_consensus_table(table: pd.DataFrame) -> str:
    """The table as aligned text, for terminals and logs."""
    if table.empty:
        return "(no games)"
    return table.to_string()
