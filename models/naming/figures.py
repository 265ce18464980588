"""SIGN's figures for ``llm-mesa report``, each with the table it is drawn from.

Panels: agreement per round (mean ± SD over seeds) per condition and model;
agreement against cumulative completion tokens; tokens (and rounds) to 50/60/70 %
agreement; decoding outcome shares per mode; our final agreement per mode beside
the study's; and mixed populations per model. A part that was skipped still gets
its panel, which says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from llm_mesa.analysis.figures import (
    COLOURS,
    SHARE_LIMITS,
    facets,
    interval_points,
    legend_outside,
    new_figure,
    skipped_figure,
    svg_text,
)
from llm_mesa.analysis.report_html import Panel, drawn

from .analysis_curves import OUTCOMES, PUBLISHED_AGREEMENT, PUBLISHED_TOKENS_TO_50

__all__ = ["curve_order", "report_panels"]

#: the modes in the order the study leads with them: Schema (its headline) first
MODE_ORDER = ("schema", "nl-sw", "nl")


def curve_order(conditions: list[str]) -> list[str]:
    """Every condition, Schema's first (the study's headline), then NL-SW, NL, others; else as given."""
    return sorted(conditions, key=lambda c: (_mode_rank(c), conditions.index(c)))


def _mode_rank(condition: str) -> int:
    """Where a condition's mode comes: Schema first, then NL-SW, NL, anything else."""
    head = condition.split("|")[0].lower()
    return next((i for i, mode in enumerate(MODE_ORDER) if head.startswith(mode + "-") or head == mode), len(MODE_ORDER))


def _skipped(title: str, reason: str, **extra: Any) -> Panel:
    return Panel(title, skipped_figure(title, reason), None, skipped=reason, **extra)


def _colour(models: list[str], model: str) -> str:
    return COLOURS[models.index(model) % len(COLOURS)] if model in models else "#777777"


def _summary_table(report: Mapping[str, Any], columns: list[str]) -> pd.DataFrame:
    rows = []
    for r in report["summary"]:
        row = {"condition": r["condition"], "model": r["model"], "seeds": r["n_seeds"]}
        for column in columns:
            row[f"{column}_mean"], row[f"{column}_sd"] = r.get(f"{column}_mean"), r.get(f"{column}_sd")
            if f"{column}_reached" in r:
                row[f"{column}_reached"] = r[f"{column}_reached"]
        rows.append(row)
    return pd.DataFrame(rows)


def _curves_panel(report: Mapping[str, Any]) -> Panel:
    title = "Agreement per round (mean ± SD over seeds)"
    curves = report["curves"]
    table = _summary_table(report, ["agreement_final"])
    if isinstance(curves, Mapping):
        return _skipped(title, curves["skipped"])
    frame = pd.DataFrame(curves)
    conditions = curve_order([c for c in report["conditions"] if c in set(frame["condition"])])
    figure, axes = facets(len(conditions), cols=4, width=2.8, height=2.2, sharex=True, sharey=True)
    for ax, condition in zip(axes, conditions):
        for model in report["models"]:
            sub = frame[(frame["condition"] == condition) & (frame["model"] == model)]
            if sub.empty:
                continue
            colour = _colour(report["models"], model)
            mean = pd.to_numeric(sub["agreement_mean"], errors="coerce")
            sd = pd.to_numeric(sub["agreement_sd"], errors="coerce")  # None at one seed: no spread to draw
            ax.plot(sub["round"], mean, color=colour, label=model, linewidth=1.2)
            if sd.notna().any():
                ax.fill_between(sub["round"], mean - sd.fillna(0.0), mean + sd.fillna(0.0), color=colour,
                                alpha=0.2, linewidth=0)
        ax.set_title(condition, fontsize=8)
        ax.set_ylim(*SHARE_LIMITS)
        ax.tick_params(labelsize=7)
    handles: dict[str, Any] = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    legend_outside(figure, handles=list(handles.values()), labels=list(handles))
    figure.supxlabel("round", fontsize=8)
    figure.supylabel("agreement", fontsize=8)
    caption = "Agreement: the most common valid name said in a round / N (each agent's latest name under one " \
              "pairing). Every condition is drawn, Schema (the study's headline) first. The table: final " \
              "agreement, mean and SD over seeds."
    if frame["agreement_sd"].isna().all():
        caption += " One seed a cell: each line is one game, with no spread to shade (SD needs two seeds)."
    return Panel(title, svg_text(figure), table, caption=caption)


