"""A game's network picture (``llm_mesa.views.NetworkPicture``) as a Vega-Lite specification.

Everything here is a function of the picture's plain values (graph, layout, each
node's state, ring, flags and marks), so a game played now, a recorded game and a
sweep's game look alike, whatever the game. The browser draws it (SVG): hovering a
node (or its number) shows its details, clicking it selects it.

Two views of one round:

* ``network_spec``: every agent (fill = state, as its ``Scale`` says: categories in their
  colours with a sorted legend, ordered values light to dark, numbers on a continuous
  scale with a legend bar; ring = the picture's ring, a square when flagged; a node's
  number in the ink readable on its fill); for categorical states, links between agents
  of one state drawn as broad translucent bands, so each group of agreeing neighbours (an
  echo chamber) shows as a shaded region; marked nodes ringed in black, the selected
  agent in orange;
* ``chamber_spec``: (categorical states only) the contracted map, one bubble per
  same-state group sized by its members on a scale fixed by the network's size (maps of
  one N compare at a glance), one line per pair of groups that links cross.
"""

from __future__ import annotations

import functools
import textwrap
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx

from llm_mesa.views import NetworkPicture
from llm_mesa.views.charts import EMBED, VEGA_LITE
from llm_mesa.views.colours import CONTINUOUS_SCHEME, EMPTY
from llm_mesa.views.pictures import Fill, Picture, label

#: links drawn at most: a dense graph (ER at N = 1,000 has 100,000) shows an even sample of them
MAX_LINKS = 4000
ROLE_SHAPES = {"": "circle", "flagged": "square"}
#: a title's subtitle lines are wrapped at this many characters (the picture's narrowest column holds them)
SUBTITLE_CHARS = 78


@dataclass(frozen=True)
class NodeStyle:
    """How big things are drawn for a network of ``n`` nodes (readable from 10 to 1,000+)."""

    size: float  # symbol area in px^2
    ring: float  # width of the ring
    band: float  # width of a same-state band
    link: float  # width of a link
    labels: bool  # node ids written inside the nodes

    @classmethod
    def for_size(cls, n: int) -> NodeStyle:
        size = max(12.0, min(420.0, 9000.0 / max(n, 1)))
        return cls(size=size, ring=2.6 if n <= 60 else (1.6 if n <= 200 else 0.9),
                   band=9.0 if n <= 60 else (6.0 if n <= 200 else 3.5),
                   link=0.8 if n <= 200 else 0.35, labels=n <= 60)


@dataclass(frozen=True)
class Chambers:
    """The same-state components of one round: who is in which, and links across."""

    members: tuple[tuple[int, ...], ...]  # node positions (0..n-1), largest group first
    states: tuple[str, ...]
    of_node: tuple[int, ...]
    links: dict[tuple[int, int], int]

    @property
    def largest(self) -> int:
        return len(self.members[0]) if self.members else 0


def chambers(graph: nx.Graph, state: Sequence[str]) -> Chambers:
    """Connected groups of neighbours holding one state, largest first, and the links between groups."""
    nodes = list(graph.nodes)
    position = {v: i for i, v in enumerate(nodes)}
    same = nx.Graph()
    same.add_nodes_from(range(len(nodes)))
    same.add_edges_from((position[u], position[v]) for u, v in graph.edges if state[position[u]] == state[position[v]])
    found = sorted((sorted(c) for c in nx.connected_components(same)), key=lambda c: (-len(c), c[0]))
    of_node = [0] * len(nodes)
    for k, members in enumerate(found):
        for i in members:
            of_node[i] = k
    links: Counter = Counter()
    for u, v in graph.edges:
        a, b = of_node[position[u]], of_node[position[v]]
        if a != b:
            links[(min(a, b), max(a, b))] += 1
    return Chambers(tuple(tuple(m) for m in found), tuple(state[m[0]] for m in found), tuple(of_node), dict(links))


def has_categories(picture: Picture) -> bool:
    """Unordered categories (few of them) on a graph: the chamber map means something."""
    return bool(picture.categorical)


def _scale(values: list[float]) -> dict[str, Any]:
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    pad = 0.06 * max(high - low, 1e-9)
    return {"domain": [low - pad, high + pad], "zero": False, "nice": False}


