"""The core's general estimators: any table, any columns; the same numbers as the study wrappers and scipy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from llm_mesa.analysis import AnalysisError, firth_logit, mixed_logit, point_biserial, rank_tests
from llm_mesa.models.consensus.analysis import (
    component_tests,
    firth_consensus_regression,
    majority_following,
    stubbornness_vs_consensus,
)

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("name, formula", [("endometrial", "HG ~ NV + PI + EH"),
                                           ("sex2", "case ~ age + oc + vic + vicl + vis + dia")])
def test_firth_logit_is_the_consensus_regression_with_any_outcome(name, formula):
    data = pd.read_csv(DATA / f"{name}.csv")
    general, study = firth_logit(formula, data), firth_consensus_regression(data, formula)
    pd.testing.assert_frame_equal(general.table, study.table, check_exact=True)
    for field in ("loglik", "loglik_null", "lr_chi2", "lr_p", "pseudo_r2_mcfadden", "infinite_ml_terms"):
        assert getattr(general, field) == getattr(study, field)
    assert general.formula == formula and general.nobs == len(data)


def test_firth_logit_names_its_caller_in_errors():
    data = pd.read_csv(DATA / "sex2.csv")
    with pytest.raises(AnalysisError, match=r"^firth_logit: 'case' is false in all"):
        firth_logit("case ~ age", data.assign(case=0))
    with pytest.raises(AnalysisError, match=r"^my_study: .*'ages', which is not a column"):
        firth_logit("case ~ ages", data, what="my_study")
    with pytest.raises(AnalysisError, match="keep the intercept"):
        firth_logit("case ~ 0 + age + oc", data)


def _clustered(n_clusters: int, n_units: int, n_obs: int, slope: float, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for cluster, effect in enumerate(rng.normal(0.0, 0.8, n_clusters)):
        for unit in range(n_units):
            x = rng.random(n_obs)
            p = 1 / (1 + np.exp(-(-1.0 + slope * x + effect + rng.normal(0.0, 0.4))))
            rows += [(f"c{cluster}", unit, x[i], bool(rng.random() < p[i])) for i in range(n_obs)]
    return pd.DataFrame(rows, columns=["school", "pupil", "x", "passed"])


def test_mixed_logit_recovers_a_slope_with_nested_groups():
    data = _clustered(30, 5, 10, slope=3.0, seed=4)
    fit = mixed_logit("passed ~ x", data, {"school": "school", "pupil_in_school": ["school", "pupil"]})
    assert list(fit.fixed_effects.index) == ["Intercept", "x"]
    assert fit.params["x"] == pytest.approx(3.0, abs=0.7)
    assert set(fit.random_effect_sd) == {"school", "pupil_in_school"}
    assert fit.n_groups == {"school": 30, "pupil_in_school": 150} and fit.nobs == 1500
    assert 0 < fit.fixed_effects.loc["x", "sd"] < 0.5


def test_mixed_logit_gives_majority_following_its_numbers():
    data = _clustered(12, 4, 8, slope=2.0, seed=1)
    transitions = data.rename(columns={"school": "game", "pupil": "agent", "x": "blue_share_neighbours",
                                       "passed": "chose_blue_next"})
    study = majority_following(transitions)
    general = mixed_logit("chose_blue_next ~ blue_share_neighbours", transitions,
                          {"game": "game", "agent_in_game": ["game", "agent"]})
    # the variational fit is reproducible to optimiser tolerance only
    assert study.slope == pytest.approx(general.params["blue_share_neighbours"], rel=1e-3)
    assert study.random_effect_sd == pytest.approx(general.random_effect_sd, rel=1e-2)


def test_mixed_logit_refuses_bad_tables():
    data = _clustered(3, 2, 5, slope=1.0, seed=2)
    with pytest.raises(AnalysisError, match="'school' has a single level"):
        mixed_logit("passed ~ x", data.assign(school="one"), {"school": "school"})
    with pytest.raises(AnalysisError, match="'klass'"):
        mixed_logit("passed ~ x", data, {"school": "klass"})
    with pytest.raises(AnalysisError, match="at least one random-intercept group"):
        mixed_logit("passed ~ x", data, {})
    with pytest.raises(AnalysisError, match="both outcomes"):
        mixed_logit("passed ~ x", data.assign(passed=True), {"school": "school"})


def test_rank_tests_agree_with_scipy_on_any_columns():
    rng = np.random.default_rng(3)
    data = pd.DataFrame({"site": np.repeat(["a", "b", "c"], 20), "arm": np.tile(["x", "y"], 30),
                         "score": rng.normal(0, 1, 60) + np.repeat([0, 0, 2], 20), "control": rng.normal(0, 1, 60)})
    result = rank_tests(data, "score", "control", "site")
    assert result.kruskal_h == pytest.approx(stats.kruskal(*[g["score"] for _, g in data.groupby("site")]).statistic)
    per = result.per_condition.set_index("site")
    c = data[data["site"] == "c"]
    assert per.loc["c", "p"] == pytest.approx(stats.mannwhitneyu(c["score"], c["control"]).pvalue)
    both = rank_tests(data, "score", "control", ["site", "arm"])
    assert list(both.per_condition["condition"]) == ["a/x", "a/y", "b/x", "b/y", "c/x", "c/y"]
    assert both.kruskal_df == 5
    # the study's component tests are these rank tests on its columns
    games = data.rename(columns={"site": "label", "score": "largest_component",
                                 "control": "largest_component_baseline_mean"})
    study = component_tests(games, group_col="label")
    assert (study.kruskal_h, study.kruskal_p) == (result.kruskal_h, result.kruskal_p)
    with pytest.raises(AnalysisError, match=r"^rank_tests: needs at least two conditions"):
        rank_tests(data.assign(site="a"), "score", "control", "site")


def test_point_biserial_agrees_with_pearson_and_drops_missing_values():
    rng = np.random.default_rng(8)
    data = pd.DataFrame({"treated": rng.random(50) < 0.5, "dose": rng.normal(0, 1, 50)})
    data.loc[[3, 7, 9], "dose"] = np.nan
    result = point_biserial(data, "treated", "dose")
    kept = data.dropna()
    pearson = stats.pearsonr(kept["treated"].astype(float), kept["dose"])
    assert (result.r, result.p) == (pytest.approx(pearson.statistic), pytest.approx(pearson.pvalue))
    assert (result.n, result.n_dropped) == (47, 3)
    study = stubbornness_vs_consensus(data.rename(columns={"treated": "consensus", "dose": "stubbornness"}))
    assert (study.r, study.n_dropped) == (result.r, 3)
    with pytest.raises(AnalysisError, match=r"^point_biserial: 'dose' is the same in every game"):
        point_biserial(data.assign(dose=1.0), "treated", "dose")
    with pytest.raises(AnalysisError, match="only 2 game"):
        point_biserial(data.head(2), "treated", "dose")


def test_wilson_intervals_hold_the_rate_exactly_at_zero_and_one():
    from llm_mesa.analysis.proportions import wilson_interval

    for n in (1, 7, 30, 180):
        assert wilson_interval(0, n)[0] == 0.0 and wilson_interval(n, n)[1] == 1.0
        low, high = wilson_interval(n // 3, n)
        assert low <= (n // 3) / n <= high
