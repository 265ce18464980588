"""Point-biserial correlation of a per-game measure with a binary outcome (``scipy.stats``).

Bad input raises :class:`~llm_mesa.analysis.checks.AnalysisError`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from llm_mesa.analysis.checks import AnalysisError, as_binary, require_both_outcomes, require_columns

__all__ = ["PointBiserialResult", "point_biserial"]

#: fewer rows with a value than this and the correlation is refused
MIN_ROWS = 3


@dataclass(frozen=True)
class PointBiserialResult:
    """Point-biserial r and its p-value over ``n`` rows; ``n_dropped`` rows had no value."""

    r: float
    p: float
    n: int
    n_dropped: int


def point_biserial(data: pd.DataFrame, binary_col: str, value_col: str, *,
                   what: str = "point_biserial") -> PointBiserialResult:
    """Correlate ``value_col`` with the bool/0-1 ``binary_col``.

    Rows where ``value_col`` is missing (None/NaN: undefined) are left out and
    counted in ``n_dropped``. ``what`` names the caller in error messages.
    """
    require_columns(data, [value_col, binary_col], what)
    values = pd.to_numeric(data[value_col], errors="coerce")
    keep = values.notna().to_numpy()
    if keep.sum() < MIN_ROWS:
        raise AnalysisError(f"{what}: only {int(keep.sum())} game(s) have a {value_col!r} value; need at least {MIN_ROWS}")
    flag = as_binary(data.loc[keep, binary_col], binary_col, what)
    require_both_outcomes(flag, binary_col, what)
    kept = values[keep].to_numpy(dtype=float)
    if np.ptp(kept) == 0:
        raise AnalysisError(f"{what}: {value_col!r} is the same in every game; a correlation needs variation")
    result = stats.pointbiserialr(flag, kept)
    return PointBiserialResult(r=float(result.statistic), p=float(result.pvalue),
                               n=int(keep.sum()), n_dropped=int((~keep).sum()))
