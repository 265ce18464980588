"""What ``analyze`` and ``report`` give any game: per-policy summaries of its summary row.

A game that brings no statistics of its own still gets, for every condition and
model (the LLM model, or the rule configuration), every numeric column of its
summary row summarised: mean, SD, median, range and a 95 % t interval of the mean;
and every boolean (true/false) column as a share with its 95 % Wilson interval.
``report`` draws each column as points with those intervals, one row per
condition, one colour per model, beside its table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from llm_mesa.analysis.proportions import wilson_interval

#: columns of a sweep's games table that are its keys or the engine's, not the game's measures
NOT_MEASURES = ("condition", "policy", "seed", "sweep", "model", "wall_s")
#: most columns summarised (a summary row of hundreds of counters is cut, and says so)
MAX_COLUMNS = 40


def measure_columns(games: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(numeric columns, boolean columns) of a games table, in its order; keys and timings left out."""
    numeric, boolean = [], []
    for column in games.columns:
        if column in NOT_MEASURES or column.endswith("_s"):
            continue
        values = games[column].dropna()
        if values.empty:
            continue
        if pd.api.types.is_bool_dtype(values) or set(values.unique()) <= {True, False} and values.dtype == object:
            boolean.append(column)
        elif pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            numeric.append(column)
    return numeric, boolean


def _mean_row(values: pd.Series) -> dict[str, Any]:
    x = pd.to_numeric(values, errors="coerce").dropna().to_numpy(dtype=float)
    n = len(x)
    if n == 0:
        return {"n": 0, "mean": None, "sd": None, "median": None, "min": None, "max": None, "low": None, "high": None}
    mean = float(x.mean())
    sd = float(x.std(ddof=1)) if n > 1 else None
    half = None
    if sd is not None:
        from scipy.stats import t

        half = float(t.ppf(0.975, n - 1) * sd / math.sqrt(n))
    return {"n": n, "mean": mean, "sd": sd, "median": float(np.median(x)), "min": float(x.min()),
            "max": float(x.max()), "low": None if half is None else mean - half,
            "high": None if half is None else mean + half}


def _share_row(values: pd.Series) -> dict[str, Any]:
    x = values.dropna().astype(bool)
    n, k = len(x), int(x.sum())
    low, high = wilson_interval(k, n) if n else (None, None)
    return {"n": n, "true": k, "share": k / n if n else None, "low": low, "high": high}


def summaries(games: pd.DataFrame, by: Sequence[str] = ("condition", "model")) -> dict[str, Any]:
    """Per group of ``by`` and measure: the rows of the generic report."""
    numeric, boolean = measure_columns(games)
    shown = (numeric + boolean)[:MAX_COLUMNS]
    rows: list[dict[str, Any]] = []
    for keys, group in games.groupby(list(by), sort=False, dropna=False):
        cell = dict(zip(by, (str(k) for k in (keys if isinstance(keys, tuple) else (keys,)))))
        for column in shown:
            if column in boolean:
                rows.append({**cell, "measure": column, "kind": "share", **_share_row(group[column])})
            else:
                rows.append({**cell, "measure": column, "kind": "mean", **_mean_row(group[column])})
    return {"numeric": [c for c in numeric if c in shown], "boolean": [c for c in boolean if c in shown],
            "left_out": len(numeric) + len(boolean) - len(shown), "rows": rows}