def _xy(points: list[Sequence[float]]) -> dict[str, Any]:
    """Fixed x and y scales from the layout: nodes never jump between rounds."""
    return {"x": {"field": "x", "type": "quantitative", "scale": _scale([p[0] for p in points]), "axis": None},
            "y": {"field": "y", "type": "quantitative", "scale": _scale([p[1] for p in points]), "axis": None}}


def wrapped(lines: Sequence[str], width: int = SUBTITLE_CHARS) -> list[str]:
    """Subtitle lines broken between words at ``width`` characters: a line never runs past the picture's edge."""
    return [part for line in lines for part in (textwrap.wrap(line, width, break_on_hyphens=False) or [""])]


def legend_columns(labels: Sequence[Any], width: int = 560) -> int:
    """As many legend columns as the longest label leaves room for in ``width`` pixels (1 to 4)."""
    longest = max((len(str(t)) for t in labels), default=4)
    return max(1, min(4, width // (longest * 7 + 36)))


def _base(title: Any, width: Any, height: int, datasets: dict[str, list],
          legend_labels: Sequence[Any] = ()) -> dict[str, Any]:
    room = width if isinstance(width, int) else 560
    return {"$schema": VEGA_LITE, "width": width, "height": height, "title": title,
            "autosize": {"type": "fit-x", "contains": "padding"} if width == "container" else "pad",
            "datasets": datasets, "usermeta": EMBED,
            "config": {"view": {"stroke": None},
                       "legend": {"orient": "bottom", "labelFontSize": 11, "columns": legend_columns(legend_labels, room),
                                  "labelLimit": max(120, room - 60)},
                       "title": {"anchor": "start", "fontSize": 13}}}


@functools.lru_cache(maxsize=1024)
def _field(name: str) -> str:
    """A detail's name as a Vega field name (no quotes, dots or brackets, which Vega reads as paths)."""
    return "".join(c for c in str(name) if c not in "'\".[]\\") or "detail"


def _short(text: Any, limit: int = 160) -> str:
    if text is None or text == "":
        return "-"
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def legend_labels(fill: Fill) -> list[str]:
    """The states a legend lists: every category, but none for a state of several features (its colours say how
    near two states are; a list of every culture would say nothing)."""
    return [] if fill.kind == "features" else list(fill.colours)


def fill_encoding(fill: Fill, legend_title: str, *, legend: bool = True) -> dict[str, Any]:
    """The Vega-Lite encoding of a fill: categories in their colours and order, numbers on a continuous scale
    with a legend bar."""
    shown: Any = None
    if fill.numeric:
        if legend:
            shown = {"title": legend_title, "gradientLength": 180, "orient": "right", "format": ".4~g"}
        return {"field": "fill", "type": "quantitative", "legend": shown,
                "scale": {"domain": list(fill.domain), "scheme": CONTINUOUS_SCHEME, "clamp": True, "nice": False}}
    if legend and fill.kind != "features":  # a state of several features: its colours say how near, no list of states
        shown = {"symbolOpacity": 1, "title": legend_title}
    return {"field": "fill", "type": "nominal", "legend": shown, "sort": list(fill.colours),
            "scale": {"domain": list(fill.colours), "range": list(fill.colours.values())}}


def state_words(fill: Fill, state: Sequence[Any], agents: int, what: str = "agents") -> str:
    """A round in a few words for a picture's title: numbers' mean and range, ordered values' middle one."""
    present = [s for s in state if s is not None]
    if not present:
        return f"no {what}"
    if fill.numeric:
        values = [float(s) for s in present]
        mean = sum(values) / len(values)
        return f"mean {mean:.3g} (from {min(values):.3g} to {max(values):.3g}) over {len(values)} of {agents} {what}"
    counts = Counter(label(s) for s in present)
    order = {c: i for i, c in enumerate(fill.colours)}
    top = min(counts, key=lambda c: (-counts[c], order.get(c, len(order))))  # ties: the first in the legend
    return f"{len(counts)} states held, most often {top} ({counts[top]} of {agents} {what})"


def network_spec(picture: NetworkPicture, *, selected: int | None = None, width: Any = "container",
                 height: int = 460) -> dict[str, Any]:
    """The whole network: fill = state, ring = the picture's ring, a square when flagged, a dashed black ring
    around a marked node (it keeps its shape and number); links between agents of one state drawn as bands
    where they mean something (same-state groups, or a game's own meaning, e.g. conflicts)."""
    graph, state = picture.graph, list(picture.state)
    nodes_order = list(graph.nodes)
    names = list(picture.names) if picture.names is not None else nodes_order
    position = {v: i for i, v in enumerate(nodes_order)}
    n = len(nodes_order)
    fill = picture.fill()
    categories = picture.categorical  # same-state groups mean something: the chamber map and group tooltips
    bands = picture.same_state_links
    colour_scale = {"domain": list(fill.colours), "range": list(fill.colours.values())}
    style = NodeStyle.for_size(n)
    found = chambers(graph, [label(s) for s in state]) if categories else None
    marked = set(picture.marked)
    legend = picture.legend
    labels = {"": legend.get("plain", "-"), "flagged": legend.get("flagged", "flagged")}
    detail_fields: list[str] = []
    nodes = []
    for i, v in enumerate(nodes_order):
        x, y = picture.layout[v]
        shape = "flagged" if picture.flagged is not None and picture.flagged[i] else ""
        value = state[i]
        row = {"agent": names[i], "index": i, "x": round(float(x), 5), "y": round(float(y), 5),
               "fill": (None if value is None else float(value)) if fill.numeric else label(value),
               "role": labels[shape] + (f" · {legend.get('marked', 'marked')}" if i in marked else ""),
               "shape": shape, "marked": i in marked}
        if style.labels:  # the ink of a node's number (drawn at small N only)
            row["ink"] = fill.ink_of(value)
        if found is not None:
            row.update({"group": found.of_node[i] + 1, "group size": len(found.members[found.of_node[i]])})
        if picture.ring is not None:
            row["ring"] = picture.ring[i]
        extra = picture.details[i] if picture.details is not None else {}
        for key, detail in extra.items():
            key = _field(key)
            row[key] = _short(detail)
            if key not in detail_fields:
                detail_fields.append(key)
        nodes.append(row)
    edges = list(graph.edges)
    shown = edges if len(edges) <= MAX_LINKS else edges[:: -(-len(edges) // MAX_LINKS)]
    links = []
    for u, v in shown:
        (x0, y0), (x1, y1) = picture.layout[u], picture.layout[v]
        same = bands and label(state[position[u]]) == label(state[position[v]])
        links.append({"x": round(float(x0), 5), "y": round(float(y0), 5), "x2": round(float(x1), 5),
                      "y2": round(float(y1), 5), "same": same or not bands,
                      "fill": label(state[position[u]]) if same else "mixed"})
    xy = _xy([picture.layout[v] for v in nodes_order])
    ends = {"x2": {"field": "x2"}, "y2": {"field": "y2"}}
    fill_title = fill.title if fill.numeric else legend.get("fill", fill.title)
    tooltip = [{"field": "agent"}, {"field": "fill", "title": fill_title, **({"format": ".4~g"} if fill.numeric else {})},
               *([{"field": "ring", "title": legend.get("ring", "ring")}] if picture.ring is not None else []),
               *({"field": f} for f in dict.fromkeys(["role", *(["group", "group size"] if categories else []),
                                                      *detail_fields]))]
    flagged = sum(r["shape"] == "flagged" for r in nodes)
    sample = f"{len(shown):,} of {len(edges):,} links drawn" if len(shown) != len(edges) else ""
    keys = [f"fill: {fill_title}"] + ([f"ring: {legend.get('ring', 'ring')}"] if picture.ring else [])
    if bands:
        keys.append("bands: " + legend.get("bands", "links within a same-state group (echo chambers)"))
    if fill.numeric and any(s is None for s in state):
        keys.append("grey: no agent")
    lines = [" · ".join(keys + ([sample] if sample else []))]
    roles = [f"■ {flagged} {labels['flagged']}"] if picture.flagged is not None else []
    if marked or "marked" in legend:
        roles.append(f"dashed black ring: {len(marked)} {legend.get('marked', 'marked')}")
    if roles:
        lines.append(" · ".join(roles))
    if picture.caption is not None:
        words = picture.caption
    elif found is not None:
        words = f"{len(found.members)} {legend.get('groups', 'same-state groups')}, largest {found.largest} of {n}"
    else:
        words = state_words(fill, state, n)
    title = {"text": f"Round {picture.round_number}: {words}", "subtitle": wrapped(lines)}
    present = [s for s in ROLE_SHAPES if any(r["shape"] == s for r in nodes)]
    ring_words = f" (ring: {legend['ring']})" if picture.ring and legend.get("ring") else ""
    fill_legend = fill_encoding(fill, fill_title + ring_words)
    node_mark = {"type": "point", "filled": True, "size": style.size, "strokeWidth": style.ring if picture.ring else 0.5,
                 "opacity": 1, "cursor": "pointer"}
    shape = {"field": "shape", "type": "nominal", "legend": None,
             "scale": {"domain": present, "range": [ROLE_SHAPES[s] for s in present]}}
    node_encoding = {**xy, "fill": fill_legend,
                     "stroke": ({"field": "ring", "type": "nominal", "scale": colour_scale, "legend": None}
                                if picture.ring is not None and not fill.numeric else {"value": "white"}),
                     "shape": shape, "tooltip": tooltip}
    layers: list[dict[str, Any]] = []
    if bands:
        layers.append({"data": {"name": "edges"}, "transform": [{"filter": "datum.same"}],
                       "mark": {"type": "rule", "strokeWidth": style.band, "opacity": 0.22, "strokeCap": "round"},
                       "encoding": {**xy, **ends, "color": {**fill_encoding(fill, "", legend=False)}}})
    layers.append({"data": {"name": "edges"}, "mark": {"type": "rule", "strokeWidth": style.link, "color": "#666666"},
                   "encoding": {**xy, **ends,
                                "strokeDash": {"condition": {"test": "datum.same", "value": [1, 0]}, "value": [3, 3]},
                                "opacity": {"condition": {"test": "datum.same", "value": 0.8}, "value": 0.45}}})
    if fill.numeric and any(s is None for s in state):  # nodes without an agent: grey, beneath the scale's nodes
        layers.append({"data": {"name": "nodes"}, "transform": [{"filter": "datum.fill == null"}],
                       "mark": {**node_mark, "color": EMPTY},
                       "encoding": {k: v for k, v in node_encoding.items() if k not in ("fill", "stroke")}})
    layers += [
        {"name": "nodes", "data": {"name": "nodes"}, "mark": node_mark, "encoding": node_encoding},
        {"data": {"name": "nodes"}, "transform": [{"filter": "datum.marked"}],  # a ring around: the number stays readable
         "mark": {"type": "point", "filled": False, "stroke": "black", "strokeWidth": 1.4, "size": style.size * 2.6,
                  "strokeDash": [3, 2], "cursor": "pointer"},
         "encoding": {**xy, "shape": shape, "tooltip": tooltip}},
    ]
    if selected is not None and 0 <= selected < n:
        layers.append({"data": {"name": "nodes"}, "transform": [{"filter": f"datum.index == {int(selected)}"}],
                       "mark": {"type": "point", "shape": "circle", "filled": False, "stroke": "#ff7f0e",
                                "strokeWidth": 3, "size": max(style.size * 4, 160), "cursor": "pointer"},
                       "encoding": {**xy, "tooltip": tooltip}})
    if style.labels:  # the number on a node carries the node's tooltip: hovering its centre shows the details
        layers.append({"name": "labels", "data": {"name": "nodes"},
                       "mark": {"type": "text", "fontSize": 9 if n > 30 else 11, "fontWeight": "bold",
                                "baseline": "middle", "cursor": "pointer"},
                       "encoding": {**xy, "text": {"field": "agent"}, "tooltip": tooltip,
                                    "color": {"field": "ink", "type": "nominal", "scale": None, "legend": None}}})
    return {**_base(title, width, height, {"nodes": nodes, "edges": links}, legend_labels=legend_labels(fill)),
            "layer": layers}


def chamber_spec(picture: NetworkPicture, *, width: Any = "container", height: int = 460) -> dict[str, Any]:
    """The contracted map: one bubble per same-state group (area = members, scale 1..N), lines = links across."""
    graph, state = picture.graph, [label(s) for s in picture.state]
    nodes_order = list(graph.nodes)
    n = len(nodes_order)
    colours = picture.colours()
    found = chambers(graph, state)
    marked = set(picture.marked)
    flagged = picture.flagged or [False] * n
    names = list(picture.names) if picture.names is not None else nodes_order
    legend = picture.legend
    bubbles = []
    for k, members in enumerate(found.members):
        xs = [picture.layout[nodes_order[i]][0] for i in members]
        ys = [picture.layout[nodes_order[i]][1] for i in members]
        bubbles.append({"group": k + 1, "x": sum(xs) / len(xs), "y": sum(ys) / len(ys), "state": found.states[k],
                        "members": len(members), "marked": sum(i in marked for i in members),
                        "flagged": sum(bool(flagged[i]) for i in members),
                        "agents": _short(", ".join(str(names[i]) for i in members), 80)})
    _spread(bubbles, [picture.layout[v] for v in nodes_order], n)
    centre = {b["group"] - 1: (b["x"], b["y"]) for b in bubbles}
    lines = [{"x": centre[a][0], "y": centre[a][1], "x2": centre[b][0], "y2": centre[b][1], "crossing": count,
              "between": f"groups {a + 1} and {b + 1}"} for (a, b), count in sorted(found.links.items())]
    xy = _xy([picture.layout[v] for v in nodes_order] + [(b["x"], b["y"]) for b in bubbles])
    title = {"text": f"Round {picture.round_number}: {len(bubbles)} echo chambers, largest {found.largest} of {n}",
             "subtitle": [f"one bubble per group of neighbours in one state (area: members, one scale for {n} agents)",
                          "lines: links across groups, thicker = more"]}
    tips = [{"field": "group"}, {"field": "state", "title": legend.get("fill", "state")}, {"field": "members"},
            *([{"field": "flagged", "title": legend.get("flagged", "flagged")}] if picture.flagged is not None else []),
            *([{"field": "marked", "title": legend.get("marked", "marked")}] if picture.marked else []),
            {"field": "agents"}]
    layers = [
        {"data": {"name": "lines"}, "mark": {"type": "rule", "color": "#777777", "opacity": 0.6},
         "encoding": {**xy, "x2": {"field": "x2"}, "y2": {"field": "y2"},
                      "strokeWidth": {"field": "crossing", "type": "quantitative",
                                      "scale": {"type": "sqrt", "range": [0.6, 9]}, "legend": None},
                      "tooltip": [{"field": "between"}, {"field": "crossing", "title": "links across"}]}},
        {"name": "chambers", "data": {"name": "bubbles"},
         "mark": {"type": "point", "filled": True, "opacity": 0.85, "stroke": "white", "strokeWidth": 1.5},
         "encoding": {**xy,
                      "fill": {"field": "state", "type": "nominal",
                               "scale": {"domain": list(colours), "range": list(colours.values())},
                               "legend": {"title": legend.get("fill", "state")}},
                      "size": {"field": "members", "type": "quantitative",
                               "scale": {"domain": [1, max(n, 2)], "range": [36, 3600]},
                               "legend": {"title": "members", "values": sorted({1, max(n // 4, 1), max(n // 2, 1), n})}},
                      "tooltip": tips}},
    ]
    if len(bubbles) <= 80:  # member counts on the bubbles big enough to hold them
        layers.append({"data": {"name": "bubbles"}, "transform": [{"filter": f"datum.members >= {max(2, round(0.04 * n))}"}],
                       "mark": {"type": "text", "color": "white", "fontWeight": "bold", "baseline": "middle"},
                       "encoding": {**xy, "text": {"field": "members"},
                                    "tooltip": tips}})
    return {**_base(title, width, height, {"bubbles": bubbles, "lines": lines}), "layer": layers}


def _spread(bubbles: list[dict[str, Any]], points: list[Sequence[float]], n: int, rounds: int = 120) -> None:
    """Move bubbles apart until none overlaps, each starting at its members' centroid (big ones move less)."""
    if len(bubbles) < 2:
        return
    import numpy as np

    xs, ys = [p[0] for p in points], [p[1] for p in points]
    extent = max(max(xs) - min(xs), max(ys) - min(ys), 1e-9)
    members = np.array([b["members"] for b in bubbles], dtype=float)
    radius = 0.075 * extent * np.sqrt(members / max(n, 1)) + 0.01 * extent  # radii follow the drawn areas
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
        pos += 0.5 * ((overlap * inertia / np.maximum(distance, 1e-9))[:, :, None] * delta).sum(axis=1)
    for b, (x, y) in zip(bubbles, pos):
        b["x"], b["y"] = float(x), float(y)


__all__ = ["Chambers", "MAX_LINKS", "NodeStyle", "chamber_spec", "chambers", "has_categories", "network_spec"]
