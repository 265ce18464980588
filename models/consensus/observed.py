"""The decisions a consensus game recorded, as ``llm-mesa fit`` weighs them: what each agent saw, what it chose.

Read from the ``agents`` table (one row per agent and round: ``node``, ``colour``,
``preference``; round 0 the start) and the network: the ``edges`` table when it was kept
(a sweep keeps it with ``agents``), else the graph rebuilt from the game's parameters and
seed (the same seed draws the same graph). Agent ``v``'s decision in round ``r`` is its
colour after round ``r``; what it saw is round ``r - 1``'s colours of itself and its
neighbours, as a rule agent of the game sees them (``ConsensusAgent.observe``).

Synchronous rounds only: under turns an agent sees the moves made before its turn in the
round, which the table does not order. A message that replaced a move (the study's rule,
``message_replaces_move``) is no colour decision: where the ``messages`` table was kept,
its senders' decisions in that round are left out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pandas as pd

from llm_mesa.analysis import AnalysisError, require_synchronous

from .observation import ConsensusObservation
from .parameters import PARAMETERS


def _neighbours(tables: Mapping[str, pd.DataFrame], parameters: Mapping[str, Any], seed: int,
                nodes: list[int]) -> dict[int, tuple[int, ...]]:
    edges = tables.get("edges")
    if edges is None or edges.empty:
        from .model import ConsensusModel

        model = ConsensusModel(policy="stubborn", rng=seed, **{**parameters, "baseline_permutations": 0})
        pairs = list(model.graph.edges)
    else:
        pairs = list(zip(edges["source"].astype(int), edges["target"].astype(int)))
    linked: dict[int, set[int]] = {v: set() for v in nodes}
    for u, v in pairs:
        if u != v:
            linked.setdefault(u, set()).add(v)
            linked.setdefault(v, set()).add(u)
    return {v: tuple(sorted(linked[v])) for v in linked}


def _moves_replaced(tables: Mapping[str, pd.DataFrame], parameters: Mapping[str, Any]) -> set[tuple[int, int]]:
    """(round, sender) of every message that was sent instead of a move."""
    messages = tables.get("messages")
    if messages is None or messages.empty or parameters["communication"] == "none" \
            or not parameters["message_replaces_move"]:
        return set()
    return set(zip(messages["round"].astype(int), messages["sender"].astype(int)))


def observed(tables: Mapping[str, pd.DataFrame], parameters: Mapping[str, Any],
             seed: int) -> Iterator[tuple[int, int, ConsensusObservation, str]]:
    """``(node, round, observation, colour chosen)`` for every agent and round of one game."""
    p = PARAMETERS.validate(parameters, complete=True)
    require_synchronous("consensus", p["update"])
    agents = tables["agents"]
    frame = pd.DataFrame({"round": agents["round"].astype(int), "node": agents["node"].astype(int),
                          "colour": agents["colour"].astype(str), "preference": agents["preference"].astype(str)})
    for column in ("colour", "preference"):
        wrong = sorted(set(frame[column]) - {"red", "blue"})
        if wrong:
            raise AnalysisError(f"the agents table's {column} holds {wrong[0]!r}; a consensus {column} is red or blue")
    by_round = {int(r): dict(zip(g["node"], g["colour"])) for r, g in frame.groupby("round", sort=True)}
    preferences = dict(zip(frame["node"], frame["preference"]))
    neighbours = _neighbours(tables, p, seed, sorted(preferences))
    replaced = _moves_replaced(tables, p)
    n = len(preferences)
    rules = {"communication": p["communication"], "direct_messages": p["direct_messages"],
             "message_replaces_move": p["message_replaces_move"], "label": p["label"], "max_rounds": p["max_rounds"],
             "n_players": n, "payoff_preferred": p["payoff_preferred"], "payoff_other": p["payoff_other"],
             "message_cost": p["message_cost"], "prompt": p["prompt"], "history_rounds": p["history"]}
    for r in sorted(by_round):
        before = by_round.get(r - 1)
        if before is None:
            continue
        for node, colour in by_round[r].items():
            if (r, node) in replaced or node not in before:
                continue
            ids = neighbours.get(node, ())
            seen = ConsensusObservation(agent_id=node, round=r, preference=preferences[node], colour=before[node],
                                        neighbour_ids=ids, neighbour_colours=tuple(before[v] for v in ids),
                                        rounds_left=p["max_rounds"] - (r - 1), **rules)
            yield node, r, seen, colour
