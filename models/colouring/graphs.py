"""The networks of the colouring study, each drawn from the game's graph stream alone.

Kearns, Suri and Montfort (2006) played on six 38-node graphs: a cycle, the cycle
with 5 and with 20 random chords, a "leader cycle" (a cycle with a few central
nodes linked to many of it) and two preferential-attachment graphs (2 and 3 links
per new node), with as many colours as the graph's chromatic number. Where the
public record does not say how a graph was made, the choice here keeps that
number known by construction, so the design's k is the chromatic number:

* ``cycle``: a ring of n nodes plus ``chords`` random chords, each joining nodes an
  odd distance apart: an even ring stays bipartite (2 colours suffice and are needed).
* ``leader-cycle``: a ring of n - ``leaders`` nodes whose even nodes are dealt in
  turn to the leaders (each leader a hub linked to every ``leaders``-th even node),
  plus chords as above: bipartite whenever the ring is even.
* ``pa``: preferential attachment with a planted proper k-colouring: the first k
  nodes form a clique (so k colours are needed), and each later node draws a colour
  and links to ``links`` distinct nodes of the other colours, chosen with
  probability proportional to degree (so k colours suffice).
* ``er``, ``ba``, ``ws``, ``caveman``: the core's families (``llm_mesa.build_topology``);
  their chromatic number is whatever the draw gives.
"""

from __future__ import annotations

import math
import random

import networkx as nx

from llm_mesa import build_topology

from .parameters import ColouringError


def build_graph(topology: str, n: int, rng: random.Random, *, k: int, chords: int = 0, leaders: int = 2,
                links: int = 2) -> nx.Graph:
    """The network of one game (nodes 0..n-1), drawn from ``rng`` only."""
    if topology == "cycle":
        return add_chords(nx.cycle_graph(n), n, chords, rng)
    if topology == "leader-cycle":
        return leader_cycle(n, leaders, chords, rng)
    if topology == "pa":
        return planted_preferential_attachment(n, links, k, rng)
    return build_topology(topology, n, rng, ba_m=links)


def add_chords(graph: nx.Graph, size: int, chords: int, rng: random.Random) -> nx.Graph:
    """``graph`` with ``chords`` new edges, each between ring nodes (0..size-1) of opposite parity."""
    taken = sum(1 for u, v in graph.edges if u < size and v < size and (u - v) % 2)
    room = (size + 1) // 2 * (size // 2) - taken
    if chords > room:
        raise ColouringError(f"a ring of {size} nodes has room for {room} chords, not {chords}; "
                             "use a smaller --chords or a larger --n")
    added = 0
    while added < chords:  # by rejection: about two draws a chord while the ring is sparse
        u, v = rng.randrange(size), rng.randrange(size)
        if (u - v) % 2 and not graph.has_edge(u, v):
            graph.add_edge(u, v)
            added += 1
    return graph


def leader_cycle(n: int, leaders: int, chords: int, rng: random.Random) -> nx.Graph:
    """A ring of ``n - leaders`` nodes and ``leaders`` hubs sharing the ring's even nodes."""
    size = n - leaders
    if size < 4 or (size + 1) // 2 < leaders:  # every leader needs an even ring node of its own
        fits = [m for m in range(1, n) if n - m >= 4 and (n - m + 1) // 2 >= m]
        fix = f"use --leaders {fits[-1]} or fewer" if fits else "use --n 5 or more"
        raise ColouringError(f"a leader cycle of N={n} with {leaders} leaders leaves a ring of {size} nodes, "
                             f"too few for each leader to have an even ring node; {fix}")
    graph = nx.cycle_graph(size)
    for index, node in enumerate(range(0, size, 2)):
        graph.add_edge(size + index % leaders, node)
    return add_chords(graph, size, chords, rng)


def planted_preferential_attachment(n: int, links: int, k: int, rng: random.Random) -> nx.Graph:
    """Preferential attachment among the nodes of other colours of a hidden proper k-colouring."""
    if n < k:
        raise ColouringError(f"pa with k={k} colours needs N >= {k} (its first {k} nodes form a clique)")
    graph = nx.complete_graph(k)
    planted = list(range(k))
    counts = [1] * k  # nodes of each planted colour
    # each node once per link it has, by planted colour: a uniform pick is a pick by degree
    ends: list[list[int]] = [[v] * (k - 1) for v in range(k)]
    for node in range(k, n):
        colour = rng.randrange(k)
        pools = [ends[c] for c in range(k) if c != colour]
        total = sum(map(len, pools))
        wanted = min(links, node - counts[colour])
        chosen: list[int] = []
        while len(chosen) < wanted:
            pick = rng.randrange(total)
            for pool in pools:
                if pick < len(pool):
                    break
                pick -= len(pool)
            if pool[pick] not in chosen:
                chosen.append(pool[pick])
        graph.add_edges_from((node, v) for v in chosen)
        for v in chosen:
            ends[planted[v]].append(v)
        planted.append(colour)
        counts[colour] += 1
        ends[colour].extend([node] * len(chosen))
    return graph


def drawing_layout(graph: nx.Graph, topology: str, seed: int, leaders: int = 0) -> dict[int, tuple[float, float]]:
    """Positions to draw the network: a ring on a circle (a leader cycle's hubs, its last nodes, inside),
    any other network by the core's seeded layout."""
    from llm_mesa import seeded_layout

    if topology not in ("cycle", "leader-cycle"):
        return seeded_layout(graph, seed)
    hubs = leaders if topology == "leader-cycle" else 0
    size = graph.number_of_nodes() - hubs
    layout = {v: (math.cos(2 * math.pi * v / size), math.sin(2 * math.pi * v / size)) for v in range(size)}
    for i in range(hubs):
        angle = 2 * math.pi * (i + 0.5) / hubs
        layout[size + i] = (0.3 * math.cos(angle), 0.3 * math.sin(angle))
    return layout
