"""The studies' statistics over a sweep's results, in one command.

Examples:
  llm-mesa analyze runs/rules
  llm-mesa analyze runs/rules --formula 'consensus ~ C(topology) + C(policy)'
  llm-mesa analyze runs/qwen3b --json --out runs/qwen3b/analysis.json

Reads the games table of a sweep (``llm-mesa sweep --out DIR``) and reports:
the headline consensus table (successes / games per condition x policy); the
Firth logistic regression of consensus (coefficients, odds ratios with profile
CIs, LR chi-squared, pseudo-R2); the point-biserial correlation of each game's
stubbornness with consensus; Kruskal-Wallis of the largest same-colour component
across conditions and Mann-Whitney against the random-colouring baseline; and,
when the sweep kept the agents table (``--tables agents``), majority following
(mixed-effects logistic slope of choosing blue on the blue neighbour share).

The default formula is the study's (topology x communication, plus the other
condition factors and a fixed effect per policy), keeping only factors that take
more than one value in the table; the ones left out are named. Games marked
invalid (too many failed LLM decisions) are left out unless --keep-invalid.
A test that cannot run on these games (e.g. every game reached consensus) is
reported as skipped with its reason.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from llm_mesa.analysis import AnalysisError
from llm_mesa.models.consensus.analysis import (
    component_tests,
    firth_consensus_regression,
    majority_following,
    stubbornness_vs_consensus,
    transitions_from_rounds,
)

#: Condition factors of the games table, in the order the default formula names them.
FORMULA_FACTORS = ("topology", "communication", "preferences", "label", "direct_messages", "n", "policy")
#: Fewer finished games than this and no test can run: bad input, not a skipped test.
MIN_GAMES = 3
DEFAULT_MAX_TRANSITIONS = 20_000


class AnalyzeError(ValueError):
    """A sweep directory that cannot be analysed; the message names the fix."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("sweep", metavar="SWEEP_DIR", help="a sweep's output: the --out DIR (or FILE.parquet) of `llm-mesa sweep`")
    parser.add_argument("--formula", help="Firth regression formula, e.g. 'consensus ~ C(topology) * C(communication)' "
                                          "(default: the study's, adapted to what varies in the table)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument("--out", metavar="FILE.json", help="also write the JSON object to this file")
    parser.add_argument("--max-transitions", type=int, default=DEFAULT_MAX_TRANSITIONS,
                        help="majority following: fit on at most this many agent-round transitions, a random "
                             f"subsample drawn with --sample-seed (default {DEFAULT_MAX_TRANSITIONS}; 0 = all)")
    parser.add_argument("--sample-seed", type=int, default=0, help="seed of the transitions subsample (default 0)")
    parser.add_argument("--keep-invalid", action="store_true",
                        help="keep games marked invalid (too many failed LLM decisions) in the analysis")


# --- reading ----------------------------------------------------------------------------


def _manifest_path(out: Path) -> Path:
    return out.with_name(out.stem + ".manifest.json") if out.suffix == ".parquet" else out / "manifest.json"


def load_sweep(path: str | os.PathLike[str]) -> tuple[pd.DataFrame, pd.DataFrame | None, dict[str, Any]]:
    """The games table, the agents table (None when not kept) and the manifest of a sweep."""
    from llm_mesa.sweep import read_sweep

    out = Path(path)
    manifest_path = _manifest_path(out)
    if not out.exists() and not Path(str(out) + ".parts").exists():
        raise AnalyzeError(f"no sweep output at {str(out)!r}; pass the --out of `llm-mesa sweep`")
    if not manifest_path.exists():
        raise AnalyzeError(f"{str(out)!r} is not a sweep's output (no {manifest_path.name}); "
                           "pass the --out of `llm-mesa sweep`")
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, json.JSONDecodeError):
        raise AnalyzeError(f"cannot read {manifest_path}; it is not a sweep manifest") from None
    games = read_sweep(out, "games")
    if len(games) < MIN_GAMES:
        raise AnalyzeError(f"{str(out)!r} holds {len(games)} finished game(s); the statistics need at least "
                           f"{MIN_GAMES}: run (or resume) the sweep")
    if "consensus" not in games.columns:
        raise AnalyzeError(f"{str(out)!r} has no 'consensus' column; it is not a consensus-game sweep")
    kept = (manifest.get("execution") or {}).get("tables") or []
    agents = read_sweep(out, "agents") if "agents" in kept or (out / "agents").is_dir() else None
    if agents is not None and agents.empty:
        agents = None
    return games, agents, manifest


def load_edges(path: str | os.PathLike[str]) -> pd.DataFrame | None:
    """Each game's edges, when the sweep saved them (it does with the agents table)."""
    from llm_mesa.sweep import read_sweep

    out = Path(path)
    return read_sweep(out, "edges") if (out / "edges").is_dir() else None


def _ordered(values: pd.Series, preferred: list[str]) -> list[str]:
    present = list(dict.fromkeys(values.astype(str)))
    return [v for v in preferred if v in present] + sorted(v for v in present if v not in preferred)


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


