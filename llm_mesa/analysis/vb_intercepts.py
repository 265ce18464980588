"""Random-intercept logistic regression by variational Bayes: statsmodels' model, evaluated fast, fitted honestly.

The model and its results are statsmodels' ``BinomialBayesMixedGLM`` (mean-field Gaussian
posteriors, Gauss-Legendre quadrature of the likelihood, its priors and parameterisation).
Two things are ours, each for a measured reason:

* **The evaluation.** statsmodels computes the ELBO and its gradient for any random-effect
  design through sparse products, and ``fit_vb`` evaluates them apart: ~25 ms an evaluation
  at 20,000 rows, ~900 evaluations a fit, 90% of ``llm-mesa analyze`` on the study's rule grid.
  With random intercepts alone each row holds exactly one 1 per group, so those products are
  gathers and ``bincount``s; the ten quadrature points are one array, and the value and the
  gradient share one pass (~3 ms). The function is statsmodels' to rounding (``tests``
  compare both), except that ``log(1 + exp(x))`` is ``logaddexp(0, x)``: statsmodels' form
  overflows to -inf past x = 709 ("RuntimeWarning: overflow encountered in exp"), and the
  line search then stalls against that false wall.
* **The optimiser.** Where the intercepts are one group, or agents nested in games, the fit is
  Newton's method along the problem's structure (``vb_newton``: 13-21 steps to a gradient of
  1e-6 on the study's rule grid, 1-3 s a fit, against 150-740 L-BFGS-B iterations to 1e-2 and
  up to 24 s); any other design, or a Newton run that stops short, goes on with L-BFGS-B.
* **The verdict.** L-BFGS-B reports success when an iteration no longer lowers the objective
  by a relative 2e-9; on these flat objectives it does so far from an optimum (a majority
  rule's transitions: gradient 103, slope 22.9, where the optimum's slope is 29.2). A fit is
  converged here only when the optimiser stopped on its own *and* the largest gradient
  component is below ``gradient_tol``; otherwise it is continued from where it stopped with a
  fresh L-BFGS memory (more iterations), up to ``restarts`` times, and every attempt is kept.

Warnings raised while fitting are caught and counted (``FitReport.warnings``), never printed.
"""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import sparse

__all__ = ["FitAttempt", "FitReport", "fit_intercepts", "intercepts_model"]

#: L-BFGS-B's memory (scipy's ``maxcor``; its default is 10). These objectives are flat and
#: badly conditioned (a deterministic rule's transitions push the slope far out while the
#: agent-level variance runs towards 0): on the study's rule grid, memory 10 needed 10,300
#: evaluations for the six fits and left one unconverged after 3,000 iterations; memory 100
#: needs 2,484, converges all six, and lands nearer the optimum (slopes within 1e-4 relative
#: of fits run to gradient 1e-4; with memory 10 one "converged" slope was 1.5e-3 off). Its cost
#: is 2 x 100 vectors of the parameters' length (~40 MB at 24,000 parameters).
LBFGS_MEMORY = 100


@dataclass(frozen=True)
class FitAttempt:
    """One run of the optimiser: what it was, where it stopped and why."""

    what: str
    iterations: int
    optimiser_success: bool
    max_gradient: float
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"what": self.what, "iterations": self.iterations, "optimiser_success": self.optimiser_success,
                "max_gradient": self.max_gradient, "message": self.message}


@dataclass(frozen=True)
class FitReport:
    """A fit's verdict: converged (see the module doc), every attempt, and the warnings raised, counted."""

    converged: bool
    gradient_tol: float
    attempts: tuple[FitAttempt, ...] = ()
    warnings: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"converged": self.converged, "gradient_tol": self.gradient_tol,
                "attempts": [a.as_dict() for a in self.attempts], "warnings": dict(self.warnings)}


