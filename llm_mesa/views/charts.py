"""Charts of a game's per-round table as Vega-Lite dicts (plain data), and a sweep's generic table.

A game's view returns its charts as Vega-Lite specifications: dicts a browser draws,
which a game can build without any drawing library. ``line_spec`` is the one line
chart every page uses: it fits its cell, spans every round played (the latest
included), keeps shares on a fixed 0-1 axis and can mark the round a replay shows.
``round_charts`` is the default for any game, drawn as its columns are (``column_scales``:
what the game declares in ``Game.measures``, else what the values look like): its shares
together on one 0-1 axis, then each count and each continuous measure on an axis of its own
(a count is never drawn on the shares' axis), the game's headline measure first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from llm_mesa import declared
from llm_mesa.game_types import Scale, infer_scale, share

if TYPE_CHECKING:
    from llm_mesa.games import Game

VEGA_LITE = "https://vega.github.io/schema/vega-lite/v5.json"  # a schema name only: never fetched
#: SVG everywhere: every mark is an element a browser test can hover or count
EMBED = {"embedOptions": {"renderer": "svg", "actions": False}}
SERIES_COLOURS = ["#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
#: columns of a sweep's games table that identify a game, and ones that are not measures worth a summary
KEY = ("condition", "policy", "seed")
NOT_MEASURES = {"seed", "wall_s", "cost", "round"}
#: at most this many default charts (the rest of a wide table stays in the table)
MAX_CHARTS = 6


def numeric_rounds(rounds: pd.DataFrame) -> pd.DataFrame:
    """The per-round table's numeric and yes/no columns as floats (``round`` as int), others dropped."""
    if rounds.empty or "round" not in rounds.columns:
        return pd.DataFrame({"round": pd.Series(dtype=int)})
    keep = ["round"] + [c for c in rounds.columns if c != "round" and c not in KEY
                        and (pd.api.types.is_bool_dtype(rounds[c]) or pd.api.types.is_numeric_dtype(rounds[c]))]
    booleans = [c for c in keep[1:] if pd.api.types.is_bool_dtype(rounds[c])]
    frame = rounds[keep].astype({c: float for c in keep[1:]}).astype({"round": int}).sort_values("round")
    frame.attrs = {**rounds.attrs, "booleans": [*rounds.attrs.get("booleans", []), *booleans]}
    return frame


def column_scales(rounds: pd.DataFrame, game: Game | None = None) -> dict[str, Scale]:
    """What each numeric column of a per-round table is: as the game declares it, else read from its name and
    values (a yes/no column, kept as 0/1 by ``numeric_rounds``, is a share)."""
    booleans = set(rounds.attrs.get("booleans", ()))
    out = {}
    for column in rounds.columns:
        if column == "round" or not pd.api.types.is_numeric_dtype(rounds[column]):
            continue
        given = game.measures.get(column) if game is not None else None
        if given is not None:
            out[column] = given
        elif column in booleans:
            out[column] = share(label=_label(column))
        else:
            values = rounds[column].dropna()
            out[column] = declared.scale_of(game, column, values) if game is not None else infer_scale(column, values)
    return out


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


def round_axis(last_round: int) -> dict[str, Any]:
    """The x axis of a per-round chart: rounds 0..last, whole numbers only."""
    last = max(int(last_round), 1)
    axis: dict[str, Any] = {"format": "d", "tickMinStep": 1, "tickCount": min(last, 10)}
    if last <= 10:  # few rounds: a tick for each (no half rounds read as whole ones)
        axis = {"format": "d", "values": list(range(last + 1)), "labelOverlap": False}
    return {"field": "round", "type": "quantitative", "title": "round",
            "scale": {"domain": [0, last], "nice": False}, "axis": axis}


