"""Graphs that games are played on: the studies' topologies, graph files, layouts.

Every random draw comes from the ``random.Random`` passed in (the model's), so
a graph is fixed by the run's seed.
"""

from __future__ import annotations

import random
import warnings
from pathlib import Path

import networkx as nx

from llm_mesa.errors import LlmMesaError

TOPOLOGIES = ("er", "ba", "ws", "caveman")
ER_MAX_DRAWS = 1000


class NetworkError(LlmMesaError):
    """A graph that cannot be built as asked; the message names the fix."""


def _seed(rng: random.Random) -> int:
    return rng.getrandbits(32)


def caveman_shape(n: int, clique_size: int = 4) -> tuple[int, int]:
    """Cliques and clique size of the connected caveman graph at ``n`` nodes.

    The study's graph is 9 cliques of 4 at N = 36. At other N the clique size
    stays 4 and the number of cliques is ``n / 4``; N must be a multiple of it.
    """
    if n % clique_size or n // clique_size < 2:
        raise NetworkError(
            f"caveman needs N to be a multiple of the clique size {clique_size} "
            f"with at least 2 cliques (got N={n}); use e.g. --n {max(2, round(n / clique_size)) * clique_size}")
    return n // clique_size, clique_size


def build_topology(
    topology: str,
    n: int,
    rng: random.Random,
    *,
    er_p: float = 0.2,
    ba_m: int = 2,
    ws_k: int = 4,
    ws_p: float = 0.5,
    clique_size: int = 4,
) -> nx.Graph:
    """One of the study's four topologies at ``n`` nodes, drawn from ``rng``.

    * ``er``: Erdős–Rényi G(n, p=0.2); a disconnected draw is redrawn (up to
      1,000 times), since a disconnected graph can never agree by
      local rules and the study's graphs were connected.
    * ``ba``: Barabási–Albert, ``m = 2`` edges per new node.
    * ``ws``: connected Watts–Strogatz, ring degree ``k = 4``, rewiring ``p = 0.5``.
    * ``caveman``: ``networkx.connected_caveman_graph(n / 4, 4)``.

    Args:
        topology: ``er``, ``ba``, ``ws`` or ``caveman``.
        n: The number of nodes.
        rng: The random stream the graph is drawn from (a game's seeded ``model.random``).
        er_p: The Erdős–Rényi edge probability.
        ba_m: The Barabási–Albert edges per new node.
        ws_k: The Watts–Strogatz ring degree (even).
        ws_p: The Watts–Strogatz rewiring probability.
        clique_size: The caveman graph's clique size (``n`` a multiple of it).

    Returns:
        The graph, nodes numbered 0 to n - 1.

    Raises:
        NetworkError: An unknown topology, or an ``n`` the topology cannot take; the message names the fix.
    """
    topology = topology.lower()
    if topology not in TOPOLOGIES:
        raise NetworkError(f"unknown topology {topology!r}; choose one of: {', '.join(TOPOLOGIES)}, or pass --graph FILE")
    if topology == "er":
        if n < 2:
            raise NetworkError(f"er needs N >= 2 (got {n})")
        for _ in range(ER_MAX_DRAWS):
            g = nx.gnp_random_graph(n, er_p, seed=_seed(rng))
            if nx.is_connected(g):
                return g
        raise NetworkError(f"no connected ER graph in {ER_MAX_DRAWS} draws at N={n}, p={er_p}; raise --er-p")
    if topology == "ba":
        if n <= ba_m:
            raise NetworkError(f"ba needs N > m={ba_m} (got N={n}); use a larger --n")
        return nx.barabasi_albert_graph(n, ba_m, seed=_seed(rng))
    if topology == "ws":
        if n <= ws_k:
            raise NetworkError(f"ws needs N > k={ws_k} (got N={n}); use a larger --n")
        return nx.connected_watts_strogatz_graph(n, ws_k, ws_p, tries=1000, seed=_seed(rng))
    cliques, size = caveman_shape(n, clique_size)
    return nx.connected_caveman_graph(cliques, size)


def _read_edge_list(path: Path, text: str) -> nx.Graph:
    """``SOURCE TARGET [WEIGHT]`` per line (``#`` starts a comment); anything else is refused by line."""
    g = nx.Graph()
    for number, raw in enumerate(text.splitlines(), 1):
        fields = raw.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) not in (2, 3):
            raise NetworkError(f"{path}, line {number}: {len(fields)} columns; an edge list has SOURCE TARGET [WEIGHT]")
        weight = 1.0
        if len(fields) == 3:
            try:
                weight = float(fields[2])
            except ValueError:
                raise NetworkError(f"{path}, line {number}: the third column {fields[2]!r} is not a number "
                                   "(an edge list has SOURCE TARGET [WEIGHT])") from None
        g.add_edge(fields[0], fields[1], weight=weight)
    return g


