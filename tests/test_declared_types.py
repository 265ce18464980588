"""Declared types: what a state or a measure is, and the range a control offers."""

from __future__ import annotations

import pytest

from llm_mesa import Game, Parameter, ParameterSet, categorical, continuous, count, declared, ordinal, share
from llm_mesa.game_types import Scale, infer_scale


@pytest.mark.parametrize(("name", "values", "kind"), [
    ("agreed", [True, False, True], "share"),
    ("share_a", [0.0, 1.0, 1.0], "share"),        # whole numbers, but named a share
    ("local_agreement", [0.25, 0.9], "share"),     # fractions in 0..1
    ("failed", [0, 1, 0, 2], "count"),             # a count of 0 and 1 is not a share
    ("failed", [0.0, 1.0], "count"),               # nor when a table stored it as floats
    ("wealth", [0.5, 3.25, 7.0], "continuous"),
    ("balance", [-2, 3], "continuous"),            # whole numbers below 0 count nothing
    ("colour", ["red", "blue", "red"], "categorical"),
    ("empty", [], "categorical"),
])
def test_an_undeclared_column_is_read_from_its_name_and_values(name, values, kind):
    assert infer_scale(name, values).kind == kind


def test_missing_values_do_not_change_what_a_column_is():
    assert infer_scale("failed", [None, float("nan"), 3, 0]).kind == "count"


def test_categories_keep_their_declared_order_and_palette():
    scale = categorical("b", "a", palette={"a": "#000000"})
    assert scale.values == ("b", "a") and scale.palette["a"] == "#000000" and not scale.numeric
    assert infer_scale("x", ["b", "a", "b"]).values == ("a", "b")  # undeclared: sorted


def test_shares_and_counts_have_their_ranges_and_clip_intervals_inside():
    assert (share().low, share().high) == (0.0, 1.0) and share().clip(1.4) == 1.0 and share().clip(-0.2) == 0.0
    assert count().low == 0.0 and count().clip(-50) == 0.0 and count().clip(190) == 190
    assert continuous(0, 10, unit="coins").clip(12) == 10 and ordinal("low", "high").kind == "ordinal"
    with pytest.raises(ValueError, match="unknown scale kind"):
        Scale("colour")


class Declared(Game):
    name = "declared_types_test"
    parameters = ParameterSet.of(Parameter("n", int, 10, "agents", low=2, high=100))
    measures = {"wealth": continuous(0, 100, unit="coins"), "rich": count()}
    headline_measure = "rich"

    def build(self, parameters, policy, seed):
        raise AssertionError("never built")


def test_a_game_declares_what_its_measures_are_and_which_comes_first():
    game = Declared()
    assert declared.scale_of(game, "wealth", [0.5]).unit == "coins" and declared.scale_of(game, "rich").kind == "count"
    assert declared.scale_of(game, "other", [0.25]).kind == "share"  # not declared: read from the values
    assert declared.first_measure(game) == "rich"


@pytest.mark.parametrize(("parameter", "offered"), [
    (Parameter("n", int, 36, "agents", low=5, high=10_000), (5, 144)),            # not pinned at the far left
    (Parameter("r", float, 3.0, "rate", low=0, high=100), (0, 12.0)),
    (Parameter("k", int, 4, "colours", low=2, high=10), (2, 10)),                  # a narrow range is offered whole
    (Parameter("p", float, 0.5, "chance", low=0, high=1), (0, 1)),
    (Parameter("m", int, 300, "rounds", low=1, high=1_000_000, control_range=(10, 600)), (10, 600)),  # declared
])
def test_a_slider_offers_the_declared_range_else_one_around_the_default(parameter, offered):
    spec = parameter.control_spec()
    assert (spec["min"], spec["max"]) == offered and spec["min"] <= spec["value"] <= spec["max"]


def test_a_control_range_outside_the_bounds_is_refused_when_the_game_is_written():
    with pytest.raises(ValueError, match="control_range"):
        Parameter("n", int, 10, "agents", low=2, high=100, control_range=(1, 50))


def test_a_count_may_be_bounded_by_a_product_of_parameters():
    """Agents on a grid of one agent a cell never outnumber its cells: a band drawn for them stops there."""
    from llm_mesa import count

    cells = count(high="width*height")
    assert cells.bounds({"width": 10, "height": 14}) == (0.0, 140.0)
    assert cells.clip(151.0, {"width": 10, "height": 14}) == 140.0 and cells.bounds({"width": 10}) == (0.0, None)