def intercepts_model(y: np.ndarray, exog: np.ndarray, codes: np.ndarray, ident: np.ndarray, **options: Any):
    """statsmodels' ``BinomialBayesMixedGLM`` for random intercepts, with a fast ``objective``.

    ``codes``: each row's random-intercept column per group (rows x groups); ``ident``: the
    group of each column; ``options``: the model's own keywords (``vcp_p``, ``fe_p``, names).
    """
    from scipy.special import expit
    from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM, glw

    weights, nodes = np.array(glw).T
    columns, flat, width = int(ident.size), codes.ravel(), codes.shape[1]
    y = np.asarray(y, dtype=float)

    class RandomInterceptsVB(BinomialBayesMixedGLM):
        _z = BinomialBayesMixedGLM.rng * nodes  # the quadrature points on (-rng, rng)
        _w = weights * np.exp(-_z ** 2 / 2) / np.sqrt(2 * np.pi)  # their weights, the normal density in

        def _lp_stats(self, fep_mean, fep_sd, vc_mean, vc_sd):
            tm = exog @ fep_mean + vc_mean[codes].sum(axis=1)
            tv = (exog ** 2) @ (fep_sd ** 2) + (vc_sd[codes] ** 2).sum(axis=1)
            return tm, tv

        def _terms(self, vb_mean, vb_sd):
            fep_mean, vcp_mean, vc_mean = self._unpack(vb_mean)
            fep_sd, vcp_sd, vc_sd = self._unpack(vb_sd)
            tm, tv = self._lp_stats(fep_mean, fep_sd, vc_mean, vc_sd)
            points = tm[:, None] + np.sqrt(tv)[:, None] * self._z[None, :]
            return (fep_mean, vcp_mean, vc_mean, fep_sd, vcp_sd, vc_sd), tm, tv, points

        def _value(self, parts, tm, softplus) -> float:
            value = -self.rng * (softplus @ self._w).sum() + y @ tm + self._elbo_common(*_reorder(parts))
            return value + sum(np.log(s).sum() for s in parts[3:])

        def _gradient(self, parts, tv, sigmoid):
            fep_mean, _, _, fep_sd, vcp_sd, vc_sd = parts
            expected = -(sigmoid * self._w)  # statsmodels' u, per row and quadrature point, weighted
            u = self.rng * expected.sum(axis=1)
            r = self.rng * (expected @ self._z) / np.sqrt(tv)
            per_column = lambda v: np.bincount(flat, np.repeat(v, width), minlength=columns)  # noqa: E731
            common = self._elbo_grad_common(*_reorder(parts))
            mean = (u @ exog + y @ exog + common[0], common[2], per_column(u + y) + common[4])
            sd = (r @ (exog ** 2 * fep_sd) + common[1] + 1 / fep_sd, common[3] + 1 / vcp_sd,
                  per_column(r) * vc_sd + common[5] + 1 / vc_sd)
            return np.concatenate(mean), np.concatenate(sd)

        def vb_elbo(self, vb_mean, vb_sd):
            parts, tm, _, points = self._terms(vb_mean, vb_sd)
            return self._value(parts, tm, np.logaddexp(0.0, points))

        def vb_elbo_grad(self, vb_mean, vb_sd):
            parts, _, tv, points = self._terms(vb_mean, vb_sd)
            return self._gradient(parts, tv, expit(points))

        def objective(self, x: np.ndarray) -> tuple[float, np.ndarray]:
            """``fit_vb``'s minimised function (-ELBO over means and log SDs) and its gradient, in one pass."""
            n = len(x) // 2
            sd = np.exp(x[n:])
            parts, tm, tv, points = self._terms(x[:n], sd)
            small = np.exp(-np.abs(points))
            softplus = np.maximum(points, 0.0) + np.log1p(small)
            sigmoid = np.where(points >= 0, 1.0, small) / (1.0 + small)
            mean_grad, sd_grad = self._gradient(parts, tv, sigmoid)
            return -self._value(parts, tm, softplus), -np.concatenate((mean_grad, sd_grad * sd))

    rows = np.repeat(np.arange(len(y)), width)
    design = sparse.csr_array((np.ones(flat.size), (rows, flat)), shape=(len(y), columns))
    model = RandomInterceptsVB(y, exog, design, ident, **options)
    model.intercept_codes = (np.asarray(exog, dtype=float), codes, ident)  # what vb_newton's elimination reads
    return model


