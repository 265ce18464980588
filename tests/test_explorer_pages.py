"""The explorer's pages without a browser: controls, errors, the picture's spec, side by side, sweeps."""

from __future__ import annotations

import argparse

import networkx as nx
import pytest

from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.sweep import read_sweep, run_sweep
from llm_mesa.visualization import cli as viz_cli
from llm_mesa.visualization.charts import consensus_charts, line_spec
from llm_mesa.visualization.compare_app import build_pair, compare_params, compared_rounds
from llm_mesa.visualization.consensus_game import (
    MAX_N,
    agent_details,
    build_model,
    failure_line,
    model_params,
)
from llm_mesa.visualization.controls import ControlError, GameSession, initial_values, values_from_query
from llm_mesa.visualization.layout import quick_layout
from llm_mesa.visualization.network_chart import MAX_LINKS, NodeStyle, chamber_spec, chambers, network_spec
from llm_mesa.visualization.network_view import NetworkState, describe
from llm_mesa.visualization.sweep_app import distribution_spec
from llm_mesa.visualization.sweep_data import SweepView, SweepViewError


def defaults(**changes):
    return {**initial_values(model_params()), **changes}


# --- controls --------------------------------------------------------------------------


def test_controls_come_from_the_games_parameters_and_reach_a_thousand_agents():
    specs = model_params()
    assert specs["n"]["max"] == MAX_N == 1000 and specs["n"]["label"] == "N (agents)"
    assert specs["seed"]["type"] == "InputInt"  # a number field, not a slider
    assert specs["topology"]["values"] == ["er", "ba", "ws", "caveman"]


def test_query_strings_preset_controls_and_never_break_the_page():
    specs = model_params()
    assert values_from_query(specs, "n=500&topology=caveman&seed=7") == {"n": 500, "topology": "caveman", "seed": 7}
    assert values_from_query(specs, "?n=lots&topology=moon&nope=1") == {}


@pytest.mark.parametrize(("changes", "control", "fragment"), [
    ({"policy_mix": "llm", "llm_endpoint": "htp:/not a url"}, "llm_endpoint", "is not an endpoint URL"),
    ({"policy_mix": "llm", "llm_model": "  "}, "llm_model", "model name is empty"),
    ({"n": 5000}, "n", "1000"),
    ({"seed": -3}, "seed", "seed"),
    ({"max_rounds": 0}, "max_rounds", "below its minimum"),
])
def test_a_bad_control_is_named_with_its_message(changes, control, fragment):
    with pytest.raises(ControlError) as caught:
        build_model(defaults(**changes))
    assert caught.value.control == control and fragment in str(caught.value)


def test_an_unreachable_endpoint_is_found_before_the_game_starts():
    with LoopbackServer() as server:
        url = server.base_url
    with pytest.raises(ControlError) as caught:
        build_model(defaults(policy_mix="llm", llm_endpoint=url))
    assert caught.value.control == "llm_endpoint" and "cannot reach" in str(caught.value)


def test_a_failed_reset_keeps_the_running_game():
    session = GameSession(build_model, defaults())
    first = session.game
    session.step()
    assert not session.reset(defaults(policy_mix="llm", llm_endpoint="nonsense"))
    assert session.game is first and first.round == 1 and set(session.errors) == {"llm_endpoint"}
    assert session.reset(defaults(n=12)) and session.errors == {} and session.game.n == 12


def test_two_sessions_hold_two_games():
    one, two = GameSession(build_model, defaults()), GameSession(build_model, defaults())
    one.step()
    one.step()
    assert one.game is not two.game and one.game.round == 2 and two.game.round == 0


def test_every_failed_decision_is_counted_with_its_cause():
    server = LoopbackServer()
    server.__enter__()
    model = build_model(defaults(policy_mix="llm", llm_endpoint=server.base_url, n=36))
    model.step()
    assert failure_line(model) is None
    server.__exit__(None, None, None)
    model.step()
    assert failure_line(model) == "36 of 36 decisions failed: connection refused"
    assert agent_details(model)[0]["reason"] == "failed (call_failure)"


# --- the picture -------------------------------------------------------------------------


def test_node_size_and_labels_adapt_to_the_network():
    small, large = NodeStyle.for_size(10), NodeStyle.for_size(1000)
    assert small.labels and not large.labels and small.size > 10 * large.size >= 10 * 12


