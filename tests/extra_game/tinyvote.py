"""A tiny game written as a newcomer would, outside the tree, on llm-mesa's public API alone.

Agents on a ring hold ``a`` or ``b``; each round every agent takes the majority of
itself and its two neighbours (``follow``) or a fair coin (``coin``), or asks an LLM.
The game stops when everyone agrees or at ``max_rounds``. Theory: on a ring, the
majority of three never changes a run of two or more equal states, so ``follow``
stops changing after one round (a fixed point).

The open-world tests install it as a package of its own (one entry point in the
``llm_mesa.games`` group) and run every command and page of llm-mesa over it.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass

import mesa
import networkx as nx
from mesa.datacollection import DataCollector
from mesa.discrete_space import FixedAgent, Network

from llm_mesa import (
    Game,
    LlmEstimate,
    LlmSupport,
    Parameter,
    ParameterSet,
    Policy,
    PolicyAgent,
    PolicyCatalog,
    play_round,
    register_policy,
    seeded_layout,
)
from llm_mesa.llm import LLMRequest, Usage, ask
from llm_mesa.loopback import Behaviour, register_behaviour

NAME = "tinyvote"
PARAMETERS = ParameterSet.of(
    Parameter("n", int, 10, "agents on the ring", low=3, high=1000),
    Parameter("max_rounds", int, 20, "round limit", low=1, high=10_000),
    Parameter("start_share", float, 0.5, "share of agents starting on a", low=0, high=1),
)


@dataclass(frozen=True)
class View:
    agent: int
    round: int
    state: str
    neighbours: tuple[str, str]


@register_policy("follow", NAME, "the majority of itself and its two neighbours")
class Follow(Policy):
    def decide(self, obs: View, rng: random.Random) -> str:
        votes = [obs.state, *obs.neighbours]
        return max(("a", "b"), key=votes.count)


@register_policy("coin", NAME, "a fair coin")
class Coin(Policy):
    def decide(self, obs: View, rng: random.Random) -> str:
        return "a" if rng.random() < 0.5 else "b"


SCHEMA = {"type": "object", "properties": {"state": {"type": "string", "enum": ["a", "b"]}},
          "required": ["state"], "additionalProperties": False}
RULES = "You play a game on a ring. Each round you hold a or b. Answer JSON {\"state\": \"a\" or \"b\"}."


def decode(text: str) -> str | None:
    try:
        value = json.loads(text).get("state")
    except (ValueError, AttributeError):
        return None
    return value if value in ("a", "b") else None


class LLMVote(Policy):
    """An LLM decides; its calls are recorded and replayed through the given store."""

    name = "llm"
    game = NAME
    is_async = True

    def __init__(self, endpoint, store=None):
        self.endpoint, self.store, self.usage = endpoint, store, Usage(NAME)

    async def adecide(self, obs: View, rng: random.Random) -> str:
        state = f"You are agent {obs.agent}, round {obs.round}. You hold: {obs.state}. Neighbours hold: " \
                f"{obs.neighbours[0]}, {obs.neighbours[1]}."
        request = LLMRequest(messages=[{"role": "system", "content": RULES}, {"role": "user", "content": state}],
                             schema=SCHEMA, sample_key=f"agent={obs.agent}|round={obs.round}", template_hash="tiny1")
        answer = await ask(self.endpoint, request, decode, "Answer only the JSON object.", store=self.store,
                           usage=self.usage)
        return answer.value or obs.state


def llm_policy(endpoint, store=None) -> LLMVote:
    return LLMVote(endpoint, store)


class Voter(FixedAgent, PolicyAgent):
    def __init__(self, model, cell, index: int, state: str, policy: Policy) -> None:
        super().__init__(model)
        self.cell, self.index, self.state, self.policy = cell, index, state, policy

    def observe(self) -> View:
        left, right = (self.model.voters[(self.index + d) % self.model.n].state for d in (-1, 1))
        return View(self.index, self.model.round + 1, self.state, (left, right))

    def advance(self) -> None:
        self.state = self.pending


class TinyVoteModel(mesa.Model):
    def __init__(self, policy: str | Policy = "follow", seed: int = 0, **parameters) -> None:
        super().__init__(rng=seed)
        p = PARAMETERS.validate(parameters, complete=True)
        self.n, self.max_rounds, self.round = p["n"], p["max_rounds"], 0
        draw = random.Random(seed)
        graph = nx.cycle_graph(self.n)
        self.network = Network(graph, layout=seeded_layout(graph, seed), random=draw)
        chosen = policy if isinstance(policy, Policy) else make(policy)
        self.voters = [Voter(self, self.network[i], i, "a" if draw.random() < p["start_share"] else "b", chosen)
                       for i in range(self.n)]
        self.rounds_rng = draw
        self.datacollector = DataCollector(model_reporters={
            "share_a": lambda m: sum(v.state == "a" for v in m.voters) / m.n,
            "agreed": lambda m: len({v.state for v in m.voters}) == 1})
        self.datacollector.collect(self)
        self.running = len({v.state for v in self.voters}) > 1

    def step(self) -> None:
        play_round(self.voters, self.rounds_rng)
        self.round += 1
        self.datacollector.collect(self)
        self.running = len({v.state for v in self.voters}) > 1 and self.round < self.max_rounds


def make(spec: str) -> Policy:
    from llm_mesa import make_policy

    return make_policy(spec, NAME)


class FollowBehaviour(Behaviour):
    """Reads the tiny game's prompt and answers as ``follow`` would."""

    kind = f"{NAME}:follow"
    json_answer = True

    def answer(self, prompt, rng):
        own = re.search(r"You hold: (a|b)", prompt.last_user).group(1)
        left, right = re.search(r"Neighbours hold: (a|b), (a|b)", prompt.last_user).groups()
        votes = [own, left, right]
        return {"state": max(("a", "b"), key=votes.count)}


register_behaviour(f"{NAME}:follow", lambda params, model: FollowBehaviour())


class TinyVote(Game):
    name = NAME
    summary = "a tiny majority game on a ring"
    parameters = PARAMETERS
    policies = PolicyCatalog(module=__name__)
    llm = LlmSupport(policy=f"{__name__}:llm_policy", behaviours=__name__)

    def build(self, parameters, policy, seed):
        return TinyVoteModel(policy, seed, **parameters)

    def estimate(self, parameters, endpoint) -> LlmEstimate:
        p = PARAMETERS.validate(parameters, complete=True)
        return LlmEstimate(calls=p["n"] * p["max_rounds"], rounds=p["max_rounds"], prompt_tokens_per_call=60,
                           completion_tokens_per_call=8)


GAME = TinyVote()
