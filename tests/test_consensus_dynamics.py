"""Known results of voter and majority dynamics, played through the Mesa model."""

import math

import networkx as nx
import pytest

from llm_mesa.models.consensus import ConsensusModel


def play(graph, colours, policy, seed, **kw):
    kw.setdefault("max_rounds", 10_000)
    return ConsensusModel(graph=graph, policy=policy, preferences="explicit", explicit_preferences=colours,
                          baseline_permutations=0, collect_agents=False, rng=seed, **kw).run()


@pytest.mark.slow
def test_voter_model_fixation_probability_is_degree_weighted_share():
    # Wheel graph: a hub of degree 7 and 7 rim nodes of degree 3 (non-bipartite).
    # Only the hub starts blue: degree-weighted blue share 7/28 = 0.25, while the
    # plain share is 1/8 = 0.125. The degree-weighted sum is a martingale of the
    # synchronous voter model, so P(blue consensus) = 0.25.
    g = nx.wheel_graph(8)
    colours = ["blue"] + ["red"] * 7
    seeds = 1500
    blue = sum(play(g, colours, "voter", s).colours[0] == "blue" for s in range(seeds))
    p_hat = blue / seeds
    half_width = 3.3 * math.sqrt(0.25 * 0.75 / seeds)  # ~99.9% interval
    assert abs(p_hat - 0.25) < half_width, p_hat


def test_voter_model_always_reaches_consensus_on_a_connected_non_bipartite_graph():
    g = nx.wheel_graph(8)
    for seed in range(30):
        m = play(g, ["blue", "red"] * 4, "voter", seed)
        assert m.summary()["consensus"] and m.stop_reason == "consensus"


def test_stubborn_agents_on_both_colours_prevent_consensus():
    g = nx.complete_graph(8)
    colours = ["red", "blue"] + ["red"] * 3 + ["blue"] * 3
    m = play(g, colours, "voter", 3, assign={"nodes:0,1": "stubborn"}, max_rounds=300)
    s = m.summary()
    assert not s["consensus"] and s["rounds"] == 300 and s["stop_reason"] == "max rounds"
    assert m.colours[0] == "red" and m.colours[1] == "blue"
    assert s["mean_payoff"] == 0.0


@pytest.mark.parametrize("seed", range(10))
def test_majority_with_inertia_on_a_complete_graph_converges_to_the_majority(seed):
    g = nx.complete_graph(11)
    colours = ["blue"] * 7 + ["red"] * 4
    m = play(g, colours, "majority-inertia:inertia=0.3", seed)
    s = m.summary()
    assert s["consensus"] and s["winner"] == "blue"
    # every agent ends on blue: preferred 0.20 for 7, other 0.15 for 4
    assert s["total_payoff"] == pytest.approx(7 * 0.20 + 4 * 0.15)


def test_caveman_with_one_colour_per_clique_is_a_pseudo_equilibrium():
    g = nx.connected_caveman_graph(9, 4)
    colours = [("red" if (v // 4) % 2 else "blue") for v in range(36)]
    m = play(g, colours, "majority-inertia:inertia=0", 0, max_rounds=10)
    s = m.summary()
    assert not s["consensus"] and s["rounds"] == 10
    assert s["pseudo_equilibrium"] and s["flippers"] == []
    assert s["local_agreement"] == 1.0
    rounds = m.rounds_table()
    # pseudo-equilibrium needs W = 3 rounds of high local agreement
    assert rounds["pseudo_equilibrium"].tolist() == [False] * 3 + [True] * 8
    assert m.colours == colours


def test_random_policy_flips_make_flippers_visible():
    # Two cliques joined by one edge, one colour each; node 0 is a coin-flipper.
    g = nx.barbell_graph(6, 0)
    colours = ["red"] * 6 + ["blue"] * 6
    m = play(g, colours, "majority-inertia:inertia=0", 4, assign={"nodes:0": "random"}, max_rounds=40)
    flagged = m.rounds_table()
    assert not m.summary()["consensus"]
    flips_in_window = [set(f) for f in flagged["flippers"] if f]
    assert flips_in_window and all(f == {0} for f in flips_in_window)


def test_minority_hubs_prefer_red():
    m = ConsensusModel(36, "ba", preferences="minority", minority=5, rng=2)
    hubs = sorted(m.graph.nodes, key=lambda v: (-m.graph.degree[v], v))[:5]
    assert [m.preferences[v] for v in hubs] == ["red"] * 5
    assert m.preferences.count("red") == 5 and m.preferences.count("blue") == 31


def test_random_preferences_are_half_and_half():
    m = ConsensusModel(36, "er", rng=9)
    assert m.preferences.count("red") == 18
    assert m.colours == m.preferences  # initial colour is the preference by default