def _node_order(nodes) -> list:
    """Integer node ids in numeric order (so ``nodes:3`` is the file's node 3); others as text."""
    try:
        return sorted(nodes, key=lambda v: int(v))
    except (TypeError, ValueError):
        return sorted(nodes, key=str)


def load_graph(path: str | Path) -> nx.Graph:
    """A connected, undirected graph from a GraphML or edge-list file, relabelled to 0..n-1.

    The format is read from the content, not the suffix (GraphML starts with ``<``).
    Node ids that are all integers keep their numeric order, so a file's node 3 is
    the game's node 3 when the ids run 0..n-1; other ids are numbered in text order.
    Directed and disconnected graphs are refused: the game is played on undirected
    edges, and agents in different components can never agree.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise NetworkError(f"cannot read graph file {str(path)!r} ({exc}); give a GraphML (.graphml) or edge-list file") from None
    if text.lstrip().startswith("<"):
        try:
            g = nx.parse_graphml(text)
        except (nx.NetworkXError, ValueError, SyntaxError, KeyError) as exc:
            raise NetworkError(f"cannot read graph file {str(path)!r} as GraphML ({exc})") from None
        if g.is_directed():
            raise NetworkError(f"graph file {str(path)!r} is directed; the game needs undirected edges "
                               "(save it with edgedefault=\"undirected\")")
        g = nx.Graph(g)
    else:
        g = _read_edge_list(path, text)
    g.remove_edges_from(nx.selfloop_edges(g))
    if g.number_of_nodes() < 2:
        raise NetworkError(f"graph file {str(path)!r} has fewer than 2 nodes")
    if not nx.is_connected(g):
        parts = sorted(nx.connected_components(g), key=len)
        raise NetworkError(f"graph file {str(path)!r} is not connected ({len(parts)} components, the smallest "
                           f"{sorted(map(str, parts[0]))[:3]}); agents in different components can never agree: "
                           "give a connected graph")
    order = _node_order(g.nodes)
    return nx.relabel_nodes(g, {v: i for i, v in enumerate(order)})


def normalise_graph(g: nx.Graph) -> nx.Graph:
    """A user's networkx graph as the model needs it: simple, undirected, nodes 0..n-1.

    Integer labels keep their numeric order. A directed graph is read as undirected
    and a disconnected one is played as it is; both with a warning that says so.
    """
    if g.number_of_nodes() < 2:
        raise NetworkError("the graph needs at least 2 nodes")
    if g.is_directed():
        warnings.warn("the graph is directed; the game reads its edges as undirected", GraphWarning, stacklevel=3)
    g = nx.Graph(g)
    g.remove_edges_from(nx.selfloop_edges(g))
    if not nx.is_connected(g):
        warnings.warn(f"the graph has {nx.number_connected_components(g)} components; agents in different "
                      "components can never agree", GraphWarning, stacklevel=3)
    if set(g.nodes) != set(range(g.number_of_nodes())):
        order = _node_order(g.nodes)
        g = nx.relabel_nodes(g, {v: i for i, v in enumerate(order)})
    return g


class GraphWarning(UserWarning):
    """A graph the game can play, but perhaps not as the user meant."""


def highest_degree_nodes(graph: nx.Graph, k: int) -> list[int]:
    """The ``k`` highest-degree nodes (ties by node id): the study's hubs."""
    return sorted(graph.nodes, key=lambda v: (-graph.degree[v], v))[:k]


def seeded_layout(graph: nx.Graph, seed: int) -> dict[int, tuple[float, float]]:
    """A stable drawing layout (Mesa's default spring layout is unseeded).

    Kamada–Kawai (deterministic) up to 300 nodes: it draws the caveman ring of
    cliques and the hubs of a BA graph legibly; a seeded spring layout above;
    a circle beyond 2,000 nodes, where a force layout costs more than a game.

    Args:
        graph: The graph to lay out.
        seed: The seed of the spring layout (the same seed, the same picture).

    Returns:
        Node -> ``(x, y)``.
    """
    n = graph.number_of_nodes()
    if n > 2000:
        layout = nx.circular_layout(graph)
    elif n <= 300 and nx.is_connected(graph):
        layout = nx.kamada_kawai_layout(graph)
    else:
        layout = nx.spring_layout(graph, seed=seed)
    return {v: (float(p[0]), float(p[1])) for v, p in layout.items()}
