"""A game the lab's tests register themselves: each agent on a ring pledges 0..5 and holds a private secret.

Written on llm-mesa's public API alone, with an LLM policy through ``llm_mesa.LLMPolicy`` and no
code for seats: the lab must seat people in it from the contract alone. Its answer schema has a
bounded integer (a slider) and a free-text note with a length limit; every agent's observation
carries a secret word no other agent may see, so a seat's page and websocket frames can be
searched for the others' secrets.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

import mesa
import networkx as nx
from mesa.datacollection import DataCollector
from mesa.discrete_space import FixedAgent, Network

from llm_mesa import (
    Game,
    LLMPolicy,
    LlmSupport,
    Parameter,
    ParameterSet,
    Policy,
    PolicyAgent,
    PolicyCatalog,
    Question,
    make_policy,
    play_round,
    register_policy,
    seeded_layout,
)

NAME = "pledge"
PARAMETERS = ParameterSet.of(
    Parameter("n", int, 8, "agents on the ring", low=3, high=200),
    Parameter("max_rounds", int, 3, "round limit", low=1, high=100),
)
SCHEMA = {"type": "object",
          "properties": {"pledge": {"type": "integer", "minimum": 0, "maximum": 5},
                         "note": {"type": "string", "maxLength": 40}},
          "required": ["pledge", "note"], "additionalProperties": False}


def secret_of(seed: int, agent: int) -> str:
    """Agent ``agent``'s secret in the game of ``seed``: a word found nowhere else."""
    return f"secret{random.Random(f'{seed}-{agent}').getrandbits(48):012x}"


@dataclass(frozen=True)
class PledgeView:
    agent: int
    round: int
    pledge: int
    neighbours_pledge: tuple[int, int]
    secret: str


@register_policy("match", NAME, "pledge the larger of the two neighbours' pledges")
class Match(Policy):
    def decide(self, obs: PledgeView, rng: random.Random) -> int:
        return max(obs.neighbours_pledge)


def decode(text: str) -> int | None:
    try:
        value = json.loads(text).get("pledge")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 5 else None


@register_policy("llm", NAME, "an LLM agent")
class LLMPledge(LLMPolicy):
    def question(self, obs: PledgeView) -> Question:
        state = (f"You are agent {obs.agent}, round {obs.round}. You pledged {obs.pledge}. Your neighbours pledged "
                 f"{obs.neighbours_pledge[0]} and {obs.neighbours_pledge[1]}. Your secret word is {obs.secret}.")
        return Question(decode, messages=[{"role": "system", "content": "Pledge 0 to 5. Answer JSON."},
                                          {"role": "user", "content": state}],
                        schema=SCHEMA, template_hash="pledge1")

    def failed(self, obs: PledgeView) -> int:
        return obs.pledge


def llm_policy(endpoint, store=None) -> LLMPledge:
    return LLMPledge(endpoint, store)


class Pledger(FixedAgent, PolicyAgent):
    def __init__(self, model, cell, index: int, pledge: int, policy: Policy) -> None:
        super().__init__(model)
        self.cell, self.index, self.pledge, self.policy = cell, index, pledge, policy
        self.secret = secret_of(model.seed, index)

    @property
    def state(self) -> str:
        return str(self.pledge)

    def observe(self) -> PledgeView:
        n = self.model.n
        around = tuple(self.model.pledgers[(self.index + d) % n].pledge for d in (-1, 1))
        return PledgeView(self.index, self.model.round + 1, self.pledge, around, self.secret)

    def advance(self) -> None:
        self.pledge = self.pending


class PledgeModel(mesa.Model):
    def __init__(self, policy="match", seed: int = 0, **parameters) -> None:
        super().__init__(rng=seed)
        p = PARAMETERS.validate(parameters, complete=True)
        self.seed, self.n, self.max_rounds, self.round = seed, p["n"], p["max_rounds"], 0
        draw = random.Random(seed)
        graph = nx.cycle_graph(self.n)
        self.network = Network(graph, layout=seeded_layout(graph, seed), random=draw)
        chosen = policy if isinstance(policy, Policy) else make_policy(policy, NAME)
        self.pledgers = [Pledger(self, self.network[i], i, draw.randrange(6), chosen) for i in range(self.n)]
        self.rounds_rng = draw
        self.datacollector = DataCollector(model_reporters={"mean_pledge": lambda m: sum(a.pledge for a in m.pledgers) / m.n},
                                           agent_reporters={"pledge": "pledge"})
        self.datacollector.collect(self)

    def step(self) -> None:
        play_round(self.pledgers, self.rounds_rng)
        self.round += 1
        self.datacollector.collect(self)
        self.running = self.round < self.max_rounds


class PledgeGame(Game):
    name = NAME
    summary = "a pledge game on a ring, with secrets"
    parameters = PARAMETERS
    policies = PolicyCatalog(module=__name__)
    llm = LlmSupport(policy=f"{__name__}:llm_policy")

    def build(self, parameters, policy, seed):
        return PledgeModel(policy, seed, **parameters)


GAME = PledgeGame()
