"""The core's update schemes: activation orders, dependencies, and exact sequential play at parallel speed."""

from __future__ import annotations

import asyncio
import random

import networkx as nx
import pytest

from llm_mesa.policy import Policy
from llm_mesa.rounds import PolicyAgent
from llm_mesa.update import activation_stream, dependencies, depth, play_activations, turn_order


def test_orders_come_from_their_own_stream_and_follow_the_scheme():
    a, b = activation_stream(7), activation_stream(7)
    orders = [turn_order("random-sequential", 20, a) for _ in range(5)]
    assert orders == [turn_order("random-sequential", 20, b) for _ in range(5)]
    assert all(sorted(o) == list(range(20)) for o in orders) and len({tuple(o) for o in orders}) == 5
    draws = [turn_order("random-asynchronous", 20, a) for _ in range(200)]
    assert all(len(d) == 20 for d in draws)
    repeated = sum(len(set(d)) < 20 for d in draws)
    assert repeated > 190  # with replacement: P(all 20 distinct) = 20!/20^20, about 2e-8
    with pytest.raises(ValueError, match="unknown update scheme"):
        turn_order("synchronous", 3, a)


def test_dependencies_name_the_latest_related_activation_and_depth_is_the_longest_chain():
    path = {0: [1], 1: [0, 2], 2: [1], 3: []}  # 0-1-2 and an isolated 3
    order = [0, 3, 2, 1, 0]
    deps = dependencies(order, lambda i: path[i])
    assert deps == [(), (), (), (0, 2), (0, 3)]
    assert depth(deps) == 3  # 0 -> 1 -> 0 (and 2 -> 1)
    everyone = dependencies(order, lambda i: range(4))
    assert all(k - 1 in waits for k, waits in enumerate(everyone) if k) and depth(everyone) == 5
    alone = dependencies([2, 2, 1, 2], lambda i: ())
    assert alone == [(), (0,), (), (1,)] and depth(alone) == 3  # an agent's own activations stay in order
    assert depth([]) == 0


class Mix(Policy):
    """A decision that depends on exactly what the agent sees, with a random delay (completions reorder)."""

    name, game = "mix", "test-update"

    def __init__(self, delays: random.Random, is_async: bool) -> None:
        self.delays, self.is_async = delays, is_async

    def decide(self, obs, rng):
        return (sum(obs[1]) * 31 + obs[2] + int(rng.random() * 1000)) % 9973

    async def adecide(self, obs, rng):
        await asyncio.sleep(self.delays.random() * 0.01)
        return self.decide(obs, rng)


class Node(PolicyAgent):
    def __init__(self, model, index, policy):
        super().__init__(model)
        self.index, self.state, self.policy = index, index, policy

    def observe(self):
        neighbours = tuple(self.model.nodes[j].state for j in sorted(self.model.graph[self.index]))
        obs = (self.index, neighbours, self.state)
        self.model.log.append(obs)
        return obs

    def advance(self):
        self.state = self.pending


class Board:
    def __init__(self, graph, is_async, seed):
        import mesa

        self.mesa = mesa.Model(rng=seed)
        self.graph, self.log = graph, []
        self.nodes = [Node(self.mesa, i, Mix(random.Random(seed * 7 + i), is_async)) for i in graph]
        for node in self.nodes:
            node.model = self  # what the nodes read

    def play(self, order, deps, seed):
        draws = random.Random(seed)
        rngs = [random.Random(draws.getrandbits(32)) for _ in order]

        return play_activations(self.nodes, order, deps, rngs)


@pytest.mark.parametrize("seed", range(12))
def test_concurrent_play_equals_one_at_a_time_play(seed):
    """Every activation whose dependencies are done runs at once; the outcome is the strictly sequential one."""
    rng = random.Random(seed)
    graph = nx.gnp_random_graph(14, 0.25, seed=seed)
    order = [rng.randrange(14) for _ in range(20)]
    related = lambda i: graph[i]  # noqa: E731
    fast, slow = Board(graph, True, seed), Board(graph, True, seed)
    chain = [(k - 1,) if k else () for k in range(len(order))]
    fast_decisions = fast.play(order, dependencies(order, related), seed)
    slow_decisions = slow.play(order, chain, seed)
    rules = Board(graph, False, seed)
    rule_decisions = rules.play(order, dependencies(order, related), seed)
    assert fast_decisions == slow_decisions == rule_decisions
    assert [n.state for n in fast.nodes] == [n.state for n in slow.nodes] == [n.state for n in rules.nodes]
    assert sorted(fast.log) == sorted(slow.log)  # what the activations saw, whatever finished first


def test_concurrent_play_overlaps_what_is_independent():
    """On a graph with no edges every activation is independent: all are in flight at once."""
    graph = nx.empty_graph(30)
    order = list(range(30))
    deps = dependencies(order, lambda i: graph[i])
    assert depth(deps) == 1
    board = Board(graph, True, 1)
    in_flight = {"now": 0, "peak": 0}

    class Counting(Mix):
        async def adecide(self, obs, rng):
            in_flight["now"] += 1
            in_flight["peak"] = max(in_flight["peak"], in_flight["now"])
            await asyncio.sleep(0.01)
            in_flight["now"] -= 1
            return self.decide(obs, rng)

    for node in board.nodes:
        node.policy = Counting(random.Random(0), True)
    board.play(order, deps, 1)
    assert in_flight["peak"] == 30
    chained = Board(graph, True, 1)
    in_flight.update(now=0, peak=0)
    for node in chained.nodes:
        node.policy = Counting(random.Random(0), True)
    chained.play(order, [(k - 1,) if k else () for k in range(30)], 1)
    assert in_flight["peak"] == 1
