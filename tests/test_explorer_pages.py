"""The explorer's pages without a browser, on the consensus game's view: controls, links, errors, pictures, pairs."""

from __future__ import annotations

import argparse

import networkx as nx
import pytest

from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.models.consensus.view import MAX_N, consensus_charts
from llm_mesa.models.consensus.view_policy import failure_line
from llm_mesa.registry import get_game
from llm_mesa.views import NetworkPicture, view_of
from llm_mesa.views.charts import line_spec
from llm_mesa.views.controls import ControlError, initial_values
from llm_mesa.views.layout import quick_layout
from llm_mesa.visualization import cli as viz_cli
from llm_mesa.visualization.compare_app import build_pair, compare_controls, compared_rounds
from llm_mesa.visualization.controls import GameSession
from llm_mesa.visualization.network_chart import MAX_LINKS, NodeStyle, chamber_spec, chambers, network_spec

VIEW = view_of(get_game("consensus"))


def defaults(**changes):
    return {**initial_values(VIEW.controls()), **changes}


# --- controls and links -------------------------------------------------------------------


def test_controls_come_from_the_games_parameters_and_reach_a_thousand_agents():
    specs = VIEW.controls()
    assert specs["n"]["max"] == MAX_N == 1000 and specs["n"]["label"] == "N (agents)"
    assert specs["seed"]["type"] == "InputInt"  # a number field, not a slider
    assert specs["topology"]["values"] == ["er", "ba", "ws", "caveman"]
    assert type(VIEW).__name__ == "ConsensusView"  # the game names its view in extensions.view


def test_a_good_link_presets_controls():
    assert VIEW.query_values("n=500&topology=caveman&seed=7") == ({"n": 500, "topology": "caveman", "seed": 7}, {})


@pytest.mark.parametrize(("query", "control", "message"), [
    ("topology=x", "topology", "Topology: unknown value 'x'; choose one of: er, ba, ws, caveman"),
    ("n=abc", "n", "N (agents): 'abc' is not a whole number"),
    ("n=7", "n", "N (agents): 7 is below this page's minimum 8"),
    ("max_rounds=100000", "max_rounds", "Max rounds: 100,000 is above this page's maximum 200"),
    ("n=100000000", "n", "N (agents): 100,000,000 is above this page's maximum 1,000"),
    ("seed=-1", "seed", "Seed: -1 is below this page's minimum 0"),
    ("llm_endpoint=htp:/x", "llm_endpoint", "is not an endpoint URL"),
])
def test_every_bad_link_value_gets_its_controls_own_message(query, control, message):
    values, errors = VIEW.query_values(query + "&communication=local")
    assert values == {"communication": "local"}  # the good values stay
    assert set(errors) == {control} and message in errors[control]
    with pytest.raises(ControlError) as typed:  # the very message the control gives when typed in
        VIEW.check({control: dict(x.split("=") for x in [query])[control]})
    assert typed.value.control == control and str(typed.value) == errors[control]


def test_a_session_from_a_bad_link_starts_with_the_rest_and_shows_the_message():
    values, errors = VIEW.query_values("topology=x&n=40")
    session = GameSession(VIEW.build_from, defaults(**values), errors)
    assert session.game is not None and session.game.n == 40 and session.game.topology == "ba"
    assert "unknown value 'x'" in session.errors["topology"]


@pytest.mark.parametrize(("changes", "control", "fragment"), [
    ({"policy_mix": "llm", "llm_endpoint": "htp:/not a url"}, "llm_endpoint", "is not an endpoint URL"),
    ({"policy_mix": "llm", "llm_model": "  "}, "llm_model", "model name is empty"),
    ({"n": 5000}, "n", "1,000"),
    ({"seed": -3}, "seed", "Seed"),
    ({"max_rounds": 0}, "max_rounds", "below this page's minimum 5"),
    ({"policy_mix": "voter | hubs=stubborn"}, "policy_mix", "selector"),
])
def test_a_bad_control_is_named_with_its_message(changes, control, fragment):
    with pytest.raises(ControlError) as caught:
        VIEW.build_from(defaults(**changes))
    assert caught.value.control == control and fragment in str(caught.value)


def test_an_unreachable_endpoint_is_found_before_the_game_starts():
    with LoopbackServer() as server:
        url = server.base_url
    with pytest.raises(ControlError) as caught:
        VIEW.build_from(defaults(policy_mix="llm", llm_endpoint=url))
    assert caught.value.control == "llm_endpoint" and "cannot reach" in str(caught.value)


