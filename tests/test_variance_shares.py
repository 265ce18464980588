"""Variance shares: each design factor's share of an outcome's variance across games, the rest the seed's."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from llm_mesa.analysis.variance_shares import RESIDUAL, shapley_shares
from llm_mesa.sweep import read_sweep, run_sweep

EXTRA_GAME = "tinyvote"


def analyze_json(*args) -> dict:
    done = subprocess.run([sys.executable, "-m", "llm_mesa.cli", "analyze", *map(str, args), "--json", "--no-cache"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def adjusted_r2(frame: pd.DataFrame, terms: tuple[str, ...]) -> float:
    """statsmodels' adjusted R² of the cell-means model of ``terms`` (0 for none), truncated at 0."""
    if not terms:
        return 0.0
    fit = smf.ols("y ~ " + " * ".join(f"C({t})" for t in terms), frame).fit()
    return max(float(fit.rsquared_adj), 0.0)


def test_shares_are_the_shapley_values_of_statsmodels_adjusted_r2_and_sum_to_one():
    draws = np.random.default_rng(7)
    rows = [(a, b, c) for a in range(3) for b in range(2) for c in range(2) for _ in range(5)]
    frame = pd.DataFrame(rows, columns=["A", "B", "D"]).astype(str)
    effect = frame["A"].astype(int) * 0.8 + (frame["A"] == "2") * (frame["B"] == "1") * 1.5
    frame["y"] = effect + draws.normal(size=len(frame))
    frame = frame.drop(index=[0, 7, 33, 50]).reset_index(drop=True)  # unbalanced cells
    found = shapley_shares(frame["y"], frame[["A", "B", "D"]], resamples=200)
    names = ("A", "B", "D")
    value = {s: adjusted_r2(frame, s) for r in range(4) for s in itertools.combinations(names, r)}
    for name in names:  # the Shapley value: the mean gain over every order the factors can enter in
        orders = list(itertools.permutations(names))
        gain = sum(value[tuple(sorted(o[:o.index(name) + 1], key=names.index))] -
                   value[tuple(sorted(o[:o.index(name)], key=names.index))] for o in orders) / len(orders)
        assert found["shares"][name] == pytest.approx(gain, abs=1e-9)
    assert found["shares"][RESIDUAL] == pytest.approx(1 - value[names], abs=1e-9)
    assert sum(found["shares"].values()) == pytest.approx(1.0, abs=1e-9)
    assert found["shares"]["A"] > 0.3 and found["shares"]["D"] < 0.02  # D does nothing
    shuffled = shapley_shares(frame["y"], frame[["D", "B", "A"]], resamples=200)
    assert shuffled["shares"] == pytest.approx(found["shares"], abs=1e-12)  # whatever the factors' order
    assert all(low <= high for low, high in found["intervals"].values())


def test_nothing_to_decompose_is_said_not_guessed():
    frame = pd.DataFrame({"A": ["x", "y", "z"], "y": [1.0, 2.0, 4.0]})
    with pytest.raises(ValueError, match="no design cell holds two games"):
        shapley_shares(frame["y"], frame[["A"]])
    with pytest.raises(ValueError, match="one value in every game"):
        shapley_shares([3.0] * 4, pd.DataFrame({"A": ["x", "x", "y", "y"]}))
    with pytest.raises(ValueError, match="no design factor"):
        shapley_shares([1.0, 2.0], pd.DataFrame(index=range(2)))


@pytest.fixture(scope="module")
def label_sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("shares") / "rules"
    conditions = {t: {"n": 20, "topology": t, "communication": "none"} for t in ("ba", "ws", "caveman", "er")}
    run_sweep(conditions, "mi-0.2;voter", 6, out, game="consensus", axes={"label": ["human", "llm"]},
              model_options={"max_rounds": 30, "baseline_permutations": 50})
    return out


