"""The consensus study's measures per model: rates, stubbornness, components, rounds, echo chambers.

Every part is computed per model (the ``model`` column: an LLM's name or a rule
configuration) rather than pooled over models, as the study reports them:

* :func:`consensus_rates`: successes per condition x model, with Wilson intervals;
* :func:`stubbornness_per_model`: point-biserial r of the game's stubbornness with
  consensus (study: -0.44), per model and pooled; Bonferroni and Holm across models;
* :func:`components_per_model`: the largest same-colour component against the
  random-colouring baseline: means, the share of red components, Kruskal-Wallis
  across conditions, Mann-Whitney per condition (Bonferroni and Holm across the
  model's conditions), and no communication against local, per topology;
* :func:`rounds_to_consensus`, :func:`pseudo_equilibrium_shares`,
  :func:`minority_winners`, :func:`message_counts`.

A test the games cannot answer is returned as ``{"skipped": reason}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from llm_mesa.analysis import AnalysisError
from llm_mesa.analysis.proportions import adjust_pvalues, wilson_interval

from .analysis import component_tests, stubbornness_vs_consensus

__all__ = ["component_rows", "components_per_model", "consensus_rates", "message_counts", "minority_winners",
           "pseudo_equilibrium_shares", "rounds_to_consensus", "stubbornness_per_model"]


def _share_row(successes: int, games: int) -> dict[str, Any]:
    low, high = wilson_interval(successes, games)
    return {"successes": int(successes), "games": int(games), "rate": successes / games if games else None,
            "ci_low": low, "ci_high": high}


def consensus_rates(games: pd.DataFrame, conditions: Sequence[str], models: Sequence[str]) -> list[dict[str, Any]]:
    """Successes / games per (condition, model) with 95 % Wilson intervals, in the sweeps' order.

    ``policy`` repeats ``model`` (the name older reports used).
    """
    grouped = games.groupby(["condition", "model"])["consensus"].agg(["sum", "count"])
    return [{"condition": c, "model": m, "policy": m, **_share_row(int(grouped.loc[(c, m), "sum"]),
                                                                     int(grouped.loc[(c, m), "count"]))}
            for c in conditions for m in models if (c, m) in grouped.index]


def _stub_row(frame: pd.DataFrame) -> dict[str, Any]:
    try:
        result = stubbornness_vs_consensus(frame)
    except AnalysisError as exc:
        return {"skipped": str(exc), "games": len(frame)}
    return {"r": result.r, "p": result.p, "n": result.n, "games_without_opportunity": result.n_dropped}


def stubbornness_per_model(games: pd.DataFrame, models: Sequence[str]) -> dict[str, Any]:
    """Point-biserial r of stubbornness with consensus: pooled, and per model with corrected p-values."""
    part = {**_stub_row(games), "per_model": {m: _stub_row(games[games["model"] == m]) for m in models}}
    rows = list(part["per_model"].values())
    adjusted = adjust_pvalues([row.get("p") for row in rows])
    for row, bonf, holm in zip(rows, adjusted["bonferroni"], adjusted["holm"]):
        if "p" in row:
            row.update({"p_bonferroni": bonf, "p_holm": holm})
    return part


def component_rows(games: pd.DataFrame, conditions: Sequence[str]) -> list[dict[str, Any]]:
    """Per condition: games, mean largest component and its baseline, share of red largest components."""
    rows = []
    for condition in conditions:
        sub = games[games["condition"] == condition]
        if sub.empty:
            continue
        colour = sub["largest_component_colour"].astype(str) if "largest_component_colour" in sub else None
        rows.append({
            "condition": condition, "games": len(sub),
            "mean": float(sub["largest_component"].mean()),
            "sd": float(sub["largest_component"].std(ddof=1)) if len(sub) > 1 else None,
            "baseline_mean": float(pd.to_numeric(sub["largest_component_baseline_mean"]).mean()),
            "red_share": float((colour == "red").mean()) if colour is not None else None,
        })
    return rows


#: what makes a design cell besides communication: no communication and local are compared only
#: between games that agree on all of these (the minority design is never pooled into a 50/50 cell)
CELL_COLUMNS = ("topology", "n", "preferences", "minority", "label", "direct_messages", "initial", "max_rounds",
                "history", "message_cost")
_CELL_DEFAULTS = {"preferences": "random", "label": "llm", "direct_messages": "False", "initial": "preference"}


def _cell_name(cell: dict[str, str], varying: Sequence[str]) -> str:
    """The topology, and the cell's value of each factor that varies among the cells, e.g. ``ba, n=20``."""
    return ", ".join([cell["topology"], *(f"{k}={cell[k]}" for k in varying if k != "topology")])