def test_the_network_spec_carries_every_node_with_its_details():
    model = build_model(defaults(n=40, topology="caveman"))
    model.step()
    state = NetworkState.of_model(model, agent_details(model))
    spec = state.spec(selected=3)
    nodes = spec["datasets"]["nodes"]
    assert [r["agent"] for r in nodes] == list(range(40))
    assert {"colour", "preference", "state", "last reason", "policy"} <= set(nodes[0])
    assert len(spec["datasets"]["links"]) == model.graph.number_of_edges()
    assert any(layer.get("transform") == [{"filter": "datum.agent == 3"}] for layer in spec["layer"])
    groups = len(chambers(model.graph, model.colours).members)
    assert f"{groups} same-colour groups" in spec["title"]["text"]
    assert f"{groups} same-colour groups" in describe(state)[1]  # the banner names what is drawn


def test_the_chamber_map_contracts_each_group_to_one_bubble():
    graph = nx.path_graph(6)
    colours = ["red", "red", "blue", "blue", "red", "blue"]
    found = chambers(graph, colours)
    assert [len(m) for m in found.members] == [2, 2, 1, 1] and sum(found.links.values()) == 3
    spec = chamber_spec(graph, {v: (float(v), 0.0) for v in graph}, colours)
    assert sorted(b["members"] for b in spec["datasets"]["bubbles"]) == [1, 1, 2, 2]
    assert sum(line["links"] for line in spec["datasets"]["lines"]) == 3


def test_a_thousand_node_dense_graph_draws_a_sample_of_its_links():
    graph = nx.gnp_random_graph(1000, 0.02, seed=1)
    layout = quick_layout(graph, seed=1)
    assert set(layout) == set(graph) and all(-1 <= c <= 1 for p in layout.values() for c in p)
    spec = network_spec(graph, layout, ["red", "blue"] * 500, ["blue", "red"] * 500)
    assert len(spec["datasets"]["nodes"]) == 1000 and len(spec["datasets"]["links"]) <= MAX_LINKS
    assert "links drawn" in spec["title"]["subtitle"][0]


def test_charts_fit_their_cell_and_share_of_blue_sits_on_zero_to_one():
    model = build_model(defaults())
    for _ in range(3):
        model.step()
    charts = dict(consensus_charts(model.rounds_table(), model.n))
    shares = charts["llm-mesa-chart-shares"]
    assert shares["width"] == "container" and shares["title"]["text"]
    encoding = shares["layer"][0]["encoding"]
    assert encoding["y"]["scale"]["domain"] == [0, 1] and encoding["y"]["title"] == "share of agents"
    assert encoding["x"]["scale"]["domain"] == [0, 3]  # every round, the latest included
    assert list(charts) == ["llm-mesa-chart-shares", "llm-mesa-chart-component", "llm-mesa-chart-moves"]
    marked = line_spec([], "t", "v", last_round=5, current_round=2)
    assert marked["layer"][1]["data"]["values"] == [{"round": 2}]


# --- side by side -----------------------------------------------------------------------------


def test_side_by_side_games_share_graph_preferences_and_seed():
    values = {**initial_values(compare_params()), "policy_a": "voter", "policy_b": "majority-inertia", "n": 30}
    a, b = build_pair(values)
    reference = ConsensusModel(n=30, topology="ba", policy="stubborn", rng=1, baseline_permutations=0)
    assert nx.utils.graphs_equal(a.graph, reference.graph) and nx.utils.graphs_equal(b.graph, reference.graph)
    assert a.preferences == b.preferences == reference.preferences and a.colours == b.colours
    assert a.shared_layout == b.shared_layout
    session = GameSession(build_pair, values)
    session.step()
    rounds = compared_rounds(session.game)
    assert sorted(rounds.groupby("population")["round"].max()) == [1, 1]
    with pytest.raises(ControlError) as caught:
        build_pair({**values, "policy_b": "llm", "llm_endpoint": "bad"})
    assert caught.value.control == "llm_endpoint"


# --- sweeps ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "ba"
    run_sweep(["ba-local"], "mi-0.2;voter", 2, out, tables=["agents", "rounds"],
              model_options={"max_rounds": 10, "baseline_permutations": 0}, game="consensus")
    return out