def test_a_failed_reset_keeps_the_running_game():
    session = GameSession(VIEW.build_from, defaults())
    first = session.game
    session.step()
    assert not session.reset(defaults(policy_mix="llm", llm_endpoint="nonsense"))
    assert session.game is first and first.round == 1 and set(session.errors) == {"llm_endpoint"}
    assert session.reset(defaults(n=12)) and session.errors == {} and session.game.n == 12


def test_two_sessions_hold_two_games():
    one, two = GameSession(VIEW.build_from, defaults()), GameSession(VIEW.build_from, defaults())
    one.step()
    one.step()
    assert one.game is not two.game and one.game.round == 2 and two.game.round == 0


def test_every_failed_decision_is_counted_with_its_cause():
    server = LoopbackServer()
    server.__enter__()
    model = VIEW.build_from(defaults(policy_mix="llm", llm_endpoint=server.base_url, n=36))
    model.step()
    assert failure_line(model) is None
    server.__exit__(None, None, None)
    model.step()
    assert failure_line(model) == "36 of 36 decisions failed: connection refused"
    snapshot = VIEW.snapshot(model)
    assert snapshot.picture.details[0]["last reason"] == "failed (call_failure)"
    assert [b.tag for b in snapshot.banners][0] == "llm-mesa-failures"


def test_a_round_that_breaks_is_reported_not_raised():
    session = GameSession(VIEW.build_from, defaults())

    def broken():
        raise RuntimeError("disk full")

    session.game.step = broken
    assert session.step() is False and "disk full" in session.errors["_general"]


# --- the picture ---------------------------------------------------------------------------------


def test_node_size_and_labels_adapt_to_the_network():
    small, large = NodeStyle.for_size(10), NodeStyle.for_size(1000)
    assert small.labels and not large.labels and small.size > 10 * large.size >= 10 * 12


def test_the_network_spec_carries_every_node_with_its_details_and_the_banner_counts_its_groups():
    model = VIEW.build_from(defaults(n=40, topology="caveman"))
    model.step()
    snapshot = VIEW.snapshot(model, selected=3)
    spec = network_spec(snapshot.picture, selected=3)
    nodes = spec["datasets"]["nodes"]
    assert [r["agent"] for r in nodes] == list(range(40))
    assert [r["fill"] for r in nodes] == list(model.colours) and [r["ring"] for r in nodes] == list(model.preferences)
    assert {"last reason", "policy", "role"} <= set(nodes[0])
    assert len(spec["datasets"]["edges"]) == model.graph.number_of_edges()
    assert any(layer.get("transform") == [{"filter": "datum.index == 3"}] for layer in spec["layer"])
    groups = len(chambers(model.graph, model.colours).members)
    assert f"{groups} same-colour groups" in spec["title"]["text"]
    assert any(f"{groups} same-colour groups" in b.text for b in snapshot.banners)  # the banner names what is drawn


def test_a_nodes_number_shows_the_nodes_details_so_hovering_its_centre_works():
    """At N <= 60 the number sits on the node's centre: it must carry the node's tooltip and be clickable."""
    model = VIEW.build_from(defaults(n=36))
    spec = network_spec(VIEW.picture(model))
    nodes = next(layer for layer in spec["layer"] if layer.get("name") == "nodes")
    labels = [layer for layer in spec["layer"] if layer["mark"]["type"] == "text"]
    assert len(labels) == 1 and labels[0]["data"] == {"name": "nodes"}
    assert labels[0]["encoding"]["tooltip"] == nodes["encoding"]["tooltip"]
    assert all("tooltip" in layer["encoding"] for layer in spec["layer"] if layer["data"] == {"name": "nodes"})


def test_the_chamber_map_contracts_each_group_to_one_bubble_on_a_scale_fixed_by_n():
    graph = nx.path_graph(6)
    colours = ["red", "red", "blue", "blue", "red", "blue"]
    found = chambers(graph, colours)
    assert [len(m) for m in found.members] == [2, 2, 1, 1] and sum(found.links.values()) == 3
    picture = NetworkPicture(graph, {v: (float(v), 0.0) for v in graph}, colours, 0)
    spec = chamber_spec(picture)
    assert sorted(b["members"] for b in spec["datasets"]["bubbles"]) == [1, 1, 2, 2]
    assert sum(line["crossing"] for line in spec["datasets"]["lines"]) == 3
    one = chamber_spec(NetworkPicture(graph, picture.layout, ["red"] * 6, 0))
    size = [layer["encoding"]["size"]["scale"] for layer in (spec["layer"][1], one["layer"][1])]
    assert size[0] == size[1] == {"domain": [1, 6], "range": [36, 3600]}  # one scale, whatever the groups


