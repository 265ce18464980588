"""Measures of states on a graph, as pure functions of integer arrays.

A *state* is one small integer per node (a colour code, an opinion, a name
index): these functions know nothing of what it means, so any game whose agents
hold states on a network can use them. Graphs are turned once into an
``Adjacency`` (CSR arrays), so measures stay vectorised on 10,000-node graphs;
every function also accepts a networkx graph with nodes 0..n-1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import networkx as nx
import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import connected_components

try:  # scipy's C routine behind connected_components, without its per-call validation and transpose
    from scipy.sparse.csgraph._traversal import _connected_components_undirected
except ImportError:  # pragma: no cover - another scipy layout: the public function does the same
    _connected_components_undirected = None

#: default memory budget of the random-relabelling baseline (bytes of working arrays)
BASELINE_MEMORY = 256 * 2**20


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
                                rng: np.random.Generator | None = None,
                                memory: int = BASELINE_MEMORY) -> np.ndarray:
    """Largest same-state component under random reshuffles of the states.

    Each of ``permutations`` draws shuffles the states over the nodes (so the
    counts of each state stay); the draws are solved together as one
    block-diagonal graph, in chunks of as many draws as fit in ``memory`` bytes
    of working arrays (the draws, hence the answer, do not depend on the chunk
    size: each row is shuffled in turn from ``rng``). Pass an ``rng`` of its own
    so that computing the baseline never moves a game's random stream.
    """
    adj = as_adjacency(graph)
    s = np.asarray(states)
    rng = rng if rng is not None else np.random.default_rng()
    per_draw = 40 * adj.n + 90 * len(adj.src) + 64  # bytes of working arrays per permutation, roughly
    chunk = max(1, min(permutations, int(memory // per_draw)))
    out = np.empty(permutations, dtype=np.int64)
    for start in range(0, permutations, chunk):
        rows = min(chunk, permutations - start)
        perms = rng.permuted(np.tile(s, (rows, 1)), axis=1)  # (rows, n), row by row from rng
        out[start:start + rows] = _tiles(adj, rows).largest_components(perms.ravel())[0]
        del perms
    return out


_last_tiles: list = []  # the last tiled graph: (graph, copies, tiles), reused by the next baseline of that graph


def _tiles(adj: Adjacency, copies: int) -> "BlockGraph":
    if _last_tiles and _last_tiles[0][0] is adj and _last_tiles[0][1] == copies:
        return _last_tiles[0][2]
    tiles = BlockGraph.tiled(adj, copies)
    _last_tiles[:] = [(adj, copies, tiles)]
    return tiles


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


class BlockGraph:
    """``b`` graphs of ``n`` nodes each as one block-diagonal graph, for measures of many states at once.

    Node ``g * n + v`` is node ``v`` of graph ``g``. Built once; each call then
    costs a few passes over the edges (no sparse matrix is built per call).
    """

    def __init__(self, graphs: Sequence[Adjacency]):
        adjs = [as_adjacency(g) for g in graphs]
        n = adjs[0].n if adjs else 0
        if any(a.n != n for a in adjs):
            raise ValueError("a BlockGraph stacks graphs of one size; group graphs by size first")
        self.b, self.n, self.size = len(adjs), n, len(adjs) * n
        self.degree = np.concatenate([a.degree for a in adjs]).astype(np.int64) if adjs else np.zeros(0, np.int64)
        nnz = np.array([len(a.indices) for a in adjs], dtype=np.int64)
        node_offsets = np.arange(self.b, dtype=np.int64) * n
        edge_offsets = np.concatenate([[0], np.cumsum(nnz)])
        self.indices = np.concatenate([a.indices.astype(np.intp) + o for a, o in zip(adjs, node_offsets)]) \
            if adjs else np.zeros(0, np.int64)
        self.indptr = np.concatenate([[0], *[a.indptr[1:] + o for a, o in zip(adjs, edge_offsets[:-1])]]) \
            if adjs else np.zeros(1, np.int64)
        self.rows = np.repeat(np.arange(self.size, dtype=np.intp), self.degree)
        # each undirected edge once (row < column), sorted by row, and the same edges sorted by column:
        # the two halves of the symmetric same-state subgraph, cut out by masks without sorting again
        upper = self.indices > self.rows
        self._u_rows = self.rows[upper].astype(np.intp)  # gathers index with intp (int32 indices cost a cast)
        self._u_cols = self.indices[upper].astype(np.intp)
        self._u_cols32 = self._u_cols.astype(np.int32)  # scipy's routine takes int32
        self._u_starts = np.searchsorted(self._u_rows, np.arange(self.size + 1))
        self._t_order = np.argsort(self._u_cols, kind="stable")
        self._t_cols32 = self._u_rows[self._t_order].astype(np.int32)
        self._t_starts = np.searchsorted(self._u_cols[self._t_order], np.arange(self.size + 1))

    @classmethod
    def tiled(cls, graph: Adjacency, copies: int) -> "BlockGraph":
        """``copies`` copies of one graph, built from one copy's arrays (no sorting over the copies)."""
        one = cls([graph])
        tiles = cls.__new__(cls)
        n, e, nnz = one.n, len(one._u_rows), len(one.indices)
        tiles.b, tiles.n, tiles.size = copies, n, copies * n
        node_offsets = (np.arange(copies, dtype=np.intp) * n)[:, None]
        tiles.degree = np.tile(one.degree, copies)
        tiles.indices = (one.indices[None, :] + node_offsets).ravel()
        tiles.indptr = np.concatenate([[0], (one.indptr[1:][None, :] + (np.arange(copies) * nnz)[:, None]).ravel()])
        tiles.rows = (one.rows[None, :] + node_offsets).ravel()
        tiles._u_rows = (one._u_rows[None, :] + node_offsets).ravel()
        tiles._u_cols = (one._u_cols[None, :] + node_offsets).ravel()
        tiles._u_cols32 = tiles._u_cols.astype(np.int32)
        starts = (one._u_starts[None, :-1] + (np.arange(copies) * e)[:, None]).ravel()
        tiles._u_starts = np.concatenate([starts, [copies * e]])
        tiles._t_order = (one._t_order[None, :] + (np.arange(copies, dtype=np.intp) * e)[:, None]).ravel()
        tiles._t_cols32 = (one._t_cols32[None, :] + node_offsets.astype(np.int32)).ravel()
        starts = (one._t_starts[None, :-1] + (np.arange(copies) * e)[:, None]).ravel()
        tiles._t_starts = np.concatenate([starts, [copies * e]])
        return tiles

    @cached_property
    def _matrix(self) -> csr_array:
        return csr_array((np.ones(len(self.indices), np.int32), self.indices, self.indptr), shape=(self.size, self.size))

    def neighbour_sum(self, states: np.ndarray) -> np.ndarray:
        """Per node: the sum of its neighbours' small integer states (0/1 states: how many hold 1)."""
        return self._matrix @ states.astype(np.int32)

    def component_labels(self, states: np.ndarray) -> np.ndarray:
        """Per node: the label of its connected same-state component.

        Labels are numbered in the order of the components' lowest node.
        """
        # (np.take and np.compress: much faster here than fancy and boolean indexing)
        keep = np.take(states, self._u_rows) == np.take(states, self._u_cols)
        counts = np.zeros(len(keep) + 1, dtype=np.int32)  # per call: a BlockGraph may be shared by threads
        np.cumsum(keep, out=counts[1:])
        indptr = np.take(counts, self._u_starts)
        cols = np.compress(keep, self._u_cols32)
        keep_t = np.take(keep, self._t_order)
        np.cumsum(keep_t, out=counts[1:])
        indptr_t = np.take(counts, self._t_starts)
        cols_t = np.compress(keep_t, self._t_cols32)
        labels = np.empty(self.size, dtype=np.int32)
        if _connected_components_undirected is not None:
            _connected_components_undirected(cols, indptr, cols_t, indptr_t, labels)
        else:  # pragma: no cover
            sub = csr_array((np.ones(len(cols), np.int8), cols, indptr), shape=(self.size, self.size))
            labels[:] = connected_components(sub, directed=False)[1]
        return labels

    def largest_components(self, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per graph: size and state of its largest same-state component (ties: lowest node id)."""
        labels = self.component_labels(states)
        per_node = np.bincount(labels)[labels].reshape(self.b, self.n)
        best = per_node.argmax(axis=1)  # the lowest node of a largest component
        rows = np.arange(self.b)
        return per_node[rows, best], states.reshape(self.b, self.n)[rows, best]
