"""What the contract promises any game: its tables' keys and types, and a dry run that refuses what a sweep refuses."""

from __future__ import annotations

import random

import mesa
import networkx as nx
import pytest
from mesa.discrete_space import FixedAgent

from llm_mesa import Game, Parameter, ParameterSet, Policy, PolicyAgent, declared, network_space, play, play_round, register_policy
from llm_mesa.cli import main
from llm_mesa.errors import LlmMesaError
from llm_mesa.registry import register_game, unregister_game

NAME = "hygiene_test"


@register_policy("flip", NAME, "take the other value")
class Flip(Policy):
    def decide(self, obs: int, rng: random.Random) -> int:
        return 1 - obs


class Node(FixedAgent, PolicyAgent):
    def __init__(self, model, cell, value):
        super().__init__(model)
        self.cell, self.value, self.policy = cell, value, Flip()

    def observe(self) -> int:
        return self.value

    def advance(self) -> None:
        self.value = self.pending


class Star(mesa.Model):
    """Agents on a star's nodes, numbered from 0 as the graph's nodes are (Mesa's ids start at 1)."""

    def __init__(self, n: int, rounds: int, seed: int) -> None:
        super().__init__(rng=seed)
        self.rounds, self.round = rounds, 0
        self.network = network_space(nx.star_graph(n - 1), random.Random(seed))
        self.nodes = [Node(self, self.network[v], v % 2) for v in range(n)]
        self.datacollector = mesa.DataCollector({"ones": lambda m: sum(a.value for a in m.nodes)},
                                                agent_reporters={"value": "value"})
        self.datacollector.collect(self)

    def step(self) -> None:
        play_round(self.nodes, self.random)
        self.round += 1
        self.datacollector.collect(self)
        self.running = self.round < self.rounds


class Hygiene(Game):
    name = NAME
    parameters = ParameterSet.of(Parameter("n", int, 5, "agents", low=2, high=50),
                                 Parameter("leaves", int, 4, "leaves, one fewer than the agents", low=1, high=49))

    def build(self, parameters, policy, seed):
        if parameters["leaves"] != parameters["n"] - 1:  # a combination each parameter alone cannot refuse
            raise LlmMesaError(f"a star of {parameters['n']} agents has {parameters['n'] - 1} leaves, not "
                               f"{parameters['leaves']}; set leaves=n-1")
        return Star(parameters["n"], 3, seed)


@pytest.fixture
def game():
    registered = register_game(Hygiene())
    yield registered
    unregister_game(NAME)


def test_the_agents_table_names_agents_as_the_network_names_its_nodes_and_counts_rounds_in_whole_numbers(game):
    model = play.make_model(game, {"n": 5, "leaves": 4}, "flip", 1)
    while model.running:
        model.step()
    agents = declared.table(game, model, "agents")
    assert agents["round"].dtype.kind == "i" and sorted(agents["round"].unique()) == [0, 1, 2, 3]
    assert sorted(agents["agent"].unique()) == sorted(model.network.G.nodes) == [0, 1, 2, 3, 4]
    first = agents[agents["round"] == 0].set_index("agent")["value"].to_dict()
    assert first == {v: v % 2 for v in range(5)}  # each node's own row, not its neighbour's


def test_a_dry_run_refuses_the_grid_the_sweep_refuses_in_the_same_words(game, capsys, tmp_path):
    argv = ["sweep", "--game", NAME, "--set", "n=5", "--set", "leaves=3,4", "--policies", "flip", "--seeds", "2"]
    assert main([*argv, "--dry-run"]) == 2
    dry = capsys.readouterr().err
    assert main([*argv, "--out", str(tmp_path / "s"), "--quiet"]) == 2
    real = capsys.readouterr().err
    assert "set leaves=n-1" in dry and dry.split("error: ", 1)[1] == real.split("error: ", 1)[1]
    assert main(["sweep", "--game", NAME, "--set", "leaves=4", "--policies", "flip", "--seeds", "2", "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "games: 2"
