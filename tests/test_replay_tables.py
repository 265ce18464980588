"""``viz --replay`` and the sweep browser draw every round of a finished game from its ``agents`` table.

A run written with ``--out`` keeps one row per agent and round; its replay draws each round's
network or grid from those rows alone (LLM games included: nothing is played again, no
endpoint is called), so the picture, its tooltips and the agent panel step with the slider.
Each replayed round is compared with the same game played live. Games the test registers
itself (``space_games``) and the in-tree colouring game with LLM agents on the stand-in.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from space_games import PGOODS, SEGREGATE, Dice, registered

from llm_mesa import play, register_policy
from llm_mesa.cli import main
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.registry import get_game
from llm_mesa.views import GridPicture, view_of
from llm_mesa.views.sweeps import SweepGames


@pytest.fixture(scope="module", autouse=True)
def games():
    with registered() as games:
        yield games


def replay(game, path):
    return view_of(game).recording(path)


def test_a_rule_run_steps_its_states_and_tooltips_round_by_round_as_it_was_played(tmp_path):
    out = tmp_path / "run"
    assert main(["pgoods", "--policy", "dice", "--seed", "3", "--max-rounds", "5", "--out", str(out)]) == 0
    recording = replay(PGOODS, out)
    assert recording.note == "" and recording.column == "contribution"
    model = play.make_model(PGOODS, {"max_rounds": 5}, "dice", 3)
    pays = set()
    for r in range(recording.last_round + 1):
        if r:
            model.step()
        picture = recording.snapshot(r).picture
        assert picture.round_number == r
        assert list(picture.state) == [a.state for a in model.by_node], f"round {r}"
        assert [d["pay"] for d in picture.details] == [a.pay for a in model.by_node]  # tooltips of this round
        pays.add(tuple(d["pay"] for d in picture.details))
        rows = recording.agent_rows(r, 4)
        assert rows["state"] == str(model.by_node[4].state) and float(rows["pay"]) == pytest.approx(model.by_node[4].pay, rel=1e-3)
    assert len(pays) == recording.last_round + 1  # the tooltips moved every round
    assert recording.snapshot(0).picture.domain == (0.0, 10.0)


def test_a_grid_runs_agents_move_with_the_slider(tmp_path):
    out = tmp_path / "grid"
    assert main(["segregate", "--seed", "4", "--max-rounds", "4", "--out", str(out)]) == 0
    recording = replay(SEGREGATE, out)
    model = play.make_model(SEGREGATE, {"max_rounds": 4}, "unhappy-moves", 4)
    view = view_of(SEGREGATE)
    for r in range(recording.last_round + 1):
        if r:
            model.step()
        replayed, now = recording.snapshot(r).picture, view.picture(model)
        assert isinstance(replayed, GridPicture)
        assert list(replayed.state) == list(now.state) and list(replayed.agents) == list(now.agents), f"round {r}"
    assert recording.snapshot(0).picture.agents != recording.snapshot(recording.last_round).picture.agents


@pytest.fixture(scope="module")
def llm_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("llm")
    out = folder / "run"
    with LoopbackServer(seed=2) as server:
        assert main(["colouring", "--policy", "llm", "--base-url", server.base_url, "--model",
                     "colouring:best-response", "--n", "12", "--max-rounds", "4", "--seed", "6",
                     "--record", str(folder / "calls.sqlite"), "--out", str(out)]) == 0
        calls = server.stats()["requests"]
    return out, calls


def test_an_llm_run_is_drawn_from_its_agents_table_without_a_call(llm_run):
    import pandas as pd

    out, _ = llm_run
    agents = pd.read_parquet(out / "agents.parquet")
    recording = replay(get_game("colouring"), out)  # no server runs now: nothing may be called
    assert recording.note == "" and "per-agent" not in recording.note
    assert recording.last_round == int(agents["round"].max())
    for r in range(recording.last_round + 1):
        snapshot = recording.snapshot(r)
        expected = agents[agents["round"] == r].sort_values("agent")["colour"].tolist()
        assert list(snapshot.picture.state) == expected, f"round {r}"
        conflict = agents[agents["round"] == r].sort_values("agent")["in_conflict"].tolist()
        assert [d["in_conflict"] for d in snapshot.picture.details] == conflict
        assert snapshot.agent["policy"] == "llm"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["calls"] > 0


def test_an_llm_run_without_its_agents_table_says_why_it_shows_charts_only(llm_run, tmp_path):
    import shutil

    out = tmp_path / "run"
    shutil.copytree(llm_run[0], out)
    (out / "agents.parquet").unlink()
    recording = replay(get_game("colouring"), out)
    assert recording.snapshot(0).picture is None
    assert "kept no agents table" in recording.note and "charts only" in recording.note


def test_the_sweep_browser_lists_only_tables_and_replays_a_game_from_its_kept_agents(tmp_path, capsys):
    out = tmp_path / "sweep"
    assert main(["sweep", "--game", "pgoods", "--set", "r=1,3", "--policies", "dice", "--seeds", "2",
                 "--tables", "rounds,agents", "--out", str(out), "--quiet"]) == 0
    assert main(["analyze", str(out)]) == 0  # leaves its analysis-cache folder in the sweep
    capsys.readouterr()
    assert (out / "analysis-cache").is_dir()
    sweep = SweepGames.open(out)
    assert sweep.kept_tables == ["agents", "rounds"]
    assert "analysis-cache" not in sweep.describe()
    recording = view_of(PGOODS).sweep_game(sweep, "r=3.0", "dice", 1)
    model = play.make_model(PGOODS, {"r": 3.0}, "dice", 1)
    model.step()
    assert list(recording.snapshot(1).picture.state) == [a.state for a in model.by_node]


class Collected(type(PGOODS)):
    """The public-goods game with the default agents table: Mesa's DataCollector's agent variables (agent ids
    are Mesa's unique_id, 1..N, beside nodes 0..N-1; rounds may come as floats)."""

    name = "pgoods_collected"
    tables = tuple(replace(t, read=None) for t in PGOODS.tables)  # every table read the core's way

    def build(self, parameters, policy, seed):
        from mesa.datacollection import DataCollector

        model = super().build(parameters, policy, seed)
        kept = model.datacollector.model_reporters
        model.datacollector = DataCollector(model_reporters=dict(kept), agent_reporters={"contribution": "state"})
        model.datacollector.collect(model)
        return model


register_policy("dice", Collected.name, "a contribution from 0 to 10 at random")(type("CollectedDice", (Dice,), {}))


def test_the_default_agents_table_of_mesa_ids_replays_on_the_networks_nodes(tmp_path):
    from llm_mesa.registry import register_game, unregister_game

    game = register_game(Collected())
    try:
        out = tmp_path / "run"
        assert main(["pgoods_collected", "--policy", "dice", "--seed", "2", "--max-rounds", "3", "--out", str(out)]) == 0
        recording = replay(game, out)
        assert recording.note == "" and recording.column == "contribution"
        model = play.make_model(game, {"max_rounds": 3}, "dice", 2)
        for r in range(recording.last_round + 1):
            if r:
                model.step()
            assert list(recording.snapshot(r).picture.state) == [a.state for a in model.by_node], f"round {r}"
    finally:
        unregister_game(game.name)
