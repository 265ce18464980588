"""The generic pages draw what a game declares its state and measures to be: colours, legends, axes, sliders, panels.

Games the test registers itself (``space_games``): a network public-goods game with integer
contributions 0..10 declared continuous, and the in-tree colouring game (named colours). The
colours are checked against theory where there is one: the ink chosen for a fill is the more
contrasting of dark and white, and one of them always reaches sqrt(18.9) = 4.35 : 1 (their
contrast ratios multiply to a constant); ordered values darken monotonically.
"""

from __future__ import annotations

import math
import random

import pytest
from space_games import PGOODS, registered

from llm_mesa import categorical, count, ordinal
from llm_mesa.registry import get_game
from llm_mesa.views import GameView, NetworkPicture, view_of
from llm_mesa.views.agent_panel import fields_of, words
from llm_mesa.views.charts import column_scales, line_spec, numeric_rounds
from llm_mesa.views.colours import DARK_INK, LIGHT_INK, category_colours, ink, luminance, ordinal_colours
from llm_mesa.views.controls import initial_values
from llm_mesa.visualization.network_chart import has_categories, network_spec


@pytest.fixture(scope="module", autouse=True)
def games():
    with registered() as games:
        yield games


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def live(view: GameView, rounds: int = 0, **values):
    model = view.build_from({**initial_values(view.controls()), **values})
    for _ in range(rounds):
        model.step()
    return model


# --- colours ------------------------------------------------------------------------------------


def test_the_ink_on_any_fill_is_the_more_contrasting_and_always_readable():
    draw = random.Random(5)
    fills = [f"#{draw.randrange(1 << 24):06x}" for _ in range(500)] + ["#ffffff", "#000000", "#7f7f7f", "#fde725"]
    for fill in fills:
        chosen, other = ink(fill), ({DARK_INK, LIGHT_INK} - {ink(fill)}).pop()
        assert contrast(chosen, fill) >= contrast(other, fill)
        assert contrast(chosen, fill) >= math.sqrt(1.05 / (luminance(DARK_INK) + 0.05)) - 1e-9
    assert ink("#fde725") == DARK_INK and ink("#440154") == LIGHT_INK  # viridis' pale top, dark bottom


def test_categories_get_their_palette_then_their_named_colour_then_distinct_ones_in_a_sorted_legend():
    colours = category_colours(["C10", "blue", "C2", "mine", "C1"], palette={"mine": "#123456"})
    assert list(colours) == ["blue", "C1", "C2", "C10", "mine"]  # sorted, numbers within names by value
    assert colours["mine"] == "#123456" and colours["blue"] == "#1f77b4"
    assert len(set(colours.values())) == 5
    many = category_colours(list(range(25)))
    assert list(many) == list(range(25)) and len(set(many.values())) == 25  # more than ten, none shared
    declared = category_colours(["b", "a", "c"], order=("c", "b"))
    assert list(declared) == ["c", "b", "a"]  # the declared order first


def test_ordered_values_run_from_light_to_dark():
    colours = ordinal_colours(["low", "middle", "high", "top"])
    shades = [luminance(c) for c in colours.values()]
    assert shades == sorted(shades, reverse=True) and len(set(shades)) == 4


# --- a continuous state on a network --------------------------------------------------------------


