"""Who prefers which colour: the consensus game's preference designs.

Every random draw comes from the model's ``random.Random``, so preferences are
fixed by the run's seed.
"""

from __future__ import annotations

import random

import networkx as nx

from llm_mesa.graphs import NetworkError, highest_degree_nodes

PREFERENCE_DESIGNS = ("random", "minority", "explicit")


def assign_preferences(
    graph: nx.Graph,
    design: str,
    rng: random.Random,
    *,
    minority: int = 5,
    minority_colour: str = "red",
    explicit: dict[int, str] | list[str] | None = None,
) -> list[str]:
    """Preferred colour of every node.

    * ``random``: half the nodes (``n // 2``, chosen at random) prefer red, the
      rest blue (18/18 at N = 36; with odd N blue has one more).
    * ``minority``: the ``minority`` highest-degree nodes prefer
      ``minority_colour`` (ties broken by node id), all others the other colour.
    * ``explicit``: a list (by node) or a dict of every node's colour.
    """
    n = graph.number_of_nodes()
    if design == "random":
        reds = set(rng.sample(range(n), n // 2))
        return ["red" if v in reds else "blue" for v in range(n)]
    if design == "minority":
        if not 0 <= minority <= n:
            raise NetworkError(f"minority of {minority} is impossible with N={n}; choose 0 <= --minority <= {n}")
        if minority_colour not in ("red", "blue"):
            raise NetworkError(f"minority colour must be red or blue, not {minority_colour!r}")
        majority_colour = "blue" if minority_colour == "red" else "red"
        hubs = set(highest_degree_nodes(graph, minority))
        return [minority_colour if v in hubs else majority_colour for v in range(n)]
    if design == "explicit":
        if explicit is None:
            raise NetworkError("explicit preferences need a colour for every node")
        colours = [explicit[v] for v in range(n)] if isinstance(explicit, dict) else list(explicit)
        if len(colours) != n or any(c not in ("red", "blue") for c in colours):
            raise NetworkError(f"explicit preferences need {n} colours, each red or blue")
        return colours
    raise NetworkError(f"unknown preference design {design!r}; choose one of: {', '.join(PREFERENCE_DESIGNS)}")
