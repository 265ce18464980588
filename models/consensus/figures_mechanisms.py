"""The consensus report's mechanism figures: majority following, the largest component, none vs local.

Each model gets a small multiple of its own (one colour per model throughout the report), so
every condition and every model is drawn however many there are; legends sit outside the data.
A fit that did not converge is drawn dashed with hollow points and says so in its title.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from llm_mesa.analysis.figures import SHARE_LIMITS, facets, legend_outside, no_data, svg_text
from llm_mesa.analysis.proportions import wilson_interval
from llm_mesa.analysis.report_html import Panel

__all__ = ["components_panel", "majority_panel", "none_vs_local_panel"]

#: the study's one published none-vs-local pair (Mistral on BA, SPEC A "Largest component")
PUBLISHED_NONE_LOCAL = {"ba": (28.7, 23.4)}
#: tick labels of the box and dot plots: readable at the size the report shows a figure
TICKS = 8


def colour_of(models: list[str], model: str) -> str:
    from llm_mesa.analysis.figures import COLOURS

    return COLOURS[models.index(model) % len(COLOURS)] if model in models else "#777777"


def _skipped(title: str, reason: str, **extra: Any) -> Panel:
    from llm_mesa.analysis.figures import skipped_figure

    return Panel(title, skipped_figure(title, reason), None, skipped=reason, **extra)


def majority_panel(report: Mapping[str, Any]) -> Panel:
    title = "Majority following: P(blue next | blue neighbour share), per model"
    major = report["majority_following"]
    published = pd.DataFrame({"published": [major.get("published", "")]})
    if "skipped" in major:
        return _skipped(title, major["skipped"], published=published)
    fits = dict(major["per_model"])
    figure, axes = facets(len(fits), cols=4, width=2.9, height=2.5, sharex=True, sharey=True)
    rows = []
    for ax, (model, part) in zip(axes, fits.items()):
        ax.set_title(model, fontsize=8)
        if "skipped" in part:
            no_data(ax, f"skipped: {part['skipped']}")
            rows.append({"model": model, "skipped": part["skipped"]})
            continue
        colour, converged = colour_of(report["models"], model), part["converged"]
        curve = pd.DataFrame(part["curve"])
        x = curve["blue_share_neighbours"]
        if {"p_low", "p_high"} <= set(curve.columns):
            ax.fill_between(x, curve["p_low"], curve["p_high"], color=colour, alpha=0.25, linewidth=0,
                            label="fit, 95 % band (fixed effects)")
        ax.plot(x, curve["p_blue"], color=colour, linestyle="-" if converged else "--", linewidth=1.4,
                label="mixed-effects fit" if converged else "fit (not converged)")
        empirical = pd.DataFrame(part["empirical"])
        low, high = zip(*(wilson_interval(round(p * n), n) for p, n in zip(empirical["p_blue"], empirical["n"])))
        ax.errorbar(empirical["share_mean"], empirical["p_blue"],
                    yerr=[empirical["p_blue"] - np.array(low), np.array(high) - empirical["p_blue"]], fmt="o",
                    markersize=3.5, color=colour, mfc=colour if converged else "white", capsize=2, linewidth=0.8,
                    label="observed (95 % Wilson)")
        if not converged:
            ax.set_title(f"{model}\n(NOT CONVERGED: see the table)", fontsize=8, color="#a00000")
        ax.set_xlim(*SHARE_LIMITS)
        ax.set_ylim(*SHARE_LIMITS)
        ax.tick_params(labelsize=7)
        rows.append({"model": model, "slope": part["slope"], "slope_sd": part["slope_sd"],
                     "intercept": part["intercept"], "transitions": part["nobs"], "games": part["games"],
                     "converged": converged, "tried": "; ".join(part.get("tried", [])),
                     "warnings": "; ".join(f"{k} ({v}x)" for k, v in part.get("fit", {}).get("warnings", {}).items()),
                     "fit_seed": part["fit_seed"]})
    figure.supxlabel("share of blue neighbours at t", fontsize=8)
    figure.supylabel("P(blue at t + 1)", fontsize=8)
    drawn_fits = [ax for ax in axes if ax.get_legend_handles_labels()[0]]
    if drawn_fits:
        handles, labels = drawn_fits[0].get_legend_handles_labels()
        legend_outside(figure, handles=handles, labels=labels)
    unconverged = major.get("not_converged") or []
    caption = ("Lines: the mixed-effects fit (random intercepts per game and per agent in game) at random effects 0, "
               "its band from the fixed effects' posterior SDs (variational: a lower bound); points: observed shares "
               "in bins with 95 % Wilson intervals.")
    if unconverged:
        caption += (f" Not converged (dashed, hollow points): {', '.join(unconverged)}; the table says what was "
                    "tried.")
    return Panel(title, svg_text(figure), pd.DataFrame(rows), published=published, caption=caption)


def components_panel(report: Mapping[str, Any], games: pd.DataFrame) -> Panel:
    title = "Largest same-colour component against the random-colouring baseline"
    comp = report["largest_component"]
    if "skipped" in comp:
        return _skipped(title, comp["skipped"])
    conditions, models = report["conditions"], [m for m in report["models"] if m in comp["per_model"]]
    figure, axes = facets(len(models), cols=4, width=2.9 if len(models) > 1 else 6.4,
                          height=0.75 + 0.34 * len(conditions), sharex=True, sharey=True)
    rows = []
    baseline = games.groupby("condition")["largest_component_baseline_mean"].mean()
    for ax, model in zip(axes, models):
        part = comp["per_model"][model]
        tests = {r["condition"]: r for r in part.get("mann_whitney_vs_baseline", [])}
        for row in part.get("conditions", []):
            rows.append({"model": model, **row, **{k: tests.get(row["condition"], {}).get(k)
                                                   for k in ("p", "p_bonferroni", "p_holm")},
                         "kruskal_p": part.get("kruskal_p")})
        data, positions = [], []
        for position, condition in enumerate(conditions):
            values = games.loc[(games["model"] == model) & (games["condition"] == condition), "largest_component"]
            if len(values):
                data.append(values.to_numpy(float))
                positions.append(position)
        if data:
            box = ax.boxplot(data, positions=positions, widths=0.6, orientation="horizontal", patch_artist=True,
                             manage_ticks=False, flierprops={"markersize": 2})
            for patch in box["boxes"]:
                patch.set_facecolor(colour_of(report["models"], model))
                patch.set_alpha(0.5)
        ax.scatter([baseline.get(c, np.nan) for c in conditions], range(len(conditions)), marker="|", s=120,
                   color="black", zorder=3, label="random-colouring baseline (mean)")
        ax.set_yticks(range(len(conditions)), conditions, fontsize=TICKS)
        ax.set_ylim(len(conditions) - 0.5, -0.5)
        ax.set_title(model, fontsize=9)
        ax.tick_params(axis="x", labelsize=TICKS)
    figure.supxlabel("largest same-colour component at the end (agents)", fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels() if axes else ([], [])
    legend_outside(figure, handles=handles, labels=labels)
    return Panel(title, svg_text(figure), pd.DataFrame(rows), published=pd.DataFrame({"published": [comp["published"]]}),
                 caption="Boxes: the games' largest same-colour component per condition; black bars: the mean of "
                         "random recolourings with the same colour counts. Mann-Whitney U against each game's "
                         "baseline, Bonferroni and Holm across a model's conditions; Kruskal-Wallis across conditions.")


def untested(row: Mapping[str, Any]) -> str:
    """Why a cell has no p-value: one game on a side, or every game of both sides alike (no ranks to compare)."""
    if min(row.get("games_none") or 0, row.get("games_local") or 0) < 2:
        return "no test (one game on a side)"
    return f"no test (all {row['games_none'] + row['games_local']} games alike)"


def none_vs_local_panel(report: Mapping[str, Any]) -> Panel:
    title = "Largest component: no communication against local, within each design cell"
    comp = report["largest_component"]
    published = pd.DataFrame([{"cell": cell, "model": "Mistral Large 2407", "mean_none": n, "mean_local": loc}
                              for cell, (n, loc) in PUBLISHED_NONE_LOCAL.items()])
    if "skipped" in comp:
        return _skipped(title, comp["skipped"], published=published)
    tested = {m: part["none_vs_local"] for m, part in comp["per_model"].items() if part.get("none_vs_local")}
    if not tested:
        return _skipped(title, "no design cell was played both with no communication and with local messages",
                        published=published)
    figure, axes = facets(len(tested), cols=4, width=2.9, height=0.8 + 0.32 * max(len(r) for r in tested.values()),
                          sharex=True)
    rows = []
    for ax, (model, cells) in zip(axes, tested.items()):
        names = [r["cell"] for r in cells]
        for y, row in enumerate(cells):
            ax.plot([row["mean_none"], row["mean_local"]], [y, y], color="#bbbbbb", linewidth=1, zorder=1)
            rows.append({"model": model, **{k: v for k, v in row.items() if k != "topology"}})
        colour = colour_of(report["models"], model)
        ax.scatter([r["mean_none"] for r in cells], range(len(cells)), marker="o", facecolors="white",
                   edgecolors=colour, label="no communication (mean)", zorder=2)
        ax.scatter([r["mean_local"] for r in cells], range(len(cells)), marker="o", color=colour,
                   label="local messages (mean)", zorder=2)
        for y, row in enumerate(cells):
            shown = f"p={row['p_holm']:.2g}" if row.get("p_holm") is not None else untested(row)
            ax.annotate(shown, (max(row["mean_none"], row["mean_local"]), y), xytext=(4, -3),
                        textcoords="offset points", fontsize=6, color="#555555")
            if row["topology"] in PUBLISHED_NONE_LOCAL:
                n, loc = PUBLISHED_NONE_LOCAL[row["topology"]]
                ax.scatter([n, loc], [y + 0.25, y + 0.25], marker="x", color="black", s=14, zorder=3,
                           label="published (Mistral, BA): none, local")
        ax.set_yticks(range(len(cells)), names, fontsize=TICKS)
        ax.set_ylim(len(cells) - 0.5, -0.6)
        ax.set_title(model, fontsize=9)
        ax.tick_params(axis="x", labelsize=TICKS)
    figure.supxlabel("mean largest same-colour component (agents)", fontsize=8)
    handles: dict[str, Any] = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    legend_outside(figure, handles=list(handles.values()), labels=list(handles))
    return Panel(title, svg_text(figure), pd.DataFrame(rows), published=published,
                 caption="Each cell compares games that differ in communication alone (the minority design and the "
                         "'human' label are never pooled into a 50/50 cell); p: Mann-Whitney, Holm across a model's "
                         "cells. Published: Mistral on BA, 28.7 (none) against 23.4 (local).")