def _game_graph(row: pd.Series, edges: pd.DataFrame | None = None):
    """The game's graph: from the sweep's saved edges, else redrawn as the model draws it.

    Sweeps that keep the agents table save each game's edges. For older sweeps
    the graph is redrawn: ``ConsensusModel`` builds its topology from its stdlib
    rng before anything else draws from it, so (topology, n, seed) fixes it.
    Custom graphs without saved edges cannot be had (None).
    """
    import networkx as nx

    from llm_mesa.graphs import build_topology

    if edges is not None:
        graph = nx.Graph()
        graph.add_nodes_from(range(int(row["n"])))
        graph.add_edges_from(zip(edges["source"].astype(int), edges["target"].astype(int)))
        return graph
    if str(row["topology"]) not in ("ba", "er", "ws", "caveman"):
        return None
    return build_topology(str(row["topology"]), int(row["n"]), random.Random(int(row["seed"])))


def sweep_transitions(games: pd.DataFrame, agents: pd.DataFrame,
                      edges: pd.DataFrame | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Majority-following transitions of every game whose graph can be redrawn and checked.

    A redrawn graph is checked against the game's own record: the largest
    same-colour component of the final colours on it must equal the game's
    ``largest_component``; a game that fails the check is left out and named.
    """
    from llm_mesa.models.consensus.measures import largest_same_colour_component

    by_game = {key: frame for key, frame in agents.groupby(["condition", "policy", "seed"], sort=False)}
    edges_by_game = ({key: frame for key, frame in edges.groupby(["condition", "policy", "seed"], sort=False)}
                     if edges is not None else {})
    frames, left_out = [], []
    for _, row in games.iterrows():
        key = (row["condition"], row["policy"], row["seed"])
        name = f"{key[0]}|{key[1]}|{key[2]}"
        rounds = by_game.get(key)
        graph = _game_graph(row, edges_by_game.get(key)) if rounds is not None else None
        if graph is None:
            left_out.append(name)
            continue
        last = rounds[rounds["round"] == rounds["round"].max()].sort_values("node")
        if graph.number_of_nodes() != len(last) or \
                largest_same_colour_component(graph, list(last["colour"]))[0] != int(row["largest_component"]):
            left_out.append(name)
            continue
        frames.append(transitions_from_rounds(rounds, graph, name))
    transitions = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return transitions, left_out


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


def analyze(path: str | os.PathLike[str], formula: str | None = None, *,
            max_transitions: int = DEFAULT_MAX_TRANSITIONS, sample_seed: int = 0,
            keep_invalid: bool = False) -> dict[str, Any]:
    """Everything the command reports, as one JSON-ready dict."""
    if max_transitions < 0:
        raise AnalyzeError(f"--max-transitions must be 0 (all) or positive (got {max_transitions})")
    games, agents, manifest = load_sweep(path)
    invalid = int(games["invalid"].fillna(False).astype(bool).sum()) if "invalid" in games.columns else 0
    if invalid and not keep_invalid:
        games = games[~games["invalid"].fillna(False).astype(bool)].reset_index(drop=True)
        if len(games) < MIN_GAMES:
            raise AnalyzeError(f"only {len(games)} valid game(s) left after dropping {invalid} invalid ones; "
                               "pass --keep-invalid or run more games")
    if formula:
        _check_formula(formula, games)
    grid = manifest.get("grid") or {}
    conditions = _ordered(games["condition"], list(grid.get("conditions") or []))
    policies = _ordered(games["policy"], list(grid.get("policies") or []))
    report = {
        "sweep": str(path),
        "games": len(games),
        "invalid_games_left_out": 0 if keep_invalid else invalid,
        "conditions": conditions,
        "policies": policies,
        "consensus": consensus_counts(games, conditions, policies),
        "firth": firth_part(games, formula),
        "stubbornness_vs_consensus": stubbornness_part(games),
        "largest_component": components_part(games),
        "majority_following": majority_part(games, agents, load_edges(path) if agents is not None else None,
                                            max_transitions, sample_seed),
    }
    return _json_ready(report)


def _json_ready(value: Any) -> Any:
    """Plain JSON: numpy scalars unwrapped, NaN and infinities as null."""
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


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


def _write_json_atomic(path: Path, text: str) -> None:
    if not path.parent.exists():
        raise AnalyzeError(f"folder of --out {str(path)!r} does not exist; create it first")
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def run(args: argparse.Namespace) -> int:
    report = analyze(args.sweep, args.formula, max_transitions=args.max_transitions,
                     sample_seed=args.sample_seed, keep_invalid=args.keep_invalid)
    text = json.dumps(report, indent=2)
    if args.out:
        _write_json_atomic(Path(args.out), text + "\n")
    print(text if args.json else format_report(report))
    return 0


__all__ = ["configure", "run", "analyze", "load_sweep", "default_formula", "format_report",
           "sweep_transitions", "AnalyzeError"]


if __name__ == "__main__":
    from llm_mesa.cli import main

    sys.exit(main(["analyze", *sys.argv[1:]]))