def _tokens_panel(report: Mapping[str, Any]) -> Panel:
    title = "Agreement against cumulative completion tokens"
    curves = report["curves"]
    columns = [f"tokens_to_{t}" for t in report["thresholds"]] + [f"total_tokens_to_{t}" for t in report["thresholds"]]
    table = _summary_table(report, [c for c in columns if report["summary"] and f"{c}_mean" in report["summary"][0]])
    published = pd.DataFrame([{"mode": m, "tokens_to_50": v} for m, v in PUBLISHED_TOKENS_TO_50.items()])
    if isinstance(curves, Mapping):
        return _skipped(title, curves["skipped"], published=published)
    frame = pd.DataFrame(curves)
    spent = frame[frame["completion_tokens_mean"] > 0]
    if spent.empty:
        reason = "no game spent a token (rule speakers): agreement against tokens needs LLM speakers"
        return Panel(title, skipped_figure(title, reason), table, skipped=reason, published=published)
    figure, ax = new_figure()
    styles = ["-", "--", ":", "-."]
    for index, condition in enumerate(report["conditions"]):
        for model in report["models"]:
            sub = spent[(spent["condition"] == condition) & (spent["model"] == model)]
            if not sub.empty:
                ax.plot(sub["completion_tokens_mean"], sub["agreement_mean"], color=_colour(report["models"], model),
                        linestyle=styles[index % len(styles)], linewidth=1.1, label=f"{condition} / {model}")
    for threshold in report["thresholds"]:
        ax.axhline(threshold / 100, color="#bbbbbb", linewidth=0.7)
    # the study's tokens to 50 % agreement: about 1e4 for Schema, 1e5 to 1e6 for NL
    ax.scatter([1e4], [0.5], marker="x", color="black", s=36, zorder=3, label="published: Schema, ~10^4 to 50 %")
    ax.plot([1e5, 1e6], [0.5, 0.5], color="black", linewidth=3, alpha=0.5, label="published: NL, 10^5-10^6 to 50 %")
    ax.set_xscale("log")
    ax.set_ylim(*SHARE_LIMITS)
    ax.set_xlabel("cumulative completion tokens (mean over seeds)")
    ax.set_ylabel("agreement")
    legend_outside(ax, fontsize=6)
    return Panel(title, svg_text(figure), table, published=published,
                 caption="The table: tokens (completion, and prompt + completion) until agreement first reached "
                         "each threshold, mean and SD over the seeds that reached it.")


def _outcomes_panel(report: Mapping[str, Any]) -> Panel:
    title = "Decoding outcomes per mode (share of utterances)"
    outcomes = report["outcomes"]
    if isinstance(outcomes, Mapping):
        return _skipped(title, outcomes["skipped"])
    table = pd.DataFrame(outcomes)
    shares = table.pivot_table(index=["mode", "model"], columns="outcome", values="share", sort=False)
    shares = shares.reindex(columns=[o for o in OUTCOMES if o in shares.columns])
    figure, ax = new_figure(6.4, 1.0 + 0.4 * len(shares))
    left = pd.Series(0.0, index=shares.index)
    for index, outcome in enumerate(shares.columns):
        ax.barh(range(len(shares)), shares[outcome], left=left, color=COLOURS[index], label=outcome)
        left += shares[outcome].fillna(0)
    ax.set_yticks(range(len(shares)), [f"{m} / {model}" for m, model in shares.index], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, SHARE_LIMITS[1])
    ax.set_xlabel("share of utterances")
    legend_outside(ax)
    return Panel(title, svg_text(figure), table,
                 caption="schema: a valid @say line; retry: valid after the reminder; salvage: free-text decoding "
                         "after a failed retry; text: free-text modes; none: no lexicon name decoded.")