def test_the_label_cannot_matter_to_rule_policies_and_gets_no_share(label_sweep):
    report = analyze_json(label_sweep)
    shares, intervals = report["variance_shares"], report["variance_share_intervals"]
    games = read_sweep(label_sweep)
    pairs = games.assign(cell=games["condition"].str.split("|").str[0]).pivot_table(
        index=["cell", "policy", "seed"], columns="label", values="largest_component")
    assert (pairs["human"] == pairs["llm"]).all()  # the premise: under a rule a label changes no game
    assert set(report["variance_share_factors"]) == {"topology", "label", "policy"}
    component = shares["largest_component"]
    assert set(component) == {"topology", "label", "policy", RESIDUAL}
    assert component["label"] < 0.05 and component["topology"] > component["label"]
    assert sum(component.values()) == pytest.approx(1.0)
    for measure, by in shares.items():  # the intervals: a sibling of the same shape
        assert set(intervals[measure]) == set(by) and all(lo <= hi for lo, hi in intervals[measure].values())
        assert by["label"] < 0.05


@pytest.fixture(scope="module")
def majority_sweep(tmp_path_factory):
    from llm_mesa.cli import main

    out = tmp_path_factory.mktemp("shares") / "tiny"
    assert main(["sweep", "--game", EXTRA_GAME, "--set", "n=11", "--set", "start_share=0.2,0.7", "--set",
                 "max_rounds=20,40", "--policies", "follow", "--seeds", "10", "--out", str(out), "--quiet"]) == 0
    return out


def test_an_outside_game_s_factors_are_read_from_its_parameters(majority_sweep, tmp_path):
    """Synchronous majority on a ring ends in a fixed point or a 2-cycle within n rounds (Goles and Olivos
    1980): a game's state at round 20 and at round 40 is the same, so the round limit explains nothing of
    the final share, while the starting share does."""
    report = analyze_json(majority_sweep)
    assert report["variance_share_factors"] == {"max_rounds": ["20", "40"], "start_share": ["0.2", "0.7"]}
    games = read_sweep(majority_sweep)
    limit = games["condition"].str.extract(r"max_rounds=(\d+)")[0]
    start = games["condition"].str.extract(r"start_share=([\d.]+)")[0]
    finals = games.assign(limit=limit, start=start).pivot_table(index=["start", "seed"], columns="limit",
                                                                values="share_a")
    assert (finals["20"] == finals["40"]).all()  # the premise, in these games
    for measure in ("share_a", "agreed"):
        assert report["variance_shares"][measure]["max_rounds"] <= 0.0 + 1e-12
    assert report["variance_shares"]["share_a"]["start_share"] > 0.2
    assert report["variance_shares"]["rounds"]["max_rounds"] > 0.05  # the games that never settle run longer
    from llm_mesa.cli import main

    assert main(["report", str(majority_sweep), "--out", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert 'alt="Variance shares"' in page and "Shapley shares" in page


def test_an_llm_s_settings_are_factors_and_settings_that_change_no_answer_get_no_share(tmp_path):
    """The stand-in answers as ``follow`` would, whatever the temperature: LLM games at 0 and 0.7 are the
    rule's games, seed by seed, so neither the policy nor the temperature explains anything."""
    from llm_mesa.loopback.server import LoopbackServer

    out = tmp_path / "llm"
    with LoopbackServer(seed=1) as server:
        base = f"llm:base_url={server.base_url},model={EXTRA_GAME}:follow,timeout=10"
        run_sweep({"low": {"start_share": 0.2}, "high": {"start_share": 0.7}},
                  f"follow;{base},temperature=0;{base},temperature=0.7", 6, out, game=EXTRA_GAME,
                  model_options={"n": 9, "max_rounds": 12})
    games = read_sweep(out)
    finals = games.pivot_table(index=["condition", "seed"], columns="policy", values="share_a")
    assert (finals.nunique(axis=1) == 1).all()  # the premise: one game per seed, whoever plays it
    report = analyze_json(out)
    factors = report["variance_share_factors"]
    assert set(factors) == {"start_share", "policy", "temperature"}
    assert factors["policy"] == ["follow", f"{EXTRA_GAME}:follow"] and len(factors["temperature"]) == 3
    shares = report["variance_shares"]["share_a"]
    assert shares["policy"] < 0.05 and shares["temperature"] < 0.05 and shares["start_share"] > 0.2
