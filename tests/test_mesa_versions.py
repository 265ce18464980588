"""One seed, one game, on Mesa 3 and Mesa 4: a game's streams come from its seed, not from Mesa's seeding.

Mesa 3 seeds ``model.random`` with ``random.Random(seed)``; Mesa 4 with a seed derived
from its numpy generator's state (seed 1: first draw 0.134 on Mesa 3, 0.908 on Mesa 4).
The suite runs on one Mesa at a time (``.ci/run`` runs it on both), so here the *other*
version's seeding is put in place around the installed ``mesa.Model.__init__``: every
game must play the same under either, and a recording made under one must replay,
strictly and with no server, under the other.

Not the games built on Mesa's own examples (``schelling``, ``boltzmann_wealth_model``,
``pd_grid``): their promise is to play what the installed Mesa's example plays from a seed,
and Mesa 3.5 and Mesa 4 seed (and, for pd_grid, build) their examples differently, so one
seed plays two different games on the two versions and a recording made on one misses on
the other. Each version is held to its own example (``tests/test_mesa_examples.py``).
"""

from __future__ import annotations

import random
import warnings

import mesa
import numpy as np
import pandas as pd
import pytest

from llm_mesa import declared
from llm_mesa import play as playing
from llm_mesa.game_types import PlayRequest
from llm_mesa.llm.endpoint import Endpoint
from llm_mesa.llm.store import ResponseStore
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.mesa_versions import MESA_4, network_space
from llm_mesa.registry import game_names, get_game

SEEDINGS = ("mesa3", "mesa4")
#: the stand-in's answers for each game's prompts, and the endpoint options its study uses
LLM_GAMES = {
    "consensus": ("rule:majority-inertia?inertia=0.2&talk=0.3", {"n": 12, "topology": "ba", "max_rounds": 4,
                                                               "communication": "local", "baseline_permutations": 50}),
    "naming": ("naming:noisy?p=0.3", {"n": 8, "max_rounds": 5}),
    "tinyvote": ("tinyvote:follow", {"n": 8, "max_rounds": 4}),
}


def mesa_seed(seeding: str, seed: int) -> int:
    """The seed of ``model.random`` that Mesa 3 or Mesa 4 would give a model seeded ``seed``."""
    if seeding == "mesa3":
        return seed
    return int(np.random.default_rng(seed).bit_generator.state["state"]["state"]) % 2**31


@pytest.fixture
def seeded_as(monkeypatch):
    """``seeded_as("mesa3" | "mesa4")``: from now on ``mesa.Model`` seeds ``random`` as that version does."""
    original = mesa.Model.__init__

    def use(seeding: str) -> None:
        def init(self, *args, rng=None, **kwargs):
            original(self, *args, rng=rng, **kwargs)
            drawn = rng if isinstance(rng, int) else random.SystemRandom().randrange(2**31)
            self.random.seed(mesa_seed(seeding, drawn))
            if seeding == "mesa3":
                self._seed = drawn  # Mesa 3 keeps the seed it used
            elif hasattr(self, "_seed"):
                del self._seed  # Mesa 4 keeps none

        monkeypatch.setattr(mesa.Model, "__init__", init)

    yield use
    monkeypatch.setattr(mesa.Model, "__init__", original)


def test_the_two_seedings_differ_as_the_two_mesas_do(seeded_as):
    """The stand-in seeding is the real difference (0.134 against 0.908 for seed 1), and the installed Mesa's own."""
    installed = mesa.Model(rng=1).random.random()
    assert installed == random.Random(mesa_seed("mesa4" if MESA_4 else "mesa3", 1)).random()
    seeded_as("mesa3")
    assert mesa.Model(rng=1).random.random() == pytest.approx(0.134364, abs=1e-6) == random.Random(1).random()
    seeded_as("mesa4")
    assert mesa.Model(rng=1).random.random() == pytest.approx(0.908116, abs=1e-6)