def test_a_continuous_state_is_drawn_on_a_continuous_scale_with_a_legend_bar_and_no_chambers():
    view = view_of(PGOODS)
    model = live(view, rounds=2, policy="dice", seed=3)
    picture = view.picture(model)
    fill = picture.fill()
    assert fill.numeric and fill.domain == (0.0, 10.0) and fill.title == "contribution (coins)"
    assert not picture.categorical and not has_categories(picture)
    spec = network_spec(picture)
    nodes = spec["datasets"]["nodes"]
    assert [n["fill"] for n in nodes] == [float(a.state) for a in model.by_node]
    encoding = next(layer["encoding"]["fill"] for layer in spec["layer"] if layer.get("name") == "nodes")
    assert encoding["type"] == "quantitative" and encoding["scale"]["domain"] == [0.0, 10.0]
    assert encoding["legend"]["gradientLength"] > 0  # a legend bar, not a list of eleven swatches
    assert not any(layer.get("transform") == [{"filter": "datum.same"}] for layer in spec["layer"])  # no bands
    assert "same-state" not in spec["title"]["text"] and "mean" in spec["title"]["text"]
    for node in nodes:  # each label in the ink readable on its own fill
        assert node["ink"] == ink(fill.colour_of(node["fill"]))
    assert {n["ink"] for n in nodes if n["fill"] >= 9} <= {DARK_INK} and {n["ink"] for n in nodes if n["fill"] <= 1} <= {LIGHT_INK}


def test_an_undeclared_numeric_state_spans_what_was_seen_and_never_shrinks(monkeypatch):
    monkeypatch.setattr(type(PGOODS), "state_scale", None)
    view = view_of(PGOODS)
    model = live(view, policy="imitate", seed=2)
    first = view.picture(model).fill().domain
    states = [a.state for a in model.by_node]
    assert first == (min(states), max(states))
    for _ in range(4):  # imitation narrows the contributions; the scale keeps what it showed
        model.step()
    later = view.picture(model)
    assert later.domain == first and max(later.state) - min(later.state) < first[1] - first[0]


def test_eleven_whole_numbers_declared_categories_get_eleven_colours_in_numeric_order(monkeypatch):
    monkeypatch.setattr(type(PGOODS), "state_scale", categorical(*range(11), label="contribution"))
    view = view_of(PGOODS)
    picture = view.picture(live(view, policy="dice", seed=1))
    colours = picture.colours()
    assert list(colours) == [str(v) for v in range(11) if str(v) in colours]
    assert len(set(colours.values())) == len(colours) and picture.categorical
    assert "same-state groups" in network_spec(picture)["title"]["text"]


def test_an_ordinal_state_has_no_chamber_map():
    picture = NetworkPicture(graph=__import__("networkx").path_graph(3), layout={0: (0, 0), 1: (1, 0), 2: (2, 0)},
                             state=["low", "high", "low"], round_number=0, scale=ordinal("low", "high"))
    assert not picture.categorical and list(picture.colours()) == ["low", "high"]


# --- charts: counts and shares apart, the headline first --------------------------------------------


def test_counts_never_share_the_shares_axis_and_the_headline_leads():
    view = view_of(PGOODS)
    model = live(view, rounds=3, policy="dice", seed=1)
    charts = dict(view.charts(view.rounds(model)))
    assert list(charts)[0] == "llm-mesa-chart-mean-contribution"  # the declared headline
    shares = {r["series"] for r in charts["llm-mesa-chart-shares"]["data"]["values"]}
    assert shares == {"share contributing all"}
    assert "llm-mesa-chart-free-riders" in charts
    head = charts["llm-mesa-chart-mean-contribution"]["layer"][0]["encoding"]["y"]
    assert head["scale"]["domain"] == [0, 10]  # the declared range
    # no failure in three rounds: no flat line, its value listed among what has not changed
    assert "llm-mesa-chart-failed" not in charts
    assert any(r["line"].endswith(": 0") and "fail" in r["line"] for r in charts["llm-mesa-chart-unchanged"]["data"]["values"])
    failed = line_spec([{"round": r, "series": "failed", "value": 0.0} for r in range(4)], "failed", "failed",
                       last_round=3, counts=True)["layer"][0]["encoding"]["y"]
    assert failed["scale"]["domain"] == [0, 1] and failed["axis"]["format"] == "d"  # nothing counted: 0..1, whole


