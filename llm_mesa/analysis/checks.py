"""What every estimator checks first: a table that can answer the question asked.

Bad input raises :class:`AnalysisError`, a ``ValueError`` whose one-line message
names the fix; a study's report shows it as the reason a test was skipped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from llm_mesa.errors import LlmMesaError

__all__ = ["AnalysisError", "as_binary", "require_both_outcomes", "require_columns", "require_synchronous", "split_formula"]


class AnalysisError(LlmMesaError):
    """The table cannot answer the question asked; the message names the fix."""


def require_synchronous(game: str, update: str) -> None:
    """A fit of a game's decisions reads them round by round: under turns, the agents table does not keep the
    order the agents moved in, so what each one saw cannot be rebuilt."""
    if update != "synchronous":
        raise AnalysisError(f"fit reads synchronous rounds only; this {game} game took turns (update={update}), "
                            "whose order the agents table does not keep: fit a sweep played with update=synchronous")


def require_columns(table: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    """A non-empty DataFrame holding ``columns``."""
    if not isinstance(table, pd.DataFrame):
        raise AnalysisError(f"{what} needs a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in columns if c not in table.columns]
    if missing:
        have = ", ".join(map(str, table.columns)) or "no columns"
        raise AnalysisError(f"{what} needs column(s) {', '.join(map(repr, missing))}; the table has: {have}")
    if len(table) == 0:
        raise AnalysisError(f"{what} got an empty table; run some games first")


def as_binary(values: pd.Series, name: str, what: str) -> np.ndarray:
    """A bool/0-1 column as floats, refusing anything else."""
    if values.isna().any():
        raise AnalysisError(f"{what}: column {name!r} has {int(values.isna().sum())} missing value(s); drop or fill them")
    array = values.astype(float).to_numpy() if values.dtype != object else values.map(float).to_numpy()
    if not np.isin(array, (0.0, 1.0)).all():
        raise AnalysisError(f"{what}: column {name!r} must be boolean or 0/1")
    return array


def require_both_outcomes(y: np.ndarray, name: str, what: str) -> None:
    if y.min() == y.max():
        state = "true" if y[0] == 1 else "false"
        raise AnalysisError(
            f"{what}: {name!r} is {state} in all {len(y)} rows; the analysis needs both outcomes")


_FORMULA_SIDES = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*~(.+)$", re.S)


def split_formula(formula: str) -> tuple[str, str]:
    """``'outcome ~ terms'`` -> (outcome, terms); the outcome must be a plain column name."""
    match = _FORMULA_SIDES.match(formula)
    if not match:
        raise AnalysisError(f"formula {formula!r} must read 'outcome ~ terms' with a plain column name on the left")
    return match.group(1), match.group(2).strip()