def line_spec(rows: Sequence[Mapping[str, Any]], title: str, y_title: str, *, last_round: int,
              y_domain: Sequence[float] | None = None, current_round: int | None = None,
              series: Sequence[str] | None = None, dash: str | None = None, height: int = 150,
              subtitle: str | list[str] | None = None, counts: bool = False) -> dict[str, Any]:
    """A line chart over rounds, as a Vega-Lite spec any page (or Altair) draws.

    Args:
        rows: One row a point: ``round``, ``series``, ``value`` (and the ``dash`` field, if any).
        title: The chart's title.
        y_title: The y axis's title.
        last_round: The x axis runs from round 0 to it.
        y_domain: The y axis's range (None: from the values).
        current_round: Draws an orange rule there (a replay's position).
        series: The series in legend order (None: as they come).
        dash: A field whose values are drawn as dash styles (two populations overlaid).
        height: The chart's height in pixels.
        subtitle: A line (or lines) under the title.
        counts: Whole-number ticks on the y axis.

    Returns:
        The Vega-Lite spec.
    """
    order = list(series) if series is not None else list(dict.fromkeys(r["series"] for r in rows))
    x = round_axis(last_round)
    y: dict[str, Any] = {"field": "value", "type": "quantitative", "title": y_title}
    if counts:
        y["axis"] = {"tickMinStep": 1, "format": "d"}
        top = max((r["value"] for r in rows if r.get("value") is not None), default=0)
        if y_domain is None and top <= 8:  # few values: name each whole number (no 0.5 ticks read as 1)
            y["axis"] = {"format": "d", "values": list(range(int(top) + 1)) if top >= 1 else [0, 1],
                         "labelOverlap": False}
            if top < 1:  # nothing counted yet: an axis 0..1, not two ticks on one spot
                y_domain = (0, 1)
    if y_domain is not None:
        y["scale"] = {"domain": list(y_domain), "nice": False}
    encoding: dict[str, Any] = {
        "x": x, "y": y,
        "color": {"field": "series", "type": "nominal", "title": None, "sort": order,
                  "scale": {"domain": order, "range": (SERIES_COLOURS * 4)[: len(order)] or SERIES_COLOURS},
                  "legend": {"orient": "bottom", "labelLimit": 320, "columns": 2} if len(order) > 1 else None},
        "tooltip": [{"field": "series"}, {"field": "round"}, {"field": "value", "format": ".3~f"}],
    }
    if dash:
        groups = list(dict.fromkeys(r[dash] for r in rows))
        styles = [[1, 0], [6, 4], [2, 2], [8, 3, 2, 3]]
        encoding["strokeDash"] = {"field": dash, "type": "nominal", "legend": None,
                                  "scale": {"domain": groups, "range": styles[: len(groups)]}}
        names = ("solid", "dashed", "dotted", "dash-dot")
        key = " · ".join(f"{names[i]}: {g}" for i, g in enumerate(groups[:4]))
        subtitle = [subtitle, key] if isinstance(subtitle, str) else [*(subtitle or []), key]
        encoding["detail"] = {"field": dash}
        encoding["tooltip"] = [{"field": dash}, *encoding["tooltip"]]
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


def dashed_rows(rounds: pd.DataFrame, columns: Mapping[str, str], dash: str | None) -> list[dict[str, Any]]:
    """``long_frame`` of ``rounds``, split by the ``dash`` column when there is one."""
    if dash is None:
        return long_frame(rounds, columns)
    out = []
    for key, part in rounds.groupby(dash, sort=False):
        out += [{**r, dash: key} for r in long_frame(part, columns)]
    return out


def _label(column: str) -> str:
    return column.replace("_", " ")


def series_title(column: str, scale: Scale) -> str:
    """What a chart calls a column: its declared label (else its name), with its unit."""
    return (scale.label or _label(column)) + (f" ({scale.unit})" if scale.unit else "")


