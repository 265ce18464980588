"""The consensus model as a Mesa model: reproducibility, topologies, batch_run, bad input."""

import random

import networkx as nx
import pandas as pd
import pytest

from llm_mesa.graphs import NetworkError, build_topology, caveman_shape
from llm_mesa.mesa_versions import HAS_BATCH_RUN
from llm_mesa.models.consensus import ConsensusConfigError, ConsensusModel
from llm_mesa.parameters import ParameterError
from llm_mesa.policy import PolicyError


def tables(seed, **kw):
    m = ConsensusModel(36, "ws", policy="voter", rng=seed, **kw).run()
    return m.rounds_table(), m.agents_table(), m.summary()


def test_same_seed_same_run_different_seed_different_run():
    r1, a1, s1 = tables(7)
    r2, a2, s2 = tables(7)
    pd.testing.assert_frame_equal(r1, r2)
    pd.testing.assert_frame_equal(a1, a2)
    assert s1 == s2
    r3, a3, _ = tables(8)
    assert not (len(a1) == len(a3) and a1.equals(a3))


@pytest.mark.parametrize("topology", ["er", "ba", "ws", "caveman"])
def test_topologies_at_the_study_size(topology):
    import random
    g = build_topology(topology, 36, random.Random(0))
    assert g.number_of_nodes() == 36 and nx.is_connected(g)
    if topology == "ba":
        assert g.number_of_edges() == 2 * (36 - 2)
    if topology == "ws":
        assert g.number_of_edges() == 36 * 4 // 2
    if topology == "caveman":
        assert g.number_of_edges() == 9 * 6 and sorted(set(dict(g.degree).values())) == [2, 3, 4]


def test_caveman_generalises_in_cliques_of_four():
    assert caveman_shape(36) == (9, 4) and caveman_shape(20) == (5, 4)
    with pytest.raises(NetworkError, match="multiple"):
        caveman_shape(30)


def test_graph_is_drawn_from_the_seed():
    a, b, c = (ConsensusModel(36, "er", rng=s).graph for s in (1, 1, 2))
    assert sorted(a.edges) == sorted(b.edges) and sorted(a.edges) != sorted(c.edges)


def test_rounds_table_records_every_round():
    m = ConsensusModel(36, "ba", rng=1, max_rounds=7).run()
    r = m.rounds_table()
    assert r["round"].tolist() == list(range(m.round + 1))
    assert set(["blue_share", "largest_component", "local_agreement", "stubborn_moves"]) <= set(r.columns)
    a = m.agents_table()
    assert len(a) == 36 * (m.round + 1)
    assert a.groupby("round")["stubborn_move"].sum().iloc[1:].tolist() == r["stubborn_moves"].iloc[1:].tolist()


def test_stubbornness_is_pooled_ratio():
    s = ConsensusModel(36, "ba", rng=4).run().summary()
    assert s["opportunities"] > 0
    assert s["stubbornness"] == pytest.approx(s["stubborn_moves"] / s["opportunities"])


@pytest.mark.skipif(not HAS_BATCH_RUN, reason="needs Mesa 3: Mesa 4 removed batch_run (the project's sweep, "
                                              "tested on both, needs neither)")
def test_batch_run_works_unchanged():
    from mesa import batch_run

    results = batch_run(ConsensusModel, parameters={"topology": ["ba", "caveman"], "policy": ["majority-inertia"]},
                        rng=[1, 2], max_steps=50, number_processes=1, data_collection_period=-1,
                        display_progress=False)
    df = pd.DataFrame(results)
    assert df["RunId"].nunique() == 4 and len(df) == 4 * 36  # one row per agent at the last step
    assert {"blue_share", "largest_component", "consensus", "colour"} <= set(df.columns)
    final = df.groupby("RunId").first()
    assert ((final["blue_share"] == 1) | (final["blue_share"] == 0)).eq(final["consensus"]).all()


@pytest.mark.parametrize("kwargs, error, match", [
    ({"topology": "square"}, ParameterError, "choose one of"),
    ({"topology": "ba", "n": 2}, NetworkError, "larger --n"),
    ({"preferences": "minority", "minority": 37}, NetworkError, "impossible"),
    ({"policy": "nope"}, PolicyError, "unknown consensus policy"),
    ({"policy": "majority-inertia:inertia=2"}, PolicyError, "must lie in"),
    ({"communication": "telepathy"}, ConsensusConfigError, "choose one of"),
    ({"assign": {"hubs:99": "stubborn"}}, ConsensusConfigError, "asks for 99"),
    ({"assign": {"corner": "stubborn"}}, ConsensusConfigError, "bad agent selector"),
])
def test_bad_input_is_named(kwargs, error, match):
    kwargs = {"n": 36, "topology": "ba", **kwargs}
    with pytest.raises(error, match=match):
        ConsensusModel(rng=1, **kwargs)