def analyze(sweep: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """The generic report over a ``SweepData``: games per cell and every measure's summary."""
    games = sweep.games
    return {"games": len(games), "conditions": sweep.ordered("condition"), "models": sweep.ordered("model"),
            "summaries": summaries(games)}


def _cell(row: Mapping[str, Any]) -> str:
    if row["kind"] == "share":
        if row["share"] is None:
            return "-"
        return f"{row['share']:.3f} [{row['low']:.3f}, {row['high']:.3f}] (n={row['n']})"
    if row["mean"] is None:
        return "-"
    sd = "" if row["sd"] is None else f" ± {row['sd']:.3g}"
    return f"{row['mean']:.4g}{sd} (n={row['n']})"


def summary_frame(report: Mapping[str, Any], measure: str) -> pd.DataFrame:
    """One measure's table: condition (rows) x model (columns), each cell as text."""
    rows = [r for r in report["summaries"]["rows"] if r["measure"] == measure]
    if not rows:
        return pd.DataFrame()
    frame = pd.DataFrame([{"condition": r["condition"], "model": r["model"], "value": _cell(r)} for r in rows])
    table = frame.pivot(index="condition", columns="model", values="value").rename_axis(columns=None)
    return table.reindex(index=[c for c in report["conditions"] if c in table.index],
                         columns=[m for m in report["models"] if m in table.columns])


def format_report(report: Mapping[str, Any]) -> str:
    """The generic report as text: one table per measure (shares with Wilson 95 % intervals)."""
    s = report["summaries"]
    lines = [f"{report['games']} games; conditions: {', '.join(report['conditions'])}; "
             f"models: {', '.join(report['models'])}",
             "numeric measures: mean ± SD (n); booleans: share [95% Wilson interval] (n)"]
    for measure in [*s["numeric"], *s["boolean"]]:
        lines += ["", f"{measure}:", summary_frame(report, measure).to_string()]
    if s["left_out"]:
        lines.append(f"\n({s['left_out']} more columns not summarised; read them with llm_mesa.sweep.read_sweep)")
    return "\n".join(lines)


def headline_table(games: pd.DataFrame) -> str:
    """The end of a sweep for a game without a headline of its own: games and the first measures' means."""
    if games.empty:
        return "(no games)"
    numeric, boolean = measure_columns(games)
    chosen = (boolean + numeric)[:4]
    grouped = games.groupby(["condition", "policy"], sort=False)
    table = pd.DataFrame({"games": grouped.size()})
    for column in chosen:
        table[column] = grouped[column].mean(numeric_only=False).astype(float).round(3)
    return "games and means per condition and policy:\n" + table.to_string()


def _draw(report: Mapping[str, Any], measure: str) -> str:
    from llm_mesa.analysis.figures import interval_points, new_figure, svg_text

    rows = [r for r in report["summaries"]["rows"] if r["measure"] == measure]
    share = rows[0]["kind"] == "share"
    key = "share" if share else "mean"
    series: dict[str, dict[str, tuple]] = {}
    for r in rows:
        if r[key] is not None:
            series.setdefault(r["model"], {})[r["condition"]] = (r[key], r["low"], r["high"])
    conditions = [c for c in report["conditions"] if any(c in v for v in series.values())]
    figure, ax = new_figure(6.4, max(1.6, 0.35 * len(conditions) + 1.0))
    values = [x for v in series.values() for point in v.values() for x in point if x is not None]
    limits = (-0.02, 1.02) if share else None
    interval_points(ax, conditions, series, xlabel=("share (95% Wilson interval)" if share
                                                     else "mean (95% t interval)"), limits=limits)
    if not share and values:
        span = max(values) - min(values) or 1.0
        ax.set_xlim(min(values) - 0.05 * span, max(values) + 0.05 * span)
    if len(series) > 1:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    ax.set_title(measure, fontsize=10)
    return svg_text(figure)


def report_panels(sweep: Any, report: Mapping[str, Any]) -> list[Any]:
    """One panel per measure: its points with intervals beside its table."""
    from llm_mesa.analysis.report_html import Panel, drawn

    s = report["summaries"]
    panels = []
    for measure in [*s["numeric"], *s["boolean"]]:
        kind = "share of games, 95% Wilson interval" if measure in s["boolean"] else "mean per game, 95% t interval"

        def panel(measure: str = measure, kind: str = kind) -> Panel:
            return Panel(measure, _draw(report, measure), summary_frame(report, measure).reset_index(),
                         caption=f"{measure}: {kind}, per condition and model")

        panels.append(drawn(measure, panel))
    if not panels:
        from llm_mesa.analysis.figures import skipped_figure

        reason = "the games' summary rows hold no numeric or true/false column"
        panels.append(Panel("Summary", skipped_figure("Summary", reason), None, skipped=reason))
    return panels


__all__ = ["analyze", "format_report", "headline_table", "measure_columns", "report_panels", "summaries",
           "summary_frame"]