def _reorder(parts):
    """(fep_mean, vcp_mean, vc_mean, fep_sd, vcp_sd, vc_sd) as statsmodels' common terms take them."""
    fep_mean, vcp_mean, vc_mean, fep_sd, vcp_sd, vc_sd = parts
    return fep_mean, fep_sd, vcp_mean, vcp_sd, vc_mean, vc_sd


def _start(model, seed: int) -> np.ndarray:
    """``fit_vb``'s starting point (means 0; log SDs -0.5 + 0.1 N(0, 1) from ``seed``, at least -1)."""
    n = model.k_fep + model.k_vcp + model.k_vc
    log_sd = -0.5 + 0.1 * np.random.default_rng(seed).normal(size=n)
    return np.concatenate((np.zeros(n), np.where(log_sd < -1, -1, log_sd)))


def fit_intercepts(model, *, seed: int = 0, max_iter: int = 1000, gradient_tol: float = 0.01, ftol: float = 1e-13,
                   restarts: int = 2):
    """Fit ``model`` (``intercepts_model``): statsmodels' results, and the verdict (``FitReport``)."""
    from scipy.optimize import minimize
    from statsmodels.genmod.bayes_mixed_glm import BayesMixedGLMResults

    from llm_mesa.analysis.vb_newton import newton_fit
    from llm_mesa.sweep.execution import limit_blas_threads

    x, attempts, caught = _start(model, seed), [], Counter()
    # one BLAS thread: L-BFGS-B's vector updates over ~20,000 parameters ran 10x slower threaded
    with limit_blas_threads(1), warnings.catch_warnings(record=True) as raised:
        warnings.simplefilter("always")
        structure = getattr(model, "intercept_codes", None)
        newton = None if structure is None else newton_fit(model, *structure, x, max_iter=min(max_iter, 200))
        if newton is not None:
            x = newton.x
            attempts.append(FitAttempt(f"Newton along the intercepts' structure (vb_newton) from statsmodels' start "
                                       f"(seed {seed}), to a gradient of 1e-6", newton.iterations,
                                       newton.stopped_on_its_own, newton.max_gradient, newton.message))
        for _ in range(restarts + (newton is None)):  # a Newton run is the first attempt
            if newton is not None and newton.stopped_on_its_own and newton.max_gradient <= gradient_tol:
                break  # converged: nothing for L-BFGS-B to do
            result = minimize(model.objective, x, jac=True, method="L-BFGS-B",
                              options={"maxiter": max_iter, "ftol": ftol, "gtol": gradient_tol,
                                       "maxcor": LBFGS_MEMORY})
            x = result.x
            largest = float(np.max(np.abs(result.jac))) if result.jac.size else 0.0
            what = (f"L-BFGS-B (memory {LBFGS_MEMORY}) from statsmodels' start (seed {seed}), at most {max_iter} iterations"
                    if not attempts
                    else f"continued where it stopped, with a fresh L-BFGS memory, at most {max_iter} more iterations")
            attempts.append(FitAttempt(what, int(result.nit), bool(result.success), largest, str(result.message)))
            if result.success and largest <= gradient_tol:
                break
    for item in raised:
        caught[f"{item.category.__name__}: {item.message}"] += 1
    last = attempts[-1]
    n = len(x) // 2
    fit = BayesMixedGLMResults(model, x[:n], np.exp(2 * x[n:]), newton if len(attempts) == 1 and newton else result)
    report = FitReport(last.optimiser_success and last.max_gradient <= gradient_tol, gradient_tol,
                       tuple(attempts), dict(caught))
    return fit, report
