"""Firth-penalised logistic regression, reported as R's ``logistf`` reports it.

The fit is ``firthmodels``' (``FirthLogit``: the same method and conventions as
logistf); this module adds what a study reports beside the coefficients: the
likelihood-ratio test of the whole model against logistf's nested null, and
McFadden's pseudo-R². Bad input raises :class:`~llm_mesa.analysis.checks.AnalysisError`.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from scipy.optimize import minimize_scalar

from llm_mesa.analysis.checks import AnalysisError, as_binary, require_both_outcomes, require_columns, split_formula

__all__ = ["FirthRegressionResult", "firth_logit"]


@dataclass(frozen=True)
class FirthRegressionResult:
    """Firth logistic regression of a binary outcome, reported as logistf reports it.

    ``table`` has one row per kept design column: ``coef`` (log-odds), ``se``
    (Wald, from the inverse Fisher information, as logistf), ``ci_low``/``ci_high``
    (``ci_method``), ``p`` (``p_method``), ``odds_ratio`` and its interval.

    The likelihood-ratio test against the intercept-only model follows logistf:
    both log-likelihoods are penalised with the full design's Jeffreys term, so
    the test is nested (``loglik_null``). McFadden's pseudo-R² uses the ordinary
    (unpenalised) log-likelihoods: at the Firth estimates, and of the
    intercept-only maximum-likelihood fit.
    """

    formula: str
    table: pd.DataFrame
    ci_method: str
    p_method: str
    nobs: int
    n_events: int
    loglik: float
    loglik_null: float
    lr_chi2: float
    lr_df: int
    lr_p: float
    loglik_unpenalised: float
    loglik_null_unpenalised: float
    pseudo_r2_mcfadden: float
    converged: bool
    separation: bool
    infinite_ml_terms: tuple[str, ...]
    dropped_columns: tuple[str, ...]

    @property
    def params(self) -> pd.Series:
        return self.table["coef"]

    @property
    def odds_ratios(self) -> pd.Series:
        return self.table["odds_ratio"]

    def summary(self) -> str:
        """A plain-text report: the coefficient table and the model-level tests."""
        lines = [
            f"Firth logistic regression: {self.formula}",
            f"n = {self.nobs}, events = {self.n_events}, converged = {self.converged}",
            self.table.to_string(float_format=lambda v: f"{v:.4g}"),
            f"CIs: {self.ci_method}; p-values: {self.p_method}",
            f"LR chi2 = {self.lr_chi2:.3f} on {self.lr_df} df, p = {self.lr_p:.3g}; "
            f"McFadden pseudo-R2 = {self.pseudo_r2_mcfadden:.3f}",
        ]
        if self.separation:
            lines.append("separation: ordinary ML estimates are infinite for " + ", ".join(self.infinite_ml_terms))
        if self.dropped_columns:
            lines.append("dropped (aliased or empty cells): " + ", ".join(self.dropped_columns))
        return "\n".join(lines)


def _full_rank_columns(design: pd.DataFrame) -> tuple[list[str], list[str]]:
    """Keep columns in order while each adds rank; the rest are aliased (e.g. empty cells)."""
    kept: list[str] = []
    dropped: list[str] = []
    matrix = design.to_numpy(dtype=float)
    rank = 0
    for index, name in enumerate(design.columns):
        candidate = matrix[:, [design.columns.get_loc(k) for k in kept] + [index]]
        new_rank = np.linalg.matrix_rank(candidate)
        if new_rank > rank:
            kept.append(name)
            rank = new_rank
        else:
            dropped.append(name)
    return kept, dropped


def _build_design(formula: str, data: pd.DataFrame, what: str) -> tuple[np.ndarray, pd.DataFrame, list[str], str]:
    from formulaic import model_matrix
    from formulaic.errors import FormulaicError

    outcome, rhs = split_formula(formula)
    require_columns(data, [outcome], what)
    y = as_binary(data[outcome], outcome, what)
    try:
        design = model_matrix(rhs, data, na_action="raise")
    except FormulaicError as exc:
        # formulaic says so in two ways: inside a call, C(name); or a bare name
        unknown = re.search(r"name '([^']+)' is not defined|`([^`]+)` is not present in the dataset", str(exc))
        if unknown:
            have = ", ".join(map(str, data.columns))
            name = unknown.group(1) or unknown.group(2)
            raise AnalysisError(f"{what}: the formula names {name!r}, which is not a column; the table has: {have}") from None
        raise AnalysisError(f"{what}: cannot build the design of {formula!r}: {str(exc).splitlines()[0]}") from None
    except Exception as exc:  # formulaic reports unknown names as plain evaluation errors
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise AnalysisError(f"{what}: cannot build the design of {formula!r} ({message}); check the column names") from None
    design = pd.DataFrame(design)
    kept, dropped = _full_rank_columns(design)
    return y, design[kept], dropped, outcome


def _penalised_null_loglik(X: np.ndarray, y: np.ndarray, intercept_index: int) -> float:
    """logistf's null log-likelihood: only the intercept free, full-design penalty.

    firthmodels exposes 1-df likelihood-ratio tests only; the global test needs the
    model with every slope fixed at 0. Its penalised log-likelihood is evaluated by
    firthmodels' own routine and maximised over the single free intercept.
    """
    from firthmodels.logistic import _Workspace, compute_logistic_quantities

    n, k = X.shape
    workspace = _Workspace(n, k)
    weights = np.ones(n)
    offset = np.zeros(n)

    def negative_loglik(intercept: float) -> float:
        beta = np.zeros(k)
        beta[intercept_index] = intercept
        return -compute_logistic_quantities(X, y, beta, weights, offset, workspace, 0.5).loglik

    start = float(np.log((y.sum() + 0.5) / (n - y.sum() + 0.5)))
    result = minimize_scalar(negative_loglik, bracket=(start - 1.0, start + 1.0), tol=1e-10)
    return float(-result.fun)


def firth_logit(
    formula: str,
    data: pd.DataFrame,
    *,
    alpha: float = 0.05,
    profile_likelihood: bool = True,
    tol: float = 1e-6,
    max_iter: int = 100,
    what: str = "firth_logit",
) -> FirthRegressionResult:
    """Firth logistic regression of the binary ``outcome ~ terms`` of ``formula`` on ``data``.

    Firth's penalty keeps estimates finite when a cell never (or always) has the
    outcome, which is common with few games per condition (separation).
    ``formula`` is a formulaic formula whose left side names a bool or 0/1
    column, e.g. ``"outcome ~ C(condition) * C(treatment) + C(policy)"``;
    it must keep the intercept. Design columns that carry no information (empty
    cells of an interaction, or aliases of other columns) are dropped and listed
    in ``dropped_columns``. With ``profile_likelihood`` (default, as logistf) the
    CIs are profile penalised likelihood intervals and p-values penalised LR
    tests; otherwise both are Wald. ``what`` names the caller in error messages.
    """
    from firthmodels import detect_separation
    from firthmodels.adapters.statsmodels import FirthLogit
    from statsmodels.discrete.discrete_model import Logit

    require_columns(data, [], what)
    y, design, dropped, outcome = _build_design(formula, data, what)
    require_both_outcomes(y, outcome, what)
    names = list(design.columns)
    if "Intercept" not in names:
        raise AnalysisError(f"{what}: the formula must keep the intercept (the LR test is against the intercept-only model)")
    X = design.to_numpy(dtype=float)
    if X.shape[1] >= X.shape[0]:
        raise AnalysisError(f"{what}: {X.shape[1]} parameters for {X.shape[0]} rows; run more games or simplify the formula")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitted = FirthLogit(y, design).fit(maxiter=max_iter, pl=profile_likelihood, gtol=tol, xtol=tol)
        ci = fitted.conf_int(alpha=alpha, maxiter=max_iter, tol=min(tol, 1e-4))
    failed_inference = [str(w.message) for w in caught if "LRT" in str(w.message) or "profile" in str(w.message).lower()]

    coef = np.asarray(fitted.params, dtype=float)
    table = pd.DataFrame(
        {
            "coef": coef,
            "se": np.asarray(fitted.bse, dtype=float),
            "ci_low": ci[:, 0],
            "ci_high": ci[:, 1],
            "p": np.asarray(fitted.pvalues, dtype=float),
            "odds_ratio": np.exp(coef),
            "or_ci_low": np.exp(ci[:, 0]),
            "or_ci_high": np.exp(ci[:, 1]),
        },
        index=pd.Index(names, name="term"),
    )

    intercept_index = names.index("Intercept")
    loglik = float(fitted.llf)
    loglik_null = _penalised_null_loglik(X, y, intercept_index)
    lr_df = len(names) - 1
    lr_chi2 = max(0.0, 2.0 * (loglik - loglik_null))
    lr_p = float(stats.chi2.sf(lr_chi2, lr_df)) if lr_df > 0 else float("nan")

    # McFadden on ordinary likelihoods: Firth estimates vs the intercept-only ML fit.
    loglik_unpen = float(Logit(y, X).loglike(coef))
    share = y.mean()
    loglik_null_unpen = float(len(y) * (share * np.log(share) + (1 - share) * np.log(1 - share)))
    pseudo_r2 = 1.0 - loglik_unpen / loglik_null_unpen

    separation = detect_separation(X, y, fit_intercept=False)
    infinite = tuple(name for name, finite in zip(names, separation.is_finite) if not finite)

    p_method = "penalised likelihood-ratio test" if profile_likelihood else "Wald z test"
    if failed_inference:
        p_method += f" (not computed for {len(failed_inference)} term(s): NaN)"
    return FirthRegressionResult(
        formula=formula,
        table=table,
        ci_method="profile penalised likelihood" if profile_likelihood else "Wald",
        p_method=p_method,
        nobs=len(y),
        n_events=int(y.sum()),
        loglik=loglik,
        loglik_null=loglik_null,
        lr_chi2=lr_chi2,
        lr_df=lr_df,
        lr_p=lr_p,
        loglik_unpenalised=loglik_unpen,
        loglik_null_unpenalised=loglik_null_unpen,
        pseudo_r2_mcfadden=float(pseudo_r2),
        converged=bool(fitted.converged),
        separation=bool(separation.separation),
        infinite_ml_terms=infinite,
        dropped_columns=tuple(dropped),
    )
