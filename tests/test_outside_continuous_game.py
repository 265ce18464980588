"""An outside game unlike ours, written against the contract before the decision API: a public-goods game
on a ring whose agents contribute 0..10 coins (a continuous, numeric state), with an LLM policy that keys
its own calls by agent and round alone. It sweeps, is analysed and reported, and a three-seed LLM sweep
records and replays exactly with the server down: the core scopes its keys by game, so two seeds never
share an answer even where their prompts are the same.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass

import mesa
import networkx as nx
import pytest
from mesa.discrete_space import FixedAgent

from llm_mesa import (
    Game,
    LlmSupport,
    Parameter,
    ParameterSet,
    Policy,
    PolicyAgent,
    PolicyCatalog,
    continuous,
    network_space,
    play_round,
    register_policy,
    share,
)
from llm_mesa.cli import main
from llm_mesa.llm import LLMRequest, ResponseStore, Usage, ask
from llm_mesa.loopback import Behaviour, PromptNotUnderstood, register_behaviour
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.registry import register_game, unregister_game
from llm_mesa.sweep import read_sweep

NAME = "goods_test"
DOWN = "http://127.0.0.1:9/v1"


@dataclass(frozen=True)
class Seen:
    agent: int
    round: int
    given: int
    neighbours_mean: float


def match_neighbours(obs: Seen) -> int:
    """The rule the stand-in plays too: give what the neighbours gave on average, rounded down."""
    return int(obs.neighbours_mean)


@register_policy("match", NAME, "give what the neighbours gave, on average")
class Match(Policy):
    def decide(self, obs: Seen, rng: random.Random) -> int:
        return match_neighbours(obs)


class OldStyleLLM(Policy):
    """Keys its own calls (agent and round, no game) and calls ``ask``, as games did before ``LLMPolicy``."""

    name, game, is_async = "llm", NAME, True

    def __init__(self, endpoint, store=None):
        self.endpoint, self.store, self.usage = endpoint, store, Usage(NAME)

    async def adecide(self, obs: Seen, rng: random.Random) -> int:
        text = (f"Round {obs.round}. You gave {obs.given} coins. Your neighbours gave "
                f"{obs.neighbours_mean:.2f} on average. How many coins (0-10) do you give now? Answer JSON.")
        request = LLMRequest(messages=[{"role": "user", "content": text}], sample_key=f"agent={obs.agent}|round={obs.round}",
                             schema={"type": "object", "properties": {"give": {"type": "integer", "minimum": 0,
                                                                               "maximum": 10}}, "required": ["give"]},
                             template_hash="goods1")
        answer = await ask(self.endpoint, request, lambda t: int(json.loads(t)["give"]), "Only the JSON.",
                           store=self.store, usage=self.usage)
        return answer.value if answer.ok else obs.given


class MatchBehaviour(Behaviour):
    kind, json_answer = f"{NAME}:match", True

    def answer(self, prompt, rng):
        found = re.search(r"neighbours gave ([0-9.]+) on average", prompt.last_user)
        if found is None:
            raise PromptNotUnderstood("not a goods prompt")
        return {"give": int(float(found.group(1)))}


class Giver(FixedAgent, PolicyAgent):
    def __init__(self, model, cell, index, given, policy):
        super().__init__(model)
        self.cell, self.index, self.state, self.policy = cell, index, given, policy

    def observe(self) -> Seen:
        left, right = (self.model.givers[(self.index + d) % self.model.n].state for d in (-1, 1))
        return Seen(self.index, self.model.round + 1, self.state, (left + right) / 2)

    def advance(self) -> None:
        self.state = self.pending


class Goods(mesa.Model):
    def __init__(self, policy, seed, n, max_rounds):
        super().__init__(rng=seed)
        draw = random.Random(seed)
        self.n, self.max_rounds, self.round = n, max_rounds, 0
        self.network = network_space(nx.cycle_graph(n), draw)
        chosen = policy if isinstance(policy, Policy) else Match()
        # round 1 is the same for every seed wherever the draws agree: the old keys would collide there
        self.givers = [Giver(self, self.network[i], i, 5 if i % 2 else draw.choice((4, 6)), chosen) for i in range(n)]
        self.rng_rounds = draw
        self.datacollector = mesa.DataCollector({
            "mean_given": lambda m: sum(g.state for g in m.givers) / m.n,
            "share_giving": lambda m: sum(g.state > 0 for g in m.givers) / m.n})
        self.datacollector.collect(self)

    def step(self):
        play_round(self.givers, self.rng_rounds)
        self.round += 1
        self.datacollector.collect(self)
        self.running = self.round < self.max_rounds


class GoodsGame(Game):
    name = NAME
    parameters = ParameterSet.of(Parameter("n", int, 8, "givers on the ring", low=3, high=200),
                                 Parameter("max_rounds", int, 4, "round limit", low=1, high=100))
    policies = PolicyCatalog(module=__name__)
    llm = LlmSupport(policy=f"{__name__}:OldStyleLLM")
    state_scale = continuous(0, 10, unit="coins")
    measures = {"mean_given": continuous(0, 10, unit="coins"), "share_giving": share()}

    def build(self, parameters, policy, seed):
        return Goods(policy, seed, parameters["n"], parameters["max_rounds"])


@pytest.fixture(scope="module")
def goods():
    from llm_mesa.loopback import behaviours

    game = register_game(GoodsGame())
    register_behaviour(f"{NAME}:match", lambda params, model: MatchBehaviour())
    yield game
    unregister_game(NAME)
    behaviours._REGISTRY.pop(f"{NAME}:match", None)


def sweep(out, base_url, *extra):
    return main(["sweep", "--game", NAME, "--policies", "llm", "--model", f"{NAME}:match", "--base-url", base_url,
                 "--seeds", "3", "--out", str(out), "--quiet", *extra])


def test_its_three_seed_llm_sweep_records_and_replays_exactly_with_the_server_down(goods, tmp_path):
    with LoopbackServer(seed=1) as server:
        assert sweep(tmp_path / "live", server.base_url) == 0
    live = read_sweep(tmp_path / "live").sort_values("seed").reset_index(drop=True)
    store = ResponseStore(tmp_path / "live" / "calls.sqlite", "replay")
    keys = [row["request"]["sample_key"] for row in store.rows()]
    store.close()
    assert len(keys) == live["calls"].sum() == 3 * 8 * 4 and len(set(keys)) == 8 * 4  # its own keys, as it wrote them
    assert not live["invalid"].any() and (live["failed_decisions"] == 0).all()
    assert sweep(tmp_path / "again", DOWN, "--store", str(tmp_path / "live" / "calls.sqlite"), "--store-mode",
                 "replay") == 0
    again = read_sweep(tmp_path / "again").sort_values("seed").reset_index(drop=True)
    assert (again["replayed_calls"] == again["calls"]).all()
    assert again["mean_given"].tolist() == live["mean_given"].tolist()
    # and the stand-in played the rule's game, seed for seed: each game got its own answers
    assert main(["sweep", "--game", NAME, "--policies", "match", "--seeds", "3", "--out", str(tmp_path / "rules"),
                 "--quiet"]) == 0
    rules = read_sweep(tmp_path / "rules").sort_values("seed").reset_index(drop=True)
    assert rules["mean_given"].tolist() == live["mean_given"].tolist()


def test_it_is_analysed_and_reported(goods, tmp_path, capsys):
    out = tmp_path / "rules"
    assert main(["sweep", "--game", NAME, "--set", "n=6,9", "--policies", "match", "--seeds", "4", "--tables", "rounds",
                 "--out", str(out), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["analyze", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    measures = {row["measure"] for row in report["summaries"]["rows"]}
    assert "mean_given" in measures  # varies: summarised
    assert report["constant"]["share_giving"] == 1.0 and "share_giving" not in measures  # the same in every game: named once
    assert main(["report", str(out), "--out", str(tmp_path / "r.html")]) == 0
    assert "mean_given" in (tmp_path / "r.html").read_text()
