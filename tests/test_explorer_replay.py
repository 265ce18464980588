"""The replay viewer's data layer: a recorded game reads back as the game that was played.

A game is recorded with ``llm-mesa consensus --out`` and replayed next to the same
game played live (same parameters, same seed): every round's colours, flippers,
banner and network picture must be identical, and the picture comes from the one
drawing function both views share. A folder that is not a run is refused in one line.
"""

from __future__ import annotations

import argparse
import json

import networkx as nx
import pytest

from llm_mesa.cli import main
from llm_mesa.models.consensus import ConsensusModel, measures
from llm_mesa.registry import get_game
from llm_mesa.views import view_of
from llm_mesa.views.runs import ReplayError
from llm_mesa.visualization import cli as viz_cli
from llm_mesa.visualization.network_chart import chamber_spec, network_spec

VIEW = view_of(get_game("consensus"))
GAME = ["--topology", "caveman", "--n", "36", "--policy", "majority-inertia", "--seed", "3",
        "--max-rounds", "12", "--baseline-permutations", "10"]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay") / "run"
    assert main(["consensus", *GAME, "--out", str(out)]) == 0
    return out


def load(path):
    return VIEW.recording(path)


def _live_model() -> ConsensusModel:
    return ConsensusModel(n=36, topology="caveman", policy="majority-inertia", max_rounds=12,
                          baseline_permutations=10, rng=3)


def test_every_recorded_round_matches_the_live_game(recorded):
    game = load(recorded)
    live = _live_model().run()
    assert game.last_round == live.round
    assert nx.utils.graphs_equal(game.graph, live.graph)
    assert game.preferences == live.preferences
    for r in range(game.last_round + 1):
        assert game.colours_at(r) == live.colour_history[r], f"round {r}"
    assert game.flippers_at(game.last_round) == tuple(live.flippers)
    assert game.satisfied_at(game.last_round) == measures.locally_satisfied(live.graph, live.colours).tolist()


def test_replayed_picture_is_the_live_picture_round_by_round(recorded):
    game = load(recorded)
    live = _live_model()
    pictures = {}
    for r in range(game.last_round + 1):
        if r:
            live.step()
        if r in (0, 4, game.last_round):
            replayed, now = game.snapshot(r).picture, VIEW.picture(live)
            assert network_spec(replayed) == network_spec(now), f"round {r}"
            assert chamber_spec(replayed) == chamber_spec(now)
            assert [b.text for b in game.snapshot(r).banners] == [b.text for b in VIEW.banners(live)]
            pictures[r] = network_spec(replayed)
    assert pictures[0] != pictures[game.last_round]  # the game moved, and so does the picture


def test_rounds_outside_the_game_and_foreign_directories_are_refused(recorded, tmp_path):
    game = load(recorded)
    with pytest.raises(ReplayError, match=r"rounds 0\.\.12"):
        game.colours_at(game.last_round + 1)
    with pytest.raises(ReplayError, match="is not a directory"):
        load(tmp_path / "nowhere")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ReplayError, match=r"has no rounds.parquet \(found: nothing\)"):
        load(empty)
    naming = tmp_path / "naming"
    assert main(["naming", "--rounds", "3", "--out", str(naming)]) == 0
    with pytest.raises(ReplayError, match="holds a naming run, not a consensus one"):
        load(naming)


