"""The LLM policy of the consensus game, and its command-line set-up.

An ``LLMConsensusPolicy`` is one object shared by every agent that uses it;
its ``adecide`` is a coroutine, so the round runner has all agents' calls in
flight together. A failed call or an unreadable answer (after one reminder)
never crashes the game: the agent keeps its colour and the decision is marked
``failed`` and counted.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from llm_mesa.models.consensus.observation import ConsensusDecision, ConsensusObservation
from llm_mesa.models.consensus.prompt import ConsensusPrompt, answer_schema

from llm_mesa.llm.answers import ask, parse_json_answer
from llm_mesa.llm.client import LLMRequest, preflight
from llm_mesa.llm.endpoint import Endpoint, EndpointError, add_endpoint_arguments, endpoint_from_args
from llm_mesa.llm.recording import add_recording_arguments, recording_from_args, store_from_args
from llm_mesa.llm.store import ResponseStore
from llm_mesa.llm.usage import Usage
from llm_mesa.policy import Policy, register_policy


def decode_answer(text: str, obs: ConsensusObservation) -> ConsensusDecision | None:
    """The decision in an answer, or None when it names no valid colour."""
    data = parse_json_answer(text)
    if not data:
        return None
    colour = str(data.get("colour", data.get("color", ""))).strip().lower()
    if colour not in ("red", "blue"):
        return None
    message = data.get("message")
    message = str(message).strip() if message not in (None, "", "null") else None
    message_to = data.get("message_to")
    try:
        message_to = int(message_to) if message_to not in (None, "", "null") else None
    except (TypeError, ValueError):
        message_to = None
    if obs.communication == "none":
        message, message_to = None, None
    elif not obs.direct_messages:
        message_to = None
    return ConsensusDecision(colour=colour, reason=str(data.get("reason", ""))[:2000], message=message,
                             message_to=message_to, diary=str(data.get("diary", ""))[:4000])


@register_policy("llm", "consensus", "an LLM agent behind any OpenAI-compatible endpoint")
class LLMConsensusPolicy(Policy):
    """Ask an LLM for each decision.

    Args:
        endpoint: where and how to call (or ``base_url``/``model`` and endpoint
            options as keywords, e.g. ``make_policy("llm:base_url=...,model=...")``).
        store: the record/replay store (None, the library's default: calls are not
            recorded; the command line records by default, see ``llm_mesa.llm.recording``).
        usage: a ledger to sum calls and tokens into (one is made if None).
        prompt: the templates (``ConsensusPrompt``).
    """

    is_async = True
    needs_history = True

    def __init__(self, endpoint: Endpoint | None = None, *, store: ResponseStore | None = None,
                 usage: Usage | None = None, prompt: ConsensusPrompt | None = None, **endpoint_options: Any):
        self.endpoint = endpoint or Endpoint.from_url_and_env(
            endpoint_options.pop("base_url", None), endpoint_options.pop("model", None), **endpoint_options)
        self.store = store
        self.usage = usage or Usage("llm")
        self.prompt = prompt or ConsensusPrompt()
        #: (model, system_fingerprint) pairs the server answered with, for manifests
        self.served_by: set[tuple[str | None, str | None]] = set()

    def params(self) -> dict[str, Any]:
        return {"base_url": self.endpoint.base_url, "model": self.endpoint.model}

    def identity(self) -> str:
        return f"llm:model={self.endpoint.model}"

    def request(self, obs: ConsensusObservation) -> LLMRequest:
        key = f"g={obs.game_key}|agent={obs.agent_id}|round={obs.round}"
        schema = answer_schema(obs.communication, obs.direct_messages)
        if self.endpoint.prompt_mode == "completion":
            return LLMRequest(prompt=self.prompt.completion_prompt(obs), schema=None, sample_key=key,
                              template_hash=self.prompt.template_hash, purpose="decide")
        return LLMRequest(messages=self.prompt.messages(obs), schema=schema, sample_key=key,
                          template_hash=self.prompt.template_hash, purpose="decide", schema_name="decision")

    async def adecide(self, obs: ConsensusObservation, rng: random.Random) -> ConsensusDecision:
        answer = await ask(self.endpoint, self.request(obs), lambda text: decode_answer(text, obs),
                           self.prompt.reminder, store=self.store, usage=self.usage)
        for result in (answer.first, answer.retry):
            if result is not None and result.error is None:
                self.served_by.add((result.model, result.system_fingerprint))
        calls = 1 + (answer.retry is not None)
        latency = answer.first.latency_s + (answer.retry.latency_s if answer.retry else 0.0)
        cost = self.endpoint.cost(answer.prompt_tokens, answer.completion_tokens)
        decision = answer.value if answer.ok else ConsensusDecision(obs.colour, failed=answer.outcome)
        decision.calls, decision.prompt_tokens, decision.completion_tokens = calls, answer.prompt_tokens, answer.completion_tokens
        decision.latency_s, decision.cost, decision.outcome = latency, cost, answer.outcome
        decision.raw = answer.text
        return decision


# --- command line ---------------------------------------------------------------------


def add_llm_arguments(parser: argparse.ArgumentParser) -> None:
    """The consensus command's LLM options: the endpoint, recording (the shared options) and spending limits."""
    add_endpoint_arguments(parser)
    add_recording_arguments(parser)
    g = parser.add_argument_group("spending limits")
    g.add_argument("--max-tokens", type=int, help="stop the game cleanly once it has used this many tokens")
    g.add_argument("--max-cost", type=float, help="stop the game cleanly once it has cost this much (needs --price)")


@dataclass
class LLMSetup:
    """What a game with LLM agents holds beside the model: endpoint, store, ledger."""

    policy: LLMConsensusPolicy
    store: ResponseStore | None
    usage: Usage = field(default_factory=lambda: Usage("game"))
    models_seen: set[str] = field(default_factory=set)

    def close(self) -> None:
        if self.store is not None:
            self.store.close()

    def summary_fields(self) -> dict[str, Any]:
        return {"replayed_calls": self.usage.replayed, "model": self.policy.endpoint.model}

    def tables(self, model) -> dict[str, pd.DataFrame]:
        return {"transcript": pd.DataFrame(model.transcript)}

    def manifest(self) -> dict[str, Any]:
        return {
            "endpoint": self.policy.endpoint.manifest(),
            "prompt_template_hash": self.policy.prompt.template_hash,
            "served_by": [{"model": m, "system_fingerprint": f} for m, f in sorted(self.policy.served_by, key=str)],
            "store": None if self.store is None else {"path": str(self.store.path), "mode": self.store.mode},
            "usage": self.usage.as_dict(),
        }


def llm_setup_from_args(args: argparse.Namespace) -> LLMSetup:
    """Endpoint, store and policy from the command line; checks the endpoint first."""
    endpoint = endpoint_from_args(args)
    recording_from_args(args)  # contradictory recording options fail before any call or file
    if args.max_cost is not None and endpoint.price is None:
        raise EndpointError("--max-cost needs --price PROMPT,COMPLETION (per 1M tokens)")
    if not args.replay or args.replay_fill:
        preflight(endpoint)
    store = store_from_args(args)  # the command line records by default (the library only when given a store)
    usage = Usage("game")
    policy = LLMConsensusPolicy(endpoint, store=store, usage=usage)
    return LLMSetup(policy=policy, store=store, usage=usage)
