"""Prompt variants change nothing that was recorded before them: the default wording's text, template hash and
call keys are what they were, so a recording made before replays after, with zero calls.

``tests/data/prompt_before`` was made with the code as it was before variants became an axis: the prompts
``prompt_observations`` renders, and two stand-in games recorded (consensus with messages, naming in Schema mode).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from prompt_observations import consensus_observations, naming_observations

from llm_mesa.llm.endpoint import Endpoint
from llm_mesa.llm.store import ResponseStore
from llm_mesa.models.consensus import ConsensusModel
from llm_mesa.models.consensus.llm_policy import LLMConsensusPolicy
from llm_mesa.models.naming.llm_speaker import LLMSpeaker, sign_endpoint
from llm_mesa.models.naming.model import NamingModel

BEFORE = Path(__file__).parent / "data" / "prompt_before"
RENDERED = json.loads((BEFORE / "rendered.json").read_text())
PLAYED = json.loads((BEFORE / "played.json").read_text())
#: nothing listens here: a strict replay that tried to call would fail its game
NOWHERE = "http://127.0.0.1:9/v1"


def _consensus_prompt(name: str):
    from llm_mesa.models.consensus import prompt

    variants = getattr(prompt, "PROMPT_VARIANTS", None)
    if variants is None:  # the variants moved beside the templates
        from llm_mesa.models.consensus.prompt_variants import PROMPT_VARIANTS as variants
    return variants[name]


@pytest.mark.parametrize("variant", ["study", "paraphrase"])
def test_the_consensus_wordings_render_byte_for_byte_as_before(variant):
    prompt = _consensus_prompt(variant)
    for obs, before in zip(consensus_observations(), RENDERED["consensus"][variant], strict=True):
        assert prompt.messages(obs) == before["messages"]
        assert prompt.completion_prompt(obs) == before["completion"]
        assert prompt.reminder == before["reminder"]
        assert prompt.template_hash_for(obs.update) == before["template_hash"]


def test_the_consensus_rules_folded_into_the_user_message_are_as_before():
    from dataclasses import replace

    prompt = replace(_consensus_prompt("study"), system_role=False)
    assert [prompt.messages(obs) for obs in consensus_observations()] == RENDERED["consensus_system_role_false"]


def test_the_naming_prompt_renders_byte_for_byte_as_before():
    from llm_mesa.models.naming import llm_speaker

    speaker = llm_speaker.LLMSpeaker(sign_endpoint(NOWHERE, "m"))
    for obs, before in zip(naming_observations(), RENDERED["naming"]["study"], strict=True):
        request = speaker.request(obs)
        assert request.prompt == before["prompt"] and request.template_hash == before["template_hash"]
        assert llm_speaker.retry_suffix() == before["retry"]


def test_a_consensus_recording_made_before_replays_with_zero_calls(tmp_path):
    shutil.copy(BEFORE / "consensus.sqlite", tmp_path / "calls.sqlite")
    store = ResponseStore(tmp_path / "calls.sqlite", "replay")
    policy = LLMConsensusPolicy(Endpoint(NOWHERE, "rule:majority-inertia?talk=0.5", timeout=5.0), store=store)
    model = ConsensusModel(n=6, topology="ws", communication="local", direct_messages=True, max_rounds=3,
                           baseline_permutations=0, rng=4, policy=policy)
    model.run()
    store.close()
    assert policy.usage.calls == policy.usage.replayed == PLAYED["consensus"]["calls"]  # every call replayed
    assert not policy.usage.failures
    assert [a.colour for a in model.agents_by_node] == PLAYED["consensus"]["colours"]
    assert model.round == PLAYED["consensus"]["rounds"]


def test_a_naming_recording_made_before_replays_with_zero_calls(tmp_path):
    shutil.copy(BEFORE / "naming.sqlite", tmp_path / "calls.sqlite")
    store = ResponseStore(tmp_path / "calls.sqlite", "replay")
    speaker = LLMSpeaker(sign_endpoint(NOWHERE, "naming:noisy?p=0.5"), store=store)
    model = NamingModel(n=4, mode="schema", memory=5, speaker=speaker, rng=3, max_rounds=3).run()
    store.close()
    assert speaker.usage.calls == speaker.usage.replayed == PLAYED["naming"]["calls"]
    assert not speaker.usage.failures
    assert [a.name for a in model.players] == PLAYED["naming"]["names"]
    assert list(model.rounds_frame()["agreement"]) == PLAYED["naming"]["agreement"]