def test_a_sweeps_game_replays_as_the_game_played_alone(sweep_dir):
    view = SweepView.open(sweep_dir)
    assert view.game == "consensus" and view.conditions == ["ba-local"] and view.policies == ["mi-0.2", "voter"]
    assert {"agents", "edges", "rounds"} <= set(view.kept_tables)
    table = view.headline(view.filtered(None, ["voter"]))
    assert list(table.columns) == ["condition", "voter", "all"]
    game = view.recorded_game("ba-local", "voter", 1)
    alone = ConsensusModel(n=36, topology="ba", communication="local", policy="voter", max_rounds=10,
                           baseline_permutations=0, rng=int(read_sweep(sweep_dir).query("policy == 'voter'")
                                                           .iloc[1]["seed"])).run()
    assert game.last_round == alone.round and nx.utils.graphs_equal(game.graph, alone.graph)
    for r in range(game.last_round + 1):
        assert game.colours_at(r) == alone.colour_history[r]
    assert game.state_at(game.last_round).spec()["datasets"]["nodes"][0]["agent"] == 0
    spec = distribution_spec(view.games, "rounds")
    assert len(spec["data"]["values"]) == 4 and {"game", "value"} <= set(spec["data"]["values"][0])


def test_a_sweep_without_its_tables_says_how_to_keep_them(tmp_path):
    out = tmp_path / "bare"
    run_sweep(["ba-local"], "voter", 1, out, model_options={"max_rounds": 3, "baseline_permutations": 0}, game="consensus")
    view = SweepView.open(out)
    with pytest.raises(SweepViewError, match="--tables"):
        view.recorded_game("ba-local", "voter", 0)
    with pytest.raises(SweepViewError, match="does not exist"):
        SweepView.open(tmp_path / "nowhere")


def test_viz_opens_the_comparison_and_the_sweep_browser(tmp_path, sweep_dir):
    parser = argparse.ArgumentParser()
    viz_cli.configure(parser)
    assert viz_cli.app_module(parser.parse_args(["--compare"])) == viz_cli.COMPARE_MODULE
    assert viz_cli.app_module(parser.parse_args(["--sweep", str(sweep_dir)])) == viz_cli.SWEEP_MODULE
    with pytest.raises(viz_cli.VizError, match="choose one"):
        viz_cli.app_module(parser.parse_args(["--compare", "--sweep", str(sweep_dir)]))
    env = viz_cli.solara_environment(tmp_path, sweep_dir=sweep_dir)
    assert env[viz_cli.SWEEP_DIR_ENV] == str(sweep_dir)


def test_a_naming_sweep_replays_from_its_rounds_table(tmp_path):
    from llm_mesa.visualization.naming_charts import agreement_chart

    out = tmp_path / "sign"
    run_sweep(None, "echo", 1, out, game="naming", axes=["n=6"], tables=["rounds"], model_options={"max_rounds": 12})
    view = SweepView.open(out)
    assert view.game == "naming" and "agreement_final" in view.measures()
    condition = view.conditions[0]
    rounds = view.rounds_of(condition, "echo", 0)
    assert list(rounds["round"]) == list(range(1, 13))
    assert "agreement_final (mean)" in view.headline(view.games).columns
    chart = agreement_chart(rounds, last_round=12, current_round=5).to_dict()
    assert chart["layer"][-1]["mark"]["type"] == "rule"  # the round shown


@pytest.mark.parametrize(("changes", "control"), [
    ({"speaker": "llm", "llm_model": " "}, "llm_model"),
    ({"speaker": "llm", "llm_endpoint": "ftp://x"}, "llm_endpoint"),
    ({"mode": "nl-sw", "memory": 0}, "memory"),
])
def test_the_naming_page_names_the_control_at_fault(changes, control):
    from llm_mesa.visualization import naming_app

    with pytest.raises(ControlError) as caught:
        naming_app.build_model({**initial_values(naming_app.model_params()), **changes})
    assert caught.value.control == control


def test_the_chart_widget_loads_only_what_the_offline_cache_holds():
    import re

    from llm_mesa.visualization import assets
    from llm_mesa.visualization.vega_widget import TEMPLATE

    wanted = set(re.findall(r"\$\{this\.getCdn\(\)\}/((?:@[\w.-]+/)?[\w.-]+)@([\w.-]+)/", TEMPLATE))
    assert wanted == {("vega", "5"), ("vega-lite", "5"), ("vega-embed", "6"), ("requirejs", "2.3.6")}
    assert wanted <= {(a.name, a.spec) for a in assets.SOLARA_ASSETS}


def test_a_round_that_breaks_is_reported_not_raised():
    session = GameSession(build_model, defaults())

    def broken():
        raise RuntimeError("disk full")

    session.game.step = broken
    assert session.step() is False and "disk full" in session.errors["_general"]
