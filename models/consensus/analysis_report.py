"""The consensus study's report of ``llm-mesa analyze``: the options, the numbers, the text.

Over the games table of a consensus sweep: the headline consensus table
(successes / games per condition x policy); the Firth logistic regression of
consensus (coefficients, odds ratios with profile CIs, LR chi-squared,
pseudo-R2); the point-biserial correlation of each game's stubbornness with
consensus; Kruskal-Wallis of the largest same-colour component across
conditions and Mann-Whitney against the random-colouring baseline; and, when
the sweep kept the agents table (``--tables agents``), majority following
(mixed-effects logistic slope of choosing blue on the blue neighbour share).

The default formula is the study's (topology x communication, plus the other
condition factors and a fixed effect per policy), keeping only factors that take
more than one value in the table; the ones left out are named. Games marked
invalid (too many failed LLM decisions) are left out unless --keep-invalid.
A test that cannot run on these games (e.g. every game reached consensus) is
reported as skipped with its reason.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from llm_mesa.analysis import AnalysisError
from llm_mesa.analysis.sweep_data import AnalyzeError, SweepData, open_sweep

from .analysis import component_tests, firth_consensus_regression, majority_following, stubbornness_vs_consensus, sweep_transitions

__all__ = ["DEFAULT_MAX_TRANSITIONS", "FORMULA_FACTORS", "MIN_GAMES", "analyze", "configure", "default_formula",
           "format_report", "load_edges", "load_sweep"]

#: Condition factors of the games table, in the order the default formula names them.
FORMULA_FACTORS = ("topology", "communication", "preferences", "label", "direct_messages", "n", "policy")
#: Fewer finished games than this and no test can run: bad input, not a skipped test.
MIN_GAMES = 3
DEFAULT_MAX_TRANSITIONS = 20_000
#: the options of ``configure`` and their defaults (the Python API takes them as keywords)
OPTIONS = {"formula": None, "max_transitions": DEFAULT_MAX_TRANSITIONS, "sample_seed": 0, "keep_invalid": False}


def configure(group) -> None:
    """The consensus report's options of ``llm-mesa analyze`` (an argparse group)."""
    group.description = __doc__.partition("\n\n")[2].strip()
    group.add_argument("--formula", help="Firth regression formula, e.g. 'consensus ~ C(topology) * C(communication)' "
                                         "(default: the study's, adapted to what varies in the table)")
    group.add_argument("--max-transitions", type=int, default=DEFAULT_MAX_TRANSITIONS,
                       help="majority following: fit on at most this many agent-round transitions, a random "
                            f"subsample drawn with --sample-seed (default {DEFAULT_MAX_TRANSITIONS}; 0 = all)")
    group.add_argument("--sample-seed", type=int, default=0, help="seed of the transitions subsample (default 0)")
    group.add_argument("--keep-invalid", action="store_true",
                       help="keep games marked invalid (too many failed LLM decisions) in the analysis")


# --- reading ----------------------------------------------------------------------------


def _consensus_games(sweep: SweepData) -> pd.DataFrame:
    games = sweep.games
    if len(games) < MIN_GAMES:
        raise AnalyzeError(f"{str(sweep.path)!r} holds {len(games)} finished game(s); the statistics need at least "
                           f"{MIN_GAMES}: run (or resume) the sweep")
    if "consensus" not in games.columns:
        raise AnalyzeError(f"{str(sweep.path)!r} has no 'consensus' column; it is not a consensus-game sweep")
    return games


def load_sweep(path: str | os.PathLike[str]) -> tuple[pd.DataFrame, pd.DataFrame | None, dict[str, Any]]:
    """The games table, the agents table (None when not kept) and the manifest of a consensus sweep."""
    sweep = open_sweep(path)
    return _consensus_games(sweep), sweep.table("agents"), sweep.manifest


def load_edges(path: str | os.PathLike[str]) -> pd.DataFrame | None:
    """Each game's edges, when the sweep saved them (it does with the agents table)."""
    from llm_mesa.sweep import read_sweep

    edges = read_sweep(path, "edges")
    return None if edges.empty else edges


