"""The consensus prompt describes the game the agents are really in (players, payoffs)."""

import json

import pytest

from llm_mesa.llm.endpoint import Endpoint
from llm_mesa.llm.store import ResponseStore
from llm_mesa.loopback.server import LoopbackServer
from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.models.consensus.llm_policy import LLMConsensusPolicy


@pytest.fixture(scope="module")
def server():
    with LoopbackServer(seed=1) as s:
        yield s


def recorded_prompts(tmp_path, server, **game) -> list[str]:
    store = ResponseStore(tmp_path / "calls.sqlite", "record")
    policy = LLMConsensusPolicy(Endpoint(server.base_url, "rule:majority-inertia", timeout=5.0), store=store)
    ConsensusModel(policy=policy, topology="ws", max_rounds=1, baseline_permutations=0, rng=2, **game).run()
    rows = store.rows()
    store.close()
    return [json.dumps(row["request"], ensure_ascii=False) for row in rows]


@pytest.mark.parametrize("n, preferred, other", [(20, 0.20, 0.15), (36, 0.20, 0.15), (12, 0.30, 0.05)])
def test_every_recorded_request_states_this_games_players_and_payoffs(tmp_path, server, n, preferred, other):
    prompts = recorded_prompts(tmp_path, server, n=n, payoff_preferred=preferred, payoff_other=other)
    assert len(prompts) == n
    for prompt in prompts:
        assert f"with {n - 1} other players" in prompt
        assert f"£{preferred:.2f} if the whole network ends on your preferred colour" in prompt
        assert f"£{other:.2f} if it ends on the other colour" in prompt
        if n != 36:
            assert "35 other players" not in prompt


def test_a_game_whose_llm_calls_all_fail_says_so_and_exits_3(server, capsys):
    from llm_mesa.cli import main

    status = main(["consensus", "--policy", "llm", "--base-url", server.base_url, "--model", "fixed?text=no+json+here",
                   "--n", "8", "--topology", "ws", "--max-rounds", "2", "--no-record", "--max-attempts", "1"])
    captured = capsys.readouterr()
    assert status == 3
    assert "the game is invalid: 16 of 16 decisions failed" in captured.err
    assert len(captured.err.strip().splitlines()) == 1


def test_the_wording_of_the_rules_is_a_parameter_and_a_sweep_axis(tmp_path, server):
    from llm_mesa.sweep import read_sweep, run_sweep

    prompts = {}
    for variant in ("study", "paraphrase"):
        store = ResponseStore(tmp_path / f"{variant}.sqlite", "record")
        policy = LLMConsensusPolicy(Endpoint(server.base_url, "rule:majority-inertia", timeout=5.0), store=store)
        ConsensusModel(policy=policy, n=12, topology="ws", max_rounds=1, baseline_permutations=0, rng=2,
                       prompt=variant).run()
        prompts[variant] = json.dumps(store.rows()[0]["request"], ensure_ascii=False)
        store.close()
    assert "with 11 other players" in prompts["study"] and "by you and 11 others" in prompts["paraphrase"]
    assert "£0.20 when the entire network ends on the colour you prefer" in prompts["paraphrase"]
    spec = f"llm:base_url={server.base_url},model=rule:majority-inertia"
    result = run_sweep({"ws": {"n": 12, "topology": "ws", "max_rounds": 2, "baseline_permutations": 0}}, spec, 2,
                       tmp_path / "sweep", axes=["prompt=study,paraphrase"], game="consensus")
    games = read_sweep(tmp_path / "sweep")
    assert set(games["condition"]) == {"ws|prompt=study", "ws|prompt=paraphrase"} and result.played == 4
    assert games.groupby("condition")["prompt_template_hash"].nunique().eq(1).all()
    assert games["prompt_template_hash"].nunique() == 2  # each wording recorded by its own hash
    by_condition = games.sort_values("seed").groupby("condition")["seed"].apply(list)
    assert by_condition["ws|prompt=study"] == by_condition["ws|prompt=paraphrase"]  # paired: same seeds


def test_every_wording_the_parameter_offers_has_its_template():
    from llm_mesa.models.consensus.parameters import PARAMETERS, RULES_WORDINGS
    from llm_mesa.models.consensus.prompt_variants import PROMPT_VARIANTS

    assert tuple(PROMPT_VARIANTS) == RULES_WORDINGS == PARAMETERS["prompt"].kind.choices
    assert PARAMETERS["prompt"].control_spec()["values"] == list(RULES_WORDINGS)  # the explorer offers each


def test_the_rules_are_built_once_a_game_and_are_each_games_own():
    """The rules message is cached per game: every agent of a game gets the very same text, which is
    what filling the template for that agent gives, and a game of another size or payoff its own."""
    from dataclasses import replace

    from llm_mesa.models.consensus.prompt import ConsensusPrompt

    prompt = ConsensusPrompt()
    small = ConsensusModel(12, "ba", policy="stubborn", rng=1, max_rounds=7, payoff_preferred=2.5)
    large = ConsensusModel(40, "ba", policy="stubborn", rng=1, max_rounds=7)
    first, second = (prompt.messages(agent.observe())[0]["content"] for agent in list(small.agents)[:2])
    assert first is second
    assert first == prompt._fill_rules(list(small.agents)[0].observe())
    assert "11 other players" in first and "£2.50" in first
    other = prompt.messages(list(large.agents)[0].observe())[0]["content"]
    assert "39 other players" in other and other != first
    reworded = replace(prompt, rules=prompt.rules.replace("colour", "hue"))  # a copy starts its own cache
    assert reworded.messages(list(small.agents)[0].observe())[0]["content"] != first
