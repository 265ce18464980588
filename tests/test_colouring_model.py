"""The colouring game's networks, streams and measures: what the design relies on."""

from __future__ import annotations

import random

import networkx as nx
import pytest
from test_colouring_theory import proper_colouring

from llm_mesa.models.colouring.graphs import build_graph
from llm_mesa.models.colouring.model import ColouringModel
from llm_mesa.models.colouring.parameters import ColouringError


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("links", [2, 3])
def test_preferential_attachment_needs_exactly_k_colours(seed, links):
    """The planted colouring: a k-clique (k colours needed) and a proper k-colouring (enough)."""
    for k in (3, 4):
        graph = build_graph("pa", 38, random.Random(seed), k=k, links=links)
        assert nx.is_connected(graph) and graph.number_of_nodes() == 38
        assert max(len(c) for c in nx.find_cliques(graph)) == k
        assert proper_colouring(graph, k) is not None
        degrees = sorted((d for _, d in graph.degree), reverse=True)
        assert degrees[0] >= 3 * links  # hubs: attachment by degree
        assert graph.number_of_edges() <= k * (k - 1) // 2 + links * (38 - k)


@pytest.mark.parametrize("chords", [0, 5, 20])
def test_chorded_cycles_and_the_leader_cycle_stay_bipartite(chords):
    for seed in range(5):
        cycle = build_graph("cycle", 38, random.Random(seed), k=2, chords=chords)
        assert cycle.number_of_edges() == 38 + chords and nx.is_bipartite(cycle)
        leader = build_graph("leader-cycle", 38, random.Random(seed), k=2, chords=chords, leaders=2)
        assert nx.is_bipartite(leader) and nx.is_connected(leader)
        assert sorted(leader.degree[v] for v in (36, 37)) == [9, 9]  # the two hubs share 18 even nodes
        assert leader.number_of_edges() == 36 + 18 + chords


def test_bad_networks_are_refused_in_one_line():
    with pytest.raises(ColouringError, match="room for"):
        build_graph("cycle", 6, random.Random(0), k=2, chords=50)
    with pytest.raises(ColouringError, match="--leaders"):
        build_graph("leader-cycle", 10, random.Random(0), k=2, leaders=6)
    with pytest.raises(ColouringError, match="nodes 0..n-1"):
        ColouringModel("best-response", 0, graph=nx.relabel_nodes(nx.cycle_graph(4), {0: "a"}))
    with pytest.raises(ColouringError, match="start colours"):
        ColouringModel("best-response", 0, graph=nx.cycle_graph(4), start=["red", "mauve", "red", "blue"])


def test_the_same_seed_plays_the_same_game_and_model_random_is_not_used():
    def run(seed, disturb=False):
        model = ColouringModel("best-response", seed, topology="pa", k=3, links=2, inertia=0.3, max_rounds=40)
        if disturb:
            model.random.seed(12345)  # Mesa seeds model.random differently across versions
        while model.running:
            model.step()
        return model.history, model.edges

    assert run(4) == run(4) == run(4, disturb=True)
    assert run(4) != run(5)


def test_the_graph_and_start_do_not_depend_on_the_policy_or_inertia():
    """Paired designs: one seed, one network and one start, whatever plays it."""
    games = [ColouringModel(policy, 9, topology="cycle", chords=5, inertia=inertia)
             for policy in ("best-response", "random") for inertia in (0.0, 0.5)]
    assert len({(m.history[0], tuple(m.edges)) for m in games}) == 1


def test_the_round_measures_and_the_summary_agree():
    model = ColouringModel("best-response", 3, topology="leader-cycle", inertia=0.2, max_rounds=100)
    while model.running:
        model.step()
    rounds = model.datacollector.get_model_vars_dataframe().reset_index(drop=True)
    agents = model.agents_frame()
    for r, row in rounds.iterrows():
        at = agents[agents["round"] == r]
        state = model.history[r]
        assert row["conflicts"] == sum(state[u] == state[v] for u, v in model.graph.edges)
        assert row["in_conflict"] == at["in_conflict"].sum()
        assert row["solved"] == (row["conflicts"] == 0)
        assert r == 0 or row["changed"] == at["changed"].sum()
    summary = model.summary()
    assert summary["solved"] and summary["rounds_to_solution"] == model.round == len(rounds) - 1
    assert summary["conflicts_final"] == 0 and summary["payoff_earned"] == 5.0
    played = list(rounds["conflicts"].iloc[1:]) + [0] * (100 - model.round)
    assert summary["conflicts_mean"] == pytest.approx(sum(played) / 100)
    assert summary["conflicts_at_50"] == played[49] and summary["changes"] == rounds["changed"].sum()


def test_an_unsolved_game_is_paid_nothing_and_keeps_its_conflicts():
    model = ColouringModel("random", 1, topology="pa", k=3, max_rounds=5)
    while model.running:
        model.step()
    summary = model.summary()
    assert not summary["solved"] and summary["rounds_to_solution"] is None and summary["rounds"] == 5
    assert summary["payoff_earned"] == 0.0 and summary["conflicts_final"] == model.conflict_history[-1] > 0


def test_agents_see_what_the_game_shows():
    plain = ColouringModel("best-response", 2, topology="pa", k=3)
    shown = ColouringModel("best-response", 2, topology="pa", k=3, show_degrees=True, show_conflicts=True)
    a, b = plain.players[5].observe(), shown.players[5].observe()
    assert a.neighbour_degrees is None and a.conflicts is None
    assert b.neighbour_degrees == tuple(shown.graph.degree[v] for v in b.neighbours)
    assert b.conflicts == shown.conflicts and b.neighbour_colours == a.neighbour_colours
    assert plain.network[5].connections.keys() == set(plain.graph[5])  # agents sit on the Mesa network
    assert {p.state for p in plain.players} <= {"red", "blue", "green"}
