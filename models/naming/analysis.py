"""SIGN's statistics over naming sweeps, and its report of ``llm-mesa analyze``.

The study reports, per condition, the mean and SD over seeds of the final
agreement and of what reaching 50, 60 and 70 % agreement took: rounds,
completion tokens and prompt + completion tokens (``naming_summary``).
``llm-mesa analyze`` on naming sweeps prints them per condition and model (an
LLM's name, or the rule speaker), with the agreement curves per round (mean and
SD over seeds) and against cumulative tokens, the decoding outcome shares per
mode, and our final agreement per mode beside the study's
(``analysis_curves``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from llm_mesa.analysis import AnalysisError
from llm_mesa.analysis.checks import require_columns
from llm_mesa.analysis.sweep_data import SweepData

from .analysis_curves import agreement_curves, mixed_population_breakdown, outcome_shares, published_comparison

__all__ = ["NAMING_CONDITION_COLUMNS", "analyze", "format_report", "naming_summary"]


NAMING_CONDITION_COLUMNS = ("model", "speaker", "policy", "pairing", "n", "alpha", "mode", "memory")


def naming_summary(
    runs: pd.DataFrame,
    condition_cols: Sequence[str] | None = None,
    *,
    agreement_col: str = "agreement_final",
    tokens_cols: Sequence[str] | None = None,
    seed_col: str = "seed",
) -> pd.DataFrame:
    """Mean and SD over seeds of final agreement and tokens-to-convergence, per condition.

    ``condition_cols`` defaults to those of ``NAMING_CONDITION_COLUMNS`` that the
    table has (the naming game's summary row names them so). ``tokens_cols``
    defaults to every column starting with ``tokens_to_`` or ``total_tokens_to_``
    (completion, and prompt + completion, tokens until 50/60/70 % agreement). A run
    that never reached a threshold has None/NaN there: means and SDs are over the
    runs that did, and ``<col>_reached`` counts them. SDs use ddof = 1 (NaN with
    a single seed).
    """
    what = "naming_summary"
    if condition_cols is None:
        require_columns(runs, [], what)
        condition_cols = [c for c in NAMING_CONDITION_COLUMNS if c in runs.columns]
        if not condition_cols:
            raise AnalysisError(f"{what}: no condition column found (looked for {', '.join(NAMING_CONDITION_COLUMNS)}); pass condition_cols")
    require_columns(runs, [*condition_cols, agreement_col, seed_col], what)
    if tokens_cols is None:
        tokens_cols = [c for c in runs.columns if str(c).startswith(("tokens_to_", "total_tokens_to_"))]
    else:
        require_columns(runs, tokens_cols, what)
    measures = [agreement_col, *tokens_cols]
    grouped = runs.groupby(list(condition_cols), sort=True, observed=True, dropna=False)
    summary = grouped[seed_col].nunique().rename("n_seeds").to_frame()
    for column in measures:
        values = pd.to_numeric(runs[column], errors="coerce").groupby(
            [runs[c] for c in condition_cols], sort=True, observed=True, dropna=False)
        summary[f"{column}_mean"] = values.mean()
        summary[f"{column}_sd"] = values.std(ddof=1)
        if column != agreement_col:
            summary[f"{column}_reached"] = values.count()
    return summary.reset_index()


# --- the report of `llm-mesa analyze` ------------------------------------------------------

#: what reaching a threshold took, as the games table names it (``<prefix><threshold>``), and as the report says it
FAMILIES = {"rounds_to_": "rounds", "tokens_to_": "completion tokens", "total_tokens_to_": "prompt + completion tokens"}


def _thresholds(games: pd.DataFrame) -> list[int]:
    found = {int(m.group(1)) for c in games.columns if (m := re.fullmatch(r"(?:total_)?(?:tokens|rounds)_to_(\d+)", str(c)))}
    return sorted(found)


def analyze(sweep: SweepData, options: Mapping[str, Any]) -> dict[str, Any]:
    """Final agreement and rounds/tokens to each threshold: mean, SD and runs that got there, per condition and policy."""
    if options:
        raise AnalysisError(f"the naming analysis takes no option (got {', '.join(sorted(options))})")
    games = sweep.games
    if "agreement_final" not in games.columns:
        raise AnalysisError(f"{str(sweep.path)!r} has no 'agreement_final' column; it is not a naming-game sweep")
    thresholds = _thresholds(games)
    measures = [f"{prefix}{t}" for prefix in FAMILIES for t in thresholds if f"{prefix}{t}" in games.columns]
    conditions, models = sweep.ordered("condition"), sweep.ordered("model")
    try:
        summary = naming_summary(games, ["condition", "model"], tokens_cols=measures)
    except AnalysisError as exc:
        raise AnalysisError(str(exc)) from None
    order = {(c, p): i for i, (c, p) in enumerate((c, p) for c in conditions for p in models)}
    summary = summary.assign(_order=[order.get((str(c), str(p)), len(order))
                                     for c, p in zip(summary["condition"], summary["model"])])
    summary = summary.sort_values("_order", kind="stable").drop(columns="_order")
    summary.insert(2, "policy", summary["model"])  # the name older reports used
    return {
        "sweep": sweep.name,
        "sweeps": [str(p) for p in sweep.paths],
        "games": len(games),
        "conditions": conditions,
        "models": models,
        "policies": models,
        "thresholds": thresholds,
        "tokens_spent": int(pd.to_numeric(games["total_tokens"]).sum()) if "total_tokens" in games.columns else None,
        "summary": summary.to_dict(orient="records"),
        "curves": agreement_curves(games, sweep.table("rounds")),
        "outcomes": outcome_shares(games, models),
        "mixed_populations": mixed_population_breakdown(games, sweep.table("speakers")),
        "published": published_comparison(games, models),
    }


def _cell(row: Mapping[str, Any], column: str, digits: int, reached: bool = True) -> str:
    mean, sd = row.get(f"{column}_mean"), row.get(f"{column}_sd")
    seeds = f" ({row[f'{column}_reached']}/{row['n_seeds']})" if reached else ""
    if mean is None:
        return "never" + seeds
    spread = "NA" if sd is None else f"{sd:,.{digits}f}"
    return f"{mean:,.{digits}f} ± {spread}{seeds}"


def format_report(report: Mapping[str, Any]) -> str:
    rows = report["summary"]
    index = pd.MultiIndex.from_tuples([(r["condition"], r["model"]) for r in rows], names=["condition", "model"])
    lines = [f"sweep {report['sweep']}: {report['games']} games of the naming game", "",
             "final agreement (mean ± SD over seeds):",
             pd.DataFrame({"seeds": [r["n_seeds"] for r in rows],
                           "agreement": [_cell(r, "agreement_final", 3, reached=False) for r in rows]},
                          index=index).to_string()]
    thresholds = "/".join(map(str, report["thresholds"]))
    for prefix, what in FAMILIES.items():
        columns = [f"{prefix}{t}" for t in report["thresholds"] if rows and f"{prefix}{t}_mean" in rows[0]]
        if not columns or (prefix != "rounds_to_" and report.get("tokens_spent") == 0):
            continue
        heading = f"{what} to {thresholds} % agreement"
        table = pd.DataFrame({f"{c.rsplit('_', 1)[1]}%": [_cell(r, c, 1 if prefix == "rounds_to_" else 0) for r in rows]
                              for c in columns}, index=index)
        lines += ["", f"{heading} (mean ± SD over the seeds that got there; reached/seeds):", table.to_string()]
    if report.get("tokens_spent") == 0:
        lines += ["", f"tokens to {thresholds} % agreement: none spent (no LLM speaker)"]
    return "\n".join(lines + _more_lines(report))


def _more_lines(report: Mapping[str, Any]) -> list[str]:
    """Decoding outcomes, our agreement beside the study's, the curves' size, mixed populations."""
    lines = ["", "decoding outcome shares per mode (95 % Wilson intervals):"]
    outcomes = report["outcomes"]
    if isinstance(outcomes, Mapping):
        lines.append(f"  skipped: {outcomes['skipped']}")
    else:
        table = pd.DataFrame(outcomes).pivot_table(index=["mode", "model"], columns="outcome", values="share",
                                                   sort=False)
        lines.append(table.to_string(float_format=lambda v: f"{v:.3f}"))
    lines += ["", "final agreement per mode beside the study's (Schema 0.556-0.639, NL-SW 0.278-0.333, NL 0.111-0.125):"]
    published = report["published"]
    lines.append(pd.DataFrame(published).set_index(["mode", "model"]).to_string(float_format=lambda v: f"{v:.3g}")
                 if published else "  (no game of a study mode)")
    curves = report["curves"]
    lines += ["", "agreement per round (mean ± SD over seeds) and against cumulative tokens: "
              + (f"skipped: {curves['skipped']}" if isinstance(curves, Mapping)
                 else f"{len(curves)} points; see --json or `llm-mesa report`")]
    mixed = report["mixed_populations"]
    lines += ["", "mixed populations, per model: " + (f"skipped: {mixed['skipped']}" if isinstance(mixed, Mapping)
                                                    else f"{len(mixed)} rows; see --json")]
    return lines
