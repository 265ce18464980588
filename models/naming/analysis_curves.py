"""SIGN's round-by-round statistics: agreement curves, agreement against tokens, decoding outcomes.

* :func:`agreement_curves`: per condition x model and round, the mean and SD over
  seeds of the agreement (read on each game's convergence basis: names said in
  the round under ``all`` pairing, each agent's latest name under ``one``), with
  the mean cumulative completion and prompt + completion tokens at that round:
  the agreement curve, and agreement against cumulative tokens;
* :func:`outcome_shares`: the share of utterances per decoding outcome (schema,
  retry, salvage, free text, none) per mode x model, with Wilson intervals;
* :func:`mixed_population_breakdown`: per-speaker figures of mixed populations,
  from a per-speaker table when a sweep kept one.

``SWEEP_KEY`` columns identify one game's rows across tables.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from llm_mesa.analysis.proportions import wilson_interval

__all__ = ["agreement_curves", "mixed_population_breakdown", "outcome_shares", "published_comparison"]

SWEEP_KEY = ("sweep", "condition", "policy", "seed")
BASIS_COLUMNS = {"said": "agreement", "latest": "agreement_latest", "held": "held_share"}
OUTCOMES = ("schema", "retry", "salvage", "text", "none")


def agreement_curves(games: pd.DataFrame, rounds: pd.DataFrame | None) -> Any:
    """Mean and SD over seeds of agreement, and mean cumulative tokens, per condition x model x round."""
    if rounds is None:
        return {"skipped": "the sweep did not keep the rounds table; rerun it with --tables rounds (into a new --out)"}
    key = [c for c in SWEEP_KEY if c in games.columns and c in rounds.columns]
    meta = games[[*key, "model", *(["convergence_basis"] if "convergence_basis" in games else [])]]
    frame = rounds.merge(meta, on=key, how="inner")
    if frame.empty:
        return {"skipped": "no round of the rounds table belongs to a game of the games table"}
    basis = frame["convergence_basis"].fillna("said") if "convergence_basis" in frame else pd.Series("said", frame.index)
    frame["agreement_basis"] = np.select([basis == b for b in BASIS_COLUMNS],
                                         [frame[c].astype(float) for c in BASIS_COLUMNS.values()], np.nan)
    grouped = frame.groupby(["condition", "model", "round"], sort=False)
    curves = grouped.agg(seeds=("seed", "nunique"), agreement_mean=("agreement_basis", "mean"),
                         agreement_sd=("agreement_basis", "std"),
                         completion_tokens_mean=("cum_completion_tokens", "mean"),
                         total_tokens_mean=("cum_total_tokens", "mean")).reset_index()
    return curves.to_dict(orient="records")


def _outcome_counts(value: Any) -> dict[str, int]:
    if isinstance(value, str):
        value = json.loads(value)
    return {o: int((value or {}).get(o, 0)) for o in OUTCOMES}


def outcome_shares(games: pd.DataFrame, models: Sequence[str]) -> Any:
    """Share of utterances per decoding outcome, per mode x model (summed over games), Wilson intervals."""
    if "outcomes" not in games.columns or "mode" not in games.columns:
        return {"skipped": "the games table has no decoding outcome counts"}
    counts = pd.DataFrame([_outcome_counts(v) for v in games["outcomes"]], index=games.index)
    rows = []
    for mode in sorted(games["mode"].astype(str).unique()):
        for m in models:
            mask = (games["mode"].astype(str) == mode) & (games["model"] == m)
            if not mask.any():
                continue
            sums = counts[mask].sum()
            total = int(sums.sum())
            for outcome in OUTCOMES:
                low, high = wilson_interval(int(sums[outcome]), total) if total else (None, None)
                rows.append({"mode": mode, "model": m, "outcome": outcome, "count": int(sums[outcome]),
                             "utterances": total, "share": sums[outcome] / total if total else None,
                             "ci_low": low, "ci_high": high})
    return rows


def mixed_population_breakdown(games: pd.DataFrame, speakers: pd.DataFrame | None) -> Any:
    """Per-model figures inside mixed populations (several speakers in one game), when a sweep kept them."""
    if speakers is None or speakers.empty:
        return {"skipped": "no game of these sweeps kept a per-speaker table (mixed populations: sweep a "
                           "policy 'A + B' with --tables speakers, as experiments/sign-mixed.toml does)"}
    group = [c for c in ("condition", "speaker") if c in speakers.columns]
    numeric = [c for c in speakers.columns if c not in (*group, *SWEEP_KEY) and
               pd.api.types.is_numeric_dtype(speakers[c])]
    return speakers.groupby(group)[numeric].mean().reset_index().to_dict(orient="records")


#: SPEC part B, "Headline results": final agreement per mode (the range over N, alpha and models)
PUBLISHED_AGREEMENT = {"schema": (0.556, 0.639), "nl-sw": (0.278, 0.333), "nl": (0.111, 0.125)}
PUBLISHED_TOKENS_TO_50 = {"schema": "about 10^4", "nl": "10^5 to 10^6"}


def published_comparison(games: pd.DataFrame, models: Sequence[str]) -> list[dict[str, Any]]:
    """Our final agreement per mode x model (mean, min and max over conditions' means) beside the study's range."""
    rows = []
    if "mode" not in games.columns:
        return rows
    for mode in ("schema", "nl-sw", "nl"):
        for m in models:
            sub = games[(games["mode"].astype(str) == mode) & (games["model"] == m)]
            if sub.empty:
                continue
            means = sub.groupby("condition")["agreement_final"].mean()
            spent = sub[pd.to_numeric(sub["total_tokens"]) > 0] if "total_tokens" in sub else sub.iloc[:0]
            reached = spent["tokens_to_50"].dropna() if "tokens_to_50" in spent else pd.Series(dtype=float)
            low, high = PUBLISHED_AGREEMENT[mode]
            rows.append({"mode": mode, "model": m, "games": len(sub),
                         "agreement_mean": float(sub["agreement_final"].mean()),
                         "agreement_min": float(means.min()), "agreement_max": float(means.max()),
                         "published_low": low, "published_high": high,
                         "reached_70": int(sub["rounds_to_70"].notna().sum()) if "rounds_to_70" in sub else None,
                         "tokens_to_50_median": float(reached.median()) if len(reached) else None,
                         "published_tokens_to_50": PUBLISHED_TOKENS_TO_50.get(mode, "")})
    return rows
