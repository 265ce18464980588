"""A game's grid picture (``llm_mesa.views.GridPicture``) as a Vega-Lite specification.

One mark per cell of the grid, square or hexagonal, placed where the grid's
neighbourhoods put it, filled by the state of its agents (the same fills as the
network: categories in their colours, ordered values light to dark, numbers on a
continuous scale with a legend bar) and pale grey when empty. A cell holding several
agents is filled by their mean (or most common) state and carries their number.
Hovering a cell shows its coordinate and agents; clicking it selects its (first) agent.
The chart has a fixed size, a whole number of pixels per cell, so that cells tile.
"""

from __future__ import annotations

from typing import Any

from llm_mesa.views import GridPicture
from llm_mesa.views.charts import EMBED
from llm_mesa.views.colours import EMPTY
from llm_mesa.views.pictures import label
from llm_mesa.views.spaces import HEX_ROW

from .network_chart import _base, _field, _short, fill_encoding, legend_labels, state_words, wrapped

#: a pointy-top hexagon in Vega's unit square (-1..1): its width is 0.866 of the square's side
HEXAGON = "M0,-1L0.866,-0.5L0.866,0.5L0,1L-0.866,0.5L-0.866,-0.5Z"
#: half the height of a pointy-top hexagon one cell wide (1 / sqrt(3))
HEX_HALF_HEIGHT = 0.5773502691896258
#: the largest and smallest cell drawn, in pixels
MAX_CELL, MIN_CELL = 36, 3
#: a grid of more cells than this is drawn on a canvas (Mesa's 50 x 50 prisoner's dilemma: 2,500 cells)
CANVAS_ABOVE = 1200


def cell_pixels(picture: GridPicture, width: int, height: int) -> int:
    """Pixels per cell so that the whole grid fits ``width`` x ``height`` (hexagonal rows are 0.866 apart)."""
    columns = picture.dimensions[0] + (0.5 if picture.shape == "hex" else 0)
    rows = picture.dimensions[1] * (HEX_ROW if picture.shape == "hex" else 1)
    return int(max(MIN_CELL, min(MAX_CELL, width / max(columns, 1), height / max(rows, 1))))


