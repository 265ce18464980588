"""The generic report draws a game's measures as the game declares them: per-round curves, numeric axes, ranges.

A network public-goods game the test registers itself (``space_games``) swept along its
multiplier ``r`` (a number: the report's x axis), and the in-tree colouring game (its
constant and condition-fixed columns named, not drawn; its rounds never outside 0..the round
limit). The curves are checked against means computed here by hand, a game that ended
holding its last state; the intervals against scipy's t interval wherever no bound cuts them.
"""

from __future__ import annotations

import base64
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from space_games import registered

from llm_mesa.analysis.generic import condition_columns, constant_columns, numeric_axis, summaries
from llm_mesa.analysis.generic_curves import per_round
from llm_mesa.analysis.generic_figures import axis_figure
from llm_mesa.cli import main
from llm_mesa.game_types import continuous, count, share
from llm_mesa.registry import get_game
from llm_mesa.sweep import read_sweep


@pytest.fixture(scope="module", autouse=True)
def games():
    with registered() as games:
        yield games


@pytest.fixture(scope="module")
def swept(tmp_path_factory, games):
    out = tmp_path_factory.mktemp("pgoods") / "sweep"
    assert main(["sweep", "--game", "pgoods", "--set", "r=1,2,4", "--policies", "imitate;dice", "--seeds", "3",
                 "--tables", "rounds", "--out", str(out), "--quiet"]) == 0
    return out


