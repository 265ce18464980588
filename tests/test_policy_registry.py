"""One registry of policy names serves every game; names may repeat across games."""

import pytest

from llm_mesa.policy import PolicyError, available_policies, make_policy, parse_policy_spec


def test_specs_parse_into_names_and_typed_parameters():
    assert parse_policy_spec("majority-inertia:inertia=0.3,threshold=0.7") == (
        "majority-inertia", {"inertia": 0.3, "threshold": 0.7})
    with pytest.raises(PolicyError, match="key=value"):
        parse_policy_spec("voter:fast")


def test_a_spec_round_trips():
    policy = make_policy("majority-inertia:inertia=0.3,threshold=0.7", "consensus")
    assert make_policy(policy.spec(), "consensus").params() == policy.params()


def test_each_game_keeps_its_own_llm_policy():
    import llm_mesa.models.naming.speakers  # noqa: F401  registers the naming game's "llm"
    from llm_mesa.models.consensus.llm_policy import LLMConsensusPolicy
    policy = make_policy("llm:base_url=http://127.0.0.1:9/v1,model=m", game="consensus")
    assert isinstance(policy, LLMConsensusPolicy)
    assert "llm" in available_policies("consensus") and "llm" in available_policies("naming")
    assert "echo" in available_policies("naming") and "echo" not in available_policies("consensus")


def test_a_policy_of_another_game_is_refused_by_name():
    with pytest.raises(PolicyError, match="unknown consensus policy 'echo'"):
        make_policy("echo", game="consensus")