def grid_spec(picture: GridPicture, *, selected: int | None = None, width: int = 620,
              height: int = 460) -> dict[str, Any]:
    """Every cell of the grid filled by its agents' state; empty cells grey; the selected agent's cell ringed."""
    fill = picture.fill()
    size = cell_pixels(picture, width, height)
    xs = [p[0] for p in picture.positions] or [0.0]
    ys = [p[1] for p in picture.positions] or [0.0]
    half = HEX_HALF_HEIGHT if picture.shape == "hex" else 0.5  # a cell's half height, in cell widths
    x_domain = [min(xs) - 0.5, max(xs) + 0.5]
    y_domain = [min(ys) - half, max(ys) + half]
    plot_width = round((x_domain[1] - x_domain[0]) * size)
    plot_height = round((y_domain[1] - y_domain[0]) * size)
    labelled = size >= 14 and any(len(m) > 1 for m in picture.agents)  # head counts drawn on the cells
    cells, detail_fields, chosen = [], [], None
    for i, (coordinate, (x, y), value, members) in enumerate(zip(picture.coordinates, picture.positions, picture.state,
                                                                 picture.agents)):
        row: dict[str, Any] = {"cell": i, "x": round(x, 4), "y": round(y, 4), "agents": len(members),
                               "agent": picture.name(members[0]) if members else None,
                               "index": members[0] if members else None,
                               "fill": (None if value is None else float(value)) if fill.numeric
                               else (None if value is None else label(value))}
        if labelled:  # only where counts are drawn: a 50 x 50 grid's spec stays small
            row.update({"ink": fill.ink_of(value), "count": f"×{len(members)}" if len(members) > 1 else ""})
        if selected is not None and selected in members:
            chosen = i
        extra = picture.details[i] if picture.details is not None else {"cell": f"({coordinate[0]}, {coordinate[1]})"}
        for key, detail in extra.items():
            name = "coordinate" if key == "cell" else _field(key)
            if name in row:  # the cell's own fields (its agent's number, its fill) are never overwritten
                continue
            row[name] = _short(detail)
            if name not in detail_fields:
                detail_fields.append(name)
        cells.append(row)
    xy = {"x": {"field": "x", "type": "quantitative", "axis": None,
                "scale": {"domain": x_domain, "nice": False, "zero": False}},
          "y": {"field": "y", "type": "quantitative", "axis": None,
                "scale": {"domain": y_domain, "nice": False, "zero": False}}}
    shape = HEXAGON if picture.shape == "hex" else "square"
    area = (size / 0.866) ** 2 if picture.shape == "hex" else size * size
    tooltip = [*({"field": f} for f in dict.fromkeys(["coordinate", *(["agent"] if picture.occupied else []),
                                                       *detail_fields])),
               {"field": "fill", "title": fill.title, **({"format": ".4~g"} if fill.numeric else {})},
               {"field": "agents", "title": "agents here"}]
    mark = {"type": "point", "shape": shape, "filled": True, "size": area * 1.02, "opacity": 1, "cursor": "pointer",
            "stroke": "white", "strokeWidth": 0.6 if size >= 8 else 0}
    layers: list[dict[str, Any]] = [
        {"data": {"name": "cells"}, "transform": [{"filter": "datum.fill == null"}],
         "mark": {**mark, "color": EMPTY}, "encoding": {**xy, "tooltip": tooltip}},
        {"name": "cells", "data": {"name": "cells"}, "transform": [{"filter": "datum.fill != null"}],
         "mark": mark, "encoding": {**xy, "fill": fill_encoding(fill, fill.title), "tooltip": tooltip}},
    ]
    if labelled:  # several agents in a cell: their number on it
        layers.append({"data": {"name": "cells"}, "transform": [{"filter": "datum.count != ''"}],
                       "mark": {"type": "text", "fontSize": max(8, min(12, size // 2)), "baseline": "middle",
                                "cursor": "pointer"},
                       "encoding": {**xy, "text": {"field": "count"}, "tooltip": tooltip,
                                    "color": {"field": "ink", "type": "nominal", "scale": None, "legend": None}}})
    if chosen is not None:
        layers.append({"data": {"name": "cells"}, "transform": [{"filter": f"datum.cell == {chosen}"}],
                       "mark": {"type": "point", "shape": shape, "filled": False, "stroke": "#ff7f0e",
                                "strokeWidth": 3, "size": area * 1.6, "cursor": "pointer"},
                       "encoding": {**xy, "tooltip": tooltip}})
    kind = {"hex": "hexagonal grid", "square": "grid"}[picture.shape]
    torus = ", wrapping round (torus)" if picture.torus else ""
    several = any(len(m) > 1 for m in picture.agents)
    mean = "their mean state" if fill.numeric else "their most common state"
    lines = [f"{picture.dimensions[0]} x {picture.dimensions[1]} {kind}{torus} · {picture.occupied} of "
             f"{len(picture.coordinates)} cells occupied (grey: empty) · fill: {fill.title}"]
    if several:  # "x3" reads as a head count, never as a value of the fill's scale
        lines.append(f"a cell of several agents shows {mean}; ×n: n agents there")
    agents = sum(len(m) for m in picture.agents)
    heading = f"Round {picture.round_number}: {state_words(fill, picture.agent_states, agents)}"
    title = {"text": wrapped([heading], max(36, plot_width // 7)), "subtitle": wrapped(lines, max(40, plot_width // 6))}
    spec = _base(title, plot_width, plot_height, {"cells": cells}, legend_labels=legend_labels(fill))
    if len(cells) > CANVAS_ABOVE:  # thousands of cells: drawn on a canvas, several times quicker than as SVG paths
        spec["usermeta"] = {"embedOptions": {**EMBED["embedOptions"], "renderer": "canvas"}}
    return {**spec, "layer": layers}


__all__ = ["CANVAS_ABOVE", "HEXAGON", "cell_pixels", "grid_spec"]
