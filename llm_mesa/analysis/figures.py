"""Static figures for reports: matplotlib drawn to SVG text, with nothing to fetch.

Figures are built on ``matplotlib.figure.Figure`` (no pyplot, no GUI backend, no
global state) and written as SVG with glyphs as paths, so a report embeds them
as they are and a browser needs no font or file from anywhere. A test that
could not run still gets a figure: :func:`skipped_figure` draws its reason.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["COLOURS", "interval_points", "new_figure", "skipped_figure", "svg_text"]

#: one colour per series (matplotlib's tab10), in order
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")


def new_figure(width: float = 6.4, height: float = 3.6, rows: int = 1, cols: int = 1, **kwargs: Any):
    """A figure and its axes (an array when several), drawn off-screen."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    axes = figure.subplots(rows, cols, **kwargs)
    return figure, axes


def svg_text(figure) -> str:
    """The figure as one SVG document (glyphs as paths, no date: the same figure gives the same text)."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "llm-mesa"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    return buffer.getvalue()


def skipped_figure(title: str, reason: str) -> str:
    """A figure that says why there is nothing to draw."""
    figure, ax = new_figure(6.4, 2.0)
    ax.axis("off")
    ax.set_title(title, fontsize=10)
    ax.text(0.5, 0.5, "\n".join(textwrap.wrap(f"skipped: {reason}", 80)), ha="center", va="center", fontsize=9,
            color="#555555", transform=ax.transAxes)
    return svg_text(figure)


def interval_points(ax, categories: Sequence[str], series: Mapping[str, Mapping[str, tuple[float, float, float]]],
                    *, xlabel: str = "", limits: tuple[float, float] | None = (0.0, 1.0)) -> None:
    """Points with interval bars: one row per category, one colour per series.

    ``series[name][category] = (value, low, high)``; a missing category is not drawn.
    """
    n = max(len(series), 1)
    offsets = np.linspace(-0.3, 0.3, n) if n > 1 else np.zeros(1)
    for index, (name, values) in enumerate(series.items()):
        ys, xs, lows, highs = [], [], [], []
        for row, category in enumerate(categories):
            if category in values and values[category][0] is not None:
                value, low, high = values[category]
                ys.append(row + offsets[index])
                xs.append(value)
                lows.append(max(0.0, value - (value if low is None else low)))
                highs.append(max(0.0, (value if high is None else high) - value))
        colour = COLOURS[index % len(COLOURS)]
        ax.errorbar(xs, ys, xerr=[lows, highs], fmt="o", color=colour, label=name, capsize=3, markersize=4)
    ax.set_yticks(range(len(categories)), list(categories))
    ax.invert_yaxis()
    if limits is not None:
        ax.set_xlim(*limits)
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    if len(series) > 1:
        ax.legend(fontsize=7, loc="best")