# --- the parts of the report ------------------------------------------------------------


def consensus_counts(games: pd.DataFrame, conditions: list[str], policies: list[str]) -> list[dict[str, Any]]:
    """Successes and games per (condition, policy), in the sweep's order."""
    grouped = games.groupby(["condition", "policy"])["consensus"].agg(["sum", "count"])
    return [{"condition": c, "policy": p, "successes": int(grouped.loc[(c, p), "sum"]),
             "games": int(grouped.loc[(c, p), "count"])}
            for c in conditions for p in policies if (c, p) in grouped.index]


def default_formula(games: pd.DataFrame) -> tuple[str | None, dict[str, str]]:
    """The study's formula restricted to factors that vary; and the factors left out, with their one value."""
    varying = [f for f in FORMULA_FACTORS if f in games.columns and games[f].nunique(dropna=False) > 1]
    single = {f: str(games[f].iloc[0]) for f in FORMULA_FACTORS
              if f in games.columns and games[f].nunique(dropna=False) == 1}
    terms: list[str] = []
    if "topology" in varying and "communication" in varying:
        terms.append("C(topology) * C(communication)")
    terms += [f"C({f})" for f in varying if not (f in ("topology", "communication") and terms)]
    return ("consensus ~ " + " + ".join(terms) if terms else None), single


def _check_formula(formula: str, games: pd.DataFrame) -> None:
    """A formula that names no column of the table is bad input (exit 2), not a skipped test."""
    from formulaic import model_matrix

    outcome, sep, rhs = formula.partition("~")
    if not sep or outcome.strip() not in games.columns:
        raise AnalyzeError(f"--formula {formula!r} must read 'outcome ~ terms' with a column on the left, e.g. "
                           "'consensus ~ C(topology) + C(policy)'")
    try:
        model_matrix(rhs, games.head(50))
    except Exception as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise AnalyzeError(f"--formula {formula!r}: {detail}; columns: {', '.join(map(str, games.columns))}") from None


def firth_part(games: pd.DataFrame, formula: str | None) -> dict[str, Any]:
    chosen, single = (formula, {}) if formula else default_formula(games)
    part: dict[str, Any] = {"formula": chosen, "single_level_terms_dropped": single}
    if chosen is None:
        return {**part, "skipped": "no condition factor or policy takes more than one value in these games"}
    try:
        fit = firth_consensus_regression(games, chosen)
    except AnalysisError as exc:
        return {**part, "skipped": str(exc)}
    table = fit.table
    part.update({
        "nobs": fit.nobs, "events": fit.n_events, "converged": fit.converged,
        "terms": {term: {k: float(v) for k, v in row.items()} for term, row in table.iterrows()},
        "ci_method": fit.ci_method, "p_method": fit.p_method,
        "lr_chi2": fit.lr_chi2, "lr_df": fit.lr_df, "lr_p": fit.lr_p,
        "pseudo_r2_mcfadden": fit.pseudo_r2_mcfadden,
        "separation": fit.separation, "infinite_ml_terms": list(fit.infinite_ml_terms),
        "aliased_columns_dropped": list(fit.dropped_columns),
    })
    return part


def stubbornness_part(games: pd.DataFrame) -> dict[str, Any]:
    try:
        result = stubbornness_vs_consensus(games)
    except AnalysisError as exc:
        return {"skipped": str(exc)}
    return {"r": result.r, "p": result.p, "n": result.n, "games_without_opportunity": result.n_dropped}


def components_part(games: pd.DataFrame) -> dict[str, Any]:
    try:
        result = component_tests(games, group_col="condition")
    except AnalysisError as exc:
        return {"skipped": str(exc)}
    return {"kruskal_h": result.kruskal_h, "kruskal_df": result.kruskal_df, "kruskal_p": result.kruskal_p,
            "mann_whitney_vs_baseline": result.per_condition.to_dict(orient="records")}


