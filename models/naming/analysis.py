"""SIGN's statistics over tidy run tables.

The study reports, per condition, the mean and SD over seeds of the final
agreement and of what reaching 50, 60 and 70 % agreement took
(``naming_summary``).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from llm_mesa.analysis.checks import AnalysisError, require_columns

__all__ = ["NAMING_CONDITION_COLUMNS", "naming_summary"]


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