def chart_height(charts: int) -> int:
    """A chart's height when ``charts`` share the column beside the picture (about 460 px): one alone is tall."""
    return max(110, min(230, 420 // max(charts, 1) - 40))


def unchanged_spec(values: Mapping[str, float], heading: str) -> dict[str, Any]:
    """The measures that never changed, in one line each ("agents: 314"), where a flat line would say nothing."""
    rows = [{"line": f"{name}: {value:.4g}", "i": i} for i, (name, value) in enumerate(values.items())]
    return {"$schema": VEGA_LITE, "width": "container", "height": 15 * len(rows), "title": heading,
            "autosize": {"type": "fit-x", "contains": "padding"}, "data": {"values": rows}, "usermeta": EMBED,
            "mark": {"type": "text", "align": "left", "baseline": "top", "fontSize": 12},
            "encoding": {"y": {"field": "i", "type": "ordinal", "axis": None}, "x": {"value": 0},
                         "text": {"field": "line"}},
            "config": {"title": {"anchor": "start", "fontSize": 13}, "view": {"stroke": None}}}


def round_charts(rounds: pd.DataFrame, *, current_round: int | None = None, last_round: int | None = None,
                 dash: str | None = None, scales: Mapping[str, Scale] | None = None,
                 first: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """Any game's per-round charts: its shares together on a 0-1 axis, then each count and continuous column
    on its own axis (its declared range, whole-number ticks for a count); ``first``'s chart leads.

    A column that has not changed over the rounds played (a population, a parameter's share) draws no flat
    line: its value is listed under "Unchanged so far" (at round 0, "At the start"), and it gets its chart
    once it changes. The headline is always charted. The fewer the charts, the taller each."""
    columns = [c for c in rounds.columns if c not in ("round", dash)
               and pd.api.types.is_numeric_dtype(rounds[c]) and rounds[c].notna().any()]
    if not columns:
        return []
    scales = dict(scales) if scales is not None else column_scales(rounds)
    for column in columns:
        scales.setdefault(column, infer_scale(column, rounds[column].dropna()))
    lead = first if first in columns else None
    steady = [c for c in columns if c != lead and rounds[c].dropna().nunique() <= 1]
    columns = [c for c in columns if c not in steady] or steady[:1]
    steady = [c for c in steady if c not in columns]
    last = int(rounds["round"].max()) if last_round is None else int(last_round)
    shares = [c for c in columns if scales[c].kind == "share"]
    drawn = (1 if shares else 0) + len([c for c in columns if c not in shares])
    height = chart_height(min(drawn, MAX_CHARTS) + (1 if steady else 0))
    common = {"last_round": last, "current_round": current_round, "dash": dash}
    charts = []
    if shares:
        names = {c: series_title(c, scales[c]) for c in shares}
        heading = "Shares per round" if len(names) > 1 else f"{next(iter(names.values()))} per round"
        charts.append((lead in shares, "llm-mesa-chart-shares",
                       line_spec(dashed_rows(rounds, names, dash), heading, "share", y_domain=(0, 1),
                                 series=list(names.values()), height=height, **common)))
    for column in [c for c in columns if c not in shares]:
        scale = scales[column]
        title = series_title(column, scale)
        whole = scale.kind == "count" or (scale.kind != "continuous" and bool((rounds[column].dropna() % 1 == 0).all()))
        low, high = scale.bounds()
        domain = (low, high) if low is not None and high is not None else None
        charts.append((column == lead, f"llm-mesa-chart-{column.replace('_', '-')}",
                       line_spec(dashed_rows(rounds, {column: title}, dash), f"{title} per round", title,
                                 series=[title], counts=whole, height=height, y_domain=domain, **common)))
    charts.sort(key=lambda chart: not chart[0])  # the headline first, the rest in the table's order
    out = [(cls, spec) for _, cls, spec in charts][:MAX_CHARTS]
    if steady:
        values = {series_title(c, scales[c]): float(rounds[c].dropna().iloc[0]) for c in steady}
        out.append(("llm-mesa-chart-unchanged",
                    unchanged_spec(values, "At the start" if len(rounds) <= 1 else "Unchanged so far")))
    return out


# --- a sweep's games ---------------------------------------------------------------------------


def sweep_measures(games: pd.DataFrame) -> list[str]:
    """Numeric and yes/no columns of a sweep's games table worth a distribution."""
    out = []
    for column in games.columns:
        if column in NOT_MEASURES or column in KEY:
            continue
        kind = games[column].dtype
        if (pd.api.types.is_bool_dtype(kind) or pd.api.types.is_numeric_dtype(kind)) and games[column].notna().any():
            out.append(column)
    return out


def sweep_table(games: pd.DataFrame, measures: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per condition x policy: games, then each measure in one column headed by its name, "mean ± SD"
    (a yes/no: its share; one game: its mean alone), so that six measures fit the page's width (a mean and an
    SD apart took twice as many columns and ran past its edge)."""
    if games.empty:
        return pd.DataFrame()
    measures = list(measures) if measures is not None else sweep_measures(games)[:6]
    grouped = games.groupby(["condition", "policy"], sort=False)
    table = pd.DataFrame({"games": grouped.size()})
    for column in measures:
        values = grouped[column].apply(lambda s: s.astype(float))
        mean, sd = values.groupby(level=[0, 1], sort=False).mean(), values.groupby(level=[0, 1], sort=False).std(ddof=1)
        spread = not pd.api.types.is_bool_dtype(games[column])
        table[column] = [
            _mean_sd(m, d if spread else None) for m, d in zip(mean.reindex(table.index), sd.reindex(table.index))]
    return table.reset_index()


def _mean_sd(mean: float, sd: float | None) -> str | None:
    """"4.33 ± 1.2", or the mean alone where there is no spread to give; None where there is no mean."""
    if mean is None or pd.isna(mean):
        return None
    return f"{mean:.4g}" + (f" ± {sd:.2g}" if sd is not None and not pd.isna(sd) else "")


def repetitions(games: pd.DataFrame) -> str:
    """Games per condition x policy cell, in words ("30 games a cell", or "2 to 3 games a cell")."""
    if games.empty:
        return "no games"
    sizes = games.groupby(["condition", "policy"], sort=False).size()
    low, high = int(sizes.min()), int(sizes.max())
    return f"{low} game{'s' if low != 1 else ''} a cell" if low == high else f"{low} to {high} games a cell"


__all__ = ["EMBED", "KEY", "SERIES_COLOURS", "VEGA_LITE", "chart_height", "column_scales", "dashed_rows", "line_spec",
           "long_frame", "unchanged_spec",
           "numeric_rounds",
           "repetitions", "round_axis", "round_charts", "sweep_measures", "sweep_table"]
