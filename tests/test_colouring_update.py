"""The colouring game under the update schemes: theory, paired seeds, and exact replay of overlapping calls."""

from __future__ import annotations

import networkx as nx
import pytest

from llm_mesa import PlayRequest, get_game, play
from llm_mesa.llm import Endpoint, ResponseStore
from llm_mesa.loopback import LoopbackServer
from llm_mesa.models.colouring import model as colouring_model
from llm_mesa.models.colouring.model import ColouringModel
from llm_mesa.models.colouring.prompt import ColouringPrompt

GAME = get_game("colouring")
SCHEMES = ("synchronous", "random-sequential", "random-asynchronous")


def test_best_response_with_more_colours_than_any_degree_solves_in_one_sequential_round():
    """Theory: at its turn an agent in conflict takes a colour no neighbour holds (k > its degree leaves
    one), so its edges are clean; a later turn only takes colours its neighbours do not hold, so it never
    dirties them again. After one round in which everyone acted, no edge is in conflict."""
    games = synchronous_solved = 0
    for seed in range(240):
        graph = nx.gnp_random_graph(30, 0.05 + 0.001 * (seed % 80), seed=seed)
        k = max(dict(graph.degree).values(), default=0) + 1
        if not 2 <= k <= 10:
            continue
        model = ColouringModel("best-response", seed, graph=graph, k=k, update="random-sequential")
        model.step()
        assert model.solved, seed
        games += 1
        together = ColouringModel("best-response", seed, graph=graph, k=k)
        together.step()
        synchronous_solved += together.solved
    assert games >= 200
    assert synchronous_solved < games / 2  # in one synchronous round, neighbours in conflict collide again


def test_the_same_seed_plays_the_same_network_and_start_under_every_scheme():
    starts, graphs = set(), set()
    for scheme in SCHEMES:
        model = GAME.build(GAME.parameters.validate({"topology": "pa", "k": 3, "update": scheme}, complete=True),
                           "best-response", 9)
        starts.add(tuple(p.state for p in model.players))
        graphs.add(tuple(model.edges))
    assert len(starts) == len(graphs) == 1


def test_the_rules_say_how_turns_are_taken():
    prompt = ColouringPrompt()
    texts = {scheme: prompt.rules_text(ColouringModel("best-response", 1, n=10, update=scheme).players[0].observe())
             for scheme in SCHEMES}
    assert "at the same time" in texts["synchronous"]
    assert "random order that changes every round" in texts["random-sequential"]
    assert "some more than once" in texts["random-asynchronous"]


def test_depth_is_one_a_synchronous_round_and_the_longest_chain_otherwise():
    sync = ColouringModel("random", 3, n=20, k=3, max_rounds=4)
    seq = ColouringModel("random", 3, n=20, k=3, max_rounds=4, update="random-sequential")
    seen = ColouringModel("random", 3, n=20, k=3, max_rounds=4, update="random-sequential", show_conflicts=True)
    for model in (sync, seq, seen):
        while model.running:
            model.step()
    assert sync.depth == sync.round == 4
    assert 4 < seq.depth < 4 * 20  # a cycle: chains, but far from every turn waiting for the one before
    assert seen.depth == 4 * 20  # agents who see the whole network's conflicts wait for everyone


def chain(order, related):
    """Every turn waits for the one before: strictly one call at a time."""
    return [(k - 1,) if k else () for k in range(len(order))]


@pytest.mark.parametrize("scheme", ["random-sequential", "random-asynchronous"])
def test_a_concurrent_llm_run_replays_one_call_at_a_time_into_the_same_tables(scheme, tmp_path, monkeypatch):
    parameters = {"topology": "cycle", "k": 3, "n": 16, "max_rounds": 6, "update": scheme, "chords": 2}
    store = ResponseStore(tmp_path / "calls.sqlite", "record")
    with LoopbackServer(seed=4, latency=0.02, jitter=0.02) as server:
        endpoint = Endpoint(server.base_url, "colouring:best-response")
        live = play.play(GAME, PlayRequest(parameters, "llm", 5, ("rounds", "agents"), endpoint, store))
        calls = server.stats()["answered"]
    store.close()
    assert live.row["calls"] == calls > 0 and live.row["depth"] < live.row["calls"]
    monkeypatch.setattr(colouring_model, "dependencies", chain)
    replay_store = ResponseStore(tmp_path / "calls.sqlite", "replay")
    dead = Endpoint("http://127.0.0.1:9/v1", "colouring:best-response")
    replayed = play.play(GAME, PlayRequest(parameters, "llm", 5, ("rounds", "agents"), dead, replay_store))
    assert replayed.row["replayed_calls"] == replayed.row["calls"] == calls
    assert replayed.row["depth"] == replayed.row["calls"]  # one at a time
    for name in ("rounds", "agents"):
        assert replayed.tables[name].equals(live.tables[name]), name
    same = {k: v for k, v in live.row.items() if k not in ("replayed_calls", "depth")}
    assert {k: replayed.row[k] for k in same} == same
