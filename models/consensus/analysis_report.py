"""The consensus study's report of ``llm-mesa analyze``: the options and the numbers.

Over the games of one or several consensus sweeps, per model (an LLM's name, or
a rule configuration): the consensus rate per condition x model with Wilson
intervals; the paper's Firth models on its subsets and reference levels (BA
communication with global as baseline, topology with caveman as baseline, the
minority design against 50/50, the opponent label, private messages), pooled
with a model fixed effect as the paper and per model, with log-likelihood, LR
chi-squared and McFadden's R2, focal terms corrected by Bonferroni (as the
paper) and Holm; a Firth fit of your own --formula (default: the study's over
what varies); the private-message count against consensus; stubbornness against
consensus (point-biserial) per model; the largest same-colour component against
the random baseline per model (means, share of red components, Kruskal-Wallis,
Mann-Whitney with corrections); rounds to consensus; the pseudo-equilibrium
share; and, when the sweep kept the agents table (``--tables agents``), majority
following as a curve per model (a seeded mixed-effects logistic fit).

Games marked invalid (too many failed LLM decisions) are left out unless
--keep-invalid. A test that cannot run on these games (e.g. every game reached
consensus) is reported as skipped with its reason.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from llm_mesa.analysis import AnalysisError
from llm_mesa.analysis.sweep_data import SweepData, open_sweep

from .analysis import firth_consensus_regression, majority_following, sweep_transitions
from .analysis_measures import (
    components_per_model,
    consensus_rates,
    message_counts,
    minority_winners,
    pseudo_equilibrium_shares,
    rounds_to_consensus,
    stubbornness_per_model,
)
from .analysis_paper import firth_summary, paper_models, private_messages_part
from .analysis_schemes import scheme_comparison, tag_schemes
from .analysis_text import format_report

__all__ = ["DEFAULT_MAX_TRANSITIONS", "FORMULA_FACTORS", "MIN_GAMES", "analyze", "configure", "default_formula",
           "format_report", "load_edges", "load_sweep"]

#: Condition factors of the games table, in the order the default formula names them.
FORMULA_FACTORS = ("topology", "communication", "preferences", "label", "direct_messages", "n", "model")
#: No finished game and there is nothing to analyse: bad input. From one game on, every part is
#: reported, a test that cannot run on so few games skipped with its reason (a report of one game
#: is what a researcher checks first).
MIN_GAMES = 1
DEFAULT_MAX_TRANSITIONS = 20_000
#: the options of ``configure`` and their defaults (the Python API takes them as keywords)
OPTIONS = {"formula": None, "max_transitions": DEFAULT_MAX_TRANSITIONS, "sample_seed": 0, "fit_seed": 0,
           "keep_invalid": False, "fit_processes": min(2, os.cpu_count() or 1)}


def configure(group) -> None:
    """The consensus report's options of ``llm-mesa analyze`` (an argparse group)."""
    group.description = __doc__.partition("\n\n")[2].strip()
    group.add_argument("--formula", help="Firth regression formula, e.g. 'consensus ~ C(topology) * C(communication)' "
                                         "(default: the study's, adapted to what varies in the table). The formula "
                                         "engine evaluates Python expressions in it: it runs as your own code, so "
                                         "never paste a formula from a file or a person you do not trust")
    group.add_argument("--max-transitions", type=int, default=DEFAULT_MAX_TRANSITIONS,
                       help="majority following: fit each model on at most this many agent-round transitions, a "
                            f"random subsample drawn with --sample-seed (default {DEFAULT_MAX_TRANSITIONS}; 0 = all)")
    group.add_argument("--sample-seed", type=int, default=0, help="seed of the transitions subsample (default 0)")
    group.add_argument("--fit-seed", type=int, default=0,
                       help="seed of the mixed-effects fit's starting values (default 0): the same games, subsample "
                            "and seed give the same slopes")
    group.add_argument("--fit-processes", type=int, default=OPTIONS["fit_processes"],
                       help="majority following: fit the models in this many processes at once (default: "
                            f"{OPTIONS['fit_processes']}, the cores up to 2); the numbers do not depend on it")
    group.add_argument("--keep-invalid", action="store_true",
                       help="keep games marked invalid (too many failed LLM decisions) in the analysis")