def analysed(capsys, path):
    import json

    assert main(["analyze", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def figures(page: str) -> dict[str, str]:
    return {alt: base64.b64decode(data).decode() for alt, data in
            re.findall(r'<img alt="([^"]+)" src="data:image/svg\+xml;base64,([^"]+)"', page)}


def test_a_numeric_sweep_axis_is_drawn_as_numbers_and_constant_columns_are_named_once(swept, capsys, tmp_path):
    report = analysed(capsys, swept)
    assert report["axis"]["parameter"] == "r"
    assert report["axis"]["values"] == {"r=1.0": 1.0, "r=2.0": 2.0, "r=4.0": 4.0}
    assert report["constant"] == {"failed": 0, "rounds": 12}
    assert "failed" not in report["summaries"]["order"] and "rounds" not in report["summaries"]["order"]
    assert report["summaries"]["order"][0] == "mean_contribution"  # the declared headline first
    assert main(["analyze", str(swept)]) == 0
    assert "failed is 0 and rounds 12 in every game (not drawn)" in capsys.readouterr().out
    out = tmp_path / "report.html"
    assert main(["report", str(swept), "--out", str(out)]) == 0
    page = out.read_text()
    drawn = figures(page)
    assert "failed" not in drawn and "rounds" not in drawn
    titles = re.findall(r"<h3>([^<]+)</h3>", page)
    # the headline, then its curves, each headed with the label the game declares (never the column's name)
    assert titles[:2] == ["mean contribution (coins)", "mean contribution (coins) per round"]
    assert {"share contributing all per round", "free riders per round", "Constant in every game"} <= set(titles)
    assert not any("_" in t for t in titles)
    assert "<caption>ours</caption>" not in page
    figure = axis_figure(report, "mean_contribution", report["axis"])
    ax = figure.axes[0]
    assert list(ax.get_xticks()) == [1.0, 2.0, 4.0] and ax.get_xlabel() == "r"  # 4 sits twice as far as 2
    lines = [container.lines[0] for container in ax.containers]  # each errorbar's data line
    assert len(lines) == 2  # one per model
    for line in lines:
        assert np.allclose(line.get_xdata(), [1, 2, 4], atol=0.02 * 3)  # each model's points at their r
    imitate = {r["condition"]: r["mean"] for r in report["summaries"]["rows"]
               if r["measure"] == "mean_contribution" and r["model"] == "imitate"}
    games = read_sweep(swept)
    mine = games[games.policy == "imitate"].groupby("condition")["mean_contribution"].mean()
    assert imitate == pytest.approx(mine.to_dict())


def test_the_axis_is_the_number_that_varies_and_none_where_a_condition_differs_by_a_word():
    parameters = {"a": {"r": 1, "n": 10}, "b": {"r": 2, "n": 10}, "c": {"r": 4, "n": 20}, "d": {"r": 8, "n": 20}}
    axis = numeric_axis(parameters, list(parameters))
    assert axis["parameter"] == "r" and axis["others"] == {"a": "n=10", "b": "n=10", "c": "n=20", "d": "n=20"}
    assert numeric_axis({"x": {"topology": "ba", "n": 1}, "y": {"topology": "ws", "n": 2}}, ["x", "y"]) is None
    assert numeric_axis({"x": {"flag": True}, "y": {"flag": False}}, ["x", "y"]) is None
    assert numeric_axis({"x": {"r": 1}}, ["x"]) is None  # one condition: nothing to draw along


def test_intervals_stay_inside_the_declared_range_and_are_scipys_t_interval_elsewhere():
    games = pd.DataFrame({"condition": ["a"] * 2 + ["b"] * 6, "model": ["m"] * 8,
                          "rounds": [10, 100, 40, 42, 44, 46, 48, 50], "wealth": [1.0, 9.0, 3, 4, 5, 4, 3, 5]})
    scales = {"rounds": count(high="limit"), "wealth": continuous(0, 10)}
    rows = summaries(games, scales=scales, parameters={"a": {"limit": 100}, "b": {"limit": 100}})["rows"]
    cell = {(r["condition"], r["measure"]): r for r in rows}
    wide = cell[("a", "rounds")]  # two games, 10 and 100: t gives -517 .. 627
    assert (wide["low"], wide["high"]) == (0.0, 100.0)
    assert (cell[("a", "wealth")]["low"], cell[("a", "wealth")]["high"]) == (0.0, 10.0)
    narrow = cell[("b", "rounds")]
    low, high = stats.t.interval(0.95, 5, loc=45, scale=stats.sem([40, 42, 44, 46, 48, 50]))
    assert (narrow["low"], narrow["high"]) == pytest.approx((low, high))


def test_a_column_each_condition_fixes_is_named_and_an_outcome_is_not():
    games = pd.DataFrame({"condition": ["x", "x", "y", "y"], "seed": [1, 2, 1, 2], "k": [2, 2, 3, 3],
                          "solved": [True, False, True, True], "n": [38] * 4})
    assert constant_columns(games, ["k", "solved", "n"]) == {"n": 38}
    assert condition_columns(games, ["k", "solved"]) == {"k": {"x": 2, "y": 3}}
    assert condition_columns(games.assign(seed=1), ["k"]) == {}  # one seed: anything could look fixed


def test_per_round_curves_hold_an_ended_game_at_its_last_state_and_count_no_events_after_it():
    rounds = pd.DataFrame({
        "sweep": "s", "condition": "c", "policy": "p", "seed": [1, 1, 1, 2, 2, 2, 2, 2],
        "round": [0, 1, 2, 0, 1, 2, 3, 4], "level": [0.0, 0.5, 1.0, 0.0, 0.2, 0.2, 0.4, 0.6],
        "moves": [0, 3, 1, 0, 2, 2, 2, 2]})
    games = pd.DataFrame({"sweep": "s", "condition": "c", "policy": "p", "seed": [1, 2], "model": "p"})
    curves = per_round(rounds, games, {"level": share(), "moves": count(events=True)}, {})
    at = {(r["measure"], r["round"]): r for r in curves["rows"]}
    assert at[("level", 4)]["mean"] == pytest.approx((1.0 + 0.6) / 2)  # game 1 ended at 1.0 and holds it
    assert at[("moves", 4)]["mean"] == pytest.approx((0 + 2) / 2)  # ... and moves no more
    assert at[("level", 1)]["mean"] == pytest.approx(0.35) and at[("level", 4)]["n"] == 1  # one game still playing
    low, high = stats.t.interval(0.95, 1, loc=0.35, scale=stats.sem([0.5, 0.2]))
    assert (at[("level", 1)]["low"], at[("level", 1)]["high"]) == pytest.approx((max(low, 0), min(high, 1)))
    series = curves["series"][0]
    assert series["to_the_end"] == 1 and series["last_round"] == 4 and series["ends"]["level"]["end"] == pytest.approx(0.8)


def test_the_colouring_report_leaves_constant_columns_out_and_keeps_rounds_inside_the_round_limit(tmp_path, capsys):
    out = tmp_path / "colouring"
    assert main(["sweep", "--game", "colouring", "--conditions", "cycle,leader-cycle,pa-2", "--seeds", "4",
                 "--set", "max_rounds=40", "--tables", "rounds", "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    report = analysed(capsys, out)["generic"]  # the colouring analysis holds every measure as any game's
    assert report["constant"]["n"] == 38 and "n" not in report["summaries"]["order"]
    assert "k" in report["by_condition"] and "k" not in report["summaries"]["order"]
    assert report["summaries"]["order"][0] == "solved" and report["headline"] == "solved"
    for row in report["summaries"]["rows"]:
        if row["measure"] in ("rounds", "rounds_to_solution") and row["low"] is not None:
            assert 0 <= row["low"] <= row["mean"] <= row["high"] <= 40, row
    for row in report["curves"]["rows"]:
        if row["measure"] == "solved" and row["low"] is not None:
            assert 0 <= row["low"] <= row["high"] <= 1
    assert report["curves"]["events"] == ["changed"]  # failed is 0 in every rule game's round: not a curve
    assert report["curves"]["constant"] == {"failed": 0}
    page = tmp_path / "r.html"
    assert main(["report", str(out), "--out", str(page)]) == 0
    drawn = figures(page.read_text())
    assert {"n", "k"}.isdisjoint(drawn) and {"solved per round", "conflicting edges per round"} <= set(drawn)
    assert next(iter(drawn)).startswith("Solved within the round limit")  # the headline, beside the paper, first
    assert "n is 38" in page.read_text() and "Set by the condition" in page.read_text()
    assert get_game("colouring").measures["rounds"].bounds({"max_rounds": 40}) == (0.0, 40.0)
