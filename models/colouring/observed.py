"""The decisions a colouring game recorded, as ``llm-mesa fit`` weighs them: what each agent saw, what it chose.

Read from the ``agents`` table (``round``, ``agent``, ``colour``; round 0 the start) and the
network (the ``edges`` table, else the graph the seed draws). Who decided in a round is
rebuilt from the seed: the game's sit-out stream draws one uniform per agent and round, in
node order, and an agent with a draw below ``inertia`` kept its colour unasked; those
rounds are no decisions of its policy and are left out. Synchronous rounds only (under
turns an agent sees the moves made before its turn, which the table does not order).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pandas as pd

from llm_mesa.analysis import AnalysisError, require_synchronous

from .parameters import COLOURS, PARAMETERS
from .policies import View


def _links(tables: Mapping[str, pd.DataFrame], parameters: Mapping[str, Any], seed: int) -> list[tuple[int, int]]:
    edges = tables.get("edges")
    if edges is not None and not edges.empty:
        return sorted((min(u, v), max(u, v)) for u, v in zip(edges["source"].astype(int), edges["target"].astype(int)))
    from .model import ColouringModel

    return list(ColouringModel("random", seed, **parameters).edges)


def observed(tables: Mapping[str, pd.DataFrame], parameters: Mapping[str, Any], seed: int) -> Iterator[tuple[int, int, View, str]]:
    """``(agent, round, view, colour chosen)`` for every agent that decided, every round of one game."""
    from .model import seed_streams

    p = PARAMETERS.validate(parameters, complete=True)
    require_synchronous("colouring", p["update"])
    agents = tables["agents"]
    frame = pd.DataFrame({"round": agents["round"].astype(int), "agent": agents["agent"].astype(int),
                          "colour": agents["colour"].astype(str)})
    by_round = {int(r): dict(zip(g["agent"], g["colour"])) for r, g in frame.groupby("round", sort=True)}
    colours = COLOURS[: p["k"]]
    unknown = sorted(set(frame["colour"]) - set(colours))
    if unknown:
        raise AnalysisError(f"colour {unknown[0]!r} is not one of this game's k={p['k']} colours ({', '.join(colours)}); "
                            "fix the agents table or the game's k")
    n = len(by_round.get(0, {}))
    links = _links(tables, p, seed)
    neighbours: dict[int, list[int]] = {v: [] for v in range(n)}
    for u, v in links:
        neighbours.setdefault(u, []).append(v)
        neighbours.setdefault(v, []).append(u)
    around = {v: tuple(sorted(ws)) for v, ws in neighbours.items()}
    sit_out = seed_streams(seed)[2]
    for r in range(1, max(by_round) + 1 if by_round else 0):
        draws = [sit_out.random() for _ in range(n)]
        before, after = by_round.get(r - 1), by_round.get(r)
        if before is None or after is None:
            break
        state = tuple(before[v] for v in range(n))
        conflicts = sum(state[u] == state[v] for u, v in links) if p["show_conflicts"] else None
        for v in range(n):
            if draws[v] < p["inertia"] or v not in after:
                continue
            ids = around.get(v, ())
            view = View(agent=v, round=r, colour=state[v], neighbours=ids, neighbour_colours=tuple(state[u] for u in ids),
                        colours=colours, n_players=n, max_rounds=p["max_rounds"], payoff=p["payoff"],
                        neighbour_degrees=tuple(len(around.get(u, ())) for u in ids) if p["show_degrees"] else None,
                        conflicts=conflicts, inertia=p["inertia"], update=p["update"],
                        network_colours=state if p["show_network"] else None,
                        links=tuple(links) if p["show_network"] else None)
            yield v, r, view, after[v]
