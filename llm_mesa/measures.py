"""Mechanism measures of the consensus game, as pure functions.

Colours are 0/1 integer arrays indexed by node (1 = blue). Graphs are turned
once into an ``Adjacency`` (CSR arrays), so measures stay vectorised on
10,000-node graphs; every function also accepts a networkx graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import connected_components


@dataclass(frozen=True)
class Adjacency:
    """A graph with nodes 0..n-1 as CSR arrays, built once per game."""

    n: int
    indptr: np.ndarray
    indices: np.ndarray
    src: np.ndarray  # each undirected edge once: src < dst
    dst: np.ndarray
    degree: np.ndarray
    matrix: csr_array

    @classmethod
    def from_graph(cls, graph: nx.Graph | "Adjacency") -> "Adjacency":
        if isinstance(graph, Adjacency):
            return graph
        n = graph.number_of_nodes()
        if set(graph.nodes) != set(range(n)):
            raise ValueError("measures need nodes labelled 0..n-1; use llm_mesa.networks.normalise_graph")
        edges = np.array([(u, v) if u < v else (v, u) for u, v in graph.edges if u != v], dtype=np.int64).reshape(-1, 2)
        src, dst = edges[:, 0], edges[:, 1]
        rows = np.concatenate([src, dst])
        cols = np.concatenate([dst, src])
        matrix = csr_array((np.ones(len(rows), dtype=np.int64), (rows, cols)), shape=(n, n))
        matrix.sum_duplicates()
        matrix.sort_indices()  # neighbours in node order, as agents list them
        matrix.data[:] = 1
        return cls(n, matrix.indptr, matrix.indices, src, dst, np.diff(matrix.indptr), matrix)


def _adj(graph) -> Adjacency:
    return Adjacency.from_graph(graph)


def _codes(colours) -> np.ndarray:
    arr = np.asarray(colours)
    if arr.dtype.kind in "USO":
        return (arr == "blue").astype(np.int8)
    return arr.astype(np.int8)


def is_consensus(colours) -> bool:
    c = _codes(colours)
    return bool(c.size) and bool((c == c[0]).all())


def blue_share(colours) -> float:
    return float(_codes(colours).mean())


def _component_labels(adj: Adjacency, codes: np.ndarray) -> tuple[int, np.ndarray]:
    keep = codes[adj.src] == codes[adj.dst]
    sub = csr_array((np.ones(int(keep.sum())), (adj.src[keep], adj.dst[keep])), shape=(adj.n, adj.n))
    return connected_components(sub, directed=False)


def same_colour_components(graph, colours) -> list[set[int]]:
    """Connected components of the subgraph of edges joining equal colours, largest first."""
    adj = _adj(graph)
    _, labels = _component_labels(adj, _codes(colours))
    groups: dict[int, set[int]] = {}
    for node, label in enumerate(labels):
        groups.setdefault(int(label), set()).add(node)
    return sorted(groups.values(), key=lambda s: (-len(s), min(s)))


def largest_same_colour_component(graph, colours) -> tuple[int, str]:
    """Size and colour of the largest same-colour connected component.

    On a tie in size, the component holding the lowest node id is reported.
    """
    adj = _adj(graph)
    codes = _codes(colours)
    _, labels = _component_labels(adj, codes)
    sizes = np.bincount(labels)
    best = labels[np.argmax(sizes[labels])]  # first node (lowest id) of a largest one
    node = int(np.flatnonzero(labels == best)[0])
    return int(sizes[best]), ("blue" if codes[node] else "red")


def random_colouring_baseline(graph, colours, permutations: int = 1000,
                              rng: np.random.Generator | None = None) -> np.ndarray:
    """Largest same-colour component under random recolourings with the same counts.

    Each of ``permutations`` draws shuffles the colours over the nodes; all draws
    are solved as one block-diagonal graph. Pass an ``rng`` of its own so that
    computing the baseline never moves a game's random stream.
    """
    adj = _adj(graph)
    codes = _codes(colours)
    rng = rng if rng is not None else np.random.default_rng()
    perms = rng.permuted(np.tile(codes, (permutations, 1)), axis=1)  # (P, n)
    same = perms[:, adj.src] == perms[:, adj.dst]  # (P, E)
    offsets = (np.arange(permutations) * adj.n)[:, None]
    s = (adj.src[None, :] + offsets)[same]
    d = (adj.dst[None, :] + offsets)[same]
    total = permutations * adj.n
    big = csr_array((np.ones(len(s)), (s, d)), shape=(total, total))
    _, labels = connected_components(big, directed=False)
    sizes = np.bincount(labels)[labels].reshape(permutations, adj.n)
    return sizes.max(axis=1)


def stubborn_opportunities(graph, colours_now, colours_next) -> tuple[np.ndarray, np.ndarray]:
    """Per node: (opportunity at t, stubborn move from t to t+1), as booleans.

    An opportunity is a round in which a strict majority of the node's
    neighbours holds the colour opposite to its own; a stubborn move is such an
    opportunity after which it still holds its colour (a message instead of a
    move counts as keeping).
    """
    adj = _adj(graph)
    now = _codes(colours_now)
    blue = adj.matrix @ now.astype(np.int64)
    opposite = np.where(now == 1, adj.degree - blue, blue)
    opportunity = 2 * opposite > adj.degree
    kept = now == _codes(colours_next)
    return opportunity, opportunity & kept


def locally_satisfied(graph, colours, threshold: float = 0.5) -> np.ndarray:
    """Per node: at least ``threshold`` of its neighbours share its colour.

    A node with no neighbours counts as satisfied.
    """
    adj = _adj(graph)
    codes = _codes(colours)
    blue = adj.matrix @ codes.astype(np.int64)
    same = np.where(codes == 1, blue, adj.degree - blue)
    return (same >= threshold * adj.degree) | (adj.degree == 0)


def local_agreement(graph, colours, threshold: float = 0.5) -> float:
    """Share of locally satisfied nodes."""
    return float(locally_satisfied(graph, colours, threshold).mean())


def pseudo_equilibrium(colour_history, agreement_history, window: int = 3,
                       level: float = 0.9, min_flips: int = 2) -> tuple[bool, tuple[int, ...]]:
    """Is the game at its last round in a pseudo-equilibrium, and who flips?

    ``colour_history`` is the sequence of colour arrays, one per round from the
    start (index 0 = initial colours); ``agreement_history`` the local
    agreement of each. Pseudo-equilibrium: no consensus now, and local
    agreement >= ``level`` in each of the last ``window`` rounds. Flippers are
    the nodes that changed colour at least ``min_flips`` times across those
    rounds (the last ``window`` transitions).
    """
    if len(colour_history) < window + 1 or len(agreement_history) < window:
        return False, ()
    last = _codes(colour_history[-1])
    if is_consensus(last):
        return False, ()
    if min(agreement_history[-window:]) < level:
        return False, ()
    recent = np.stack([_codes(c) for c in colour_history[-(window + 1):]])
    flips = (np.diff(recent, axis=0) != 0).sum(axis=0)
    return True, tuple(int(v) for v in np.flatnonzero(flips >= min_flips))