def _none_vs_local(sub: pd.DataFrame) -> list[dict[str, Any]]:
    """Mann-Whitney of the largest component, no communication against local, within each design cell.

    A cell is every condition column but communication (``CELL_COLUMNS``): a test compares
    only games that differ in communication alone, and names the conditions it compared.
    """
    columns = [c for c in CELL_COLUMNS if c in sub.columns]
    frame = sub.assign(**{c: sub[c].astype(str) for c in columns},
                       **{c: v for c, v in _CELL_DEFAULTS.items() if c not in sub.columns})
    columns = list(dict.fromkeys([*columns, *(c for c in _CELL_DEFAULTS if c not in sub.columns)]))
    tested = []
    for values, cell in frame.groupby(columns, sort=True):
        comm = cell["communication"].astype(str)
        if (comm == "none").any() and (comm == "local").any():
            tested.append((dict(zip(columns, values if isinstance(values, tuple) else (values,))), cell, comm))
    # a cell is named by what sets it apart from the other cells tested
    varying = [c for c in columns if len({named[c] for named, _, _ in tested}) > 1]
    rows = []
    for named, cell, comm in tested:
        none, local = cell[comm == "none"], cell[comm == "local"]
        a, b = none["largest_component"].to_numpy(float), local["largest_component"].to_numpy(float)
        test = stats.mannwhitneyu(a, b, alternative="two-sided")
        rows.append({"topology": named["topology"], "cell": _cell_name(named, varying),
                     "conditions_none": ", ".join(sorted(none["condition"].astype(str).unique())),
                     "conditions_local": ", ".join(sorted(local["condition"].astype(str).unique())),
                     "games_none": len(a), "games_local": len(b), "mean_none": float(a.mean()),
                     "mean_local": float(b.mean()), "u": float(test.statistic), "p": float(test.pvalue)})
    adjusted = adjust_pvalues([r["p"] for r in rows])
    for row, bonf, holm in zip(rows, adjusted["bonferroni"], adjusted["holm"]):
        row.update({"p_bonferroni": bonf, "p_holm": holm})
    return rows


def components_per_model(games: pd.DataFrame, conditions: Sequence[str], models: Sequence[str]) -> dict[str, Any]:
    """The largest same-colour component against its random baseline, per model."""
    if "largest_component_baseline_mean" not in games.columns:
        return {"skipped": "the games table has no baseline column"}
    per_model: dict[str, Any] = {}
    for m in models:
        sub = games[games["model"] == m]
        part: dict[str, Any] = {"conditions": component_rows(sub, conditions)}
        try:
            result = component_tests(sub, group_col="condition")
        except AnalysisError as exc:
            part["skipped"] = str(exc)
        else:
            tests = result.per_condition
            adjusted = adjust_pvalues(tests["p"].tolist())
            tests = tests.assign(p_bonferroni=adjusted["bonferroni"])
            part.update({"kruskal_h": result.kruskal_h, "kruskal_df": result.kruskal_df,
                         "kruskal_p": result.kruskal_p, "mann_whitney_vs_baseline": tests.to_dict(orient="records")})
        if {"topology", "communication"} <= set(sub.columns):
            part["none_vs_local"] = _none_vs_local(sub)
        per_model[m] = part
    return {"per_model": per_model,
            "published": "mean larger under no communication than local for most open models (e.g. Mistral BA "
                         "28.7 vs 23.4); local mostly not above the random baseline"}


