"""The batched engine plays the games the Mesa model plays, bit for bit, and sweeps pick it."""

import random
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from llm_mesa.games import PlayRequest
from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.models.consensus.array_state import rule_stream
from llm_mesa.models.consensus.batched import batchable, play_games
from llm_mesa.models.consensus.conditions import RULE_CONFIGURATIONS, STUDY_CONDITIONS
from llm_mesa.models.consensus.game import GAME
from llm_mesa.models.consensus.observation import ConsensusObservation
from llm_mesa.play import play, play_batch
from llm_mesa.policy import make_policy
from llm_mesa.sweep import run_sweep

TABLES = ("rounds", "agents", "messages", "transcript", "edges")


def grid_requests(seeds, tables=TABLES, **extra):
    return [PlayRequest({**cond, **extra}, spec, seed, tables)
            for cond in STUDY_CONDITIONS.values() for spec in RULE_CONFIGURATIONS.values() for seed in seeds]


def assert_same_results(mesa, batched):
    assert len(mesa) == len(batched)
    for a, b in zip(mesa, batched):
        assert a.row == b.row
        assert set(a.tables) == set(b.tables)
        for name in a.tables:
            pd.testing.assert_frame_equal(a.tables[name], b.tables[name], obj=name)


def test_the_study_rule_grid_is_the_same_game_both_ways():
    # 11 conditions x 6 rule configurations x 2 seeds, every table but the edges (below), the baseline on
    requests = grid_requests([3, 17], tables=TABLES[:-1], baseline_permutations=200)
    assert all(batchable(r) for r in requests)
    assert_same_results([play(GAME, r) for r in requests], play_batch(GAME, requests))


@pytest.mark.slow
def test_the_whole_study_rule_grid_is_the_same_game_both_ways():
    # the study's 1,980 games (30 seeds), per-round measures, no baseline: the game tables are equal
    requests = grid_requests(range(30), tables=("rounds",), baseline_permutations=0)
    assert_same_results([play(GAME, r) for r in requests], play_batch(GAME, requests))


def test_games_of_several_sizes_and_settings_in_one_batch():
    requests = [
        PlayRequest({"n": 20, "topology": "caveman", "max_rounds": 7}, "voter", 1, TABLES),
        PlayRequest({"n": 36, "topology": "er", "initial": "random", "max_rounds": 60}, "random", 2, TABLES),
        PlayRequest({"n": 36, "topology": "ba", "preferences": "minority", "minority": 9}, "stubborn", 2, TABLES),
        PlayRequest({"n": 40, "topology": "ws", "satisfied_threshold": 0.7, "pseudo_window": 2}, "majority-inertia", 5,
                    TABLES),
        PlayRequest({"n": 20, "topology": "caveman", "max_rounds": 9}, "majority-inertia:inertia=0.1", 1, TABLES),
    ]
    assert_same_results([play(GAME, r) for r in requests], play_batch(GAME, requests))


def test_a_game_in_consensus_from_the_start_plays_no_round():
    request = PlayRequest({"n": 20, "topology": "ba", "preferences": "minority", "minority": 0,
                           "baseline_permutations": 0}, "voter", 4, ("rounds",))
    (result,) = play_batch(GAME, [request])
    assert result.row["rounds"] == 0 and result.row["stop_reason"] == "consensus"
    assert_same_results([play(GAME, request)], [result])


def test_the_rule_stream_is_one_uniform_per_agent_and_round():
    # round 1 of a rule game, rebuilt by hand: agent i decides from rule_stream(seed).random(n)[i]
    model = ConsensusModel(36, "ws", policy="voter", rng=11, baseline_permutations=0, max_rounds=1)
    start = model.colours
    neighbours = [model.agents_by_node[v].neighbour_ids for v in range(36)]
    draws = rule_stream(11).random(36)
    policy = make_policy("voter", "consensus")

    class One(random.Random):
        def __init__(self, value):
            super().__init__(0)
            self.value = value

        def random(self):
            return self.value

    expected = [policy.decide(ConsensusObservation(v, 1, model.preferences[v], start[v], neighbours[v],
                                                   tuple(start[u] for u in neighbours[v])), One(draws[v])).colour
                for v in range(36)]
    model.run()
    assert model.colours == expected