# --- reading ----------------------------------------------------------------------------


def _consensus_games(sweep: SweepData) -> pd.DataFrame:
    games = sweep.games
    if len(games) < MIN_GAMES:
        raise AnalysisError(f"{sweep.name!r} holds {len(games)} finished game(s); the statistics need at least "
                           f"{MIN_GAMES}: run (or resume) the sweep")
    if "consensus" not in games.columns:
        raise AnalysisError(f"{sweep.name!r} has no 'consensus' column; it is not a consensus-game sweep")
    return tag_schemes(games)  # games of several update schemes: each condition named with its scheme


def load_sweep(path: str | os.PathLike[str]) -> tuple[pd.DataFrame, pd.DataFrame | None, dict[str, Any]]:
    """The games table, the agents table (None when not kept) and the manifest of a consensus sweep."""
    sweep = open_sweep(path)
    return _consensus_games(sweep), sweep.table("agents"), sweep.manifest


def load_edges(path: str | os.PathLike[str]) -> pd.DataFrame | None:
    """Each game's edges, when the sweep saved them (it does with the agents table)."""
    return open_sweep(path).table("edges")


# --- the parts of the report ------------------------------------------------------------


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
        raise AnalysisError(f"--formula {formula!r} must read 'outcome ~ terms' with a column on the left, e.g. "
                           "'consensus ~ C(topology) + C(model)'")
    try:
        model_matrix(rhs, games.head(50))
    except Exception as exc:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise AnalysisError(f"--formula {formula!r}: {detail}; columns: {', '.join(map(str, games.columns))}") from None


def firth_part(games: pd.DataFrame, formula: str | None) -> dict[str, Any]:
    chosen, single = (formula, {}) if formula else default_formula(games)
    part: dict[str, Any] = {"formula": chosen, "single_level_terms_dropped": single}
    if chosen is None:
        return {**part, "skipped": "no condition factor or model takes more than one value in these games"}
    try:
        fit = firth_consensus_regression(games, chosen)
    except AnalysisError as exc:
        return {**part, "skipped": str(exc)}
    return {**part, **firth_summary(fit), "formula": chosen}


def _subsample(transitions: pd.DataFrame, max_transitions: int, sample_seed: int) -> tuple[pd.DataFrame, dict]:
    total = len(transitions)
    part: dict[str, Any] = {"transitions_total": total}
    if max_transitions and total > max_transitions:
        # a uniform row subsample (numpy default_rng(sample_seed)) keeps the fit fast and unbiased
        chosen = np.sort(np.random.default_rng(sample_seed).choice(total, size=max_transitions, replace=False))
        transitions = transitions.iloc[chosen].reset_index(drop=True)
        part["subsample"] = {"rows": max_transitions, "seed": sample_seed}
    columns = ["game", "agent", "blue_share_neighbours", "chose_blue_next"]
    return transitions[columns], part


def _majority_fit(transitions: pd.DataFrame, part: dict[str, Any], fit_seed: int) -> dict[str, Any]:
    """One model's fit (run in a worker process: a module-level function of plain data)."""
    try:
        result = majority_following(transitions, seed=fit_seed)
    except AnalysisError as exc:
        return {**part, "skipped": str(exc)}
    report = result.report.as_dict()
    part.update({"slope": result.slope, "slope_sd": result.slope_sd, "intercept": result.intercept,
                 "intercept_sd": result.intercept_sd, "random_effect_sd": result.random_effect_sd,
                 "nobs": result.nobs, "games": result.n_games, "converged": result.converged,
                 "fit_seed": result.seed, "curve": result.curve.to_dict(orient="records"),
                 "empirical": result.empirical.to_dict(orient="records"),
                 "tried": [a["what"] for a in report["attempts"]], "fit": report})
    return part