def consensus_game(seed: int, **kw):
    from llm_mesa.models.consensus import ConsensusModel

    model = ConsensusModel(36, "ba", policy="majority-inertia", assign={"random:6": "voter"}, rng=seed, **kw)
    return model.run()


def test_a_seed_draws_the_same_consensus_game_under_either_seeding(seeded_as):
    games = {}
    for seeding in SEEDINGS:
        seeded_as(seeding)
        games[seeding] = consensus_game(3)
    a, b = games["mesa3"], games["mesa4"]
    assert sorted(a.graph.edges) == sorted(b.graph.edges) and a.game_key == b.game_key
    assert [x.preference for x in a.agents_by_node] == [x.preference for x in b.agents_by_node]
    assert [x.policy.spec() for x in a.agents_by_node] == [x.policy.spec() for x in b.agents_by_node]
    pd.testing.assert_frame_equal(a.rounds_table(), b.rounds_table())
    pd.testing.assert_frame_equal(a.agents_table(), b.agents_table())


def test_left_to_mesas_seeding_the_consensus_graph_would_differ(seeded_as, monkeypatch):
    """The control: without ``seed_streams`` the two seedings draw two different games."""
    from llm_mesa.models.consensus import model as consensus_model

    monkeypatch.setattr(consensus_model, "seed_streams", lambda model, rng: getattr(model, "_seed", rng))
    graphs = []
    for seeding in SEEDINGS:
        seeded_as(seeding)
        graphs.append(sorted(consensus_game(3).graph.edges))
    assert graphs[0] != graphs[1]


def test_a_seed_plays_the_same_naming_game_under_either_seeding(seeded_as):
    from llm_mesa.models.naming.model import NamingModel

    frames = []
    for seeding in SEEDINGS:
        seeded_as(seeding)
        model = NamingModel(n=12, mode="nl-sw", memory=3, rng=11, max_rounds=30).run()
        assert model.round == 30
        frames.append(model.rounds_frame())
    pd.testing.assert_frame_equal(frames[0], frames[1])


@pytest.mark.parametrize("seeding", SEEDINGS)
def test_an_unseeded_game_is_named_by_the_seed_it_played(seeded_as, seeding):
    from llm_mesa.models.naming.model import NamingModel

    seeded_as(seeding)
    unseeded = NamingModel(n=10, rng=None, max_rounds=20).run()
    again = NamingModel(n=10, rng=unseeded.seed, max_rounds=20).run()
    pd.testing.assert_frame_equal(unseeded.rounds_frame(), again.rounds_frame())


@pytest.mark.parametrize("recorded_as, replayed_as", [("mesa3", "mesa4"), ("mesa4", "mesa3")])
@pytest.mark.parametrize("name", sorted(LLM_GAMES))
def test_a_recording_made_under_one_seeding_replays_under_the_other(seeded_as, tmp_path, name, recorded_as,
                                                                    replayed_as):
    game = get_game(name)
    model_name, parameters = LLM_GAMES[name]
    tables = tuple(t.name for t in game.tables if t.name in ("rounds", "agents", "messages", "transcript"))
    store = tmp_path / "calls.sqlite"

    def play(endpoint: Endpoint, mode: str):
        request = PlayRequest(parameters, "llm", 7, tables, endpoint, ResponseStore(store, mode))
        try:
            return playing.play(game, request)
        finally:
            request.store.close()

    seeded_as(recorded_as)
    with LoopbackServer(seed=4) as server:
        endpoint = Endpoint(server.base_url, model_name, **game.llm.endpoint_defaults, timeout=10.0)
        recorded = play(endpoint, "record")
        calls = server.stats()["answered"]
    assert calls > 0 and recorded.row.get("calls", calls) == calls
    seeded_as(replayed_as)
    replayed = play(endpoint, "replay")  # strict: a miss raises, and the server is gone
    assert replayed.row.pop("replayed_calls", calls) == calls and recorded.row.pop("replayed_calls", 0) == 0
    assert replayed.row == recorded.row
    for table in tables:
        pd.testing.assert_frame_equal(replayed.tables[table], recorded.tables[table])