def test_what_the_engine_cannot_play_goes_to_the_model():
    rule = PlayRequest({"n": 20}, "voter", 1)
    assert batchable(rule)
    assert not batchable(PlayRequest({"n": 20}, "llm", 1, endpoint=object()))
    assert not batchable(PlayRequest({"n": 20, "preferences": "explicit"}, "voter", 1))


def test_sweeps_play_rule_games_through_the_engine(tmp_path, monkeypatch):
    conditions = {k: dict(STUDY_CONDITIONS[k]) for k in ("ba-none", "cc-local")}
    mesa = run_sweep(conditions, "mi-0.2;voter", 2, tmp_path / "mesa", model_options={"max_rounds": 12},
                     batch_size=1, tables=("rounds",), game="consensus")
    played_one_by_one = []
    monkeypatch.setattr(GAME, "extensions", replace(GAME.extensions, play=lambda game, request: played_one_by_one.append(request)))
    batched = run_sweep(conditions, "mi-0.2;voter", 2, tmp_path / "batched", model_options={"max_rounds": 12},
                        tables=("rounds",), game="consensus")
    assert not played_one_by_one and batched.played == 8
    drop = ["wall_s"]
    pd.testing.assert_frame_equal(mesa.results.drop(columns=drop), batched.results.drop(columns=drop))


def test_a_failing_batch_keeps_the_games_that_finish(tmp_path, monkeypatch):
    def broken(game, requests):
        raise RuntimeError("batch failed")

    monkeypatch.setattr(GAME, "extensions", replace(GAME.extensions, play_batch=broken))
    result = run_sweep({"ba": {"n": 12}}, "voter", 3, tmp_path / "s", model_options={"max_rounds": 5}, game="consensus")
    assert result.played == 3  # replayed one by one through play


def test_engine_keeps_no_agent_table_unless_asked():
    (game,) = play_games([("voter", 1, {"n": 20, "max_rounds": 5})], agents=False)
    assert game.agents_table().empty and len(game.rounds_table()) == game.round + 1
    assert np.isclose(game.summary()["local_agreement"], game.rounds_table()["local_agreement"].iloc[-1])


@pytest.mark.parametrize("update", ["random-sequential", "random-asynchronous"])
def test_turns_in_the_engine_are_the_model_games_game_for_game(update):
    """The study's rule grid under turns (11 conditions x 6 rule configurations, 2 seeds), every table
    and the summary row, depth included: the engine's turn-by-turn stack equals the model's
    agent-by-agent turns (each turn seeing the ones before it, one rule draw per activation)."""
    requests = grid_requests([3, 17], tables=TABLES, baseline_permutations=50, update=update)
    assert all(batchable(r) for r in requests)
    mesa, batched = [play(GAME, r) for r in requests], play_batch(GAME, requests)
    assert_same_results(mesa, batched)
    depths = {row["communication"]: row["depth"] / row["rounds"] for row in (r.row for r in batched) if row["rounds"]}
    assert depths["global"] == 36  # every turn reads every earlier one: one chain through the round
    assert 1 < depths["local"] < 36 and 1 < depths["none"] < 36


def test_turns_and_synchronous_rounds_in_one_batch_keep_their_schemes():
    requests = [PlayRequest({"n": 20, "topology": "caveman", "max_rounds": 9, "update": u}, "voter", 4, TABLES)
                for u in ("synchronous", "random-sequential", "random-asynchronous")]
    mesa, batched = [play(GAME, r) for r in requests], play_batch(GAME, requests)
    assert_same_results(mesa, batched)
    assert [r.row["update"] for r in batched] == ["synchronous", "random-sequential", "random-asynchronous"]
    assert batched[0].row["depth"] == batched[0].row["rounds"]