def majority_part(games: pd.DataFrame, agents: pd.DataFrame | None, edges: pd.DataFrame | None, max_transitions: int,
                  sample_seed: int) -> dict[str, Any]:
    if agents is None:
        return {"skipped": "the sweep did not keep the agents table; rerun it with --tables agents "
                           "(into a new --out) to measure majority following"}
    transitions, left_out = sweep_transitions(games, agents, edges)
    part: dict[str, Any] = {"games_left_out": left_out}
    if transitions.empty:
        return {**part, "skipped": "no game's graph could be redrawn (custom graphs?)"}
    total = len(transitions)
    part["transitions_total"] = total
    if max_transitions and total > max_transitions:
        # a uniform row subsample (numpy default_rng(sample_seed)) keeps the fit fast and unbiased
        chosen = np.sort(np.random.default_rng(sample_seed).choice(total, size=max_transitions, replace=False))
        transitions = transitions.iloc[chosen].reset_index(drop=True)
        part["subsample"] = {"rows": max_transitions, "seed": sample_seed}
    try:
        result = majority_following(transitions)
    except AnalysisError as exc:
        return {**part, "skipped": str(exc)}
    part.update({"slope": result.slope, "slope_sd": result.slope_sd, "intercept": result.intercept,
                 "intercept_sd": result.intercept_sd, "random_effect_sd": result.random_effect_sd,
                 "nobs": result.nobs, "games": result.n_games,
                 "empirical": result.empirical.to_dict(orient="records")})
    return part


def analyze(sweep: SweepData, options: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the report holds, as one dict; ``options`` as in ``OPTIONS`` (missing: default)."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise AnalyzeError(f"unknown option(s) of the consensus analysis: {', '.join(unknown)}; "
                           f"choose among: {', '.join(OPTIONS)}")
    chosen = {**OPTIONS, **options}
    formula, max_transitions, keep_invalid = chosen["formula"], chosen["max_transitions"], chosen["keep_invalid"]
    if max_transitions < 0:
        raise AnalyzeError(f"--max-transitions must be 0 (all) or positive (got {max_transitions})")
    games = _consensus_games(sweep)
    invalid = int(games["invalid"].fillna(False).astype(bool).sum()) if "invalid" in games.columns else 0
    if invalid and not keep_invalid:
        games = games[~games["invalid"].fillna(False).astype(bool)].reset_index(drop=True)
        if len(games) < MIN_GAMES:
            raise AnalyzeError(f"only {len(games)} valid game(s) left after dropping {invalid} invalid ones; "
                               "pass --keep-invalid or run more games")
    if formula:
        _check_formula(formula, games)
    conditions, policies = sweep.ordered("condition", games), sweep.ordered("policy", games)
    agents = sweep.table("agents")
    return {
        "sweep": str(sweep.path),
        "games": len(games),
        "invalid_games_left_out": 0 if keep_invalid else invalid,
        "conditions": conditions,
        "policies": policies,
        "consensus": consensus_counts(games, conditions, policies),
        "firth": firth_part(games, formula),
        "stubbornness_vs_consensus": stubbornness_part(games),
        "largest_component": components_part(games),
        "majority_following": majority_part(games, agents, sweep.table("edges") if agents is not None else None,
                                            max_transitions, chosen["sample_seed"]),
    }


# --- text ------------------------------------------------------------------------------


def _num(value: Any, digits: int = 3) -> str:
    return "NA" if value is None else f"{value:.{digits}g}"