def test_every_game_on_the_contract_plays_without_a_warning_of_ours():
    """Every registered game (the open world's too) builds and plays with warnings as errors."""
    assert {"consensus", "naming", "tinyvote"} <= set(game_names())
    from llm_mesa import declared, play
    from llm_mesa.errors import LlmMesaWarning

    for name in game_names():
        game = get_game(name)
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)  # a deprecated hook of one of the project's games
            warnings.filterwarnings("error", module=r"llm_mesa")  # and any warning of ours
            warnings.filterwarnings("error", category=LlmMesaWarning)
            model = play.make_model(game, game.parameters.validate({}, complete=True), declared.first_policy(game), 1)
            for _ in range(3):
                if model.running:
                    model.step()
            declared.summary_row(game, model)
            declared.run_tables(game, model)


def test_the_network_space_holds_every_node_as_a_cell():
    import networkx as nx

    graph = nx.barabasi_albert_graph(30, 2, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        space = network_space(graph, random.Random(0))
    assert sorted(c.coordinate for c in space.all_cells) == list(range(30))
    assert all({n.coordinate for n in space[v].neighborhood} == set(graph[v]) for v in graph)


# -- what Mesa 4 adds: scenarios from an experiment file's cells, data recorders beside the DataCollector --

def small_experiment(tmp_path, name: str):
    from llm_mesa.sweep.experiment import load_experiment

    game = get_game(name)
    declared.load_policies(game)
    path = tmp_path / f"{name}.toml"
    path.write_text(f'game = "{name}"\nrepetitions = 3\nseed = 5\npolicies = ["{declared.first_policy(game)}"]\n'
                    "[parameters]\nmax_rounds = 12\n[axes]\nn = [8, 12]\n")
    return load_experiment(path)


@pytest.mark.parametrize("name", ["consensus", "naming", "tinyvote"])
def test_an_experiments_scenarios_build_the_games_its_sweep_plays(tmp_path, name):
    from llm_mesa.cli import main
    from llm_mesa.mesa_versions import MesaVersionError
    from llm_mesa.sweep import read_sweep

    experiment = small_experiment(tmp_path, name)
    if not MESA_4:
        with pytest.raises(MesaVersionError, match="scenarios need Mesa 4"):
            experiment.scenarios()
        return
    scenarios = experiment.scenarios()
    assert len(scenarios) == 2 * 3 and {s.condition for s in scenarios} == set(experiment.conditions)
    assert [(s.scenario_id, s.replication_id) for s in scenarios] == [(i, r) for i in range(2) for r in range(3)]
    assert main(["sweep", str(experiment.path), "--out", str(tmp_path / "out")]) == 0
    rows = read_sweep(tmp_path / "out").set_index(["condition", "seed"])
    game = get_game(name)
    for scenario in scenarios:
        model = playing.build_scenario(game, scenario, declared.first_policy(game))
        assert model.scenario is scenario
        rounds = run_model_to_end(model)
        row = rows.loc[(scenario.condition, scenario.seed)]
        summary = declared.summary_row(game, model)
        summary.setdefault("rounds", rounds)
        shared = [k for k, v in summary.items() if k in row.index and np.isscalar(v)]
        assert "rounds" in shared and len(shared) >= 3
        assert {k: summary[k] for k in shared} == pytest.approx({k: row[k] for k in shared})


def run_model_to_end(model) -> int:
    from llm_mesa.games import run_model

    return run_model(model)


def test_mesas_solaraviz_reset_arguments_build_a_consensus_game():
    """Mesa's SolaraViz resets a model with its seed and a fresh, empty Scenario (Mesa 3.5) beside it."""
    from mesa.experimental.scenarios import Scenario

    from llm_mesa.models.consensus import ConsensusModel

    reset = ConsensusModel(n=12, topology="ws", rng=4, scenario=Scenario(rng=None))
    plain = ConsensusModel(n=12, topology="ws", rng=4)
    assert sorted(reset.graph.edges) == sorted(plain.graph.edges) and reset.n == 12
    if MESA_4:
        scenario = Scenario(rng=4, seed=4, n=12, topology="ws")
        from_scenario = ConsensusModel(scenario=scenario)
        assert from_scenario.scenario is scenario and sorted(from_scenario.graph.edges) == sorted(plain.graph.edges)


@pytest.mark.skipif(not MESA_4, reason="Mesa 4's data recorders: on Mesa 3 a game's rounds are its DataCollector's")
@pytest.mark.parametrize("name", ["consensus", "naming"])
def test_mesas_parquet_recorder_writes_every_round_beside_the_datacollector(tmp_path, name):
    from mesa.experimental.data_collection import ParquetDataRecorder

    game = get_game(name)
    declared.load_policies(game)
    model = game.build(game.parameters.validate({"n": 12, "max_rounds": 6}, complete=True), declared.first_policy(game), 3)
    recorder = ParquetDataRecorder(model, config={"rounds": {}}, output_dir=str(tmp_path))
    run_model_to_end(model)
    recorded = recorder.get_table_dataframe("rounds")
    kept = declared.table(game, model, "rounds")
    assert (tmp_path / "rounds.parquet").exists()
    # the DataCollector's rounds (the naming game's start at round 1), each once, the last one included
    recorded = recorded[recorded["time"] >= kept["round"].iloc[0]].reset_index(drop=True)
    assert recorded["time"].astype(int).tolist() == kept["round"].tolist()
    columns = [c for c in kept.columns if c != "round"]
    pd.testing.assert_frame_equal(recorded[columns], kept[columns], check_dtype=False)


#: the games on Mesa's own examples, which follow the installed Mesa's seeding (not the promise above)
EXAMPLE_GAMES = ("schelling", "boltzmann_wealth_model", "pd_grid")


def test_the_example_games_are_the_installed_examples_so_the_two_mesas_play_two_games():
    """Schelling from seed 5: happy 243, 285 on Mesa 3.5 and 228, 276 on Mesa 4 (the issue's figures)."""
    from mesa.examples.basic.schelling.model import Schelling, SchellingScenario

    assert not set(EXAMPLE_GAMES) & set(LLM_GAMES)  # never claimed to replay across the versions
    example = Schelling(SchellingScenario(rng=5))
    example.step()
    game = playing.play(get_game("schelling"), PlayRequest({"max_rounds": 1}, "mesa", 5, ("rounds",)))
    happy = example.datacollector.get_model_vars_dataframe()["happy"].tolist()
    assert game.tables["rounds"]["happy"].tolist() == happy == ([228, 276] if MESA_4 else [243, 285])


def test_a_rounds_data_set_reads_every_kind_of_reporter_as_mesas_datacollector_does():
    """A function of the model, an attribute's name (what Mesa's examples use), [function, args], a method."""
    from functools import partial

    from mesa.datacollection import DataCollector

    from llm_mesa.mesa_versions import report

    class Happy(mesa.Model):
        happy = 7

        def double(self) -> int:
            return 2 * self.happy

    model = Happy(rng=1)
    reporters = {"f": lambda m: m.happy + 1, "name": "happy", "call": [max, (3, 9)], "method": model.double,
                 "partial": partial(lambda m, k: m.happy * k, k=3)}
    collector = DataCollector(model_reporters=reporters)
    collector.collect(model)
    collected = collector.get_model_vars_dataframe().iloc[-1].to_dict()
    assert {k: report(r, model) for k, r in reporters.items()} == collected == {"f": 8, "name": 7, "call": 9,
                                                                               "method": 14, "partial": 21}