def _fit_all(jobs: dict[str, tuple[pd.DataFrame, dict]], fit_seed: int, processes: int) -> dict[str, dict]:
    """Every model's fit, in ``processes`` worker processes at once when there are several (spawned:
    fork is unsafe once BLAS threads run); the results do not depend on how many."""
    if processes <= 1 or len(jobs) <= 1:
        return {model: _majority_fit(rows, part, fit_seed) for model, (rows, part) in jobs.items()}
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(min(processes, len(jobs)), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {model: pool.submit(_majority_fit, rows, part, fit_seed) for model, (rows, part) in jobs.items()}
        return {model: future.result() for model, future in futures.items()}


def majority_part(games: pd.DataFrame, agents: pd.DataFrame | None, edges: pd.DataFrame | None, models: Sequence[str],
                  max_transitions: int, sample_seed: int, fit_seed: int, processes: int = 1) -> dict[str, Any]:
    """Majority following per model: a seeded mixed-effects fit on (a seeded subsample of) each model's transitions."""
    if agents is None:
        return {"skipped": "the sweep did not keep the agents table; rerun it with --tables agents "
                           "(into a new --out) to measure majority following"}
    transitions, left_out = sweep_transitions(games, agents, edges)
    part: dict[str, Any] = {"games_left_out": left_out,
                            "published": "steepest for the closed model and Mistral"}
    if transitions.empty:
        return {**part, "skipped": "no game's graph could be redrawn (custom graphs?)"}
    key_cols = [c for c in ("sweep", "condition", "policy", "seed") if c in agents.columns]
    model_of = dict(zip(games[key_cols].astype(str).agg("|".join, axis=1), games["model"]))
    transitions["model"] = transitions["game"].map(model_of)
    part["transitions_total"] = len(transitions)
    jobs = {m: _subsample(transitions[transitions["model"] == m].reset_index(drop=True), max_transitions, sample_seed)
            for m in models if (transitions["model"] == m).any()}
    part["per_model"] = _fit_all(jobs, fit_seed, processes)
    unconverged = [m for m, fit in part["per_model"].items() if "skipped" not in fit and not fit["converged"]]
    if unconverged:
        part["not_converged"] = unconverged
    return part


def analyze(sweep: SweepData, options: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the report holds, as one dict; ``options`` as in ``OPTIONS`` (missing: default)."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise AnalysisError(f"unknown option(s) of the consensus analysis: {', '.join(unknown)}; "
                           f"choose among: {', '.join(OPTIONS)}")
    chosen = {**OPTIONS, **options}
    formula, max_transitions, keep_invalid = chosen["formula"], chosen["max_transitions"], chosen["keep_invalid"]
    if max_transitions < 0:
        raise AnalysisError(f"--max-transitions must be 0 (all) or positive (got {max_transitions})")
    games = _consensus_games(sweep)
    invalid = int(games["invalid"].fillna(False).astype(bool).sum()) if "invalid" in games.columns else 0
    if invalid and not keep_invalid:
        games = games[~games["invalid"].fillna(False).astype(bool)].reset_index(drop=True)
        if len(games) < MIN_GAMES:
            raise AnalysisError(f"only {len(games)} valid game(s) left after dropping {invalid} invalid ones; "
                               "pass --keep-invalid or run more games")
    if formula:
        _check_formula(formula, games)
    conditions, models = sweep.ordered("condition", games), sweep.ordered("model", games)
    agents = sweep.table("agents")
    return {
        "sweep": sweep.name,
        "sweeps": [str(p) for p in sweep.paths],
        "games": len(games),
        "invalid_games_left_out": 0 if keep_invalid else invalid,
        "conditions": conditions,
        "models": models,
        "policies": models,
        "consensus": consensus_rates(games, conditions, models),
        "paper_models": paper_models(games, models),
        "firth": firth_part(games, formula),
        "private_messages": private_messages_part(games, models),
        "stubbornness_vs_consensus": stubbornness_per_model(games, models),
        "largest_component": components_per_model(games, conditions, models),
        "rounds_to_consensus": rounds_to_consensus(games, conditions, models),
        "pseudo_equilibrium": pseudo_equilibrium_shares(games, conditions, models),
        "minority_design": minority_winners(games, models),
        "messages": message_counts(games, conditions, models),
        "update_schemes": scheme_comparison(games),
        "majority_following": majority_part(games, agents, sweep.table("edges") if agents is not None else None,
                                            models, max_transitions, chosen["sample_seed"], chosen["fit_seed"],
                                            max(1, int(chosen["fit_processes"]))),
    }
