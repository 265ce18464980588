"""Proportions with Wilson intervals, and p-values adjusted for multiple tests.

* :func:`wilson_interval`: the Wilson score interval of a proportion
  (``statsmodels.stats.proportion.proportion_confint``); it stays inside [0, 1]
  and is informative at 0/30 and 30/30, where the Wald interval collapses.
* :func:`adjust_pvalues`: Bonferroni (as studies often correct) and Holm
  (uniformly more powerful, same family-wise guarantee) over one family of tests
  (``statsmodels.stats.multitest.multipletests``); missing p-values stay missing
  and do not count in the family.
"""

from __future__ import annotations

import gc
from collections.abc import Sequence

import numpy as np

from llm_mesa.analysis.checks import AnalysisError

__all__ = ["adjust_pvalues", "wilson_interval"]


def wilson_interval(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of ``successes``/``n`` at confidence ``level``; (NaN, NaN) when n = 0."""
    from statsmodels.stats.proportion import proportion_confint

    if not 0 < level < 1:
        raise AnalysisError(f"wilson_interval: level must lie in (0, 1) (got {level})")
    if n < 0 or successes < 0 or successes > n:
        raise AnalysisError(f"wilson_interval: need 0 <= successes <= n (got {successes}/{n})")
    if n == 0:
        return float("nan"), float("nan")
    low, high = proportion_confint(int(successes), int(n), alpha=1 - level, method="wilson")
    # at 0/n and n/n the bound is exactly the rate (rounding gives +-1e-17 there)
    low = 0.0 if successes == 0 else min(max(float(low), 0.0), 1.0)
    high = 1.0 if successes == n else min(max(float(high), 0.0), 1.0)
    return low, high


def adjust_pvalues(pvalues: Sequence[float | None]) -> dict[str, list[float | None]]:
    """Bonferroni- and Holm-adjusted p-values of one family, in the order given.

    ``None``/NaN entries (tests that could not run) are left out of the family and
    come back as None.
    """
    from statsmodels.stats.multitest import multipletests

    values = np.array([np.nan if p is None else float(p) for p in pvalues], dtype=float)
    present = ~np.isnan(values)
    out = {"bonferroni": [None] * len(values), "holm": [None] * len(values)}
    if present.any():
        gc.freeze()  # statsmodels' Holm runs gc.collect() on every call: a full pass over the whole heap (~0.1 s)
        try:
            for method in ("bonferroni", "holm"):
                adjusted = multipletests(values[present], method=method)[1]
                for index, value in zip(np.flatnonzero(present), adjusted):
                    out[method][index] = float(value)
        finally:
            gc.unfreeze()
    return out
