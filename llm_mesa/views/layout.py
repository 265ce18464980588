"""A quick, seeded drawing layout for large networks.

The game's own layout (``llm_mesa.graphs.seeded_layout``, what a recorded run
stores) is Kamada–Kawai up to 300 nodes and networkx's spring layout above, which
takes seconds at N = 500 and about ten at N = 1,000: too long for a page that
rebuilds a game at every Reset. Above ``QUICK_ABOVE`` nodes a page draws
with a vectorised Fruchterman–Reingold (numpy, dense repulsion, 1,000 nodes in
well under a second), started from a seeded spectral embedding so the same game
always gets the same picture.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from llm_mesa.graphs import seeded_layout

#: Up to this many nodes the game's own layout is used (it reads well and is quick).
QUICK_ABOVE = 200


def quick_layout(graph: nx.Graph, seed: int = 0, iterations: int = 60) -> dict[int, tuple[float, float]]:
    """Fruchterman–Reingold positions in [-1, 1]² for every node of ``graph`` (nodes 0..n-1)."""
    n = graph.number_of_nodes()
    rng = np.random.default_rng(seed)
    if n <= 2:
        return {v: (float(i), 0.0) for i, v in enumerate(graph.nodes)}
    x, y = (rng.uniform(-1, 1, size=n).astype(np.float32) for _ in range(2))
    edges = np.array(list(graph.edges), dtype=np.int64).reshape(-1, 2)
    u, v = edges[:, 0], edges[:, 1]
    k2 = np.float32(1.0 / n)  # k = 1/sqrt(n), the ideal edge length
    temperature = 0.1
    cooling = temperature / (iterations + 1)
    for _ in range(iterations):
        dx = x[:, None] - x[None, :]
        dy = y[:, None] - y[None, :]
        push = dx * dx + dy * dy  # squared distances, then the repulsion factor k²/d²
        np.maximum(push, np.float32(1e-4), out=push)
        np.divide(k2, push, out=push)
        np.fill_diagonal(push, 0.0)
        move_x = (dx * push).sum(axis=1)
        move_y = (dy * push).sum(axis=1)
        if len(edges):  # attraction d²/k along each edge
            ex, ey = x[u] - x[v], y[u] - y[v]
            pull = np.sqrt(ex * ex + ey * ey) * np.float32(np.sqrt(n))
            move_x -= np.bincount(u, ex * pull, n) - np.bincount(v, ex * pull, n)
            move_y -= np.bincount(u, ey * pull, n) - np.bincount(v, ey * pull, n)
        size = np.maximum(np.sqrt(move_x * move_x + move_y * move_y), np.float32(0.01))
        x += (move_x / size * temperature).astype(np.float32)
        y += (move_y / size * temperature).astype(np.float32)
        temperature -= cooling
    pos = np.column_stack([x, y])
    pos -= pos.mean(axis=0)
    pos /= max(float(np.abs(pos).max()), 1e-9)
    return {int(v): (float(x), float(y)) for v, (x, y) in zip(graph.nodes, pos)}


def drawing_layout(graph: nx.Graph, holder: object, own=None, seed: int = 0) -> dict:
    """The layout a page draws ``graph`` with: ``own()`` (the game's) up to ``QUICK_ABOVE`` nodes, else the quick one.

    The quick layout is computed once and kept on ``holder`` (the model), so stepping never moves a node.
    """
    if graph.number_of_nodes() <= QUICK_ABOVE and own is not None:
        return own()
    cached = getattr(holder, "_llm_mesa_layout", None)
    if cached is None:
        cached = quick_layout(graph, seed=seed) if graph.number_of_nodes() > QUICK_ABOVE else seeded_layout(graph, seed)
        try:
            holder._llm_mesa_layout = cached
        except AttributeError:
            pass
    return cached


__all__ = ["QUICK_ABOVE", "drawing_layout", "quick_layout"]
