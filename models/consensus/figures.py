"""The consensus study's figures for ``llm-mesa report``, each with the table it is drawn from.

Panels: consensus rate per condition x model (Wilson intervals) with the
published successes where the condition matches; per-model successes beside the
study's; the paper's Firth models (focal coefficients with profile intervals,
pooled and per model, the published coefficients beside them); majority-following
curves per model; the largest same-colour component against its random baseline,
and no communication against local within each design cell (``figures_mechanisms``);
stubbornness against consensus; message effects; rounds to consensus; the
pseudo-equilibrium share. Many models are drawn as small multiples, one per model,
so every condition and model is drawn; legends sit outside the data, shares on axes
that never cut a point at 0 or 1. A part that was skipped still gets its panel,
which says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from llm_mesa.analysis.figures import (
    SHARE_LIMITS,
    facets,
    interval_points,
    legend_outside,
    new_figure,
    no_data,
    skipped_figure,
    svg_text,
)
from llm_mesa.analysis.report_html import Panel, drawn

from .analysis_schemes import schemes_panel, tag_schemes
from .figures_mechanisms import colour_of, components_panel, majority_panel, none_vs_local_panel
from .published import TOTALS, published_conditions, published_models

#: more models than this are drawn as small multiples, one per model
FACET_ABOVE = 3

__all__ = ["report_panels"]


def _colour(models: list[str], model: str) -> str:
    return colour_of(models, model)


def _skipped(title: str, reason: str, **extra: Any) -> Panel:
    return Panel(title, skipped_figure(title, reason), None, skipped=reason, **extra)


def _rates_panel(report: Mapping[str, Any], games: pd.DataFrame) -> Panel:
    title = "Consensus rate per condition and model (95 % Wilson intervals)"
    rows = pd.DataFrame(report["consensus"])
    conditions, models = report["conditions"], report["models"]
    series = {m: {r["condition"]: (r["rate"], r["ci_low"], r["ci_high"]) for r in report["consensus"] if r["model"] == m}
              for m in models}
    published = published_conditions(games, conditions)
    colours = {m: _colour(models, m) for m in models}
    groups = [[m] for m in models] if len(models) > FACET_ABOVE else [list(models)]
    figure, axes = facets(len(groups), cols=4, width=2.9 if len(groups) > 1 else 6.4,
                          height=0.7 + 0.3 * len(conditions), sharex=True, sharey=True)
    for ax, group in zip(axes, groups):
        interval_points(ax, conditions, {m: series[m] for m in group}, colours=colours)
        if len(groups) > 1:
            ax.set_title(group[0], fontsize=8)
            ax.tick_params(labelsize=6)
        for column, marker, label in (("published_open_rate", "x", "published, open models"),
                                      ("published_closed_rate", "D", "published, closed model")):
            shown = published.dropna(subset=[column]) if not published.empty else published
            if len(shown):
                ax.scatter(shown[column], [conditions.index(c) for c in shown["condition"]], marker=marker,
                           color="black", s=22, label=label, zorder=3, facecolors="none" if marker == "D" else None)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    handles: dict[str, Any] = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    if len(groups) > 1:
        handles = {k: v for k, v in handles.items() if k.startswith("published")}
    legend_outside(figure, handles=list(handles.values()), labels=list(handles))
    figure.supxlabel("share of games reaching consensus", fontsize=8)
    table = rows[["condition", "model", "successes", "games", "rate", "ci_low", "ci_high"]]
    return Panel(title, svg_text(figure), table, published=published if not published.empty else None,
                 caption=f"Published: {TOTALS}. Crosses: the open models' rate where our condition matches the "
                         "study's; diamonds: the closed model's.")


def _models_panel(report: Mapping[str, Any], games: pd.DataFrame) -> Panel:
    title = "Successes per model beside the study's open models"
    table = published_models(games, report["models"])
    ours = pd.DataFrame(report["consensus"]).groupby("model")[["successes", "games"]].sum()
    ours = ours.reindex(report["models"]).assign(rate=lambda f: f["successes"] / f["games"]).reset_index()
    figure, ax = new_figure(6.4, 1.0 + 0.3 * (len(table) + len(ours)))
    labels = [f"published: {n}" for n in table["published_model"]] + [f"ours: {m}" for m in ours["model"]]
    values = list(table["published_rate"]) + list(ours["rate"])
    ax.barh(range(len(labels)), values, color=["#999999"] * len(table) + [_colour(report["models"], m)
                                                                          for m in ours["model"]])
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, SHARE_LIMITS[1])
    ax.set_xlabel("share of games reaching consensus (published: of 360 per model)")
    return Panel(title, svg_text(figure), ours, published=table, caption="Our models are matched to the "
                 "study's by name; an unmatched published model shows no number of ours.")


def _paper_panel(part: Mapping[str, Any]) -> Panel:
    title = f"Firth model: {part['title']}"
    published = pd.DataFrame({"published": [part["published"]]})
    if "skipped" in part:
        return _skipped(title, part["skipped"], published=published)
    fits = {"pooled": part["pooled"], **part["per_model"]}
    rows = []
    for name, fit in fits.items():
        if "skipped" in fit:
            rows.append({"fit": name, "term": "", "skipped": fit["skipped"]})
            continue
        for term, row in fit["terms"].items():
            if term.startswith(f"{part['factor']}[") and ":" not in term:
                rows.append({"fit": name, "term": term, "coef": row["coef"], "ci_low": row["ci_low"],
                             "ci_high": row["ci_high"], "p": row["p"], "p_bonferroni": row.get("p_bonferroni"),
                             "p_holm": row.get("p_holm"), "odds_ratio": row["odds_ratio"], "LL": fit["loglik"],
                             "LR_chi2": fit["lr_chi2"], "df": fit["lr_df"], "McFadden_R2": fit["pseudo_r2_mcfadden"],
                             "n": fit["nobs"]})
    table = pd.DataFrame(rows)
    drawn = table.dropna(subset=["coef"]) if "coef" in table else table.iloc[:0]
    if drawn.empty:
        reason = "; ".join(sorted({str(r) for r in table.get("skipped", pd.Series(dtype=str)).dropna()})) or "no fit"
        return Panel(title, skipped_figure(title, reason), table, skipped=reason, published=published)
    figure, ax = new_figure(6.4, 1.0 + 0.3 * len(drawn))
    labels = [f"{r['fit']}: {r['term']}" for _, r in drawn.iterrows()]
    coef = drawn["coef"].to_numpy(float)
    low = np.nan_to_num(coef - drawn["ci_low"].to_numpy(float))
    high = np.nan_to_num(drawn["ci_high"].to_numpy(float) - coef)
    ax.errorbar(coef, range(len(drawn)), xerr=[low, high], fmt="o", color="#1f77b4", capsize=3, markersize=4,
                label="ours (profile 95 % CI)")
    given = part.get("published_coef") or {}
    marks = [(given[t], y) for y, (f, t) in enumerate(zip(drawn["fit"], drawn["term"])) if t in given and f == "pooled"]
    if marks:
        ax.scatter(*zip(*marks), marker="x", color="black", s=30, zorder=3, label="published coefficient (pooled)")
    ax.axvline(0, color="#999999", linewidth=0.8)
    ax.set_yticks(range(len(drawn)), labels, fontsize=7)
    ax.set_ylim(len(drawn) - 0.5, -0.5)
    ax.set_xlabel(f"log-odds against {part['factor']} = {part['reference']}")
    legend_outside(ax)
    return Panel(title, svg_text(figure), table, published=published,
                 caption="Pooled: a fixed effect per model, as the paper. p: penalised likelihood-ratio tests; "
                         "Bonferroni (as the paper) and Holm over the focal terms.")


def _stubbornness_panel(report: Mapping[str, Any], games: pd.DataFrame) -> Panel:
    title = "Stubbornness against consensus (point-biserial)"
    stub = report["stubbornness_vs_consensus"]
    rows = [{"model": "all models", **{k: stub.get(k) for k in ("r", "p", "n", "skipped")}}]
    rows += [{"model": m, **{k: v for k, v in row.items()}} for m, row in stub["per_model"].items()]
    figure, ax = new_figure()
    models = report["models"]
    rng = np.random.default_rng(0)  # jitter only
    for index, model in enumerate(models):
        sub = games[games["model"] == model]
        ratio = pd.to_numeric(sub["stubborn_moves"], errors="coerce") / \
            pd.to_numeric(sub["opportunities"], errors="coerce").where(lambda v: v > 0)
        y = sub["consensus"].astype(float) + rng.uniform(-0.12, 0.12, len(sub)) + (index - len(models) / 2) * 0.03
        ax.scatter(ratio, y, s=12, color=_colour(models, model), alpha=0.7, label=model)
    ax.set_yticks([0, 1], ["no consensus", "consensus"])
    ax.set_xlim(*SHARE_LIMITS)
    ax.set_xlabel("stubbornness (stubborn moves / opportunities)")
    ours = "skipped" if "skipped" in stub else f"r = {stub['r']:.2f}"
    ax.set_title(f"point-biserial, all models: ours {ours}; published r = -0.44", fontsize=8)
    legend_outside(ax, markerscale=1.5)
    return Panel(title, svg_text(figure), pd.DataFrame(rows), skipped=stub.get("skipped"),
                 published=pd.DataFrame({"published": ["point-biserial r = -0.44 (p < 0.001)"]}))


def _messages_panel(report: Mapping[str, Any], games: pd.DataFrame) -> Panel:
    title = "Message effects: messages per game by outcome, private messages against consensus"
    messages = report["messages"]
    private = report["private_messages"]
    dm = report["paper_models"]["models"]["direct_messages"]
    published = pd.DataFrame({"published": [private.get("published", ""), dm.get("published", "")]})
    if isinstance(messages, Mapping):
        return _skipped(title, messages["skipped"], published=published)
    table = pd.DataFrame(messages)
    talked = table[table["messages_mean"] > 0]
    if talked.empty:
        return Panel(title, skipped_figure(title, "no game sent a message (silent rule policies, or no "
                                                  "communication)"), table, published=published,
                     skipped="no game sent a message")
    allowed = games[games["direct_messages"].astype(str) == "True"] if "direct_messages" in games else games.iloc[:0]
    figure, axes = new_figure(9.0, 1.2 + 0.28 * len(talked), 1, 2, width_ratios=[3, 2])
    labels = [f"{c} / {m}" for c, m in zip(talked["condition"], talked["model"])]
    y = np.arange(len(talked))
    for column, offset, hatch, label in (("messages_mean_consensus", -0.2, None, "games reaching consensus"),
                                         ("messages_mean_no_consensus", 0.2, "//", "games without consensus")):
        values = talked[column].astype(float).fillna(0.0)
        axes[0].barh(y + offset, values, height=0.38, label=label, hatch=hatch,
                     color=[_colour(report["models"], m) for m in talked["model"]], edgecolor="#444444", linewidth=0.4)
    axes[0].set_yticks(y, labels, fontsize=6)
    axes[0].set_ylim(len(talked) - 0.5, -0.5)
    axes[0].set_xlabel("messages per game (mean)")
    legend_outside(axes[0], loc="lower right", bbox_to_anchor=(1.0, 1.01), ncol=2)
    if len(allowed):
        for model in report["models"]:
            mine = allowed[allowed["model"] == model]
            if len(mine):
                axes[1].scatter(mine["private_messages"].astype(float), mine["consensus"].astype(float),
                                color=_colour(report["models"], model), s=12, alpha=0.7)
        axes[1].set_xlabel("private messages in the game")
        axes[1].set_yticks([0, 1], ["no consensus", "consensus"])
    else:
        no_data(axes[1], "no game allowed private messages: the private-message test needs the DM condition")
    reason = private.get("skipped")
    fits = pd.DataFrame([{"model": m, "coef": f.get("terms", {}).get("private_messages", {}).get("coef"),
                          "p": f.get("terms", {}).get("private_messages", {}).get("p"),
                          "p_bonferroni": f.get("terms", {}).get("private_messages", {}).get("p_bonferroni"),
                          "skipped": f.get("skipped")} for m, f in private.get("per_model", {}).items()])
    caption = (f"Private-message count against consensus (Firth): {'skipped: ' + reason if reason else 'in the table'}. "
               f"DM effect: {dm.get('skipped') or 'the Firth model of private messages above'}.")
    return Panel(title, svg_text(figure), pd.concat([table, fits], ignore_index=True) if len(fits) else table,
                 caption=caption, published=published)


def _shares_panel(title: str, rows: Any, value: str, xlabel: str, report: Mapping[str, Any],
                  bounds: tuple[str, str] = ("ci_low", "ci_high")) -> Panel:
    """One point per condition x model with its bar from ``bounds`` (an interval, or the range); the table as is."""
    if isinstance(rows, Mapping):
        return _skipped(title, rows["skipped"])
    models, conditions = report["models"], report["conditions"]
    low, high = bounds
    series = {m: {r["condition"]: (r[value], r.get(low), r.get(high)) for r in rows if r["model"] == m}
              for m in models}
    drawn_values = [r[value] for r in rows if r[value] is not None]
    if not drawn_values:
        reason = "no game gives a value to draw (e.g. none reached consensus)"
        return Panel(title, skipped_figure(title, reason), pd.DataFrame(rows), skipped=reason)
    limits = SHARE_LIMITS if value == "rate" else (0, max(drawn_values + [r.get(high) or 0 for r in rows]) * 1.08)
    groups = [[m] for m in models] if len(models) > FACET_ABOVE else [list(models)]
    figure, axes = facets(len(groups), cols=4, width=2.9 if len(groups) > 1 else 6.4,
                          height=0.7 + 0.3 * len(conditions), sharex=True, sharey=True)
    colours = {m: _colour(models, m) for m in models}
    for ax, group in zip(axes, groups):
        shown = {m: series[m] for m in group}
        if not any(v[0] is not None for s in shown.values() for v in s.values()):
            ax.set_yticks(range(len(conditions)), conditions)
            no_data(ax, f"{group[0]}: no game to draw")
        else:
            interval_points(ax, conditions, shown, limits=limits, colours=colours)
        if len(groups) > 1:
            ax.set_title(group[0], fontsize=8)
            ax.tick_params(labelsize=6)
    figure.supxlabel(xlabel, fontsize=8)
    return Panel(title, svg_text(figure), pd.DataFrame(rows))


def report_panels(sweep: Any, report: Mapping[str, Any]) -> list[Panel]:
    games = tag_schemes(sweep.games)  # the report's conditions name their scheme when several were played
    if "invalid" in games.columns and report.get("invalid_games_left_out"):
        games = games[~games["invalid"].fillna(False).astype(bool)]
    rounds_title = "Rounds to consensus (games that reached it: mean, range)"
    pseudo_title = "Pseudo-equilibrium (echo chamber) share (95 % Wilson intervals)"
    return [
        drawn("Consensus rate per condition and model", _rates_panel, report, games),
        drawn("Successes per model beside the study's open models", _models_panel, report, games),
        *[drawn(f"Firth model: {part['title']}", _paper_panel, part)
          for part in report["paper_models"]["models"].values()],
        drawn("Majority following", majority_panel, report),
        drawn("Largest same-colour component", components_panel, report, games),
        drawn("Largest component: no communication against local", none_vs_local_panel, report),
        drawn("Stubbornness against consensus", _stubbornness_panel, report, games),
        drawn("Message effects", _messages_panel, report, games),
        drawn(rounds_title, _shares_panel, rounds_title, report["rounds_to_consensus"], "mean", "rounds", report,
              ("min", "max")),
        drawn(pseudo_title, _shares_panel, pseudo_title, report["pseudo_equilibrium"], "rate",
              "share of games ending in a pseudo-equilibrium", report),
        *([drawn("Consensus rate by update scheme", schemes_panel, report)]
          if "skipped" not in report.get("update_schemes", {"skipped": ""}) else []),
    ]
