"""The random-intercept fit: statsmodels' function evaluated fast, and a verdict that says when it converged."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from statsmodels.genmod.bayes_mixed_glm import BinomialBayesMixedGLM

from llm_mesa.analysis import mixed_logit
from llm_mesa.analysis.mixed_logit import random_intercept_codes, random_intercept_design
from llm_mesa.analysis.vb_intercepts import fit_intercepts, intercepts_model


def rows(n: int = 4000, games: int = 50, agents: int = 12, slope: float = 8.0, seed: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    game, agent, share = rng.integers(0, games, n), rng.integers(0, agents, n), rng.random(n)
    effect = rng.normal(0, 0.7, games)[game] + rng.normal(0, 0.5, (games, agents))[game, agent]
    return pd.DataFrame({"y": (rng.random(n) < expit(-slope / 2 + slope * share + effect)).astype(float),
                         "share": share, "game": game, "agent": agent})


GROUPS = {"game": ["game"], "agent_in_game": ["game", "agent"]}


def both_models(data: pd.DataFrame):
    exog = np.column_stack([np.ones(len(data)), data["share"].to_numpy()])
    codes, ident, _ = random_intercept_codes(data, GROUPS, "test")
    design, ident_sparse, _ = random_intercept_design(data, GROUPS, "test")
    fast = intercepts_model(data["y"].to_numpy(), exog, codes, ident, vcp_p=1.0, fe_p=2.0)
    plain = BinomialBayesMixedGLM(data["y"].to_numpy(), exog, design, ident_sparse, vcp_p=1.0, fe_p=2.0)
    return fast, plain


def test_the_fast_evaluation_is_statsmodels_elbo_and_gradient():
    fast, plain = both_models(rows())
    k = fast.k_fep + fast.k_vcp + fast.k_vc
    rng = np.random.default_rng(0)
    for _ in range(5):
        mean, sd = rng.normal(0, 1, k), np.exp(rng.normal(-0.5, 0.4, k))
        assert fast.vb_elbo(mean, sd) == pytest.approx(plain.vb_elbo(mean, sd), rel=1e-12)
        for ours, theirs in zip(fast.vb_elbo_grad(mean, sd), plain.vb_elbo_grad(mean, sd)):
            np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-9)
        value, gradient = fast.objective(np.concatenate([mean, np.log(sd)]))  # what the optimiser minimises
        assert value == pytest.approx(-plain.vb_elbo(mean, sd), rel=1e-12)
        plain_mean, plain_sd = plain.vb_elbo_grad(mean, sd)
        np.testing.assert_allclose(gradient, -np.concatenate([plain_mean, plain_sd * sd]), rtol=1e-9, atol=1e-9)


def test_where_statsmodels_overflows_to_minus_infinity_the_fast_elbo_stays_finite():
    fast, plain = both_models(rows(n=500))
    k = fast.k_fep + fast.k_vcp + fast.k_vc
    mean, sd = np.zeros(k), np.full(k, 0.5)
    mean[1] = 2000.0  # a slope that pushes the linear predictor past exp's range
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert plain.vb_elbo(mean, sd) == -np.inf
    assert np.isfinite(fast.vb_elbo(mean, sd))


def test_a_fit_stopped_early_is_not_converged_and_says_what_was_tried():
    fast, _ = both_models(rows())
    fit, report = fit_intercepts(fast, max_iter=5, restarts=1)
    assert not report.converged and len(report.attempts) == 2
    assert report.attempts[0].iterations == 5 and "more iterations" in report.attempts[1].what
    assert report.attempts[-1].max_gradient > report.gradient_tol
    full, verdict = fit_intercepts(fast)
    assert verdict.converged and verdict.attempts[-1].max_gradient <= verdict.gradient_tol
    assert full.fe_mean[1] == pytest.approx(8.0, rel=0.3)  # the slope the rows were drawn with


def test_the_verdict_reaches_the_result_and_two_starts_agree_when_converged():
    data = rows()
    first = mixed_logit("y ~ share", data, {"game": "game", "agent_in_game": ["game", "agent"]})
    other = mixed_logit("y ~ share", data, {"game": "game", "agent_in_game": ["game", "agent"]}, seed=9)
    assert first.converged and other.converged and first.report.converged
    assert first.params["share"] == pytest.approx(other.params["share"], rel=1e-3)


def test_warnings_raised_while_fitting_are_counted_not_printed(recwarn):
    fast, _ = both_models(rows(n=800))
    objective = fast.objective

    def overflowing(x):  # as statsmodels' common terms do when a variance grows past exp's range
        np.exp(np.array([1000.0]))
        return objective(x)

    fast.objective = overflowing
    _, report = fit_intercepts(fast, max_iter=20, restarts=0)
    assert not recwarn.list  # nothing reached the caller
    key = "RuntimeWarning: overflow encountered in exp"
    assert list(report.warnings) == [key] and report.warnings[key] > 5  # one line per kind, with its count


def test_the_newton_step_is_the_dense_newton_step_of_the_objective():
    """The elimination along the structure solves the true Newton system: on a small problem its step
    equals -H^-1 g with H from finite differences of the (statsmodels-exact) gradient."""
    from llm_mesa.analysis.vb_newton import _Structure, nested_parents

    data = rows(n=300, games=5, agents=4)
    fast, _ = both_models(data)
    exog, codes, ident = fast.intercept_codes
    structure = _Structure(fast, exog, codes, ident, nested_parents(codes, ident))
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.normal(0, 0.5, len(ident) + 4), rng.normal(-0.7, 0.2, len(ident) + 4)])
    _, grad = fast.objective(x)
    h = 1e-6
    dense = np.column_stack([(fast.objective(x + h * e)[1] - fast.objective(x - h * e)[1]) / (2 * h)
                             for e in np.eye(len(x))])
    expected = -np.linalg.solve((dense + dense.T) / 2, grad)
    np.testing.assert_allclose(structure.step(x, grad, 0.0), expected, rtol=1e-5, atol=1e-7)


def test_newton_and_l_bfgs_b_reach_one_optimum_and_a_crossed_design_goes_to_l_bfgs_b():
    data = rows()
    nested = mixed_logit("y ~ share", data, GROUPS)
    assert nested.converged and nested.report.attempts[0].what.startswith("Newton")
    assert len(nested.report.attempts) == 1 and nested.report.attempts[0].max_gradient <= 1e-6
    fast, _ = both_models(data)
    fast.intercept_codes = None  # the same model, fitted by L-BFGS-B alone, far nearer its optimum than usual
    lbfgs, verdict = fit_intercepts(fast, gradient_tol=1e-5, restarts=8)
    # asked for 1e-5; where the objective's rounding stops L-BFGS-B first (FACTR*EPSMCH, on some CPUs near 2e-5),
    # it is still a hundredth of its usual 1e-2, and the slopes below must agree all the same
    assert verdict.attempts[0].what.startswith("L-BFGS-B") and verdict.attempts[-1].max_gradient <= 1e-4
    assert nested.params["share"] == pytest.approx(lbfgs.fe_mean[1], rel=1e-6)
    crossed = mixed_logit("y ~ share", data, {"game": "game", "agent": "agent"})  # agent ids shared by games
    assert crossed.converged and crossed.report.attempts[0].what.startswith("L-BFGS-B")
    single = mixed_logit("y ~ share", data, {"game": "game"})
    assert single.converged and single.report.attempts[0].what.startswith("Newton")
