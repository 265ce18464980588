"""Per-round charts as Vega-Lite dicts, and the one component that draws any spec.

Every chart fits the width of its cell (``width: container``), has a title and
axis titles, and shares of a population sit on a fixed 0–1 axis, so a line
that rises means the game moved, not the axis.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from .network_chart import EMBED, VEGA_LITE
from .vega_widget import VegaChart

#: The consensus game's per-round charts, most important first: column -> series label.
SHARES = {"blue_share": "share of blue", "local_agreement": "local agreement"}
COMPONENT = {"largest_component": "largest same-colour component"}
MOVES = {"stubborn_moves": "stubborn moves", "flips": "colour changes"}
LLM_TOKENS = {"prompt_tokens": "prompt tokens", "completion_tokens": "completion tokens"}
LLM_FAILURES = {"failures": "failed decisions", "calls": "calls"}
#: Kept for callers of the old names: every per-round measure plotted, and the LLM ones.
ROUND_PLOTS = {**SHARES, **COMPONENT, "stubborn_moves": "stubborn moves"}
LLM_PLOTS = {**LLM_TOKENS, "failures": "failed decisions"}
SERIES_COLOURS = ["#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"]


def long_frame(rounds: pd.DataFrame, columns: Mapping[str, str]) -> list[dict[str, Any]]:
    """Rows (round, series, value) of the columns ``rounds`` has, every round included."""
    present = [c for c in columns if c in rounds.columns]
    rows = []
    for record in rounds[["round", *present]].to_dict("records"):
        for c in present:
            value = record[c]
            rows.append({"round": int(record["round"]), "series": columns[c],
                         "value": None if pd.isna(value) else float(value)})
    return rows


def line_spec(rows: Sequence[Mapping[str, Any]], title: str, y_title: str, *, last_round: int,
              y_domain: Sequence[float] | None = None, current_round: int | None = None,
              series: Sequence[str] | None = None, dash: str | None = None, height: int = 150,
              subtitle: str | list[str] | None = None) -> dict[str, Any]:
    """A line chart of ``rows`` (round, series, value[, dash field]) over rounds 0..``last_round``.

    The x axis always spans every round played, the latest included; ``current_round``
    draws an orange rule (the replay's position).
    """
    order = list(series) if series is not None else list(dict.fromkeys(r["series"] for r in rows))
    x = {"field": "round", "type": "quantitative", "title": "round",
         "scale": {"domain": [0, max(int(last_round), 1)], "nice": False},
         "axis": {"format": "d", "tickMinStep": 1, "tickCount": min(max(int(last_round), 1), 10)}}
    if int(last_round) <= 10:  # few rounds: a tick for each (no half rounds read as whole ones)
        x["axis"] = {"format": "d", "values": list(range(max(int(last_round), 1) + 1)), "labelOverlap": False}
    y: dict[str, Any] = {"field": "value", "type": "quantitative", "title": y_title}
    if y_title in ("agents", "tokens", "per round"):  # counts: whole-number ticks
        y["axis"] = {"tickMinStep": 1, "format": "d"}
        top = max((r["value"] for r in rows if r.get("value") is not None), default=0)
        if y_domain is None and top <= 8:  # few values: name each whole number (no 0.5 ticks read as 1)
            y["axis"] = {"format": "d", "values": list(range(int(top) + 1)) if top >= 1 else [0, 1],
                         "labelOverlap": False}  # no tickCount: Vega thins explicit values down to it
    if y_domain is not None:
        y["scale"] = {"domain": list(y_domain), "nice": False}
    encoding: dict[str, Any] = {
        "x": x, "y": y,
        "color": {"field": "series", "type": "nominal", "title": None, "sort": order,
                  "scale": {"domain": order, "range": SERIES_COLOURS[: len(order)] or SERIES_COLOURS},
                  "legend": {"orient": "bottom", "labelLimit": 260} if len(order) > 1 else None},
        "tooltip": [{"field": "series"}, {"field": "round"}, {"field": "value", "format": ".3~f"}],
    }
    if dash:
        groups = list(dict.fromkeys(r[dash] for r in rows))
        styles = [[1, 0], [6, 4], [2, 2], [8, 3, 2, 3]]
        encoding["strokeDash"] = {"field": dash, "type": "nominal", "legend": None,
                                  "scale": {"domain": groups, "range": styles[: len(groups)]}}
        names = ("solid", "dashed", "dotted", "dash-dot")
        key = " · ".join(f"{names[i]}: {g}" for i, g in enumerate(groups[:4]))
        subtitle = [subtitle, key] if subtitle else key
        encoding["detail"] = {"field": dash}
    layers: list[dict[str, Any]] = [{"mark": {"type": "line", "point": len(rows) <= 400, "interpolate": "linear"},
                                     "encoding": encoding}]
    if current_round is not None:
        layers.append({"data": {"values": [{"round": int(current_round)}]},
                       "mark": {"type": "rule", "color": "#ff7f0e", "strokeWidth": 2, "strokeDash": [5, 3]},
                       "encoding": {"x": x}})
    heading: dict[str, Any] = {"text": title}
    if subtitle:
        heading["subtitle"] = subtitle
    return {"$schema": VEGA_LITE, "width": "container", "height": height, "title": heading,
            "autosize": {"type": "fit-x", "contains": "padding"}, "data": {"values": list(rows)},
            "layer": layers, "usermeta": EMBED,
            "config": {"title": {"anchor": "start", "fontSize": 13}, "view": {"stroke": None}}}


def consensus_charts(rounds: pd.DataFrame, n: int, *, current_round: int | None = None,
                     last_round: int | None = None, dash: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """The consensus game's per-round charts, most important first, as (class, spec).

    ``dash`` names a column of ``rounds`` whose values are drawn as dash styles
    (the side-by-side page overlays two populations this way).
    """
    last = int(rounds["round"].max()) if last_round is None else int(last_round)

    def rows(columns):
        if dash is None:
            return long_frame(rounds, columns)
        out = []
        for key, part in rounds.groupby(dash, sort=False):
            out += [{**r, dash: key} for r in long_frame(part, columns)]
        return out

    common = {"last_round": last, "current_round": current_round, "dash": dash}
    return [
        ("llm-mesa-chart-shares", line_spec(rows(SHARES), "Share of blue and local agreement", "share of agents",
                                            y_domain=(0, 1), series=list(SHARES.values()), **common)),
        ("llm-mesa-chart-component", line_spec(rows(COMPONENT), "Largest same-colour component", "agents",
                                               y_domain=(0, n), series=list(COMPONENT.values()), **common)),
        ("llm-mesa-chart-moves", line_spec(rows({"stubborn_moves": "stubborn moves"}), "Stubborn moves per round",
                                           "agents", series=["stubborn moves"], height=110,
                                           subtitle="kept its colour against its neighbours' majority",
                                           **common)),
    ]


def llm_charts(rounds: pd.DataFrame, *, current_round: int | None = None) -> list[tuple[str, dict[str, Any]]]:
    last = int(rounds["round"].max())
    return [
        ("llm-mesa-chart-failures", line_spec(long_frame(rounds, LLM_FAILURES), "LLM calls and failed decisions",
                                              "per round", last_round=last, current_round=current_round,
                                              height=110)),
        ("llm-mesa-chart-tokens", line_spec(long_frame(rounds, LLM_TOKENS), "Tokens per round", "tokens",
                                            last_round=last, current_round=current_round, height=110)),
    ]


def round_chart(rounds: pd.DataFrame, columns: Mapping[str, str], title: str,
                current_round: int | None = None) -> dict[str, Any]:
    """One chart of ``columns`` of a per-round table (kept for older callers)."""
    return line_spec(long_frame(rounds, columns), title, "value", last_round=int(rounds["round"].max()),
                     current_round=current_round)


__all__ = ["LLM_PLOTS", "ROUND_PLOTS", "VegaChart", "consensus_charts", "line_spec", "llm_charts", "long_frame",
           "round_chart"]
