"""Theory of the colouring game's best response, tested where it can be proved.

* A proper colouring is a fixed point of best response (nobody is in conflict, so
  nobody moves), with or without inertia.
* On a connected bipartite graph with k = 2, synchronous best response without inertia
  from the all-same start flips every agent every round: everyone is in conflict and
  the other colour is free for everyone, so the network swaps colours for ever (a
  2-cycle) and is never solved.
* Inertia breaks that symmetry: in the first round from the all-same start each agent
  moves (to the other colour) with probability 1 - p, independently, so the network is
  solved at once exactly when the movers are one side of the bipartition:
  P = (1-p)^|A| p^|B| + p^|A| (1-p)^|B|.
* Best response has frozen states that inertia cannot help: on the 3-cube with one face
  recoloured every agent in conflict has one of three neighbours on its colour, its
  least held colour, so nobody ever moves.
"""

from __future__ import annotations

import math
import random

import networkx as nx
import pytest

from llm_mesa.models.colouring.graphs import build_graph
from llm_mesa.models.colouring.model import ColouringModel
from llm_mesa.models.colouring.parameters import COLOURS
from llm_mesa.models.colouring.policies import BestResponse, View, best_response

BIPARTITE = {
    "cycle": dict(topology="cycle"),
    "chords-5": dict(topology="cycle", chords=5),
    "chords-20": dict(topology="cycle", chords=20),
    "leader-cycle": dict(topology="leader-cycle", leaders=2),
}


def proper_colouring(graph: nx.Graph, k: int) -> list[int] | None:
    """A proper k-colouring by backtracking (most constrained node first), or None."""
    colour: dict[int, int] = {}

    def place() -> bool:
        if len(colour) == graph.number_of_nodes():
            return True
        node = max((v for v in graph if v not in colour),
                   key=lambda v: (len({colour[u] for u in graph[v] if u in colour}), graph.degree[v]))
        for c in range(k):
            if all(colour.get(u) != c for u in graph[node]):
                colour[node] = c
                if place():
                    return True
                del colour[node]
        return False

    return [colour[v] for v in range(graph.number_of_nodes())] if place() else None


def play(model: ColouringModel, rounds: int) -> ColouringModel:
    for _ in range(rounds):
        model.step()
    return model


@pytest.mark.parametrize("shape", [*BIPARTITE.values(), dict(topology="pa", links=2, k=3),
                                   dict(topology="pa", links=3, k=3), dict(topology="cycle", chords=5, k=3)])
@pytest.mark.parametrize("inertia", [0.0, 0.4])
def test_a_proper_colouring_is_a_fixed_point_of_best_response(shape, inertia):
    shape = {"k": 2, **shape}
    graph = build_graph(shape["topology"], 38, random.Random(5), k=shape["k"], chords=shape.get("chords", 0),
                        leaders=shape.get("leaders", 2), links=shape.get("links", 2))
    found = proper_colouring(graph, shape["k"])
    assert found is not None
    start = [COLOURS[c] for c in found]
    model = ColouringModel("best-response", 1, graph=graph, start=start, inertia=inertia, **{**shape, "n": 38})
    assert model.solved and not model.running
    play(model, 10)  # stepped on past its end: nothing moves
    assert set(model.history) == {tuple(start)} and model.changes == 0 and model.conflicts == 0


def test_best_response_moves_an_agent_in_conflict_and_keeps_one_that_is_not():
    rng = random.Random(0)
    colours = ("red", "blue", "green")
    assert best_response("red", ["blue", "green"], colours, rng) == "red"           # no conflict: keeps
    assert best_response("red", ["red", "blue"], colours, rng) == "green"          # the one free colour
    assert best_response("red", ["red", "blue", "green", "green"], colours, rng) in ("red", "blue")  # least held
    # ties come from the stream: both least-held colours are taken, over many draws
    assert {best_response("red", ["red", "blue", "green", "green"], colours, rng) for _ in range(50)} == {"red", "blue"}
    view = View(0, 1, "red", (1, 2), ("red", "red"), ("red", "blue"), 3, 10, 5.0)
    assert BestResponse().decide(view, rng).colour == "blue" and view.in_conflict


