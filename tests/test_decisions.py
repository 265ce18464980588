"""The core owns LLM decisions: keys, records, counts and the invalid verdict, for any game.

The doc's own game (tinyvote, installed by conftest from docs/write-a-game.md) asks for its
decisions through ``LLMPolicy``/``Question``; a game of the test's own asks through ``ask`` with keys
of its own (the contract before the decision API) and must keep working, counted and judged.
"""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass

import mesa
import pytest

from llm_mesa import Game, LLMPolicy, Parameter, ParameterSet, Policy, PolicyAgent, Question, play, play_round
from llm_mesa.cli import main
from llm_mesa.decisions import DecisionError, bind_game, decide, decision_fields, judge, ledger_of, round_of, sample_key
from llm_mesa.llm import Endpoint, LLMRequest, ResponseStore, Usage, ask
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.registry import get_game, register_game, unregister_game
from llm_mesa.sweep import read_sweep

DOC_GAME = "tinyvote"
DOWN = "http://127.0.0.1:9/v1"  # nothing listens there: a replay that called would fail


def cli(capsys, *argv) -> tuple[int, str, str]:
    status = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def sweep(capsys, out, base_url, *extra) -> tuple[int, str, str]:
    return cli(capsys, "sweep", "--game", DOC_GAME, "--set", "n=6", "--set", "max_rounds=4", "--policies", "llm",
               "--model", f"{DOC_GAME}:follow", "--base-url", base_url, "--seeds", 3, "--out", out, "--quiet", *extra)


def test_the_doc_game_records_a_three_seed_llm_sweep_and_replays_it_with_no_call(capsys, tmp_path):
    out = tmp_path / "llm"
    with LoopbackServer(seed=1) as server:
        status, _, err = sweep(capsys, out, server.base_url)
        assert status == 0, err
        answered = server.stats()["answered"]
    live = read_sweep(out).sort_values("seed").reset_index(drop=True)
    assert len(live) == 3 and (live["calls"] > 0).all() and answered >= live["calls"].sum()
    assert not live["invalid"].any() and (live["failed_decisions"] == 0).all()
    assert (live["decisions"] == live["calls"]).all()  # one call a decision: the stand-in answers at once
    store = ResponseStore(out / "calls.sqlite", "replay")
    keys = [row["request"]["sample_key"] for row in store.rows()]
    store.close()
    assert len(keys) == len(set(keys)) == live["calls"].sum()  # no two decisions of the sweep share an answer
    assert len({k.split("|")[0] for k in keys}) == 3  # each seed is its own game in the key
    # the stand-in answers as `follow` would: the LLM games are the rule games, seed for seed
    rules = tmp_path / "rules"
    assert cli(capsys, "sweep", "--game", DOC_GAME, "--set", "n=6", "--set", "max_rounds=4", "--policies",
               "follow", "--seeds", 3, "--out", rules, "--quiet")[0] == 0
    ruled = read_sweep(rules).sort_values("seed").reset_index(drop=True)
    assert live["share_a"].tolist() == ruled["share_a"].tolist() and live["rounds"].tolist() == ruled["rounds"].tolist()
    # the same sweep replayed into a new output with the server gone: every answer from the store, none sent
    again = tmp_path / "again"
    status, _, err = sweep(capsys, again, DOWN, "--store", out / "calls.sqlite", "--store-mode", "replay")
    assert status == 0, err
    replayed = read_sweep(again).sort_values("seed").reset_index(drop=True)
    assert (replayed["replayed_calls"] == replayed["calls"]).all()
    assert replayed["share_a"].tolist() == live["share_a"].tolist()


def test_a_game_whose_every_answer_is_malformed_is_invalid_exit_3(capsys, tmp_path):
    """The pre-flight is answered soundly (any text); every game answer decodes to nothing."""
    with LoopbackServer(seed=1) as server:
        status, out, err = cli(capsys, DOC_GAME, "--policy", "llm", "--base-url", server.base_url,
                               "--model", "fixed?text=nothing%20useful", "--n", 5, "--max-rounds", 3,
                               "--no-record", "--json")
    assert status == 3, err
    row = json.loads(out)
    assert row["invalid"] is True and row["failed_decisions"] == row["decisions"] == 5 * row["rounds"]
    assert len(err.strip().splitlines()) == 1 and f"{row['decisions']} of {row['decisions']} LLM decisions failed" in err


def test_the_sweep_marks_the_row_of_an_invalid_game(capsys, tmp_path):
    with LoopbackServer(seed=1) as server:
        cli(capsys, "sweep", "--game", DOC_GAME, "--set", "n=5", "--set", "max_rounds=2", "--policies", "llm",
            "--model", "fixed?text=nothing", "--base-url", server.base_url, "--seeds", 2, "--out", tmp_path / "s",
            "--quiet")
    games = read_sweep(tmp_path / "s")
    assert len(games) == 2 and games["invalid"].all() and (games["failed_decisions"] == games["decisions"]).all()


# --- a game of the test's own, written against the contract before the decision API --------------

@dataclass(frozen=True)
class Seen:
    agent: int
    round: int
    value: int


class OwnKeys(Policy):
    """An LLM policy that composes its own sample keys and calls ``ask`` (the older way)."""

    name, game, is_async = "llm", "legacy_counts", True

    def __init__(self, endpoint, store=None):
        self.endpoint, self.store, self.usage = endpoint, store, Usage("legacy")

    async def adecide(self, obs: Seen, rng: random.Random) -> int:
        request = LLMRequest(messages=[{"role": "user", "content": f"Say a number. You hold {obs.value}."}],
                             sample_key=f"legacy|agent={obs.agent}|round={obs.round}", template_hash="legacy1")
        answer = await ask(self.endpoint, request, lambda text: int(text) if text.strip().isdigit() else None,
                           "Only digits.", store=self.store, usage=self.usage)
        return answer.value if answer.ok else obs.value


