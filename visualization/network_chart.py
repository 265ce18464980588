"""The network picture as a Vega-Lite specification: a plain dict, drawn in the browser.

Everything here is a function of plain values (a graph, a layout, colours,
preferences, flippers, who is locally satisfied), not of a model, so a game played
now, a game read back from its run directory and a game read from a sweep look
exactly alike. The browser draws the picture (SVG): hovering a node shows its
details, clicking it selects it, and a redraw at N = 1,000 costs a fraction of a
second, where a matplotlib PNG cost seconds at N = 500.

Two views of one state:

* ``network_spec``: every agent (fill = colour now, ring = preference, shape = its
  role), same-colour links drawn as broad translucent bands, so each echo chamber
  shows as a shaded region; flippers ringed in black, the selected agent in orange;
* ``chamber_spec``: the contracted map, one bubble per same-colour group (an echo
  chamber) sized by its members, one line per pair of chambers that links cross.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx

from llm_mesa.models.consensus import measures

COLOUR_HEX = {"red": "#d62728", "blue": "#1f77b4"}
VEGA_LITE = "https://vega.github.io/schema/vega-lite/v5.json"  # a schema name only: never fetched
#: Each node's role, as the legend and the tooltip name it.
ROLES = {
    "agreed": "consensus",
    "satisfied": "locally satisfied",
    "unsatisfied": "neighbourhood disagrees",
    "flipper": "flipper",
}
ROLE_SHAPES = {"consensus": "circle", "locally satisfied": "circle", "neighbourhood disagrees": "square",
               "flipper": "diamond"}
#: SVG everywhere: every mark is an element a browser test can hover or count.
EMBED = {"embedOptions": {"renderer": "svg", "actions": False}}
#: Links drawn at most: a dense graph (ER at N = 1,000 has 100,000) shows an even sample of them.
MAX_LINKS = 4000

Layout = Mapping[int, Sequence[float]]


def node_roles(colours: Sequence[str], satisfied: Sequence[bool], flippers: Iterable[int]) -> dict[int, str]:
    """Each node's role in the echo-chamber picture.

    ``flipper``: keeps changing colour (the pseudo-equilibrium flippers);
    ``satisfied``: its neighbourhood agrees with it although the network does not;
    ``unsatisfied``: its neighbourhood majority holds the other colour;
    ``agreed``: the network is unanimous.
    """
    if measures.is_consensus(list(colours)):
        return dict.fromkeys(range(len(colours)), "agreed")
    flipping = set(flippers)
    return {v: "flipper" if v in flipping else ("satisfied" if ok else "unsatisfied")
            for v, ok in enumerate(bool(s) for s in satisfied)}


@dataclass(frozen=True)
class NodeStyle:
    """How big things are drawn for a network of ``n`` nodes (readable from 10 to 1,000+)."""

    size: float  # symbol area in px^2
    ring: float  # width of the preference ring
    band: float  # width of a same-colour band
    link: float  # width of a link
    labels: bool  # node ids written inside the nodes

    @classmethod
    def for_size(cls, n: int) -> "NodeStyle":
        size = max(12.0, min(420.0, 9000.0 / max(n, 1)))
        return cls(size=size, ring=2.6 if n <= 60 else (1.6 if n <= 200 else 0.9),
                   band=9.0 if n <= 60 else (6.0 if n <= 200 else 3.5),
                   link=0.8 if n <= 200 else 0.35, labels=n <= 60)


@dataclass(frozen=True)
class Chambers:
    """The same-colour components of one state: who is in which, and links across."""

    members: tuple[tuple[int, ...], ...]  # largest first
    colours: tuple[str, ...]
    of_node: tuple[int, ...]
    links: Mapping[tuple[int, int], int]

    @property
    def largest(self) -> int:
        return len(self.members[0]) if self.members else 0


def chambers(graph: nx.Graph, colours: Sequence[str]) -> Chambers:
    """Same-colour components (the model's own measure), largest first, and links between them."""
    colours = list(colours)
    found = sorted((sorted(c) for c in measures.same_colour_components(graph, colours)), key=lambda c: (-len(c), c[0]))
    of_node = [0] * len(colours)
    for k, members in enumerate(found):
        for v in members:
            of_node[v] = k
    links: Counter = Counter()
    for u, v in graph.edges:
        a, b = of_node[u], of_node[v]
        if a != b:
            links[(min(a, b), max(a, b))] += 1
    return Chambers(tuple(tuple(m) for m in found), tuple(colours[m[0]] for m in found), tuple(of_node), dict(links))


def _scale(values: Iterable[float]) -> dict[str, Any]:
    values = list(values)
    low, high = min(values), max(values)
    pad = 0.06 * max(high - low, 1e-9)
    return {"domain": [low - pad, high + pad], "zero": False, "nice": False}


def _colour_scale() -> dict[str, Any]:
    return {"domain": list(COLOUR_HEX), "range": list(COLOUR_HEX.values())}


def _frame(layout: Layout) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fixed x and y scales from the layout: nodes never jump between rounds."""
    return (_scale(p[0] for p in layout.values()), _scale(p[1] for p in layout.values()))


def _base(title: Any, width: Any, height: int, datasets: dict[str, list]) -> dict[str, Any]:
    return {
        "$schema": VEGA_LITE, "width": width, "height": height, "title": title,
        "autosize": {"type": "fit-x", "contains": "padding"} if width == "container" else "pad",
        "datasets": datasets, "usermeta": EMBED,
        "config": {"view": {"stroke": None}, "legend": {"orient": "bottom", "labelFontSize": 11},
                   "title": {"anchor": "start", "fontSize": 13}},
    }


def _xy(frame: tuple[dict, dict], x: str = "x", y: str = "y") -> dict[str, Any]:
    return {"x": {"field": x, "type": "quantitative", "scale": frame[0], "axis": None},
            "y": {"field": y, "type": "quantitative", "scale": frame[1], "axis": None}}


def network_spec(graph: nx.Graph, layout: Layout, colours: Sequence[str], preferences: Sequence[str], *,
                 flippers: Iterable[int] = (), satisfied: Sequence[bool] | None = None,
                 round_number: int | None = None, details: Sequence[Mapping[str, Any]] | None = None,
                 selected: int | None = None, width: Any = "container", height: int = 460) -> dict[str, Any]:
    """The whole network: fill = colour now, ring = preference, shape = role, bands = echo chambers.

    ``details`` (one mapping per node, e.g. ``{"reason": ..., "policy": ...}``) go into
    the hover tooltip. ``satisfied`` defaults to the measure's own definition.
    """
    colours = list(colours)
    flippers = tuple(flippers)
    if satisfied is None:
        satisfied = measures.locally_satisfied(graph, colours).tolist()
    roles = node_roles(colours, satisfied, flippers)
    style = NodeStyle.for_size(len(colours))
    found = chambers(graph, colours)
    nodes = []
    for v in range(len(colours)):
        x, y = layout[v]
        row = {"agent": v, "x": round(float(x), 5), "y": round(float(y), 5), "colour": colours[v],
               "preference": preferences[v], "state": ROLES[roles[v]], "chamber": found.of_node[v] + 1,
               "chamber size": len(found.members[found.of_node[v]])}
        extra = details[v] if details is not None else {}
        row["policy"] = str(extra.get("policy") or "-")
        row["last reason"] = _short(extra.get("reason"))
        nodes.append(row)
    links = []
    edges = list(graph.edges)
    shown_links = edges if len(edges) <= MAX_LINKS else edges[:: -(-len(edges) // MAX_LINKS)]
    for u, v in shown_links:
        (x0, y0), (x1, y1) = layout[u], layout[v]
        same = colours[u] == colours[v]
        links.append({"x": round(float(x0), 5), "y": round(float(y0), 5), "x2": round(float(x1), 5),
                      "y2": round(float(y1), 5), "same": same, "colour": colours[u] if same else "mixed"})
    frame = _frame(layout)
    xy = _xy(frame)
    ends = {"x2": {"field": "x2"}, "y2": {"field": "y2"}}
    unsatisfied = sum(r == "unsatisfied" for r in roles.values())
    present = [label for label in ROLE_SHAPES if label in {ROLES[r] for r in roles.values()}]
    head = f"Round {round_number}: " if round_number is not None else ""
    sample = "" if len(shown_links) == len(edges) else f" · {len(shown_links):,} of {len(edges):,} links drawn"
    title = {"text": f"{head}{len(found.members)} same-colour groups, largest {found.largest} of {len(colours)}",
             "subtitle": [f"fill: colour now · ring: preference · bands: same-colour links (echo chambers){sample}",
                          f"■ {unsatisfied} agent{'' if unsatisfied == 1 else 's'} whose neighbourhood disagrees"
                          f" · ◆ {len(flippers)} flippers (black ring)"]}
    layers: list[dict[str, Any]] = [
        {"data": {"name": "links"}, "transform": [{"filter": "datum.same"}],
         "mark": {"type": "rule", "strokeWidth": style.band, "opacity": 0.22, "strokeCap": "round"},
         "encoding": {**xy, **ends, "color": {"field": "colour", "type": "nominal", "scale": _colour_scale(),
                                              "legend": None}}},
        {"data": {"name": "links"},
         "mark": {"type": "rule", "strokeWidth": style.link, "color": "#666666"},
         "encoding": {**xy, **ends, "strokeDash": {"condition": {"test": "datum.same", "value": [1, 0]},
                                                   "value": [3, 3]},
                      "opacity": {"condition": {"test": "datum.same", "value": 0.8}, "value": 0.45}}},
        {"name": "nodes", "data": {"name": "nodes"},
         "mark": {"type": "point", "filled": True, "size": style.size, "strokeWidth": style.ring, "opacity": 1,
                  "cursor": "pointer"},
         "encoding": {
             **xy,
             "fill": {"field": "colour", "type": "nominal", "scale": _colour_scale(), "legend": None},
             "stroke": {"field": "preference", "type": "nominal", "scale": _colour_scale(), "legend": None},
             "shape": {"field": "state", "type": "nominal",
                       "scale": {"domain": present, "range": [ROLE_SHAPES[r] for r in present]},
                       "legend": {"title": "state", "symbolFillColor": "#888888"}},
             "tooltip": [{"field": f} for f in ("agent", "colour", "preference", "state", "chamber",
                                                "chamber size", "policy", "last reason")],
         }},
        {"data": {"name": "nodes"}, "transform": [{"filter": "datum.state == 'flipper'"}],
         "mark": {"type": "point", "shape": "diamond", "filled": False, "stroke": "black", "strokeWidth": 1.6,
                  "size": style.size * 2.8, "strokeDash": [3, 2]},
         "encoding": xy},
    ]
    if selected is not None and 0 <= selected < len(colours):
        layers.append({"data": {"name": "nodes"}, "transform": [{"filter": f"datum.agent == {int(selected)}"}],
                       "mark": {"type": "point", "shape": "circle", "filled": False, "stroke": "#ff7f0e",
                                "strokeWidth": 3, "size": max(style.size * 4, 160)},
                       "encoding": xy})
    if style.labels:
        layers.append({"data": {"name": "nodes"},
                       "mark": {"type": "text", "fontSize": 9 if len(colours) > 30 else 11, "color": "white",
                                "fontWeight": "bold", "baseline": "middle"},
                       "encoding": {**xy, "text": {"field": "agent"}}})
    return {**_base(title, width, height, {"nodes": nodes, "links": links}), "layer": layers}


def chamber_spec(graph: nx.Graph, layout: Layout, colours: Sequence[str], *, flippers: Iterable[int] = (),
                 satisfied: Sequence[bool] | None = None, round_number: int | None = None,
                 width: Any = "container", height: int = 460) -> dict[str, Any]:
    """The contracted map: one bubble per echo chamber (area = members), lines = links across."""
    colours = list(colours)
    if satisfied is None:
        satisfied = measures.locally_satisfied(graph, colours).tolist()
    flipping = set(flippers)
    found = chambers(graph, colours)
    bubbles = []
    for k, members in enumerate(found.members):
        xs = [layout[v][0] for v in members]
        ys = [layout[v][1] for v in members]
        bubbles.append({"chamber": k + 1, "x": sum(xs) / len(xs), "y": sum(ys) / len(ys), "colour": found.colours[k],
                        "members": len(members), "flippers": sum(v in flipping for v in members),
                        "disagreeing": sum(not satisfied[v] for v in members),
                        "agents": _short(", ".join(map(str, members)), 80)})
    _spread(bubbles, layout)
    centre = {b["chamber"] - 1: (b["x"], b["y"]) for b in bubbles}
    lines = [{"x": centre[a][0], "y": centre[a][1], "x2": centre[b][0], "y2": centre[b][1], "links": count,
              "between": f"chambers {a + 1} and {b + 1}"} for (a, b), count in sorted(found.links.items())]
    frame = _frame({i: p for i, p in enumerate(list(layout.values()) + [(b["x"], b["y"]) for b in bubbles])})
    xy = _xy(frame)
    biggest = max((b["members"] for b in bubbles), default=1)
    title = {"text": (f"Round {round_number}: " if round_number is not None else "")
             + f"{len(bubbles)} echo chambers, largest {found.largest} of {len(colours)}",
             "subtitle": "one bubble per same-colour group (area: members) · lines: links across, thicker = more"}
    layers = [
        {"data": {"name": "lines"},
         "mark": {"type": "rule", "color": "#777777", "opacity": 0.6},
         "encoding": {**xy, "x2": {"field": "x2"}, "y2": {"field": "y2"},
                      "strokeWidth": {"field": "links", "type": "quantitative",
                                      "scale": {"type": "sqrt", "range": [0.6, 9]}, "legend": None},
                      "tooltip": [{"field": "between"}, {"field": "links"}]}},
        {"name": "chambers", "data": {"name": "bubbles"},
         "mark": {"type": "point", "filled": True, "opacity": 0.85, "stroke": "white", "strokeWidth": 1.5},
         "encoding": {**xy,
                      "fill": {"field": "colour", "type": "nominal", "scale": _colour_scale(),
                               "legend": {"title": "chamber colour"}},
                      "size": {"field": "members", "type": "quantitative",
                               "scale": {"domain": [1, max(biggest, 2)], "range": [36, 3600]},
                               "legend": {"title": "members"}},
                      "tooltip": [{"field": f} for f in ("chamber", "colour", "members", "disagreeing", "flippers",
                                                         "agents")]}},
    ]
    if len(bubbles) <= 80:  # member counts on the bubbles big enough to hold them
        layers.append({"data": {"name": "bubbles"},
                       "transform": [{"filter": f"datum.members >= {max(2, round(0.04 * biggest))}"}],
                       "mark": {"type": "text", "color": "white", "fontWeight": "bold", "baseline": "middle"},
                       "encoding": {**xy, "text": {"field": "members"}}})
    return {**_base(title, width, height, {"bubbles": bubbles, "lines": lines}), "layer": layers}


def _spread(bubbles: list[dict[str, Any]], layout: Layout, rounds: int = 120) -> None:
    """Move bubbles apart until none overlaps, each starting at its members' centroid.

    Intertwined chambers (two giant groups on a BA graph) share a centroid; pushing
    overlapping bubbles apart, the big ones less, keeps each near its members while
    every chamber stays visible. Radii follow the drawn areas (area ∝ members).
    """
    if len(bubbles) < 2:
        return
    import numpy as np

    xs = [p[0] for p in layout.values()]
    ys = [p[1] for p in layout.values()]
    extent = max(max(xs) - min(xs), max(ys) - min(ys), 1e-9)
    members = np.array([b["members"] for b in bubbles], dtype=float)
    radius = 0.075 * extent * np.sqrt(members / members.max()) + 0.01 * extent
    pos = np.array([[b["x"], b["y"]] for b in bubbles], dtype=float)
    pos += np.random.default_rng(0).normal(0, 1e-4 * extent, pos.shape)  # shared centroids part
    inertia = members / (members + members[:, None])  # the smaller of a pair moves more
    for _ in range(rounds):
        delta = pos[:, None, :] - pos[None, :, :]
        distance = np.sqrt((delta ** 2).sum(axis=-1))
        np.fill_diagonal(distance, np.inf)
        overlap = np.clip(radius[:, None] + radius[None, :] - distance, 0, None)
        if not overlap.any():
            break
        push = (overlap * inertia / np.maximum(distance, 1e-9))[:, :, None] * delta
        pos += 0.5 * push.sum(axis=1)
    for b, (x, y) in zip(bubbles, pos):
        b["x"], b["y"] = float(x), float(y)


def _short(text: Any, limit: int = 160) -> str:
    if text is None or text == "":
        return "-"
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["COLOUR_HEX", "Chambers", "NodeStyle", "ROLES", "chamber_spec", "chambers", "network_spec",
           "node_roles"]
