"""The generic report's figure of one summary measure: per condition, or along a numeric sweep axis.

Conditions that differ by a number (``--set r=1,2,4``) are drawn on a quantitative x axis,
the parameter's values as numbers (so 1, 2, 4 sit where they are, not evenly spaced as
labels), one line per model (and per value of any other parameter that varies); other
conditions are rows, one point per model. Every point carries its 95 % interval, which
never leaves the measure's range (``Game.measures``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llm_mesa.analysis.figures import COLOURS, interval_points, legend_outside, new_figure, svg_text


def _points(report: Mapping[str, Any], measure: str) -> tuple[str, list[dict[str, Any]]]:
    rows = [r for r in report["summaries"]["rows"] if r["measure"] == measure]
    key = "share" if rows and rows[0]["kind"] == "share" else "mean"
    return key, [r for r in rows if r[key] is not None]


def _title(report: Mapping[str, Any], measure: str) -> str:
    words = (report.get("measures") or {}).get(measure) or {}
    label = words.get("label") or measure
    return label + (f" ({words['unit']})" if words.get("unit") else "")


def _axis_words(report: Mapping[str, Any], measure: str, share: bool) -> str:
    """An axis names the measure, then what its points are: "happy agents: mean per game (95% t interval)"."""
    return _title(report, measure) + (": share of games (95% Wilson interval)" if share
                                      else ": mean per game (95% t interval)")


def draw_measure(report: Mapping[str, Any], measure: str) -> str:
    """One measure's figure: along the sweep's numeric axis when it has one, else one row per condition."""
    axis = report.get("axis")
    if axis:
        return _along_axis(report, measure, axis)
    key, rows = _points(report, measure)
    share = key == "share"
    series: dict[str, dict[str, tuple]] = {m: {} for m in report["models"]}  # one colour per model, report-wide
    for r in rows:
        series.setdefault(r["model"], {})[r["condition"]] = (r[key], r["low"], r["high"])
    series = {m: v for m, v in series.items() if v}
    conditions = [c for c in report["conditions"] if any(c in v for v in series.values())]
    figure, ax = new_figure(6.4, max(1.6, 0.35 * len(conditions) + 1.0))
    values = [x for v in series.values() for point in v.values() for x in point if x is not None]
    colours = {m: COLOURS[i % len(COLOURS)] for i, m in enumerate(report["models"])}
    interval_points(ax, conditions, series, xlabel=_axis_words(report, measure, share),
                    limits=(-0.02, 1.02) if share else None, colours=colours)
    if not share and values:
        span = max(values) - min(values) or max(abs(max(values)), 1.0)
        ax.set_xlim(min(values) - 0.05 * span, max(values) + 0.05 * span)
    if len(series) > 1:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    ax.set_title(_title(report, measure), fontsize=10)
    return svg_text(figure)


def _along_axis(report: Mapping[str, Any], measure: str, axis: Mapping[str, Any]) -> str:
    return svg_text(axis_figure(report, measure, axis))


def axis_figure(report: Mapping[str, Any], measure: str, axis: Mapping[str, Any]):
    """x: the sweep parameter's value; y: the measure with its interval; one colour per model (as in every
    figure of the report), one line style per setting of the other parameters that vary."""
    key, rows = _points(report, measure)
    values, others = axis["values"], axis.get("others") or {}
    models = list(report["models"])
    settings = list(dict.fromkeys(others.get(c, "") for c in report["conditions"]))
    lines: dict[tuple[str, str], list[tuple[float, float, float | None, float | None]]] = {}
    for r in rows:
        if r["condition"] in values:
            lines.setdefault((r["model"], others.get(r["condition"], "")), []).append(
                (float(values[r["condition"]]), r[key], r["low"], r["high"]))
    figure, ax = new_figure(6.4, 3.2)
    xs = sorted({float(v) for v in values.values()})
    span = (xs[-1] - xs[0]) or 1.0
    order = sorted(lines, key=lambda k: (models.index(k[0]) if k[0] in models else len(models), settings.index(k[1])))
    offsets = [0.0] if len(order) < 2 else [(-0.012 + 0.024 * i / (len(order) - 1)) * span for i in range(len(order))]
    styles = ("-", "--", ":", "-.")
    for index, (model, setting) in enumerate(order):
        points = sorted(lines[(model, setting)])
        x = [p[0] + offsets[index] for p in points]
        y = [p[1] for p in points]
        below = [max(0.0, p[1] - (p[2] if p[2] is not None else p[1])) for p in points]
        above = [max(0.0, (p[3] if p[3] is not None else p[1]) - p[1]) for p in points]
        colour = COLOURS[(models.index(model) if model in models else index) % len(COLOURS)]
        ax.errorbar(x, y, yerr=[below, above], fmt="o", linestyle=styles[settings.index(setting) % len(styles)],
                    color=colour, label=model + (f" · {setting}" if setting else ""), capsize=3, markersize=4,
                    linewidth=1.2)
    ax.set_xlabel(axis["parameter"])
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{x:g}" for x in xs], fontsize=8)
    kind = ((report.get("measures") or {}).get(measure) or {}).get("kind")
    if key == "share" or kind == "share":
        ax.set_ylim(-0.03, 1.03)
    ax.set_ylabel(_axis_words(report, measure, key == "share"), fontsize=8)
    ax.grid(alpha=0.3)
    ax.set_title(_title(report, measure), fontsize=10)
    if len(order) > 1:
        legend_outside(ax)
    return figure


__all__ = ["axis_figure", "draw_measure"]
