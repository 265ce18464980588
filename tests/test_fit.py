"""``llm-mesa fit``'s engine on a game the tests register themselves (``fit_ring``): held to closed forms.

On the ring, ``sticky:p`` keeps its state with probability p where its left neighbour differs,
so the maximum-likelihood p is k/m (k kept of m such decisions) and its profile interval the
binomial likelihood-ratio interval; ``left`` explains a kept state only with a trembling hand,
whose rate is then 2k/N (N decisions: P' = (1 - e) P + e/2); ``coin`` gives N log 1/2.
"""

from __future__ import annotations

import json
import math

import fit_ring
import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import chi2

from llm_mesa.analysis.fit import ERROR_RATE, fit_rule
from llm_mesa.analysis.fit_check import compare
from llm_mesa.cli import main
from llm_mesa.registry import register_game, unregister_game


@pytest.fixture(scope="module", autouse=True)
def ring_registered():
    register_game(fit_ring.GAME)
    yield
    unregister_game(fit_ring.NAME)


def sweep(tmp_path, policy: str, seeds: int = 12, **fixed) -> str:
    out = tmp_path / policy.replace(":", "-").replace("=", "")
    sets = [a for k, v in {"n": 16, "max_rounds": 25, **fixed}.items() for a in ("--set", f"{k}={v}")]
    assert main(["sweep", "--game", fit_ring.NAME, *sets, "--policies", policy, "--seeds", str(seeds),
                 "--tables", "agents", "--out", str(out)]) == 0
    return str(out)