def _published_panel(report: Mapping[str, Any]) -> Panel:
    title = "Final agreement per mode beside the study's"
    rows = report["published"]
    published = pd.DataFrame([{"mode": m, "agreement_low": lo, "agreement_high": hi}
                              for m, (lo, hi) in PUBLISHED_AGREEMENT.items()])
    if not rows:
        return _skipped(title, "no game played a study mode (schema, nl-sw, nl)", published=published)
    table = pd.DataFrame(rows)
    modes = [m for m in PUBLISHED_AGREEMENT if m in set(table["mode"])]
    series = {model: {r["mode"]: (r["agreement_mean"], r["agreement_min"], r["agreement_max"])
                      for r in rows if r["model"] == model} for model in report["models"]}
    figure, ax = new_figure(6.4, 1.2 + 0.6 * len(modes))
    for index, mode in enumerate(modes):
        low, high = PUBLISHED_AGREEMENT[mode]
        ax.fill_betweenx([index - 0.4, index + 0.4], low, high, color="#cccccc", zorder=0,
                         label="published range" if index == 0 else None)
    interval_points(ax, modes, {m: s for m, s in series.items() if s}, xlabel="final agreement")
    legend_outside(ax)
    return Panel(title, svg_text(figure), table, published=published,
                 caption="Grey: the study's range over N, alpha and its models; points: our mean, bars: the range "
                         "of our conditions' means. Only Schema reached 70 % in the study.")


def _mixed_panel(report: Mapping[str, Any]) -> Panel:
    title = "Mixed populations: per-model breakdown"
    mixed = report["mixed_populations"]
    if isinstance(mixed, Mapping):
        return _skipped(title, mixed["skipped"])
    table = pd.DataFrame(mixed)
    keys = [c for c in ("condition", "speaker") if c in table.columns]  # one bar per speaker of a condition
    numeric = [c for c in table.columns if c not in keys and pd.api.types.is_numeric_dtype(table[c])]
    measure = "holding_top_name" if "holding_top_name" in numeric else (numeric[0] if numeric else None)
    if measure is None:
        reason = "the per-speaker table holds no number to draw"
        return Panel(title, skipped_figure(title, reason), table, skipped=reason)
    figure, ax = new_figure(6.4, 1.0 + 0.28 * len(table))
    labels = table[keys].astype(str).agg(" / ".join, axis=1) if keys else table.index.astype(str)
    ax.barh(range(len(table)), pd.to_numeric(table[measure], errors="coerce").fillna(0.0))
    ax.set_yticks(range(len(table)), labels, fontsize=8)
    ax.set_ylim(len(table) - 0.5, -0.5)
    ax.set_xlabel(measure.replace("_", " ") + (" (share of the speaker's agents)" if measure == "holding_top_name" else ""))
    if measure == "holding_top_name":
        ax.set_xlim(*SHARE_LIMITS)
    return Panel(title, svg_text(figure), table,
                 caption="Per condition and speaker (the models of a mixed population apart): the share of its agents "
                         "holding the most common name at the end; the table has every per-speaker mean.")


def report_panels(sweep: Any, report: Mapping[str, Any]) -> list[Panel]:
    return [drawn("Agreement per round", _curves_panel, report),
            drawn("Agreement against cumulative completion tokens", _tokens_panel, report),
            drawn("Decoding outcomes per mode", _outcomes_panel, report),
            drawn("Final agreement per mode beside the study's", _published_panel, report),
            drawn("Mixed populations", _mixed_panel, report)]
