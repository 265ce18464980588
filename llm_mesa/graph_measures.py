"""Measures of states on a graph, as pure functions of integer arrays.

A *state* is one small integer per node (a colour code, an opinion, a name
index): these functions know nothing of what it means, so any game whose agents
hold states on a network can use them. Graphs are turned once into an
``Adjacency`` (CSR arrays), so measures stay vectorised on 10,000-node graphs;
every function also accepts a networkx graph with nodes 0..n-1.
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
            raise ValueError("measures need nodes labelled 0..n-1; use llm_mesa.graphs.normalise_graph")
        edges = np.array([(u, v) if u < v else (v, u) for u, v in graph.edges if u != v], dtype=np.int64).reshape(-1, 2)
        src, dst = edges[:, 0], edges[:, 1]
        rows = np.concatenate([src, dst])
        cols = np.concatenate([dst, src])
        matrix = csr_array((np.ones(len(rows), dtype=np.int64), (rows, cols)), shape=(n, n))
        matrix.sum_duplicates()
        matrix.sort_indices()  # neighbours in node order, as agents list them
        matrix.data[:] = 1
        return cls(n, matrix.indptr, matrix.indices, src, dst, np.diff(matrix.indptr), matrix)


def as_adjacency(graph) -> Adjacency:
    return Adjacency.from_graph(graph)


def is_unanimous(states) -> bool:
    """Every node holds the same state."""
    s = np.asarray(states)
    return bool(s.size) and bool((s == s[0]).all())


def same_state_neighbours(graph, states) -> np.ndarray:
    """Per node: how many of its neighbours hold its own state."""
    adj = as_adjacency(graph)
    s = np.asarray(states)
    equal = s[adj.src] == s[adj.dst]
    return (np.bincount(adj.src[equal], minlength=adj.n) + np.bincount(adj.dst[equal], minlength=adj.n))


def _component_labels(adj: Adjacency, states: np.ndarray) -> tuple[int, np.ndarray]:
    keep = states[adj.src] == states[adj.dst]
    sub = csr_array((np.ones(int(keep.sum())), (adj.src[keep], adj.dst[keep])), shape=(adj.n, adj.n))
    return connected_components(sub, directed=False)


def same_state_components(graph, states) -> list[set[int]]:
    """Connected components of the subgraph of edges joining equal states, largest first."""
    adj = as_adjacency(graph)
    _, labels = _component_labels(adj, np.asarray(states))
    groups: dict[int, set[int]] = {}
    for node, label in enumerate(labels):
        groups.setdefault(int(label), set()).add(node)
    return sorted(groups.values(), key=lambda s: (-len(s), min(s)))


def largest_same_state_component(graph, states) -> tuple[int, int]:
    """Size and state of the largest same-state connected component.

    On a tie in size, the component holding the lowest node id is reported.
    """
    adj = as_adjacency(graph)
    s = np.asarray(states)
    _, labels = _component_labels(adj, s)
    sizes = np.bincount(labels)
    best = labels[np.argmax(sizes[labels])]  # first node (lowest id) of a largest one
    node = int(np.flatnonzero(labels == best)[0])
    return int(sizes[best]), int(s[node])


def random_relabelling_baseline(graph, states, permutations: int = 1000,
                                rng: np.random.Generator | None = None) -> np.ndarray:
    """Largest same-state component under random reshuffles of the states.

    Each of ``permutations`` draws shuffles the states over the nodes (so the
    counts of each state stay); all draws are solved as one block-diagonal
    graph. Pass an ``rng`` of its own so that computing the baseline never moves
    a game's random stream.
    """
    adj = as_adjacency(graph)
    s = np.asarray(states)
    rng = rng if rng is not None else np.random.default_rng()
    perms = rng.permuted(np.tile(s, (permutations, 1)), axis=1)  # (P, n)
    same = perms[:, adj.src] == perms[:, adj.dst]  # (P, E)
    offsets = (np.arange(permutations) * adj.n)[:, None]
    src = (adj.src[None, :] + offsets)[same]
    dst = (adj.dst[None, :] + offsets)[same]
    total = permutations * adj.n
    big = csr_array((np.ones(len(src)), (src, dst)), shape=(total, total))
    _, labels = connected_components(big, directed=False)
    sizes = np.bincount(labels)[labels].reshape(permutations, adj.n)
    return sizes.max(axis=1)


def stubborn_opportunities(graph, states_now, states_next) -> tuple[np.ndarray, np.ndarray]:
    """Per node: (opportunity at t, stubborn move from t to t+1), as booleans.

    An opportunity is a round in which a strict majority of the node's
    neighbours holds a state other than its own; a stubborn move is such an
    opportunity after which it still holds its state.
    """
    adj = as_adjacency(graph)
    now = np.asarray(states_now)
    opposite = adj.degree - same_state_neighbours(adj, now)
    opportunity = 2 * opposite > adj.degree
    kept = now == np.asarray(states_next)
    return opportunity, opportunity & kept


def locally_satisfied(graph, states, threshold: float = 0.5) -> np.ndarray:
    """Per node: at least ``threshold`` of its neighbours share its state.

    A node with no neighbours counts as satisfied.
    """
    adj = as_adjacency(graph)
    same = same_state_neighbours(adj, states)
    return (same >= threshold * adj.degree) | (adj.degree == 0)


def local_agreement(graph, states, threshold: float = 0.5) -> float:
    """Share of locally satisfied nodes."""
    return float(locally_satisfied(graph, states, threshold).mean())


def pseudo_equilibrium(state_history, agreement_history, window: int = 3,
                       level: float = 0.9, min_flips: int = 2) -> tuple[bool, tuple[int, ...]]:
    """Is the network at its last round in a pseudo-equilibrium, and who flips?

    ``state_history`` is the sequence of state arrays, one per round from the
    start (index 0 = initial states); ``agreement_history`` the local agreement
    of each. Pseudo-equilibrium ("echo chambers"): no unanimity now, and local
    agreement >= ``level`` in each of the last ``window`` rounds. Flippers are
    the nodes that changed state at least ``min_flips`` times across those
    rounds (the last ``window`` transitions).
    """
    if len(state_history) < window + 1 or len(agreement_history) < window:
        return False, ()
    if is_unanimous(state_history[-1]):
        return False, ()
    if min(agreement_history[-window:]) < level:
        return False, ()
    recent = np.stack([np.asarray(s) for s in state_history[-(window + 1):]])
    flips = (np.diff(recent, axis=0) != 0).sum(axis=0)
    return True, tuple(int(v) for v in np.flatnonzero(flips >= min_flips))
