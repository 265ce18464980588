"""Measures on small graphs whose answers can be checked by hand."""

import networkx as nx
import numpy as np
import pytest

from llm_mesa.models.consensus import measures


def test_components_on_a_path():
    g = nx.path_graph(6)  # 0-1-2-3-4-5
    colours = ["red", "red", "blue", "blue", "blue", "red"]
    comps = measures.same_colour_components(g, colours)
    assert comps == [{2, 3, 4}, {0, 1}, {5}]
    assert measures.largest_same_colour_component(g, colours) == (3, "blue")


def test_largest_component_tie_reports_lowest_node():
    g = nx.path_graph(4)
    assert measures.largest_same_colour_component(g, ["blue", "blue", "red", "red"]) == (2, "blue")
    assert measures.largest_same_colour_component(g, ["red", "red", "blue", "blue"]) == (2, "red")


def test_baseline_on_complete_graph_is_the_larger_colour_count():
    g = nx.complete_graph(10)
    colours = [1] * 7 + [0] * 3
    base = measures.random_colouring_baseline(g, colours, 200, np.random.default_rng(0))
    assert base.shape == (200,) and (base == 7).all()


def test_baseline_on_a_path_matches_brute_force():
    g = nx.path_graph(8)
    colours = np.array([1, 1, 1, 1, 0, 0, 0, 0])
    rng = np.random.default_rng(5)
    base = measures.random_colouring_baseline(g, colours, 300, np.random.default_rng(5))
    perms = rng.permuted(np.tile(colours, (300, 1)), axis=1)
    brute = [measures.largest_same_colour_component(g, p)[0] for p in perms]
    assert base.tolist() == brute


def test_baseline_does_not_touch_a_given_stream():
    g = nx.cycle_graph(12)
    colours = [0, 1] * 6
    a = measures.random_colouring_baseline(g, colours, 50, np.random.default_rng(1))
    b = measures.random_colouring_baseline(g, colours, 50, np.random.default_rng(1))
    assert (a == b).all()


def test_stubborn_opportunities_on_a_star():
    g = nx.star_graph(4)  # hub 0, leaves 1..4
    now = ["red", "blue", "blue", "blue", "red"]
    nxt = ["red", "blue", "blue", "blue", "blue"]
    opp, moves = measures.stubborn_opportunities(g, now, nxt)
    # hub: 3 of 4 neighbours blue (strict majority) -> opportunity, kept red -> stubborn
    # leaves 1-3 (blue) see a red hub -> opportunity; they kept blue -> stubborn
    # leaf 4 (red) sees a red hub -> no opportunity
    assert opp.tolist() == [True, True, True, True, False]
    assert moves.tolist() == [True, True, True, True, False]
    nxt2 = ["blue", "red", "blue", "blue", "red"]
    _, moves2 = measures.stubborn_opportunities(g, now, nxt2)
    assert moves2.tolist() == [False, False, True, True, False]


def test_a_tie_is_no_opportunity():
    g = nx.path_graph(3)
    opp, _ = measures.stubborn_opportunities(g, ["red", "blue", "red"], ["red", "blue", "red"])
    assert opp.tolist() == [True, True, True]
    opp, _ = measures.stubborn_opportunities(g, ["red", "red", "blue"], ["red", "red", "blue"])
    assert opp.tolist() == [False, False, True]  # the middle node sees 1 red 1 blue: a tie


def test_local_agreement():
    g = nx.path_graph(4)
    colours = ["red", "red", "blue", "blue"]
    assert measures.locally_satisfied(g, colours).tolist() == [True, True, True, True]
    colours = ["red", "blue", "red", "blue"]
    assert measures.locally_satisfied(g, colours).tolist() == [False, False, False, False]
    assert measures.local_agreement(g, ["red", "blue", "blue", "blue"]) == 0.75


def test_pseudo_equilibrium_and_flippers():
    hist = [[0, 0, 1, 1, 0], [0, 0, 1, 1, 1], [0, 0, 1, 1, 0], [0, 0, 1, 1, 1]]
    flag, flippers = measures.pseudo_equilibrium(hist, [0.95, 0.95, 0.92, 0.91], window=3, level=0.9)
    assert flag and flippers == (4,)
    flag, _ = measures.pseudo_equilibrium(hist, [0.95, 0.95, 0.85, 0.91])
    assert not flag  # agreement dipped below 0.9 inside the window
    flag, _ = measures.pseudo_equilibrium(hist[:3], [0.95, 0.95, 0.95])
    assert not flag  # not yet W rounds played
    flag, _ = measures.pseudo_equilibrium([[1] * 5] * 4, [1.0] * 4)
    assert not flag  # consensus is not a pseudo-equilibrium


def test_adjacency_needs_0_to_n_labels():
    with pytest.raises(ValueError, match="normalise_graph"):
        measures.Adjacency.from_graph(nx.Graph([("a", "b")]))


def test_baseline_in_chunks_under_a_memory_budget_is_the_same_baseline():
    from llm_mesa import graph_measures as gm

    g = nx.barabasi_albert_graph(60, 2, seed=3)
    colours = np.random.default_rng(3).integers(0, 2, 60)
    whole = gm.random_relabelling_baseline(g, colours, 250, np.random.default_rng(9))
    chunked = gm.random_relabelling_baseline(g, colours, 250, np.random.default_rng(9), memory=30_000)
    assert (whole == chunked).all()
    # the draws are those of one (P, n) permutation of the stream, whatever the chunks
    perms = np.random.default_rng(9).permuted(np.tile(colours, (250, 1)), axis=1)
    assert chunked.tolist() == [measures.largest_same_colour_component(g, p)[0] for p in perms]


def test_block_graph_measures_each_graph_as_alone():
    from llm_mesa import graph_measures as gm

    graphs = [nx.gnp_random_graph(25, 0.12, seed=s) for s in range(6)]
    blocks = gm.BlockGraph([gm.as_adjacency(g) for g in graphs])
    states = np.random.default_rng(1).integers(0, 2, 150).astype(np.int8)
    sizes, colours = blocks.largest_components(states)
    counts = blocks.neighbour_sum(states)
    for k, g in enumerate(graphs):
        part = states[25 * k:25 * (k + 1)]
        assert (sizes[k], colours[k]) == gm.largest_same_state_component(g, part)
        assert counts[25 * k:25 * (k + 1)].tolist() == [sum(part[u] for u in g[v]) for v in range(25)]
