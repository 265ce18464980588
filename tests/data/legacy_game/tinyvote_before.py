"""A tiny majority game on a ring, written on llm-mesa's public API alone."""
# The game docs/write-a-game.md wrote before the game contract became a declaration, kept word for word but for
# its name: games written to the older contract must keep working (tests/test_legacy_game.py).


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
    ROUNDS, Game, LLMPolicy, LlmEstimate, LlmSupport, Parameter, ParameterSet, Policy, PolicyAgent, PolicyCatalog,
    Question, Table, categorical, make_policy, play_round, register_policy, seeded_layout, share,
)
from llm_mesa.loopback import Behaviour, PromptNotUnderstood, register_behaviour

NAME = "tinyvote_before"
PARAMETERS = ParameterSet.of(
    Parameter("n", int, 10, "agents on the ring", low=3, high=1000),
    Parameter("max_rounds", int, 20, "round limit", low=1, high=10_000, round_limit=True),
    Parameter("start_share", float, 0.5, "share of agents starting on a", low=0, high=1),
)


@dataclass(frozen=True)
class View:
    """What one agent sees: nothing more."""

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


@register_policy("llm", NAME, "an LLM agent behind any OpenAI-compatible endpoint")
class LLMVote(LLMPolicy):
    def question(self, obs: View) -> Question:
        state = (f"You are agent {obs.agent}, round {obs.round}. You hold: {obs.state}. "
                 f"Neighbours hold: {obs.neighbours[0]}, {obs.neighbours[1]}.")
        return Question(decode, messages=[{"role": "system", "content": RULES}, {"role": "user", "content": state}],
                        schema=SCHEMA, reminder="Answer only the JSON object.",
                        template_hash="tiny1")  # change it when the prompt changes: old answers then never replay

    def failed(self, obs: View) -> str:
        return obs.state  # a failed decision keeps the state (the core has counted it)


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
        chosen = policy if isinstance(policy, Policy) else make_policy(policy, NAME)
        self.voters = [Voter(self, self.network[i], i, "a" if draw.random() < p["start_share"] else "b", chosen)
                       for i in range(self.n)]
        self.rounds_rng = draw
        self.datacollector = DataCollector(model_reporters={
            "share_a": lambda m: sum(v.state == "a" for v in m.voters) / m.n,
            "agreed": lambda m: len({v.state for v in m.voters}) == 1}, agent_reporters={"state": "state"})
        self.datacollector.collect(self)
        self.running = len({v.state for v in self.voters}) > 1

    def step(self) -> None:
        play_round(self.voters, self.rounds_rng)
        self.round += 1
        self.datacollector.collect(self)
        self.running = len({v.state for v in self.voters}) > 1 and self.round < self.max_rounds


class FollowBehaviour(Behaviour):
    """Reads the tiny game's prompt and answers as ``follow`` would."""

    kind, json_answer = f"{NAME}:follow", True

    def answer(self, prompt, rng):
        own = re.search(r"You hold: (a|b)", prompt.last_user)
        around = re.search(r"Neighbours hold: (a|b), (a|b)", prompt.last_user)
        if own is None or around is None:  # e.g. the 1-token test call: a 400, as a real server's refusal
            raise PromptNotUnderstood("not a tinyvote prompt")
        own, (left, right) = own.group(1), around.groups()
        votes = [own, left, right]
        return {"state": max(("a", "b"), key=votes.count)}


register_behaviour(f"{NAME}:follow", lambda params, model: FollowBehaviour())


class TinyVote(Game):
    name = NAME
    summary = "a tiny majority game on a ring"
    parameters = PARAMETERS
    policies = PolicyCatalog(module=__name__)
    llm = LlmSupport(policy=f"{__name__}:llm_policy", behaviours=__name__)
    tables = (ROUNDS, Table("agents", ("round", "agent"), "each agent's state, every round"))
    state_scale = categorical("a", "b", palette={"a": "#1f77b4", "b": "#ff7f0e"}, label="state")
    measures = {"share_a": share(label="share holding a"), "agreed": share(label="everyone agrees")}
    headline_measure = "agreed"

    def build(self, parameters, policy, seed):
        return TinyVoteModel(policy, seed, **parameters)

    def estimate(self, parameters, endpoint) -> LlmEstimate:
        p = PARAMETERS.validate(parameters, complete=True)
        return LlmEstimate(calls=p["n"] * p["max_rounds"], rounds=p["max_rounds"],
                           prompt_tokens_per_call=60, completion_tokens_per_call=8)


GAME = TinyVote()