def test_viz_replay_of_a_bad_directory_is_one_error_line(tmp_path, capsys):
    assert main(["viz", "--replay", str(tmp_path / "missing"), "--no-fill"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not a directory" in err[0] and "--out" in err[0]


def test_viz_replay_of_a_folder_of_other_tables_names_what_it_found(recorded, tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    for name in ("edges", "nodes"):
        (other / f"{name}.parquet").write_bytes((recorded / f"{name}.parquet").read_bytes())
    assert main(["viz", "--replay", str(other), "--no-fill"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has no rounds.parquet (found: edges.parquet, nodes.parquet)" in err[0]
    partial = tmp_path / "partial"
    partial.mkdir()
    for name in ("rounds.parquet", "manifest.json"):
        (partial / name).write_bytes((recorded / name).read_bytes())
    assert main(["viz", "--replay", str(partial), "--no-fill"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has no agents.parquet, nodes.parquet, edges.parquet" in err[0]
    assert "found: rounds.parquet" in err[0]


@pytest.mark.parametrize("manifest", ["[]", "3", "{not json"])
def test_viz_replay_of_a_manifest_that_is_no_object_is_one_line_and_exit_2(recorded, tmp_path, capsys, manifest):
    run = tmp_path / "run"
    run.mkdir()
    (run / "rounds.parquet").write_bytes((recorded / "rounds.parquet").read_bytes())
    (run / "manifest.json").write_text(manifest)
    assert main(["viz", "--replay", str(run), "--no-fill"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "manifest.json" in err[0] and "Traceback" not in err[0]


def test_viz_replay_of_a_sweep_points_to_the_sweep_browser(tmp_path, capsys):
    from llm_mesa.sweep import run_sweep

    out = tmp_path / "sweep"
    run_sweep(["ba-local"], "voter", 1, out, model_options={"max_rounds": 3, "baseline_permutations": 0}, game="consensus")
    assert main(["viz", "--replay", str(out), "--no-fill"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"llm-mesa viz --sweep {out}" in err[0]


def test_viz_picks_the_replay_page_and_the_game_from_the_run(recorded):
    parser = argparse.ArgumentParser()
    viz_cli.configure(parser)
    args = parser.parse_args(["--replay", str(recorded)])
    assert viz_cli.app_module(args) == viz_cli.REPLAY_MODULE
    name, env = viz_cli.chosen_game(args)
    assert name == "consensus" and env["LLM_MESA_REPLAY_DIR"] == str(recorded.resolve())
    with pytest.raises(viz_cli.VizError, match="holds a consensus run; drop --game naming"):
        viz_cli.chosen_game(parser.parse_args(["--replay", str(recorded), "--game", "naming"]))


def test_summary_of_the_recording_names_the_outcome(recorded):
    game = load(recorded)
    summary = json.loads((recorded / "summary.json").read_text())
    line = game.outline()
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
        game = load(out)
        for r in range(game.last_round + 1):
            network_spec(game.snapshot(r, selected=r).picture)
            game.messages(r)
        assert server.stats()["requests"] == requests  # the viewer only reads the tables
    assert game.transcript is not None and len(game.transcript_at(0)) == 0
    for r in range(1, game.last_round + 1):
        decisions = game.transcript_at(r)
        assert sorted(decisions["agent"]) == list(range(10))  # every agent decided every round
        # a silent agent holds the colour it chose; a message replaces the move (the rules of the run)
        for row in decisions.itertuples():
            expected = row.colour_before if isinstance(row.message, str) and row.message else row.colour
            assert game.colours_at(r)[row.agent] == expected, (r, row.agent)
    sent = game.sent
    assert len(sent) > 0 and sum(len(game.messages(r)) for r in range(game.last_round + 1)) == len(sent)
    # the agent panel reads an LLM agent's decision at the round shown: its reason and diary
    # (a move carries a reason; a message, which replaces the move, carries none but the message)
    decisions = game.transcript.loc[game.transcript["round"] > 0]
    moved = decisions.loc[decisions["reason"].fillna("").str.len() > 0].iloc[0]
    rows = game.snapshot(int(moved["round"]), selected=int(moved["agent"])).agent
    said = f"decision in round {int(moved['round'])} · "  # headed with the round it was made in
    assert rows[said + "reason"] == " ".join(str(moved["reason"]).split())[:800]
    assert rows[said + "diary"] == " ".join(str(moved["diary"]).split())[:800] != "-" and rows[said + "chose"] == moved["colour"]
    talked = decisions.loc[decisions["message"].fillna("").str.len() > 0].iloc[0]
    rows = game.snapshot(int(talked["round"]), selected=int(talked["agent"])).agent
    said = f"decision in round {int(talked['round'])} · "
    assert rows[said + "message"] == " ".join(str(talked["message"]).split())[:800] and rows[said + "reason"] == "-"
