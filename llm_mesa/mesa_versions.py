"""What differs between the Mesa versions llm-mesa runs on (3.5 and 4), kept in one place.

Mesa 4 removed ``batch_run``, ``mesa.space``, ``Model.steps`` and the ``seed=`` keyword,
refuses ``Network(layout=None)``, and seeds ``model.random`` from its numpy generator
instead of from the seed itself: for seed 1, ``model.random.random()`` is 0.908 on
Mesa 4 and 0.134 on Mesa 3 (which is ``random.Random(1).random()``). A consensus game
draws its graph, preferences and selectors from ``model.random``, so left to Mesa the
same seed would play another game on Mesa 4, and a recording made on one version would
miss on the other. Hence:

* ``seed_streams`` seeds ``model.random`` from the game's seed itself, as Mesa 3 does,
  on either version: games on Mesa 3 stay bit for bit what they were, and Mesa 4 plays
  the same ones.
* ``network_space`` builds Mesa's ``Network`` space the way each version accepts.
* The games count their rounds on their own clock (``model.round``), never
  ``model.steps``; ``seed=`` is never passed (``rng=`` is, on both).
"""

from __future__ import annotations

import numbers
import random
import re
from typing import Any

import mesa
import networkx as nx
from mesa.discrete_space import Network

#: the installed Mesa as (major, minor)
MESA_VERSION: tuple[int, int] = tuple(int(part) for part in re.match(r"(\d+)\.(\d+)", mesa.__version__).groups())
MESA_4 = MESA_VERSION >= (4, 0)
#: Mesa's ``batch_run`` exists (Mesa 3 only; Mesa 4 removed it, the project's own sweep needs neither)
HAS_BATCH_RUN = hasattr(mesa, "batch_run")


def seed_streams(model: mesa.Model, rng: Any) -> int:
    """Seed ``model.random`` from the game's seed itself and return that seed.

    Call right after ``super().__init__(rng=rng)``. An integer ``rng`` is the seed. An
    unseeded game keeps the seed Mesa 3 drew for it (``model._seed``), or on Mesa 4 draws
    one from OS entropy, so every game is named, and replayed, by the seed it played with.
    The generator is reseeded in place: Mesa's agent sets hold this very object.
    """
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        seed = int(rng)
    else:
        drawn = getattr(model, "_seed", None)
        seed = int(drawn) if isinstance(drawn, numbers.Integral) else random.SystemRandom().randrange(2**31)
    model.random.seed(seed)  # the stream of random.Random(seed), as Mesa 3 seeds it
    return seed


def network_space(graph: nx.Graph, rng: random.Random) -> Network:
    """Mesa's ``Network`` space over ``graph``, its agents' cells.

    Mesa 3: a topological network (no positions; a drawing layout costs more than a rule
    game and is computed only when drawn, ``model.layout``). Mesa 4 wants a position for
    every node: its own default, the circular layout, which costs O(N).
    """
    if MESA_4:
        return Network(graph, random=rng)
    return Network(graph, random=rng, layout=None)


__all__ = ["HAS_BATCH_RUN", "MESA_4", "MESA_VERSION", "network_space", "seed_streams"]
