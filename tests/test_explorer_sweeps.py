"""The sweep browser's data for any game: counts, tables, distributions, and every game replayed as it was played."""

from __future__ import annotations

import networkx as nx
import pytest

from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.registry import get_game
from llm_mesa.sweep import read_sweep, run_sweep
from llm_mesa.views import view_of
from llm_mesa.views.sweeps import SweepGames, SweepViewError
from llm_mesa.visualization.sweep_app import distribution_spec, in_order


@pytest.fixture(scope="module")
def crossed(tmp_path_factory):
    """Named conditions crossed with an axis: labels such as ``ba-local|n=20``, games kept with their tables."""
    out = tmp_path_factory.mktemp("sweep") / "crossed"
    run_sweep(["ba-local", "ws-local"], "mi-0.2;voter", 3, out, tables=["agents", "rounds"], axes=["n=20,24"],
              model_options={"max_rounds": 10, "baseline_permutations": 0}, game="consensus")
    return out


def test_labels_with_bars_are_never_split_and_counts_are_per_cell(crossed):
    sweep = SweepGames.open(crossed)
    assert sweep.game_name == "consensus"
    assert sweep.conditions == ["ba-local|n=20", "ba-local|n=24", "ws-local|n=20", "ws-local|n=24"]
    text = sweep.describe()
    assert "24 games in 8 cells (4 conditions × 2 policies), 3 games a cell" in text
    assert "seeds" not in text.split(";")[0]  # no "x N seeds" counted over the whole sweep
    view = view_of(get_game("consensus"))
    table = in_order(view.sweep_table(sweep.games), sweep)
    assert list(table["condition"][:4]) == sweep.conditions and list(table.columns) == ["condition", "mi-0.2", "voter", "all"]


def test_a_crossed_sweeps_game_replays_as_the_game_played_alone(crossed):
    sweep = SweepGames.open(crossed)
    view = view_of(get_game("consensus"))
    games = read_sweep(crossed)
    row = games[(games.condition == "ws-local|n=24") & (games.policy == "voter")].iloc[1]
    recording = view.sweep_game(sweep, "ws-local|n=24", "voter", int(row["seed"]))
    alone = ConsensusModel(n=24, topology="ws", communication="local", policy="voter", max_rounds=10,
                           baseline_permutations=0, rng=int(row["seed"])).run()
    assert recording.last_round == alone.round and nx.utils.graphs_equal(recording.graph, alone.graph)
    for r in range(recording.last_round + 1):
        assert list(recording.snapshot(r).picture.state) == alone.colour_history[r]
    snapshot = recording.snapshot(recording.last_round, selected=5)
    assert snapshot.agents == 24 and snapshot.agent["agent"] == "5" and snapshot.label.startswith("Round ")


def test_a_sweep_without_tables_replays_its_rule_games_from_their_seeds(tmp_path):
    out = tmp_path / "bare"
    run_sweep(["ba-local"], "voter", 2, out, model_options={"max_rounds": 6, "baseline_permutations": 0}, game="consensus")
    sweep = SweepGames.open(out)
    seed = int(read_sweep(out).iloc[0]["seed"])
    recording = view_of(get_game("consensus")).sweep_game(sweep, "ba-local", "voter", seed)
    alone = ConsensusModel(topology="ba", communication="local", policy="voter", max_rounds=6, baseline_permutations=0,
                           rng=seed).run()
    assert "played again from its seed" in recording.note
    assert [list(recording.snapshot(r).picture.state) for r in range(recording.last_round + 1)] == alone.colour_history
    with pytest.raises(SweepViewError, match="does not exist"):
        SweepGames.open(tmp_path / "nowhere")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "notes.txt").write_text("x")
    with pytest.raises(SweepViewError, match=r"no games/ folder; found: notes.txt"):
        SweepGames.open(tmp_path / "plain")


def test_a_naming_sweep_of_conditions_and_axes_browses_and_replays(tmp_path):
    """What experiments/sign-rules.toml sweeps (conditions x n x alpha), smaller."""
    out = tmp_path / "sign"
    run_sweep(["nl", "schema-5"], "echo;minimal", 2, out, game="naming", axes=["n=6,8", "alpha=0.5,0.9"],
              tables=["rounds"], model_options={"max_rounds": 12})
    sweep = SweepGames.open(out)
    view = view_of(get_game("naming"))
    assert "nl|n=6,alpha=0.5" in sweep.conditions and len(sweep.conditions) == 8
    assert view.sweep_measures(sweep.games)[0] == "agreement_final"
    assert "agreement_final (mean)" in view.sweep_table(sweep.games).columns
    seed = int(sweep.games[(sweep.games.condition == "schema-5|n=8,alpha=0.9") & (sweep.games.policy == "echo")]
               .iloc[0]["seed"])
    recording = view.sweep_game(sweep, "schema-5|n=8,alpha=0.9", "echo", seed)
    assert recording.note == ""  # played again, it matched the kept table round for round
    charts = dict(view.charts(recording.rounds, current_round=5, last_round=recording.last_round))
    assert {"llm-mesa-naming-agreement", "llm-mesa-naming-names", "llm-mesa-naming-outcomes"} <= set(charts)
    assert charts["llm-mesa-naming-agreement"]["layer"][-1]["mark"]["type"] == "rule"  # the round shown


def test_the_distribution_has_one_row_per_condition_and_one_lane_per_policy(crossed):
    sweep = SweepGames.open(crossed)
    spec = distribution_spec(sweep.games, "rounds", sweep.conditions, sweep.policies)
    games = spec["datasets"]["games"]
    assert len(games) == 24 and {"game", "value", "key", "lane"} <= set(games[0])
    for point in games:  # each game inside its policy's lane: no policy drawn over another
        lane = sweep.policies.index(point["policy"])
        assert lane < point["lane"] < lane + 1
    assert len(spec["datasets"]["means"]) == 8
    colour = spec["layer"][1]["encoding"]["color"]
    assert colour["legend"]["labelLimit"] == 0  # the legend's labels are never cut
    assert spec["layer"][1]["encoding"]["y"]["sort"] == sweep.conditions