class Holder(PolicyAgent):
    def __init__(self, model, policy):
        super().__init__(model)
        self.policy, self.value = policy, 0

    def observe(self) -> Seen:
        return Seen(self.unique_id, round_of(self.model), self.value)

    def advance(self) -> None:
        self.value = self.pending


class Count(Policy):
    name, game = "count", "legacy_counts"

    def decide(self, obs: Seen, rng: random.Random) -> int:
        return obs.value + 1


class Numbers(mesa.Model):
    def __init__(self, policy, seed, n, rounds):
        super().__init__(rng=seed)
        self.rounds = rounds
        self.holders = [Holder(self, policy if isinstance(policy, Policy) else Count()) for _ in range(n)]
        self.datacollector = mesa.DataCollector({"total": lambda m: sum(h.value for h in m.holders)})
        self.datacollector.collect(self)

    def step(self):
        play_round(self.holders, self.random)
        self.datacollector.collect(self)
        self.running = round_of(self) < self.rounds


class LegacyCounts(Game):
    name = "legacy_counts"
    parameters = ParameterSet.of(Parameter("n", int, 3, "holders", low=1, high=50),
                                 Parameter("rounds", int, 2, "rounds", low=1, high=20))

    def build(self, parameters, policy, seed):
        return Numbers(policy, seed, parameters["n"], parameters["rounds"])

    def llm_policy(self, endpoint, store=None):
        return OwnKeys(endpoint, store)


@pytest.fixture
def legacy():
    game = register_game(LegacyCounts())
    yield game
    unregister_game(game.name)


def play_legacy(game, base_url, model, store=None):
    from llm_mesa.games import PlayRequest

    endpoint = Endpoint(base_url=base_url, model=model)
    return play.play(game, PlayRequest({"n": 4, "rounds": 3}, "llm", 1, (), endpoint, store))


def test_a_game_that_keys_its_own_calls_is_counted_and_judged_from_its_usage(legacy, tmp_path):
    with LoopbackServer(seed=1) as server:
        good = play_legacy(legacy, server.base_url, "fixed?text=7").row
        bad = play_legacy(legacy, server.base_url, "fixed?text=seven").row
    assert good["decisions"] == 12 and good["failed_decisions"] == 0 and good["invalid"] is False
    assert bad["decisions"] == 12 and bad["failed_decisions"] == 12 and bad["invalid"] is True


def test_its_own_keys_are_honoured_in_the_record(legacy, tmp_path):
    store = ResponseStore(tmp_path / "calls.sqlite", "record")
    with LoopbackServer(seed=1) as server:
        play_legacy(legacy, server.base_url, "fixed?text=7", store)
    keys = {row["request"]["sample_key"] for row in store.rows()}
    store.close()
    assert keys == {f"legacy|agent={a}|round={r}" for a in range(1, 5) for r in range(1, 4)}


# --- the API's own promises ---------------------------------------------------------------------

class Ask(LLMPolicy):
    game = "legacy_counts"

    def question(self, obs: Seen) -> Question:
        return Question(lambda text: int(text) if text.strip().isdigit() else None,
                        messages=[{"role": "user", "content": "Say a number."}], template_hash="q1")

    def failed(self, obs: Seen) -> int:
        return -1


def test_keys_carry_the_game_the_agent_and_the_round_and_differ_across_games():
    with LoopbackServer(seed=1) as server:
        endpoint = Endpoint(base_url=server.base_url, model="fixed?text=3")
        keys = []
        for seed in (1, 2):
            model = Numbers(Ask(endpoint), seed, 3, 2)
            bind_game(model, f"game{seed}")
            while model.running:
                model.step()
            assert [h.value for h in model.holders] == [3, 3, 3]
            assert ledger_of(model).fields() == {"decisions": 6, "failed_decisions": 0}
            from llm_mesa.decisions import Turn

            keys += [sample_key(Turn(h)) for h in model.holders]
    assert keys[0] == "g=game1|agent=1|round=2" and len(set(keys)) == 6


def test_a_failed_decision_becomes_the_policys_failed_value_and_is_counted():
    with LoopbackServer(seed=1) as server:
        model = Numbers(Ask(Endpoint(base_url=server.base_url, model="fixed?text=three")), 1, 2, 1)
        model.step()
    assert [h.value for h in model.holders] == [-1, -1]
    assert decision_fields(model) == {"decisions": 2, "failed_decisions": 2}


def test_a_decision_with_no_agent_is_refused_in_one_line():
    question = Question(lambda text: text, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(DecisionError, match="deciding"):
        asyncio.run(decide(question, endpoint=Endpoint(base_url=DOWN, model="m")))


@pytest.mark.parametrize(("decisions", "failed", "given", "share", "invalid"), [
    (10, 1, False, 0.1, False),   # at the share: allowed
    (10, 2, False, 0.1, True),    # above it
    (0, 0, False, 0.1, False),    # a rule game
    (10, 0, True, 0.1, True),     # the game said so itself: honoured
    (4, 4, False, 1.0, False),    # a game that allows every decision to fail
])
def test_the_verdict(decisions, failed, given, share, invalid):
    assert judge({"decisions": decisions, "failed_decisions": failed, "invalid": given}, share)["invalid"] is invalid


def test_every_registered_game_declares_an_allowed_share_within_0_and_1():
    from llm_mesa.registry import game_names

    for name in game_names():
        game = get_game(name)
        share = play.failure_share(game, game.parameters.defaults())
        assert 0 <= share <= 1, name
