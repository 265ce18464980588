"""The replay viewer's data layer: a recorded game reads back as the game that was played.

A game is recorded with ``llm-mesa consensus --out`` and replayed next to the same
game played live (same parameters, same seed): every round's colours, flippers and
network picture must be identical, and the picture comes from the one drawing
function both views share.
"""

from __future__ import annotations

import json

import networkx as nx
import pytest

from llm_mesa.cli import main
from llm_mesa.models.consensus import ConsensusModel, measures
from llm_mesa.visualization import cli as viz_cli
from llm_mesa.visualization.network_view import node_roles
from llm_mesa.visualization.replay import RecordedGame, ReplayError

GAME = ["--topology", "caveman", "--n", "36", "--policy", "majority-inertia", "--seed", "3",
        "--max-rounds", "12", "--baseline-permutations", "10"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay") / "run"
    assert main(["consensus", *GAME, "--out", str(out)]) == 0
    return out


def _live_model() -> ConsensusModel:
    return ConsensusModel(n=36, topology="caveman", policy="majority-inertia", max_rounds=12,
                          baseline_permutations=10, rng=3)


def test_every_recorded_round_matches_the_live_game(recorded):
    game = RecordedGame.load(recorded)
    live = _live_model().run()
    assert game.last_round == live.round
    assert nx.utils.graphs_equal(game.graph, live.graph)
    assert game.preferences == live.preferences
    for r in range(game.last_round + 1):
        assert game.colours_at(r) == live.colour_history[r], f"round {r}"
    assert game.flippers_at(game.last_round) == tuple(live.flippers)
    assert game.satisfied_at(game.last_round) == measures.locally_satisfied(live.graph, live.colours).tolist()


def test_replayed_picture_is_the_live_picture_round_by_round(recorded):
    from llm_mesa.visualization.network_view import NetworkState

    game = RecordedGame.load(recorded)
    live = _live_model()
    pictures = {}
    for r in range(game.last_round + 1):
        if r:
            live.step()
        if r in (0, 4, game.last_round):
            replayed = game.state_at(r).spec()
            assert replayed == NetworkState.of_model(live).spec(), f"round {r}"
            assert game.state_at(r).spec("echo chambers") == NetworkState.of_model(live).spec("echo chambers")
            pictures[r] = replayed
    assert pictures[0] != pictures[game.last_round]  # the game moved, and so does the picture


def test_node_roles_on_a_hand_checked_path():
    path = nx.path_graph(3)
    colours = ["red", "red", "blue"]
    satisfied = measures.locally_satisfied(path, colours).tolist()
    assert satisfied == [True, True, False]  # node 1: one of two neighbours agrees, which is half
    assert node_roles(colours, satisfied, ()) == {0: "satisfied", 1: "satisfied", 2: "unsatisfied"}
    assert node_roles(colours, satisfied, (2,))[2] == "flipper"
    assert set(node_roles(["blue"] * 3, [True] * 3, ()).values()) == {"agreed"}


def test_rounds_outside_the_game_and_foreign_directories_are_refused(recorded, tmp_path):
    game = RecordedGame.load(recorded)
    with pytest.raises(ReplayError, match=r"rounds 0\.\.12"):
        game.colours_at(game.last_round + 1)
    with pytest.raises(ReplayError, match="llm-mesa consensus --out"):
        RecordedGame.load(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ReplayError, match="agents.parquet.*--out DIR"):
        RecordedGame.load(empty)
    naming = tmp_path / "naming"
    assert main(["naming", "--rounds", "3", "--out", str(naming)]) == 0
    with pytest.raises(ReplayError, match="holds a naming run"):
        RecordedGame.load(naming)


def test_viz_replay_of_a_bad_directory_is_one_error_line(tmp_path, capsys):
    assert main(["viz", "--replay", str(tmp_path / "missing"), "--no-fill"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a directory" in err[0] and "--out" in err[0]


def test_viz_picks_the_page_for_the_game_or_the_replay(tmp_path):
    import argparse

    parser = argparse.ArgumentParser()
    viz_cli.configure(parser)
    assert viz_cli.app_module(parser.parse_args([])) == "llm_mesa.visualization.app"
    assert viz_cli.app_module(parser.parse_args(["--game", "naming"])) == "llm_mesa.visualization.naming_app"
    assert viz_cli.app_module(parser.parse_args(["--replay", str(tmp_path)])) == viz_cli.REPLAY_MODULE
    with pytest.raises(viz_cli.VizError, match="drop --game naming"):
        viz_cli.app_module(parser.parse_args(["--replay", str(tmp_path), "--game", "naming"]))
    env = viz_cli.solara_environment(tmp_path, replay_dir=tmp_path / "run")
    assert env["LLM_MESA_REPLAY_DIR"] == str(tmp_path / "run")


def test_summary_of_the_recording_names_the_outcome(recorded):
    game = RecordedGame.load(recorded)
    summary = json.loads((recorded / "summary.json").read_text())
    line = game.outcome_line()
    assert "caveman graph, 36 agents" in line and str(summary["rounds"]) in line


def test_an_llm_game_replays_its_messages_and_decisions_without_calling_anyone(tmp_path):
    from llm_mesa.loopback.server import LoopbackServer

    out = tmp_path / "llm-run"
    with LoopbackServer(seed=5) as server:
        assert main(["consensus", "--policy", "llm", "--base-url", server.base_url,
                     "--model", "rule:majority-inertia?talk=0.5", "--comm", "local", "--n", "10",
                     "--topology", "ws", "--max-rounds", "4", "--seed", "2", "--baseline-permutations", "0",
                     "--record", str(tmp_path / "calls.sqlite"), "--out", str(out)]) == 0
        requests = server.stats()["requests"]
        game = RecordedGame.load(out)
        for r in range(game.last_round + 1):
            game.state_at(r, game.details_at(r)).spec()
            game.messages_at(r)
            game.transcript_at(r)
        assert server.stats()["requests"] == requests  # the viewer only reads the tables
    assert game.transcript is not None and len(game.transcript_at(0)) == 0
    for r in range(1, game.last_round + 1):
        decisions = game.transcript_at(r)
        assert sorted(decisions["agent"]) == list(range(10))  # every agent decided every round
        # a silent agent holds the colour it chose; a message replaces the move (the rules of the run)
        for row in decisions.itertuples():
            expected = row.colour_before if isinstance(row.message, str) and row.message else row.colour
            assert game.colours_at(r)[row.agent] == expected, (r, row.agent)
    sent = game.messages
    assert len(sent) > 0 and sum(len(game.messages_at(r)) for r in range(game.last_round + 1)) == len(sent)
