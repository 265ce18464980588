"""The design of Kearns, Suri and Montfort (2006) as named conditions: six graphs x three views.

Each of the study's 38 players held a node of one of six graphs and saw either its
neighbours' colours (``local``), also their degrees (``degrees``), or the whole
network (``global``: every node's colour and every link, as the study's high-information
view drew the whole graph; the degrees and the conflict count, which that picture shows
at a glance, are given too). k is each graph's chromatic number, known
by construction (``graphs.py``): 2 on the cycle family, 3 on preferential attachment.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

#: the study's six graphs on 38 nodes
GRAPHS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    "cycle": {"topology": "cycle", "chords": 0, "k": 2},
    "chords-5": {"topology": "cycle", "chords": 5, "k": 2},
    "chords-20": {"topology": "cycle", "chords": 20, "k": 2},
    "leader-cycle": {"topology": "leader-cycle", "leaders": 2, "chords": 0, "k": 2},
    "pa-2": {"topology": "pa", "links": 2, "k": 3},
    "pa-3": {"topology": "pa", "links": 3, "k": 3},
})
#: what a player sees, besides its neighbours' colours
VIEWS: Mapping[str, Mapping[str, bool]] = MappingProxyType({
    "local": {"show_degrees": False, "show_conflicts": False, "show_network": False},
    "degrees": {"show_degrees": True, "show_conflicts": False, "show_network": False},
    "global": {"show_degrees": True, "show_conflicts": True, "show_network": True},
})


def _name(graph: str, view: str) -> str:
    return graph if view == "local" else f"{graph}-{view}"


CONDITIONS: Mapping[str, Mapping[str, Any]] = MappingProxyType({
    _name(graph, view): MappingProxyType({"n": 38, **shape, **seen})
    for view, seen in VIEWS.items() for graph, shape in GRAPHS.items()})
GROUPS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "graphs": tuple(GRAPHS),  # the local view: what rule policies need (they ignore the rest)
    **{view: tuple(_name(g, view) for g in GRAPHS) for view in VIEWS if view != "local"},
    "study": tuple(CONDITIONS),
})
#: the rule policies, each at its defaults (inertia is a game parameter: a sweep axis)
RULES: Mapping[str, str] = MappingProxyType({"best-response": "best-response", "random": "random"})


def describe(parameters: Mapping[str, Any]) -> str:
    """A condition's network, colours and view in a few words."""
    p = dict(parameters)
    topology = p.pop("topology", "cycle")
    words = [topology]
    if topology in ("cycle", "leader-cycle") and p.get("chords"):
        words[0] += f" +{p['chords']} chords"
    if topology == "leader-cycle":
        words[0] += f" ({p.get('leaders', 2)} leaders)"
    if topology in ("pa", "ba"):
        words[0] += f" (m={p.get('links', 2)})"
    for key in ("chords", "leaders", "links"):
        p.pop(key, None)
    seen = [what for what, key in (("degrees", "show_degrees"), ("conflicts", "show_conflicts"),
                                   ("the whole network", "show_network")) if p.pop(key, False)]
    words.append(f"k={p.pop('k', 2)}")
    words.append("sees colours" + "".join(f" + {s}" for s in seen))
    words.extend(f"{key}={value}" for key, value in p.items())
    return ", ".join(words)