def rounds_to_consensus(games: pd.DataFrame, conditions: Sequence[str], models: Sequence[str]) -> list[dict[str, Any]]:
    """Rounds the games that reached consensus took, per condition x model (mean, SD, median, range)."""
    rows = []
    won = games[games["consensus"].astype(bool)]
    for c in conditions:
        for m in models:
            sub = won.loc[(won["condition"] == c) & (won["model"] == m), "rounds"].to_numpy(dtype=float)
            played = int(((games["condition"] == c) & (games["model"] == m)).sum())
            if not played:
                continue
            rows.append({"condition": c, "model": m, "successes": len(sub), "games": played,
                         "mean": float(sub.mean()) if len(sub) else None,
                         "sd": float(sub.std(ddof=1)) if len(sub) > 1 else None,
                         "median": float(np.median(sub)) if len(sub) else None,
                         "min": float(sub.min()) if len(sub) else None, "max": float(sub.max()) if len(sub) else None})
    return rows


def pseudo_equilibrium_shares(games: pd.DataFrame, conditions: Sequence[str], models: Sequence[str]) -> Any:
    """Share of games ending in a pseudo-equilibrium (echo chambers), per condition x model, Wilson intervals."""
    if "pseudo_equilibrium" not in games.columns:
        return {"skipped": "the games table has no pseudo_equilibrium column (a sweep older than the measure)"}
    rows = []
    for c in conditions:
        for m in models:
            sub = games[(games["condition"] == c) & (games["model"] == m)]
            if len(sub):
                flag = sub["pseudo_equilibrium"].fillna(False).astype(bool)
                failed = int((~sub["consensus"].astype(bool)).sum())
                share = _share_row(int(flag.sum()), len(sub))
                rows.append({"condition": c, "model": m, "pseudo_equilibria": share.pop("successes"), **share,
                             "games_without_consensus": failed})
    return rows


def minority_winners(games: pd.DataFrame, models: Sequence[str]) -> Any:
    """In the minority design: which colour won the games that reached consensus, per model."""
    if "preferences" not in games.columns or not (games["preferences"].astype(str) == "minority").any():
        return {"skipped": "no game played the minority design"}
    sub = games[(games["preferences"].astype(str) == "minority") & games["consensus"].astype(bool)]
    rows = []
    for m in models:
        won = sub[sub["model"] == m]
        played = int(((games["preferences"].astype(str) == "minority") & (games["model"] == m)).sum())
        if not played:
            continue
        majority = int(won["winner_is_majority_preference"].fillna(False).astype(bool).sum()) \
            if "winner_is_majority_preference" in won else 0
        rows.append({"model": m, "games": played, "successes": len(won),
                     "red_won": int((won["winner"].astype(str) == "red").sum()),
                     "blue_won": int((won["winner"].astype(str) == "blue").sum()),
                     "majority_colour_won": majority,
                     "majority_share": majority / len(won) if len(won) else None})
    return {"rows": rows, "published": "26/180 open-model games reached consensus; the majority's colour "
                                       "(blue) won, unlike humans"}


def message_counts(games: pd.DataFrame, conditions: Sequence[str], models: Sequence[str]) -> Any:
    """Mean messages and private messages per game, by condition x model and outcome."""
    if "messages" not in games.columns:
        return {"skipped": "the games table has no message counts"}
    rows = []
    for c in conditions:
        for m in models:
            sub = games[(games["condition"] == c) & (games["model"] == m)]
            if sub.empty:
                continue
            won = sub["consensus"].astype(bool)
            private = sub["private_messages"].astype(float) if "private_messages" in sub else pd.Series(0.0, sub.index)
            rows.append({"condition": c, "model": m, "games": len(sub),
                         "messages_mean": float(sub["messages"].astype(float).mean()),
                         "private_messages_mean": float(private.mean()),
                         "messages_mean_consensus": float(sub.loc[won, "messages"].astype(float).mean())
                         if won.any() else None,
                         "messages_mean_no_consensus": float(sub.loc[~won, "messages"].astype(float).mean())
                         if (~won).any() else None})
    return rows
