"""A ring game of the fit tests' own (after docs/write-a-game.md's tinyvote), whose rules declare their distributions.

Agents on a ring hold ``a`` or ``b``. ``left`` takes the left neighbour's state (so a ring
that does not agree keeps moving), ``sticky:p=P`` keeps its own state with probability P and
else takes the left one's, ``coin`` a fair coin. Its ``observed`` reader rebuilds what each
agent saw from the agents table and the ring (agent i's neighbours are i - 1 and i + 1).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import mesa
import networkx as nx
from mesa.datacollection import DataCollector
from mesa.discrete_space import FixedAgent, Network

from llm_mesa import (
    ROUNDS,
    Game,
    Parameter,
    ParameterSet,
    Policy,
    PolicyAgent,
    PolicyCatalog,
    Table,
    make_policy,
    play_round,
    register_policy,
    seeded_layout,
)

NAME = "fitring"
PARAMETERS = ParameterSet.of(
    Parameter("n", int, 12, "agents on the ring", low=3, high=1000),
    Parameter("max_rounds", int, 30, "round limit", low=1, high=10_000, round_limit=True),
    Parameter("start_share", float, 0.5, "share of agents starting on a", low=0, high=1),
)


@dataclass(frozen=True)
class View:
    agent: int
    round: int
    state: str
    left: str
    right: str


def _other(state: str) -> str:
    return "b" if state == "a" else "a"


@register_policy("left", NAME, "take the left neighbour's state")
class Left(Policy):
    def decide(self, obs: View, rng: random.Random) -> str:
        return obs.left

    def distribution(self, obs: View) -> dict[str, float]:
        return {obs.left: 1.0, _other(obs.left): 0.0}


@register_policy("sticky", NAME, "keep the own state with probability p, else take the left neighbour's")
class Sticky(Policy):
    fit_parameters = {"p": (0.0, 1.0)}

    def __init__(self, p: float = 0.5) -> None:
        self.p = float(p)

    def params(self):
        return {"p": self.p}

    def decide(self, obs: View, rng: random.Random) -> str:
        return obs.state if rng.random() < self.p else obs.left

    def distribution(self, obs: View) -> dict[str, float]:
        kept = self.p + (1 - self.p) * (obs.left == obs.state)
        return {obs.state: kept, _other(obs.state): 1 - kept}


@register_policy("coin", NAME, "a fair coin")
class Coin(Policy):
    def decide(self, obs: View, rng: random.Random) -> str:
        return "a" if rng.random() < 0.5 else "b"

    def distribution(self, obs: View) -> dict[str, float]:
        return {"a": 0.5, "b": 0.5}


class Voter(FixedAgent, PolicyAgent):
    def __init__(self, model, cell, index: int, state: str, policy: Policy) -> None:
        super().__init__(model)
        self.cell, self.index, self.state, self.policy = cell, index, state, policy

    def observe(self) -> View:
        left, right = (self.model.voters[(self.index + d) % self.model.n].state for d in (-1, 1))
        return View(self.index, self.model.round + 1, self.state, left, right)

    def advance(self) -> None:
        self.state = self.pending


class RingModel(mesa.Model):
    def __init__(self, policy: str | Policy = "left", seed: int = 0, **parameters) -> None:
        super().__init__(rng=seed)
        p = PARAMETERS.validate(parameters, complete=True)
        self.n, self.max_rounds, self.round, self.changes = p["n"], p["max_rounds"], 0, 0
        draw = random.Random(seed)
        graph = nx.cycle_graph(self.n)
        self.network = Network(graph, layout=seeded_layout(graph, seed), random=draw)
        chosen = policy if isinstance(policy, Policy) else make_policy(policy, NAME)
        self.voters = [Voter(self, self.network[i], i, "a" if draw.random() < p["start_share"] else "b", chosen)
                       for i in range(self.n)]
        self.rounds_rng = draw
        self.datacollector = DataCollector(model_reporters={"share_a": lambda m: m.share_a()},
                                           agent_reporters={"state": "state"})
        self.datacollector.collect(self)
        self.running = len({v.state for v in self.voters}) > 1

    def share_a(self) -> float:
        return sum(v.state == "a" for v in self.voters) / self.n

    def step(self) -> None:
        before = [v.state for v in self.voters]
        play_round(self.voters, self.rounds_rng)
        self.changes += sum(a != v.state for a, v in zip(before, self.voters))
        self.round += 1
        self.datacollector.collect(self)
        self.running = len({v.state for v in self.voters}) > 1 and self.round < self.max_rounds

    def summary(self) -> dict:
        return {"agreed": not self.running and len({v.state for v in self.voters}) == 1, "share_a": self.share_a(),
                "changes": self.changes, "rounds": self.round}


def observed(tables, parameters, seed):
    """``(agent, round, view, state chosen)``: each agent's state after a round, from what it saw before it."""
    agents = tables["agents"]
    states = {int(r): dict(zip(g["agent"].astype(int), g["state"].astype(str))) for r, g in agents.groupby("round")}
    n = len(states[0])
    for r in sorted(states)[1:]:
        before = states[r - 1]
        for i, chosen in states[r].items():
            yield i, r, View(i, r, before[i], before[(i - 1) % n], before[(i + 1) % n]), chosen


class FitRing(Game):
    name = NAME
    summary = "a ring whose rules declare how likely their decisions are"
    parameters = PARAMETERS
    policies = PolicyCatalog(module=__name__, observed=f"{__name__}:observed")
    tables = (ROUNDS, Table("agents", ("round", "agent"), "each agent's state, every round"))
    headline_measure = "share_a"

    def build(self, parameters, policy, seed):
        return RingModel(policy, seed, **parameters)


GAME = FitRing()
