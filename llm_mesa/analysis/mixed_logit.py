"""Mixed-effects logistic regression: fixed effects plus random intercepts per group.

The model is statsmodels' ``BinomialBayesMixedGLM`` (variational Bayes), built from our own
design matrices rather than its ``from_formula``, evaluated and fitted as
``llm_mesa.analysis.vb_intercepts`` says (fast, and converged only where it really is):

* **Sparse random-effect design.** ``from_formula`` builds each group's indicator
  matrix dense (rows x levels, 8 bytes a cell) before statsmodels turns it sparse:
  20,000 transitions with one intercept per agent and game took 9 GB. Here each
  group is a CSR indicator matrix (one non-zero per row), so memory grows with the
  rows, not rows x levels.
* **Seeded.** ``fit_vb`` draws the starting posterior SDs from fresh OS entropy
  unless given a generator, so the same rows gave slopes 12.16, 13.27 and 14.15 on
  reruns; ``seed`` fixes that draw, and levels are coded in sorted order, so the
  same rows give the same numbers, whatever the row order of the table.

Random intercepts absorb that some units (games, agents) lean towards one outcome
whatever the predictors, so the fixed slopes measure the predictors themselves.
Bad input raises :class:`~llm_mesa.analysis.checks.AnalysisError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import sparse

from llm_mesa.analysis.checks import AnalysisError, as_binary, require_both_outcomes, require_columns, split_formula
from llm_mesa.analysis.vb_intercepts import FitReport, fit_intercepts, intercepts_model

__all__ = ["MixedLogitResult", "mixed_logit", "random_intercept_codes", "random_intercept_design"]


@dataclass(frozen=True)
class MixedLogitResult:
    """Posterior summaries of a random-intercept logistic regression.

    ``fixed_effects`` has one row per fixed term (``Intercept`` first) with the
    posterior ``mean`` and ``sd`` (log-odds). ``random_effect_sd`` maps each
    random-intercept group to the posterior mean of its standard deviation;
    ``n_groups`` to its number of levels. ``converged`` is the fit's verdict, ``report``
    how it was reached (every attempt, the warnings raised); ``seed`` the seed of the
    starting values.
    """

    formula: str
    fixed_effects: pd.DataFrame
    random_effect_sd: dict[str, float]
    n_groups: dict[str, int]
    nobs: int
    converged: bool = True
    seed: int = 0
    report: FitReport | None = None

    @property
    def params(self) -> pd.Series:
        return self.fixed_effects["mean"]


def random_intercept_codes(data: pd.DataFrame, groups: Mapping[str, Sequence[str]],
                           what: str) -> tuple[np.ndarray, np.ndarray, dict[str, int]]:
    """Each row's random-intercept column per group (rows x groups; levels in sorted order, the
    groups' columns one after another), the group index of each column, and level counts."""
    columns, ident, n_groups, offset = [], [], {}, 0
    for index, (name, cols) in enumerate(groups.items()):
        key = data[cols[0]].astype(str).to_numpy(dtype=object)
        for col in cols[1:]:
            key = key + ":" + data[col].astype(str).to_numpy(dtype=object)
        codes, levels = pd.factorize(pd.Series(key), sort=True)
        if len(levels) < 2:
            raise AnalysisError(f"{what}: group {name!r} has a single level; random intercepts need several")
        n_groups[name] = len(levels)
        columns.append(codes.astype(np.int64) + offset)
        ident.append(np.full(len(levels), index, dtype=np.int64))
        offset += len(levels)
    return np.column_stack(columns), np.concatenate(ident), n_groups


def random_intercept_design(data: pd.DataFrame, groups: Mapping[str, Sequence[str]],
                            what: str) -> tuple[sparse.csr_array, np.ndarray, dict[str, int]]:
    """One CSR indicator block per group (levels in sorted order), the block index of each column, level counts."""
    codes, ident, n_groups = random_intercept_codes(data, groups, what)
    rows = np.repeat(np.arange(len(data)), codes.shape[1])
    design = sparse.csr_array((np.ones(codes.size), (rows, codes.ravel())), shape=(len(data), len(ident)))
    return design, ident, n_groups


def _fixed_design(formula: str, frame: pd.DataFrame, what: str) -> pd.DataFrame:
    from formulaic import model_matrix

    _, rhs = split_formula(formula)
    try:
        design = model_matrix(rhs, frame, na_action="raise")
    except Exception as exc:  # formulaic's errors for unknown names or bad terms
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise AnalysisError(f"{what}: cannot build the design of {formula!r} ({message}); check the column names") from None
    return pd.DataFrame(design)


def mixed_logit(
    formula: str,
    data: pd.DataFrame,
    groups: Mapping[str, str | Sequence[str]],
    *,
    vb_sd: float = 1.0,
    fe_prior_sd: float = 2.0,
    seed: int = 0,
    max_iter: int = 1000,
    gradient_tol: float = 0.01,
    restarts: int = 2,
    what: str = "mixed_logit",
) -> MixedLogitResult:
    """Logistic regression of the binary ``outcome ~ terms`` of ``formula`` with random intercepts.

    ``groups`` names each random-intercept group and gives its column, or
    several columns for a group nested in another: ``{"game": "game",
    "agent_in_game": ["game", "agent"]}`` gives one intercept per game and one
    per agent within its game. ``formula`` is a formulaic formula over ``data``'s
    columns. ``vb_sd`` and ``fe_prior_sd`` are statsmodels' prior SDs (``vcp_p``,
    ``fe_p``) of the log random-effect SDs and of the fixed effects. The optimiser is
    L-BFGS-B (it scales to many random effects), ``max_iter`` its iteration limit per
    attempt, ``seed`` the seed of ``fit_vb``'s starting values (the same seed and rows give
    the same fit); ``gradient_tol`` and ``restarts`` decide when it has converged
    (``vb_intercepts.fit_intercepts``). Mean-field
    variational posteriors are known to understate posterior SDs: read the fixed
    effects' ``sd`` as lower bounds. ``what`` names the caller in error messages.
    """
    outcome, _ = split_formula(formula)
    columns = {name: [cols] if isinstance(cols, str) else list(cols) for name, cols in groups.items()}
    if not columns or any(not cols for cols in columns.values()):
        raise AnalysisError(f"{what}: name at least one random-intercept group and its column(s)")
    require_columns(data, [outcome, *dict.fromkeys(c for cols in columns.values() for c in cols)], what)
    y = as_binary(data[outcome], outcome, what)
    require_both_outcomes(y, outcome, what)
    frame = data.reset_index(drop=True)
    fixed_design = _fixed_design(formula, frame, what)
    codes, ident, n_groups = random_intercept_codes(frame, columns, what)
    model = intercepts_model(np.asarray(y, dtype=float), fixed_design.to_numpy(dtype=float), codes, ident,
                             vcp_p=vb_sd, fe_p=fe_prior_sd, fep_names=list(fixed_design.columns),
                             vcp_names=list(columns))
    fit, report = fit_intercepts(model, seed=seed, max_iter=max_iter, gradient_tol=gradient_tol, restarts=restarts)
    fixed = pd.DataFrame({"mean": fit.fe_mean, "sd": fit.fe_sd}, index=list(fixed_design.columns))
    # vcp_mean is the posterior mean of log(SD) of each variance component.
    random_sd = {name: float(np.exp(value)) for name, value in zip(columns, fit.vcp_mean)}
    return MixedLogitResult(formula=formula, fixed_effects=fixed, random_effect_sd=random_sd, n_groups=n_groups,
                            nobs=len(frame), converged=report.converged, seed=seed, report=report)
