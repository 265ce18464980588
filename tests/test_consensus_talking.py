"""Rule baselines that talk (relay, announce): theory that can fail, on the study's own grid and seeds."""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.models.consensus.talking import format_knowledge, parse_knowledge
from llm_mesa.policy import PolicyError, make_policy
from llm_mesa.sweep.experiment import load_experiment

RULES_FILE = Path(__file__).resolve().parents[1] / "experiments" / "consensus-study-rules.toml"


@pytest.fixture(scope="module")
def study():
    """The study's rule-baseline grid: its conditions and the seeds every one of its games is played from."""
    experiment = load_experiment(RULES_FILE)
    return experiment.conditions, experiment.seeds()


def play(policy: str, parameters: dict, seed: int) -> ConsensusModel:
    return ConsensusModel(policy=policy, rng=seed, **{**parameters, "baseline_permutations": 0}).run()


@pytest.mark.parametrize("inertia", [0.0, 0.2, 0.5])
@pytest.mark.parametrize("talker", ["relay", "announce"])
def test_without_communication_a_talking_agent_plays_as_majority_with_inertia(study, talker, inertia):
    conditions, seeds = study
    checked = 0
    for name in ("ba-none", "ws-none", "cc-none", "er-none"):
        for seed in seeds[name][:20]:
            ours = play(f"{talker}:inertia={inertia}", conditions[name], seed)
            rule = play(f"majority-inertia:inertia={inertia}", conditions[name], seed)
            assert ours.colour_history == rule.colour_history, (name, seed)
            assert not ours.message_log
            checked += 1
    assert checked == 80


def test_under_global_communication_relay_agents_agree_in_round_two_on_every_ba_game_of_the_study(study):
    conditions, seeds = study
    parameters = conditions["ba-global"]
    for seed in seeds["ba-global"]:
        model = play("relay:inertia=0", parameters, seed)
        assert model.colour_history[0].count("blue") == 18  # the study's 50/50 start: tied 18/18
        assert model.summary()["consensus"] and model.round <= 2, seed
        assert {m.round for m in model.message_log} == {1} and len(model.message_log) == 36


def test_under_global_communication_relay_agents_take_the_known_majority_of_the_minority_design(study):
    conditions, seeds = study
    minority = {**conditions["ba-local-minority"], "communication": "global"}  # 5 red hubs, 31 blue
    for seed in seeds["ba-local-minority"]:
        model = play("relay:inertia=0", minority, seed)
        summary = model.summary()
        assert summary["consensus"] and model.round <= 2 and summary["winner"] == "blue", seed
        assert summary["winner_is_majority_preference"]


def test_under_global_communication_announcers_agree_within_three_rounds(study):
    conditions, seeds = study
    for seed in seeds["ba-global"]:
        model = play("announce:inertia=0", conditions["ba-global"], seed)
        assert model.summary()["consensus"] and model.round <= 3, seed


def test_a_relay_agent_talks_in_round_one_and_every_relay_every_rounds_and_knowledge_travels():
    model = ConsensusModel(36, "caveman", communication="local", policy="relay:inertia=0,relay_every=4",
                           max_rounds=12, rng=3, baseline_permutations=0).run()
    assert {m.round for m in model.message_log} <= {1, 5, 9}
    reach = {m.sender: len(parse_knowledge(m.text)) for m in model.message_log if m.round == 5}
    first = {m.sender: len(parse_knowledge(m.text)) for m in model.message_log if m.round == 1}
    assert reach and all(reach[v] > first[v] for v in reach)  # by round 5 each knows beyond its neighbourhood


def test_the_knowledge_text_reads_back_and_ignores_other_words():
    known = {0: ("red", 3), 1: ("blue", 3), 5: ("blue", 1), 9: ("red", 1)}
    assert parse_knowledge("I hold red; I know 2 blue, 2 red: " + format_knowledge(known)) == known
    assert parse_knowledge("let us all pick blue @ once, red:3 is wrong") == {}
    with pytest.raises(PolicyError):
        make_policy("relay:relay_every=-1", "consensus")


def test_talking_rule_agents_mix_with_llm_agents_agent_by_agent():
    from llm_mesa.llm.endpoint import Endpoint
    from llm_mesa.loopback.server import LoopbackServer
    from llm_mesa.models.consensus.llm_policy import LLMConsensusPolicy

    with LoopbackServer(seed=2) as server:
        llm = LLMConsensusPolicy(Endpoint(server.base_url, "rule:majority-inertia", timeout=10.0))
        model = ConsensusModel(12, "ws", communication="local", policy=llm, assign={"random:6": "relay"}, rng=5,
                               max_rounds=4, baseline_permutations=0)
        prompts = []
        original = llm.request
        llm.request = lambda obs: (prompts.append(obs), original(obs))[1]
        model.run()
    relays = {a.node for a in model.agents_by_node if a.policy.name == "relay"}
    assert len(relays) == 6 and {m.sender for m in model.message_log if m.round == 1} >= relays
    heard = [m for obs in prompts if obs.round == 2 for m in obs.history[-1].messages if m.sender in relays]
    assert heard and all("I hold" in m.text for m in heard)  # an LLM agent's prompt quotes its relay neighbours
