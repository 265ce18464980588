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

__all__ = ["COLOURS", "SHARE_LIMITS", "facets", "interval_points", "legend_outside", "new_figure", "no_data",
           "skipped_figure", "svg_text"]

#: axis limits of a share: a point at 0 or 1 is drawn whole, never cut by the frame
SHARE_LIMITS = (-0.04, 1.04)

#: one colour per series (matplotlib's tab10), in order
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf")


def new_figure(width: float = 6.4, height: float = 3.6, rows: int = 1, cols: int = 1, **kwargs: Any):
    """A figure and its axes (an array when several), drawn off-screen."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    axes = figure.subplots(rows, cols, **kwargs)
    return figure, axes


def facets(count: int, cols: int = 3, width: float = 3.3, height: float = 2.6, **kwargs: Any):
    """A figure of ``count`` small multiples (``cols`` a row), and its axes as a flat list of ``count``.

    The grid's spare cells are switched off, so no empty axes are drawn; with a shared x axis, the lowest
    drawn panel of each column keeps its tick labels (a panel above a switched-off cell is a column's last).
    """
    cols = max(1, min(cols, count))
    rows = -(-count // cols)
    figure, grid = new_figure(width * cols, height * rows + 0.6, rows, cols, squeeze=False, **kwargs)
    axes = [ax for row in grid for ax in row]
    for ax in axes[count:]:
        ax.axis("off")
    for column in range(cols):
        lowest = max(i for i in range(column, count, cols))
        axes[lowest].xaxis.set_tick_params(which="both", labelbottom=True)
    return figure, axes[:count]


def legend_outside(target, **kwargs: Any) -> None:
    """A legend beside the axes (or above a figure's facets), where it hides no data."""
    options = {"fontsize": 7, "frameon": False}
    if hasattr(target, "legend") and hasattr(target, "transAxes"):  # an axes
        handles, labels = target.get_legend_handles_labels()
        if handles:
            target.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **{**options, **kwargs})
        return
    handles, labels = kwargs.pop("handles"), kwargs.pop("labels")
    if handles:
        target.legend(handles, labels, loc="outside upper center", ncol=min(len(labels), 4), **{**options, **kwargs})


def no_data(ax, reason: str) -> None:
    """An axes with nothing to draw says why, in one line, instead of standing empty."""
    ax.set_xticks([])
    ax.set_yticks([])
    ax.text(0.5, 0.5, "\n".join(textwrap.wrap(reason, 48)), ha="center", va="center", fontsize=7,
            color="#555555", transform=ax.transAxes)


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
                    *, xlabel: str = "", limits: tuple[float, float] | None = SHARE_LIMITS,
                    colours: Mapping[str, str] | None = None) -> None:
    """Points with interval bars: one row per category, one colour per series (legend beside the axes).

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
        colour = (colours or {}).get(name, COLOURS[index % len(COLOURS)])
        ax.errorbar(xs, ys, xerr=[lows, highs], fmt="o", color=colour, label=name, capsize=3, markersize=4)
    ax.set_yticks(range(len(categories)), list(categories))
    ax.set_ylim(len(categories) - 0.5, -0.5)
    if limits is not None:
        ax.set_xlim(*limits)
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    if len(series) > 1:
        legend_outside(ax)
