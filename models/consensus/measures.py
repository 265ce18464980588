"""The consensus game's mechanism measures, in colours.

The work is done by ``llm_mesa.graph_measures`` on 0/1 states (1 = blue); this
module only translates colour names, so that the game's code and its users can
speak of red and blue.
"""

from __future__ import annotations

import numpy as np

from llm_mesa import graph_measures as gm
from llm_mesa.graph_measures import Adjacency

from .observation import colour_name

__all__ = ["Adjacency", "blue_share", "codes", "is_consensus", "largest_same_colour_component",
           "local_agreement", "locally_satisfied", "pseudo_equilibrium", "random_colouring_baseline",
           "same_colour_components", "stubborn_opportunities"]


def codes(colours) -> np.ndarray:
    """Colour names (or 0/1 codes) as a 0/1 int8 array, 1 = blue."""
    arr = np.asarray(colours)
    if arr.dtype.kind in "USO":
        return (arr == "blue").astype(np.int8)
    return arr.astype(np.int8)


def is_consensus(colours) -> bool:
    return gm.is_unanimous(codes(colours))


def blue_share(colours) -> float:
    return float(codes(colours).mean())


def same_colour_components(graph, colours) -> list[set[int]]:
    return gm.same_state_components(graph, codes(colours))


def largest_same_colour_component(graph, colours) -> tuple[int, str]:
    """Size and colour of the largest same-colour component (ties: lowest node id)."""
    size, state = gm.largest_same_state_component(graph, codes(colours))
    return size, colour_name(state)


def random_colouring_baseline(graph, colours, permutations: int = 1000,
                              rng: np.random.Generator | None = None) -> np.ndarray:
    return gm.random_relabelling_baseline(graph, codes(colours), permutations, rng)


def stubborn_opportunities(graph, colours_now, colours_next) -> tuple[np.ndarray, np.ndarray]:
    return gm.stubborn_opportunities(graph, codes(colours_now), codes(colours_next))


def pseudo_equilibrium(colour_history, agreement_history, window: int = 3,
                       level: float = 0.9, min_flips: int = 2) -> tuple[bool, tuple[int, ...]]:
    return gm.pseudo_equilibrium([codes(c) for c in colour_history], agreement_history,
                                 window, level, min_flips)


def locally_satisfied(graph, colours, threshold: float = 0.5) -> np.ndarray:
    return gm.locally_satisfied(graph, codes(colours), threshold)


def local_agreement(graph, colours, threshold: float = 0.5) -> float:
    return gm.local_agreement(graph, codes(colours), threshold)
