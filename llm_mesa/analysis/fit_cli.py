"""Which rule plays like these agents: each rule's parameters fitted to RUNS' decisions, compared by AIC, checked by play.

Examples:
  llm-mesa fit runs/llm                                            # a sweep played with --tables agents
  llm-mesa fit runs/llm --rules 'RULE;RULE:PARAM=0.5' --json > fits.json
  llm-mesa fit runs/lab1 runs/lab2                                 # lab sessions: the seats are "people"
  llm-mesa fit people.csv --game GAME --edges network.csv         # people's own data (docs/fit.md)

RUNS is a sweep, a run folder, a lab session or a CSV file of decisions, of one game. For each
policy of RUNS (LLM agents, people or a rule) and each condition, each rule (--rules, default:
every rule of the game that says how likely its decisions are) gets its parameters by maximum
likelihood with 95 % profile-likelihood intervals, its log-likelihood, AIC and number of decisions;
a rule that cannot explain some decision at any parameter value gets a trembling-hand error rate.
Then the fitted rule plays RUNS' own designs and seeds, and each headline outcome (--measures) is
tested against RUNS' (Fisher's exact test for yes/no outcomes, Mann-Whitney for numbers): a small p
refutes the rule. --json prints {"fits": [...]}; `llm-mesa report ... --fit FILE` shows them.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

import pandas as pd

from llm_mesa.analysis.checks import AnalysisError

__all__ = ["configure", "fit_runs", "format_fits", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUNS",
                        help="a sweep (--tables agents), a run folder, a lab session or a CSV file of decisions; several "
                             "of one game are read together")
    parser.add_argument("--rules", default=None, metavar="'A;B'",
                        help="the rules to fit, ';'-separated specs (a parameter given is held fixed, e.g. "
                             "'RULE:NAME=0.5'); default: every rule of the game that declares a distribution")
    parser.add_argument("--measures", default=None, metavar="A,B",
                        help="the outcomes the check compares (default: the game's headline measure and rounds)")
    parser.add_argument("--no-check", action="store_true", help="fit only: do not play the fitted rules again")
    parser.add_argument("--game", default=None, help="the game a CSV file's decisions were made in (else its 'game' column)")
    parser.add_argument("--edges", default=None, metavar="FILE.csv",
                        help="a CSV file's networks (seed, source, target); default: rebuilt from parameters and seed")
    parser.add_argument("--json", action="store_true", help='print {"fits": [...]} as JSON instead of a table')


def _rules(game: Any, given: str | None) -> list[str]:
    from llm_mesa.analysis.fit import declares_distribution
    from llm_mesa.policy import PolicyError, make_policy, registered_rule_policies

    if given is not None:
        specs = [s.strip() for s in given.split(";") if s.strip()]
        if not specs:
            named = ";".join(registered_rule_policies(game)[:2])
            raise AnalysisError(f"--rules names no rule; give specs separated by ';' (e.g. '{named}')")
        for spec in specs:
            try:
                policy = make_policy(spec, game)
            except PolicyError as exc:
                raise AnalysisError(f"--rules: {exc}") from None
            if not declares_distribution(policy):
                raise AnalysisError(f"--rules: the {game.name} rule {spec!r} does not say how likely its decisions are "
                                    "(no distribution), so it cannot be fitted; leave it out")
        return specs
    specs = [n for n in registered_rule_policies(game) if declares_distribution(make_policy(n, game))]
    if not specs:
        raise AnalysisError(f"no rule of the {game.name} game declares how likely its decisions are (Policy.distribution); "
                            "give one, or --rules")
    return specs


def fit_runs(paths: Sequence[str], rules: str | None = None, measures: str | None = None, *, check: bool = True,
             game: str | None = None, edges: str | None = None) -> list[dict[str, Any]]:
    """Every fit of RUNS, in the shape of ``--json``'s ``fits`` (with ``note``: why a cell has no check)."""
    from llm_mesa.analysis.fit import fit_rule
    from llm_mesa.analysis.fit_check import check as check_by_play
    from llm_mesa.analysis.fit_check import default_measures
    from llm_mesa.analysis.fit_data import read_runs

    played, cells = read_runs(paths, game, edges)
    specs = _rules(played, rules)
    outcomes = [m.strip() for m in measures.split(",") if m.strip()] if measures else default_measures(played)
    fits = []
    for cell in cells:
        for spec in specs:
            fitted = fit_rule(played, spec, cell.pairs)
            checks, note = check_by_play(cell, fitted.spec, fitted.error_rate, outcomes) if check else ([], "not checked")
            fits.append({"policy": cell.policy, "condition": cell.condition_json(), **fitted.json(), "checks": checks,
                         "note": note, "game": played.name})
    return fits


def public(fit: dict[str, Any]) -> dict[str, Any]:
    """A fit in the shape ``--json`` promises."""
    keys = ("policy", "condition", "rule", "parameters", "log_likelihood", "aic", "decisions", "checks")
    return {k: fit[k] for k in keys}


def _number(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:.1f}"


def parameter_words(parameters: dict[str, dict[str, Any]]) -> str:
    return "; ".join(f"{k} {_number(v['estimate'])} [{_number(v['ci'][0])}, {_number(v['ci'][1])}]"
                     for k, v in parameters.items()) or "-"


def fits_frame(fits: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """One row per fit, best AIC first within each policy and condition (``delta_aic`` 0 for the best)."""
    rows = []
    for fit in fits:
        rows.append({"policy": fit["policy"], "condition": fit["condition"]["name"], "rule": fit["rule"],
                     "parameters (95% CI)": parameter_words(fit["parameters"]),
                     "log_likelihood": round(fit["log_likelihood"], 2), "aic": round(fit["aic"], 2),
                     "decisions": fit["decisions"],
                     "checks (p)": "; ".join(f"{c['measure']} {c['p']:.3g}" for c in fit["checks"]) or fit.get("note", "")})
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    best = frame.groupby(["policy", "condition"], sort=False)["aic"].transform("min")
    frame.insert(6, "delta_aic", (frame["aic"] - best).round(2))
    order = {p: i for i, p in enumerate(dict.fromkeys(frame["policy"]))}
    return frame.assign(_o=frame["policy"].map(order)).sort_values(["_o", "condition", "aic"], kind="stable") \
        .drop(columns="_o").reset_index(drop=True)


def format_fits(fits: Sequence[dict[str, Any]]) -> str:
    frame = fits_frame(fits)
    if frame.empty:
        return "(no fit)"
    with pd.option_context("display.max_colwidth", 80, "display.width", 250):
        return frame.to_string(index=False)


def run(args: argparse.Namespace) -> int:
    fits = fit_runs(args.runs, args.rules, args.measures, check=not args.no_check, game=args.game, edges=args.edges)
    if args.json:
        print(json.dumps({"fits": [public(f) for f in fits]}, indent=2, default=str, allow_nan=False))
    else:
        print(f"{fits[0]['game'] if fits else ''} fits: maximum likelihood, 95% profile-likelihood intervals, AIC "
              "(lowest first); checks: p of Fisher's exact / Mann-Whitney tests of the rule's replayed games against RUNS'")
        print(format_fits(fits))
    return 0