def format_report(report: dict[str, Any]) -> str:
    lines = [f"sweep {report['sweep']}: {report['games']} games"]
    if report["invalid_games_left_out"]:
        lines[0] += f" ({report['invalid_games_left_out']} invalid games left out)"

    lines += ["", "consensus (successes / games):"]
    cells = {(r["condition"], r["policy"]): f"{r['successes']}/{r['games']}" for r in report["consensus"]}
    table = pd.DataFrame({p: [cells.get((c, p), "-") for c in report["conditions"]] for p in report["policies"]},
                         index=pd.Index(report["conditions"], name="condition"))
    totals = {r["condition"]: [0, 0] for r in report["consensus"]}
    for r in report["consensus"]:
        totals[r["condition"]][0] += r["successes"]
        totals[r["condition"]][1] += r["games"]
    table["all"] = [f"{totals[c][0]}/{totals[c][1]}" for c in report["conditions"]]
    by_policy = {p: [sum(r[k] for r in report["consensus"] if r["policy"] == p) for k in ("successes", "games")]
                 for p in report["policies"]}
    wins, played = (sum(r[k] for r in report["consensus"]) for k in ("successes", "games"))
    table.loc["all"] = [f"{w}/{g}" for w, g in by_policy.values()] + [f"{wins}/{played}"]
    lines.append(table.to_string())

    firth = report["firth"]
    lines += ["", f"Firth logistic regression: {firth['formula'] or '(none)'}"]
    if firth["single_level_terms_dropped"]:
        lines.append("  left out (a single level in these games): " +
                     ", ".join(f"{k}={v}" for k, v in firth["single_level_terms_dropped"].items()))
    if "skipped" in firth:
        lines.append(f"  skipped: {firth['skipped']}")
    else:
        coef = pd.DataFrame.from_dict(firth["terms"], orient="index")[
            ["coef", "se", "p", "odds_ratio", "or_ci_low", "or_ci_high"]]
        coef.index.name = "term"
        lines.append(coef.to_string(float_format=lambda v: f"{v:.4g}", na_rep="NA"))
        lines.append(f"  n = {firth['nobs']}, events = {firth['events']}; CIs: {firth['ci_method']}; "
                     f"p: {firth['p_method']}")
        lines.append(f"  LR chi2 = {_num(firth['lr_chi2'], 4)} on {firth['lr_df']} df, p = {_num(firth['lr_p'])}; "
                     f"McFadden pseudo-R2 = {_num(firth['pseudo_r2_mcfadden'])}")
        if firth["aliased_columns_dropped"]:
            lines.append("  dropped (aliased or empty cells): " + ", ".join(firth["aliased_columns_dropped"]))
        if firth["separation"]:
            lines.append("  separation: ML estimates infinite for " + ", ".join(firth["infinite_ml_terms"]))

    stub = report["stubbornness_vs_consensus"]
    lines += ["", "stubbornness vs consensus (point-biserial):"]
    lines.append(f"  skipped: {stub['skipped']}" if "skipped" in stub else
                 f"  r = {_num(stub['r'])}, p = {_num(stub['p'])}, n = {stub['n']} games"
                 + (f" ({stub['games_without_opportunity']} without any opportunity left out)"
                    if stub["games_without_opportunity"] else "") + "  (study: r = -0.44)")

    comp = report["largest_component"]
    lines += ["", "largest same-colour component:"]
    if "skipped" in comp:
        lines.append(f"  skipped: {comp['skipped']}")
    else:
        lines.append(f"  Kruskal-Wallis across conditions: H = {_num(comp['kruskal_h'], 4)} on {comp['kruskal_df']} df, "
                     f"p = {_num(comp['kruskal_p'])}")
        lines.append("  Mann-Whitney U against the random-colouring baseline (Holm-adjusted p):")
        per = pd.DataFrame(comp["mann_whitney_vs_baseline"]).set_index("condition")
        lines.append("  " + per.to_string(float_format=lambda v: f"{v:.4g}").replace("\n", "\n  "))

    major = report["majority_following"]
    lines += ["", "majority following (mixed-effects logistic, P(blue next | blue neighbour share)):"]
    if "skipped" in major:
        lines.append(f"  skipped: {major['skipped']}")
    else:
        lines.append(f"  slope = {_num(major['slope'], 4)} (posterior sd {_num(major['slope_sd'])}), "
                     f"intercept = {_num(major['intercept'], 4)}; {major['nobs']} transitions from {major['games']} games")
        if "subsample" in major:
            lines.append(f"  fitted on a random subsample of {major['subsample']['rows']} of "
                         f"{major['transitions_total']} transitions (seed {major['subsample']['seed']}; "
                         "--max-transitions 0 for all)")
    if major.get("games_left_out"):
        lines.append(f"  {len(major['games_left_out'])} game(s) left out (graph not redrawable or not matching)")
    return "\n".join(lines)