def fits_of(capsys, *args) -> list[dict]:
    capsys.readouterr()
    assert main(["fit", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)["fits"]


def pairs_of(path: str) -> list[tuple]:
    from llm_mesa.analysis.fit_data import read_runs

    _, cells = read_runs([path])
    return [p for cell in cells for p in cell.pairs]


def test_sticky_p_is_k_over_m_with_the_binomial_likelihood_ratio_interval(tmp_path):
    pairs = pairs_of(sweep(tmp_path, "sticky:p=0.3"))
    informative = [(o, d) for o, d in pairs if o.left != o.state]
    m, k = len(informative), sum(d == o.state for o, d in informative)
    fit = fit_rule(fit_ring.NAME, "sticky", pairs)
    p = k / m
    assert fit.parameters["p"]["estimate"] == pytest.approx(p, abs=1e-5)
    assert fit.log_likelihood == pytest.approx(k * math.log(p) + (m - k) * math.log(1 - p), abs=1e-6)
    assert fit.aic == pytest.approx(2 - 2 * fit.log_likelihood)
    assert fit.decisions == len(pairs) and ERROR_RATE not in fit.parameters  # sticky explains every decision

    def drop(q):
        return 2 * (fit.log_likelihood - (k * math.log(q) + (m - k) * math.log(1 - q))) - chi2.ppf(0.95, 1)

    low, high = brentq(drop, 1e-9, p), brentq(drop, p, 1 - 1e-9)
    assert fit.parameters["p"]["ci"] == pytest.approx([low, high], abs=1e-4)
    assert low < 0.3 < high and high - low < 0.15


def test_a_rule_that_cannot_explain_a_decision_trembles_at_the_rate_theory_gives(tmp_path):
    pairs = pairs_of(sweep(tmp_path, "sticky:p=0.3"))
    kept = sum(d == o.state != o.left for o, d in pairs)  # the decisions left gives probability 0
    fit = fit_rule(fit_ring.NAME, "left", pairs)
    e = 2 * kept / len(pairs)
    assert fit.parameters[ERROR_RATE]["estimate"] == pytest.approx(e, abs=1e-5)
    assert math.isfinite(fit.log_likelihood) and fit.aic == pytest.approx(2 - 2 * fit.log_likelihood)
    low, high = fit.parameters[ERROR_RATE]["ci"]
    assert 0 < low < e < high < 1
    coin = fit_rule(fit_ring.NAME, "coin", pairs)
    assert coin.parameters == {} and coin.log_likelihood == pytest.approx(len(pairs) * math.log(0.5))
    assert coin.aic == pytest.approx(-2 * coin.log_likelihood)


def test_a_fixed_parameter_is_not_estimated():
    view = fit_ring.View(0, 1, "a", "b", "a")
    fit = fit_rule(fit_ring.NAME, "sticky:p=0.25", [(view, "a")] * 3 + [(view, "b")])
    assert fit.parameters == {} and fit.log_likelihood == pytest.approx(3 * math.log(0.25) + math.log(0.75))
    assert fit.spec == "sticky:p=0.25"


def test_the_generating_rule_has_the_lowest_aic_and_its_replay_is_not_refuted(tmp_path, capsys):
    fits = fits_of(capsys, sweep(tmp_path, "left", start_share=0.8))
    by_rule = {f["rule"]: f for f in fits}
    assert set(by_rule) == {"left", "sticky", "coin"} and min(fits, key=lambda f: f["aic"])["rule"] == "left"
    assert by_rule["left"]["log_likelihood"] == 0 and by_rule["left"]["parameters"] == {}
    assert by_rule["sticky"]["parameters"]["p"]["estimate"] == pytest.approx(0, abs=1e-6)
    assert by_rule["sticky"]["aic"] == pytest.approx(2)  # the same fit, one parameter more
    checks = {f["rule"]: {c["measure"]: c["p"] for c in f["checks"]} for f in fits}
    assert checks["left"]["share_a"] == 1.0  # the same games: the same seeds, the same rule
    assert checks["coin"]["share_a"] < 0.01  # a coin forgets the start's 0.8: refuted


def test_the_json_has_exactly_the_promised_shape(tmp_path, capsys):
    fits = fits_of(capsys, sweep(tmp_path, "coin", seeds=3), "--rules", "sticky;coin")
    keys = {"policy", "condition", "rule", "parameters", "log_likelihood", "aic", "decisions", "checks"}
    assert [set(f) for f in fits] == [keys, keys]
    for f in fits:
        assert f["policy"] == "coin" and f["condition"]["name"] and f["decisions"] == 3 * 16 * 25
        assert all(set(v) == {"estimate", "ci"} and len(v["ci"]) == 2 for v in f["parameters"].values())
        assert all(set(c) == {"measure", "p"} and 0 <= c["p"] <= 1 for c in f["checks"])
        assert [c["measure"] for c in f["checks"]] == ["share_a", "rounds"]


def test_the_table_names_every_fit_best_first(tmp_path, capsys):
    path = sweep(tmp_path, "sticky:p=0.5", seeds=4)
    capsys.readouterr()
    assert main(["fit", path, "--no-check"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in lines[2:]]
    assert [r[2] for r in rows] == ["sticky", "left", "coin"] and float(rows[0][-4]) == 0  # delta AIC of the best


def test_compare_uses_exact_and_rank_tests_as_documented():
    import pandas as pd
    from scipy.stats import fisher_exact, mannwhitneyu

    yes, no = pd.Series([True] * 5), pd.Series([False] * 5)
    assert compare(yes, no) == pytest.approx(fisher_exact([[5, 0], [0, 5]])[1])
    a, b = pd.Series([1, 2, 3, 4, 5.0]), pd.Series([3, 4, 5, 6, 7.0])
    assert compare(a, b) == pytest.approx(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    assert compare(pd.Series([50, 50]), pd.Series([50, 50])) == 1.0
    assert compare(pd.Series([1.0]), pd.Series([2.0, 3.0])) is None  # one game a side: no distribution


@pytest.mark.parametrize("args, words", [
    (["--rules", "nosuch"], "unknown fitring policy"),
    (["--rules", " ; "], "names no rule"),
])
def test_bad_rules_are_one_line_with_exit_2(tmp_path, capsys, args, words):
    path = sweep(tmp_path, "coin", seeds=2)
    capsys.readouterr()
    assert main(["fit", path, *args]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1


def test_runs_without_an_agents_table_are_refused_in_one_line(tmp_path, capsys):
    out = tmp_path / "bare"
    assert main(["sweep", "--game", fit_ring.NAME, "--policies", "coin", "--seeds", "2", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["fit", str(out)]) == 2
    assert "--tables agents" in capsys.readouterr().err
    assert main(["fit", str(tmp_path / "nothing")]) == 2
    assert "no runs at" in capsys.readouterr().err


def test_the_engine_groups_equal_situations_without_changing_the_likelihood():
    rng = np.random.default_rng(4)
    states = rng.choice(["a", "b"], (200, 2))
    views = [fit_ring.View(i, 1, s, "b" if s == "a" else "a", r) for i, (s, r) in enumerate(states)]  # left differs
    pairs = [(v, str(rng.choice(["a", "b"]))) for v in views]
    fit = fit_rule(fit_ring.NAME, "sticky:p=0.4", pairs)
    by_hand = sum(math.log(fit_ring.Sticky(0.4).distribution(v)[d]) for v, d in pairs)
    assert fit.log_likelihood == pytest.approx(by_hand)


def test_a_trembling_rule_decides_as_its_fitted_likelihood_says():
    import random

    from llm_mesa import make_policy  # loads the consensus game by its name
    from llm_mesa.analysis.fit_check import Trembling

    view = fit_ring.View(0, 1, "a", "b", "a")
    tremble, rng = Trembling(fit_ring.Left(), 0.4), random.Random(1)
    chosen = [tremble.decide(view, rng) for _ in range(20000)]
    assert chosen.count("b") / len(chosen) == pytest.approx(0.6 + 0.4 / 2, abs=0.01)  # (1 - e) P + e / K
    from llm_mesa.models.consensus.observation import ConsensusObservation

    seen = ConsensusObservation(agent_id=0, round=1, preference="red", colour="blue", neighbour_ids=(1,),
                                neighbour_colours=("blue",))
    stubborn = Trembling(make_policy("stubborn", "consensus"), 0.5)
    colours = [stubborn.decide(seen, rng).colour for _ in range(20000)]  # a dataclass decision: its first field
    assert colours.count("blue") / len(colours) == pytest.approx(0.25, abs=0.01)
    assert stubborn.spec() == "stubborn:error_rate=0.5"


def test_a_trembling_rules_replay_is_checked_through_the_games_play_path(tmp_path, capsys):
    fits = fits_of(capsys, sweep(tmp_path, "sticky:p=0.3", seeds=6), "--rules", "left")
    assert ERROR_RATE in fits[0]["parameters"] and {c["measure"] for c in fits[0]["checks"]} == {"share_a", "rounds"}