def bipartite_graphs() -> dict[str, nx.Graph]:
    graphs = {name: build_graph(s["topology"], 38, random.Random(3), k=2, chords=s.get("chords", 0),
                                leaders=s.get("leaders", 2)) for name, s in BIPARTITE.items()}
    graphs["grid-5x6"] = nx.convert_node_labels_to_integers(nx.grid_2d_graph(5, 6))
    graphs["cube"] = nx.convert_node_labels_to_integers(nx.hypercube_graph(3))
    tree = nx.random_labeled_tree(30, seed=4) if hasattr(nx, "random_labeled_tree") else nx.random_tree(30, seed=4)
    graphs["tree"] = tree
    return graphs


@pytest.mark.parametrize("name, graph", bipartite_graphs().items())
def test_bipartite_k2_all_same_without_inertia_is_a_2_cycle_that_never_solves(name, graph):
    assert nx.is_bipartite(graph) and nx.is_connected(graph)
    model = ColouringModel("best-response", 7, graph=graph, initial="same", k=2, inertia=0.0, max_rounds=40)
    while model.running:
        model.step()
    assert not model.solved and model.round == 40
    first, second = model.history[0], model.history[1]
    assert set(first) == {"red"} and set(second) == {"blue"}
    assert all(model.history[r] == (first if r % 2 == 0 else second) for r in range(41))
    frame = model.datacollector.get_model_vars_dataframe()
    assert (frame["conflicts"] == graph.number_of_edges()).all()
    assert (frame["changed"].iloc[1:] == graph.number_of_nodes()).all() and not frame["solved"].any()


def test_the_same_start_with_three_colours_is_no_2_cycle():
    """The 2-cycle needs k = 2: with a third colour two colours are free and ties break the symmetry."""
    graph = nx.cycle_graph(38)
    model = play(ColouringModel("best-response", 7, graph=graph, initial="same", k=3, max_rounds=40), 1)
    assert len(set(model.history[1])) == 2


@pytest.mark.parametrize("inertia", [0.3, 0.6])
def test_with_inertia_the_first_round_solves_with_the_probability_theory_gives(inertia):
    """The star K(1,3): A = the hub, B = the three leaves; 4,000 seeded games against the formula.

    The formula is the same at p and 1 - p (the sides swap roles), so the movers are counted too:
    each of the 4 agents moves with probability 1 - p."""
    star = nx.star_graph(3)
    games = 4000
    solved = moved = 0
    for seed in range(games):
        model = ColouringModel("best-response", seed, graph=star, initial="same", k=2, inertia=inertia, max_rounds=1)
        model.step()
        solved += model.solved
        moved += model.changed
    p = inertia
    expected = (1 - p) * p**3 + p * (1 - p) ** 3
    assert abs(solved / games - expected) < 4 * math.sqrt(expected * (1 - expected) / games), (solved / games, expected)
    assert abs(moved / (4 * games) - (1 - p)) < 4 * math.sqrt(p * (1 - p) / (4 * games)), moved / (4 * games)


def test_on_an_even_cycle_inertia_solves_every_game_given_time():
    """Proper colourings absorb, and one is reachable from any state (let one agent at a time move: the
    colour boundaries then random-walk until they meet), so every game is solved in the end; measured
    here from the all-same start, 50 seeds (100 seeds: median 196 rounds, longest 1,557)."""
    graph = nx.cycle_graph(38)
    rounds = []
    for seed in range(50):
        model = ColouringModel("best-response", seed, graph=graph, initial="same", k=2, inertia=0.5,
                               max_rounds=20_000)
        while model.running:
            model.step()
        assert model.solved, seed
        rounds.append(model.round)
    assert max(rounds) < 20_000


def test_best_response_freezes_on_a_cube_with_one_face_recoloured():
    cube = nx.convert_node_labels_to_integers(nx.hypercube_graph(3), ordering="sorted")
    nodes = sorted(nx.hypercube_graph(3))
    # parity colouring, with the face x0 = 0 flipped: each agent has exactly one neighbour on its colour
    start = ["red" if (sum(v) + (v[0] == 0)) % 2 else "blue" for v in nodes]
    for inertia in (0.0, 0.5):
        model = ColouringModel("best-response", 2, graph=cube, start=start, k=2, inertia=inertia, max_rounds=50)
        assert model.conflicts == 4 and model.agents_in_conflict() == 8
        while model.running:
            model.step()
        assert not model.solved and model.changes == 0 and set(model.history) == {tuple(start)}