def test_a_thousand_node_dense_graph_draws_a_sample_of_its_links():
    graph = nx.gnp_random_graph(1000, 0.02, seed=1)
    layout = quick_layout(graph, seed=1)
    assert set(layout) == set(graph) and all(-1 <= c <= 1 for p in layout.values() for c in p)
    spec = network_spec(NetworkPicture(graph, layout, ["red", "blue"] * 500, 0, ring=["blue", "red"] * 500))
    assert len(spec["datasets"]["nodes"]) == 1000 and len(spec["datasets"]["edges"]) <= MAX_LINKS
    assert "links drawn" in " ".join(spec["title"]["subtitle"])


def test_charts_fit_their_cell_and_share_of_blue_sits_on_zero_to_one():
    model = VIEW.build_from(defaults())
    for _ in range(3):
        model.step()
    charts = dict(consensus_charts(VIEW.rounds(model), model.n))
    shares = charts["llm-mesa-chart-shares"]
    assert shares["width"] == "container" and shares["title"]["text"]
    encoding = shares["layer"][0]["encoding"]
    assert encoding["y"]["scale"]["domain"] == [0, 1] and encoding["y"]["title"] == "share of agents"
    assert encoding["x"]["scale"]["domain"] == [0, 3]  # every round, the latest included
    assert list(charts) == ["llm-mesa-chart-shares", "llm-mesa-chart-component", "llm-mesa-chart-moves"]
    marked = line_spec([], "t", "v", last_round=5, current_round=2)
    assert marked["layer"][1]["data"]["values"] == [{"round": 2}]


# --- side by side -----------------------------------------------------------------------------


def test_side_by_side_games_share_graph_preferences_and_seed_and_step_together():
    values = {**initial_values(compare_controls(VIEW)), "policy_a": "voter", "policy_b": "majority-inertia", "n": 30}
    a, b = build_pair(VIEW, values)
    reference = ConsensusModel(n=30, topology="ba", policy="stubborn", rng=1, baseline_permutations=0)
    assert nx.utils.graphs_equal(a.graph, reference.graph) and nx.utils.graphs_equal(b.graph, reference.graph)
    assert a.preferences == b.preferences == reference.preferences and a.colours == b.colours
    assert VIEW.picture(a).layout == VIEW.picture(b).layout
    session = GameSession(lambda v: build_pair(VIEW, v), values)
    session.step()
    rounds = compared_rounds(VIEW, session.game)
    assert sorted(rounds.groupby("population")["round"].max()) == [1, 1]
    assert set(rounds["population"]) == {"A: voter", "B: majority-inertia"}
    with pytest.raises(ControlError) as caught:
        build_pair(VIEW, {**values, "policy_b": "llm", "llm_endpoint": "bad"})
    assert caught.value.control == "llm_endpoint"
    with pytest.raises(ControlError) as caught:
        build_pair(VIEW, {**values, "policy_b": "nonsense"})
    assert caught.value.control == "policy_b"


# --- the command ---------------------------------------------------------------------------------


def test_viz_picks_the_page_and_needs_a_game_when_several_are_installed(tmp_path):
    parser = argparse.ArgumentParser()
    viz_cli.configure(parser)
    assert viz_cli.app_module(parser.parse_args(["--compare"])) == viz_cli.COMPARE_MODULE
    assert viz_cli.app_module(parser.parse_args([])) == viz_cli.APP_MODULE
    with pytest.raises(viz_cli.VizError, match="choose one"):
        viz_cli.app_module(parser.parse_args(["--compare", "--sweep", str(tmp_path)]))
    with pytest.raises(Exception, match="several games are installed; choose one with --game"):
        viz_cli.chosen_game(parser.parse_args([]))
    name, env = viz_cli.chosen_game(parser.parse_args(["--game", "consensus"]))
    assert name == "consensus" and env == {"LLM_MESA_GAME": "consensus"}
    assert viz_cli.solara_environment(tmp_path, env)["LLM_MESA_GAME"] == "consensus"


def test_the_chart_widget_loads_only_what_the_offline_cache_holds():
    import re

    from llm_mesa.visualization import assets
    from llm_mesa.visualization.vega_widget import TEMPLATE

    wanted = set(re.findall(r"\$\{this\.getCdn\(\)\}/((?:@[\w.-]+/)?[\w.-]+)@([\w.-]+)/", TEMPLATE))
    assert wanted == {("vega", "5"), ("vega-lite", "5"), ("vega-embed", "6"), ("requirejs", "2.3.6")}
    assert wanted <= {(a.name, a.spec) for a in assets.SOLARA_ASSETS}
