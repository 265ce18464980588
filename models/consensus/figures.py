"""The consensus study's figures for ``llm-mesa report``, each with the table it is drawn from.

Panels: consensus rate per condition x model (Wilson intervals) with the
published successes where the condition matches; per-model successes beside the
study's; the paper's Firth models (focal coefficients with profile intervals,
pooled and per model); majority-following curves per model; the largest
same-colour component against its random baseline; stubbornness against
consensus; message effects; rounds to consensus; the pseudo-equilibrium share.
A part that was skipped still gets its panel, which says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from llm_mesa.analysis.figures import COLOURS, interval_points, new_figure, skipped_figure, svg_text
from llm_mesa.analysis.report_html import Panel, drawn

from .published import TOTALS, published_conditions, published_models

__all__ = ["report_panels"]


def _colour(models: list[str], model: str) -> str:
    return COLOURS[models.index(model) % len(COLOURS)] if model in models else "#777777"


def _skipped(title: str, reason: str, **extra: Any) -> Panel:
    return Panel(title, skipped_figure(title, reason), None, skipped=reason, **extra)


def _rates_panel(report: Mapping[str, Any], games: pd.DataFrame) -> Panel:
    title = "Consensus rate per condition and model (95 % Wilson intervals)"
    rows = pd.DataFrame(report["consensus"])
    series = {m: {r["condition"]: (r["rate"], r["ci_low"], r["ci_high"]) for r in report["consensus"] if r["model"] == m}
              for m in report["models"]}
    published = published_conditions(games, report["conditions"])
    figure, ax = new_figure(6.4, 1.2 + 0.45 * len(report["conditions"]))
    interval_points(ax, report["conditions"], series, xlabel="share of games reaching consensus")
    if not published.empty:  # the study's open-model and closed-model rates where the condition matches
        for column, marker, label in (("published_open_rate", "x", "published, open models"),
                                      ("published_closed_rate", "D", "published, closed model")):
            shown = published.dropna(subset=[column])
            ax.scatter(shown[column], [report["conditions"].index(c) for c in shown["condition"]], marker=marker,
                       color="black", s=22, label=label, zorder=3, facecolors="none" if marker == "D" else None)
        ax.legend(fontsize=7, loc="best")
    table = rows[["condition", "model", "successes", "games", "rate", "ci_low", "ci_high"]]
    return Panel(title, svg_text(figure), table, published=published if not published.empty else None,
                 caption=f"Published: {TOTALS}.")


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
    ax.set_xlim(0, 1)
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
    figure, ax = new_figure(6.4, 1.0 + 0.35 * len(drawn))
    labels = [f"{r['fit']}: {r['term']}" for _, r in drawn.iterrows()]
    coef = drawn["coef"].to_numpy(float)
    low = np.nan_to_num(coef - drawn["ci_low"].to_numpy(float))
    high = np.nan_to_num(drawn["ci_high"].to_numpy(float) - coef)
    ax.errorbar(coef, range(len(drawn)), xerr=[low, high], fmt="o", color="#1f77b4", capsize=3)
    ax.axvline(0, color="#999999", linewidth=0.8)
    ax.set_yticks(range(len(drawn)), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(f"log-odds against {part['factor']} = {part['reference']} (profile 95 % CI)")
    return Panel(title, svg_text(figure), table, published=published,
                 caption="Pooled: a fixed effect per model, as the paper. p: penalised likelihood-ratio tests; "
                         "Bonferroni (as the paper) and Holm over the focal terms.")


def _majority_panel(report: Mapping[str, Any]) -> Panel:
    title = "Majority following: P(blue next | blue neighbour share), per model"
    major = report["majority_following"]
    published = pd.DataFrame({"published": [major.get("published", "")]})
    if "skipped" in major:
        return _skipped(title, major["skipped"], published=published)
    figure, ax = new_figure()
    rows = []
    for model, part in major["per_model"].items():
        if "skipped" in part:
            rows.append({"model": model, "skipped": part["skipped"]})
            continue
        colour = _colour(report["models"], model)
        curve = pd.DataFrame(part["curve"])
        ax.plot(curve["blue_share_neighbours"], curve["p_blue"], color=colour, label=model)
        empirical = pd.DataFrame(part["empirical"])
        ax.scatter(empirical["share_mean"], empirical["p_blue"], color=colour, s=10 + 40 * empirical["n"] /
                   max(empirical["n"].max(), 1), alpha=0.6)
        rows.append({"model": model, "slope": part["slope"], "slope_sd": part["slope_sd"],
                     "intercept": part["intercept"], "transitions": part["nobs"], "games": part["games"],
                     "converged": part["converged"], "fit_seed": part["fit_seed"]})
    ax.set_xlabel("share of blue neighbours at t")
    ax.set_ylabel("P(blue at t + 1)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    return Panel(title, svg_text(figure), pd.DataFrame(rows), published=published,
                 caption="Lines: the mixed-effects fit (random intercepts per game and per agent in game) at "
                         "random effects 0; points: observed shares in bins (size: transitions).")


def _components_panel(report: Mapping[str, Any], games: pd.DataFrame) -> Panel:
    title = "Largest same-colour component against the random-colouring baseline"
    comp = report["largest_component"]
    if "skipped" in comp:
        return _skipped(title, comp["skipped"])
    conditions, models = report["conditions"], report["models"]
    figure, ax = new_figure(6.4, 1.2 + 0.5 * len(conditions))
    width = 0.8 / max(len(models), 1)
    rows = []
    for index, model in enumerate(models):
        part = comp["per_model"].get(model, {})
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
                positions.append(position - 0.4 + width * (index + 0.5))
        if data:
            box = ax.boxplot(data, positions=positions, widths=width * 0.8, orientation="horizontal", patch_artist=True,
                             manage_ticks=False)
            for patch in box["boxes"]:
                patch.set_facecolor(_colour(models, model))
                patch.set_alpha(0.5)
            ax.plot([], [], color=_colour(models, model), label=model, linewidth=6, alpha=0.5)
    baseline = games.groupby("condition")["largest_component_baseline_mean"].mean()
    ax.scatter([baseline.get(c, np.nan) for c in conditions], range(len(conditions)), marker="|", s=300,
               color="black", label="random-colouring baseline (mean)", zorder=3)
    ax.set_yticks(range(len(conditions)), conditions)
    ax.invert_yaxis()
    ax.set_xlabel("largest same-colour component at the end (agents)")
    ax.legend(fontsize=7)
    return Panel(title, svg_text(figure), pd.DataFrame(rows), published=pd.DataFrame({"published": [comp["published"]]}),
                 caption="Mann-Whitney U against each game's baseline, Bonferroni and Holm across a model's "
                         "conditions; Kruskal-Wallis across conditions.")


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
    ax.set_xlabel("stubbornness (stubborn moves / opportunities)")
    ax.legend(fontsize=7)
    return Panel(title, svg_text(figure), pd.DataFrame(rows), skipped=stub.get("skipped"),
                 published=pd.DataFrame({"published": ["point-biserial r = -0.44 (p < 0.001)"]}))


def _messages_panel(report: Mapping[str, Any], games: pd.DataFrame) -> Panel:
    title = "Message effects: messages per game by outcome, private messages against consensus"
    messages = report["messages"]
    private = report["private_messages"]
    if isinstance(messages, Mapping):
        return _skipped(title, messages["skipped"])
    table = pd.DataFrame(messages)
    figure, axes = new_figure(9.0, 3.4, 1, 2)
    conditions = list(dict.fromkeys(table["condition"]))
    for index, model in enumerate(report["models"]):
        sub = table[table["model"] == model]
        ax = axes[0]
        ax.barh(sub["condition"].map(conditions.index).to_numpy(float) + index * 0.8 / len(report["models"]),
                sub["messages_mean"],
                height=0.8 / len(report["models"]), color=_colour(report["models"], model), label=model)
        allowed = games[(games["model"] == model) & (games.get("direct_messages", False).astype(str) == "True")]
        if len(allowed):
            axes[1].scatter(allowed["private_messages"].astype(float), allowed["consensus"].astype(float),
                            color=_colour(report["models"], model), s=12, alpha=0.7)
    axes[0].set_yticks(range(len(conditions)), conditions, fontsize=7)
    axes[0].invert_yaxis()
    axes[0].set_xlabel("messages per game (mean)")
    axes[0].legend(fontsize=7)
    axes[1].set_xlabel("private messages in the game")
    axes[1].set_yticks([0, 1], ["no consensus", "consensus"])
    reason = private.get("skipped")
    if reason:
        axes[1].text(0.5, 0.5, "\n".join([reason[i:i + 45] for i in range(0, len(reason), 45)]), ha="center",
                     va="center", fontsize=7, transform=axes[1].transAxes, color="#555555")
    fits = pd.DataFrame([{"model": m, "coef": f.get("terms", {}).get("private_messages", {}).get("coef"),
                          "p": f.get("terms", {}).get("private_messages", {}).get("p"),
                          "p_bonferroni": f.get("terms", {}).get("private_messages", {}).get("p_bonferroni"),
                          "skipped": f.get("skipped")} for m, f in private.get("per_model", {}).items()])
    dm = report["paper_models"]["models"]["direct_messages"]
    caption = f"Private-message count vs consensus (Firth): {'skipped: ' + reason if reason else 'see the table'}. " \
              f"DM effect: {dm.get('skipped') or 'see the Firth model of private messages above'}."
    return Panel(title, svg_text(figure), pd.concat([table, fits], ignore_index=True) if len(fits) else table,
                 caption=caption, published=pd.DataFrame({"published": [private.get("published", ""),
                                                                        dm.get("published", "")]}))


def _shares_panel(title: str, rows: Any, value: str, xlabel: str, report: Mapping[str, Any]) -> Panel:
    if isinstance(rows, Mapping):
        return _skipped(title, rows["skipped"])
    series = {m: {r["condition"]: (r[value], r.get("ci_low"), r.get("ci_high")) for r in rows if r["model"] == m}
              for m in report["models"]}
    figure, ax = new_figure(6.4, 1.2 + 0.45 * len(report["conditions"]))
    values = [r[value] for r in rows if r[value] is not None]
    interval_points(ax, report["conditions"], series, xlabel=xlabel,
                    limits=(0, 1) if value == "rate" else (0, max(values + [1]) * 1.1))
    return Panel(title, svg_text(figure), pd.DataFrame(rows))


def report_panels(sweep: Any, report: Mapping[str, Any]) -> list[Panel]:
    games = sweep.games
    if "invalid" in games.columns and report.get("invalid_games_left_out"):
        games = games[~games["invalid"].fillna(False).astype(bool)]
    rounds = [dict(r, ci_low=r["min"], ci_high=r["max"]) for r in report["rounds_to_consensus"]]
    rounds_title = "Rounds to consensus (games that reached it: mean, range)"
    pseudo_title = "Pseudo-equilibrium (echo chamber) share (95 % Wilson intervals)"
    return [
        drawn("Consensus rate per condition and model", _rates_panel, report, games),
        drawn("Successes per model beside the study's open models", _models_panel, report, games),
        *[drawn(f"Firth model: {part['title']}", _paper_panel, part)
          for part in report["paper_models"]["models"].values()],
        drawn("Majority following", _majority_panel, report),
        drawn("Largest same-colour component", _components_panel, report, games),
        drawn("Stubbornness against consensus", _stubbornness_panel, report, games),
        drawn("Message effects", _messages_panel, report, games),
        drawn(rounds_title, _shares_panel, rounds_title, rounds, "mean", "rounds", report),
        drawn(pseudo_title, _shares_panel, pseudo_title, report["pseudo_equilibrium"], "rate",
              "share of games ending in a pseudo-equilibrium", report),
    ]