def test_graphml_file_round_trip(tmp_path):
    import networkx as nx

    from llm_mesa.graphs import load_graph
    g = nx.relabel_nodes(nx.petersen_graph(), {v: f"n{v}" for v in range(10)})
    nx.write_graphml(g, tmp_path / "p.graphml")
    loaded = load_graph(tmp_path / "p.graphml")
    assert loaded.number_of_nodes() == 10 and loaded.number_of_edges() == 15
    assert sorted(d for _, d in loaded.degree) == [3] * 10
    m = ConsensusModel(graph=loaded, policy="voter", rng=1, max_rounds=5).run()
    assert m.n == 10


def test_unreadable_graph_file_is_named(tmp_path):
    bad = tmp_path / "bad.graphml"
    bad.write_text("<graphml><not closed")
    from llm_mesa.graphs import load_graph
    with pytest.raises(NetworkError, match="cannot read graph file"):
        load_graph(bad)


@pytest.mark.parametrize("policy", ["majority-inertia", "majority-inertia:inertia=0.4,threshold=0.7", "voter",
                                    "stubborn", "random"])
@pytest.mark.parametrize("topology", ["ba", "caveman", "er"])
def test_vectorised_rule_path_plays_the_same_game_as_agent_by_agent(policy, topology):
    # the array path (rule_step) and each agent's Policy.decide, from the same rule stream
    for seed in (1, 2):
        fast = ConsensusModel(36, topology, policy=policy, rng=seed, max_rounds=30, baseline_permutations=0).run()
        slow = ConsensusModel(36, topology, policy=policy, rng=seed, max_rounds=30, baseline_permutations=0,
                              fast_rules=False).run()
        assert fast._rule_arrays and not slow._rule_arrays
        pd.testing.assert_frame_equal(fast.rounds_table(), slow.rounds_table())
        pd.testing.assert_frame_equal(fast.agents_table(), slow.agents_table())
        assert fast.summary() == slow.summary()


def test_mixed_rule_policies_take_the_array_path_and_equal_agent_by_agent():
    kw = dict(assign={"hubs:5": "stubborn", "random:3": "random", "nodes:0,1": "voter"}, rng=3, max_rounds=20)
    fast = ConsensusModel(36, "ba", **kw).run()
    slow = ConsensusModel(36, "ba", fast_rules=False, **kw).run()
    assert fast._rule is not None and fast._rule_arrays
    pd.testing.assert_frame_equal(fast.agents_table(), slow.agents_table())
    assert fast.summary() == slow.summary()


def test_a_non_rule_policy_takes_the_agent_by_agent_path_on_the_model_stream():
    from llm_mesa.models.consensus.observation import ConsensusDecision
    from llm_mesa.policy import Policy

    class Coin(Policy):  # a rule of someone else's package: no rule(), draws from the model's random
        def decide(self, obs, rng):
            return ConsensusDecision("blue" if rng.random() < 0.5 else "red")

    m = ConsensusModel(36, "ba", assign={"hubs:5": Coin()}, rng=1, max_rounds=3)
    assert m._rule is None
    m.run()
    assert m.round == 3


def test_a_vectorised_policy_of_another_package_keeps_its_own_contract():
    import numpy as np

    from llm_mesa.policy import Policy

    class AllBlue(Policy):
        vectorised = True

        def decide_vector(self, colours, preferences, adjacency, rng):
            assert isinstance(rng, random.Random)  # the model's random, as the core's contract says
            return np.ones(len(colours), dtype=np.int8)

    m = ConsensusModel(20, "ba", policy=AllBlue(), rng=1, max_rounds=3, baseline_permutations=0).run()
    assert m._rule is None and m.colours == ["blue"] * 20 and m.stop_reason == "consensus"


def test_a_population_without_an_assignment_splits_the_agents_in_node_order_blocks():
    """``voter + stubborn`` and no ``assign``: nodes 0-4 vote, nodes 5-9 never change colour."""
    from llm_mesa import play
    from llm_mesa.games import PlayRequest
    from llm_mesa.registry import get_game

    result = play.play(get_game("consensus"), PlayRequest({"n": 10}, "voter + stubborn", 3, ("agents",)))
    agents = result.tables["agents"]
    changes = agents.sort_values("round").groupby("node")["colour"].nunique()
    assert (changes.loc[5:9] == 1).all() and changes.loc[0:4].max() > 1
