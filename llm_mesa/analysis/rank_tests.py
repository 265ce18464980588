"""Rank tests of a per-game measure: across conditions, and against a per-game baseline.

Kruskal-Wallis H (``scipy.stats.kruskal``) asks whether the conditions share one
distribution; within each condition, Mann-Whitney U (``scipy.stats.mannwhitneyu``)
compares the games' values with their baselines, Holm-adjusted across
conditions. Bad input raises :class:`~llm_mesa.analysis.checks.AnalysisError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from llm_mesa.analysis.checks import AnalysisError, require_columns

__all__ = ["RankTestsResult", "rank_tests"]


@dataclass(frozen=True)
class RankTestsResult:
    """A measure across conditions, and against its baseline.

    ``kruskal_*``: Kruskal-Wallis H test that all conditions share one
    distribution (df = conditions - 1). ``per_condition``: for each condition,
    Mann-Whitney U of its games' values against their baselines, with medians
    and Holm-adjusted p-values across conditions.
    """

    kruskal_h: float
    kruskal_p: float
    kruskal_df: int
    per_condition: pd.DataFrame


def rank_tests(
    data: pd.DataFrame,
    value_col: str,
    baseline_col: str,
    group_col: str | Sequence[str],
    *,
    alternative: str = "two-sided",
    what: str = "rank_tests",
) -> RankTestsResult:
    """Does ``value_col`` differ across the conditions of ``group_col``, and from ``baseline_col``?

    A condition is one column or several; several are joined as ``"a/b/c"`` and
    the result's condition column is then called ``condition``. ``alternative``
    is passed to Mann-Whitney ("greater": values larger than their baseline).
    Rows without a value or a baseline (None/NaN) are left out. ``what`` names
    the caller in error messages.
    """
    from statsmodels.stats.multitest import multipletests

    group_cols = [group_col] if isinstance(group_col, str) else list(group_col)
    require_columns(data, [baseline_col, value_col, *group_cols], what)
    data = data[[*group_cols, value_col, baseline_col]].dropna(subset=[value_col, baseline_col])
    if data.empty:
        raise AnalysisError(f"{what}: every row misses {value_col!r} or {baseline_col!r}")
    condition = data[group_cols].astype(str).agg("/".join, axis=1)
    label = group_cols[0] if len(group_cols) == 1 else "condition"
    groups = {name: frame for name, frame in data.groupby(condition, sort=True)}
    if len(groups) < 2:
        only = next(iter(groups))
        raise AnalysisError(f"{what}: needs at least two conditions in {label!r}; got only {only!r}")
    samples = [frame[value_col].to_numpy(dtype=float) for frame in groups.values()]
    if np.ptp(np.concatenate(samples)) == 0:
        raise AnalysisError(f"{what}: {value_col!r} is the same in every game; the tests need variation")
    kruskal = stats.kruskal(*samples)

    rows = []
    for name, frame in groups.items():
        values = frame[value_col].to_numpy(dtype=float)
        baseline = frame[baseline_col].to_numpy(dtype=float)
        mwu = stats.mannwhitneyu(values, baseline, alternative=alternative)
        rows.append({label: name, "n": len(values),
                     "median": float(np.median(values)), "baseline_median": float(np.median(baseline)),
                     "u": float(mwu.statistic), "p": float(mwu.pvalue)})
    per_condition = pd.DataFrame(rows)
    per_condition["p_holm"] = multipletests(per_condition["p"].to_numpy(), method="holm")[1]
    return RankTestsResult(kruskal_h=float(kruskal.statistic), kruskal_p=float(kruskal.pvalue),
                           kruskal_df=len(groups) - 1, per_condition=per_condition)