def test_an_undeclared_yes_no_column_is_a_share_and_a_zero_one_count_is_not():
    import pandas as pd

    rounds = numeric_rounds(pd.DataFrame({"round": [0, 1, 2], "agreed": [False, False, True], "failed": [0, 1, 0]}))
    scales = column_scales(rounds)
    assert scales["agreed"].kind == "share" and scales["failed"].kind == "count"
    tiny = view_of(get_game("tinyvote"))
    model = live(tiny, rounds=2, seed=2)
    charts = dict(tiny.charts(tiny.rounds(model)))
    declared = get_game("tinyvote").measures
    assert {r["series"] for r in charts["llm-mesa-chart-shares"]["data"]["values"]} == \
        {declared["share_a"].label, declared["agreed"].label}  # the doc's game declares both shares


def test_a_declared_count_bounded_by_a_parameter_is_read_from_the_values_on_a_page():
    scale = count(high="n")
    assert scale.bounds() == (0.0, None) and scale.bounds({"n": 24}) == (0.0, 24.0)
    assert scale.clip(30, {"n": 24}) == 24 and scale.clip(30) == 30


# --- sliders over the offered range, widened by what is asked ----------------------------------------


def test_the_colouring_sliders_offer_sensible_ranges_and_widen_to_any_value_the_game_takes():
    view = view_of(get_game("colouring"))
    controls = view.controls()
    offered = {name: (controls[name]["min"], controls[name]["max"]) for name in ("n", "chords", "leaders", "links",
                                                                                 "max_rounds")}
    assert offered == {"n": (3, 300), "chords": (0, 60), "leaders": (1, 10), "links": (1, 8), "max_rounds": (1, 500)}
    for name, (low, high) in offered.items():
        assert low <= controls[name]["value"] <= high
    assert view.query_values("n=500&max_rounds=2000") == ({"n": 500, "max_rounds": 2000}, {})
    values, errors = view.query_values("n=200000")
    assert values == {} and errors == {"n": "N (agents): 200,000 is above the game's maximum 100,000"}
    model = view.build_from({**initial_values(controls), "n": 500, "topology": "er"})
    assert model.n == 500  # usable, not clamped to the slider's range


def test_a_pages_own_range_stays_its_limit():
    view = view_of(get_game("consensus"))
    values, errors = view.query_values("n=5000")
    assert values == {} and "this page's maximum 1,000" in errors["n"]


# --- the agent panel: fields, never a repr -------------------------------------------------------------


def test_the_agent_panel_shows_the_observation_and_last_answer_field_by_field():
    view = view_of(get_game("colouring"))
    model = live(view, rounds=1, inertia=0.0)
    rows = view.agent_rows(model, 0)
    player = model.players[0]
    seen = player.observe()
    assert rows["observes for round 2 · colour"] == player.state  # round 1 played: what it sees for the next
    assert rows["observes for round 2 · neighbour colours"] == ", ".join(seen.neighbour_colours)
    assert rows["observes for round 2 · neighbours"] == ", ".join(str(v) for v in seen.neighbours)
    assert rows["decision in round 1 · colour"] == player.pending.colour
    assert not any("View(" in v or "Move(" in v for v in rows.values())
    assert not any(key.endswith(("degrees", "conflicts")) for key in rows)  # fields that hold nothing: left out
    assert not any(key.endswith((" · round", " · agent")) for key in rows)  # said once, in the heading and "agent"


def test_the_agent_panel_numbers_agents_as_the_tables_and_rounds_as_the_page():
    """Agent names are the game's (unique_id off a network), the panel's rounds follow the page's round line, and
    once the game has ended the panel shows no observation of a round that will never be played."""
    view = view_of(get_game("segregate"))
    model = live(view, rounds=1, max_rounds=3, seed=2, policy="unhappy-moves")
    names = view.names(model)
    assert names == [a.unique_id for a in view.agents(model)] and names[0] != 0
    rows = view.snapshot(model, selected=0).agent
    assert rows["agent"] == str(names[0]) and view.round_label(model) == "Round 1 of 3"
    assert "decision in round 1" in rows and any(k.startswith("observes for round 2 · ") for k in rows)
    while model.running:
        model.step()
    assert model.round == 3  # still moving at its limit: stopped there
    rows = view.snapshot(model, selected=0).agent
    assert view.round_label(model).startswith("Round 3 of 3 (ended")
    assert not any(k.startswith("observes for round") for k in rows) and rows["next round"].startswith("none")
    assert [b.kind for b in view.banners(model) if b.tag == "llm-mesa-ended"] == ["warning"]  # stopped, not solved
    settled = live(view, max_rounds=50, seed=2, policy="stay")  # nobody moves: it ends by itself after one round
    settled.step()
    assert not settled.running and view.round_label(settled) == "Round 1 of 50 (ended)"
    assert [b.kind for b in view.banners(settled) if b.tag == "llm-mesa-ended"] == ["done"]


@pytest.mark.parametrize(("value", "shown"), [
    (((("C", "C"), 1.0), (("C", "D"), 0.0)), "C/C: 1, C/D: 0"), ((("D", 11.2), ("D", 9.0)), "(D, 11.2), (D, 9)"),
    ({"own": 0.5, "around": [0.25, 1.0]}, "own: 0.5; around: 0.25, 1"),
    ((1, 2, 3), "1, 2, 3"), (True, "yes"), (None, "-"), (2.0 / 3, "0.6667"), ([], "none"),
])
def test_a_value_reads_as_words(value, shown):
    assert words(value) == shown


def test_structured_values_are_read_field_by_field():
    from collections import namedtuple

    Pair = namedtuple("Pair", "a b")
    assert fields_of(Pair(1, 2)) == {"a": 1, "b": 2} and fields_of({"x": 1}) == {"x": 1}
    assert fields_of("text") is None and fields_of(3) is None


def test_a_marked_node_keeps_its_shape_inside_a_ring_and_the_legend_counts_what_is_drawn():
    import networkx as nx

    graph = nx.path_graph(4)
    picture = NetworkPicture(graph=graph, layout={v: (float(v), 0.0) for v in graph}, state=["a", "a", "b", "b"],
                             round_number=1, flagged=[True, True, True, False], marked=(0, 3),
                             legend={"flagged": "in conflict", "marked": "changed"}, scale=categorical("a", "b"))
    spec = network_spec(picture)
    nodes = spec["datasets"]["nodes"]
    assert [n["shape"] for n in nodes] == ["flagged", "flagged", "flagged", ""]  # every node in conflict a square
    assert [n["marked"] for n in nodes] == [True, False, False, True]
    ring = next(layer for layer in spec["layer"] if layer.get("transform") == [{"filter": "datum.marked"}])
    assert ring["mark"]["filled"] is False and ring["encoding"]["shape"]["field"] == "shape"  # around, same shape
    assert "■ 3 in conflict · dashed black ring: 2 changed" in " ".join(spec["title"]["subtitle"])


def test_a_game_without_a_declared_round_limit_never_claims_it_ended_by_itself():
    view = view_of(get_game("wallet"))
    model = live(view, seed=1)
    while model.running:
        model.step()
    assert view.round_limit(model) is None and view.round_label(model).endswith("(ended)")
    assert [(b.kind, b.text) for b in view.banners(model) if b.tag == "llm-mesa-ended"] == \
        [("info", f"The game ended at round {view.round_number(model)}.")]


def test_a_messages_table_shows_whole_numbers_as_whole_numbers():
    import pandas as pd

    from llm_mesa.visualization.panels import whole_numbers

    frame = pd.DataFrame({"to": [11.0, float("nan")], "said": ["a", "b"], "x": [0.5, 1.0], "mixed": [3.0, "all"]})
    shown = whole_numbers(frame)
    assert shown["to"].tolist() == ["11", "–"] and shown["x"].tolist() == [0.5, 1.0]
    assert shown["mixed"].tolist() == ["3", "all"]
