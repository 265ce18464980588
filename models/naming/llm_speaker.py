"""The LLM speaker: the authors' raw prompt, sent through the project's transport.

Defaults follow the study: raw completion (no chat template), max_new_tokens 32,
temperature 0.7, top-p 0.9, repetition penalty 1.1 (sent in the body as
``repetition_penalty``, which vLLM reads; llama.cpp's server calls it
``repeat_penalty``: override ``extra_body`` there). Decoding is unconstrained (no
grammar), since a grammar that forces the line would void what the study measures.

Schema mode: ``ask`` decodes the reply with the schema parser and, when it fails
(truncated replies included, as the study retries every mismatch), retries once with
the reminder ``Follow EXACTLY one line: @say {name: Ck}`` on a line of its own (ending in a
newline, so the reply starts a fresh line); a reply still unparsed is
salvaged by free-text decoding (retry reply first), else None. NL modes: one call,
free-text decoding. A failed call leaves the utterance undecoded (None) and is counted
in ``failures``; it never stops the game.
"""

from __future__ import annotations

import random
from typing import Any

from llm_mesa.llm.answers import ask
from llm_mesa.llm.client import LLMRequest, complete
from llm_mesa.llm.dialects import endpoint_manifest
from llm_mesa.llm.endpoint import Endpoint
from llm_mesa.llm.store import ResponseStore
from llm_mesa.llm.usage import Usage
from llm_mesa.policy import Policy, PolicyError, register_policy

from .decoding import decode_free_text, decode_schema, salvage
from .observation import NamingObservation, Utterance, is_schema_mode
from .prompts import build_prompt, retry_suffix, template_of

#: the study's sampling parameters
SIGN_SAMPLING: dict[str, Any] = {"max_tokens": 32, "temperature": 0.7, "top_p": 0.9,
                                 "extra_body": {"repetition_penalty": 1.1}}


def sign_endpoint(base_url: str, model: str, **overrides: Any) -> Endpoint:
    """An ``Endpoint`` with the study's defaults: raw completion and its sampling parameters."""
    options: dict[str, Any] = {"prompt_mode": "completion", **SIGN_SAMPLING}
    options.update(overrides)
    return Endpoint(base_url=base_url, model=model, **options)


@register_policy("llm", "naming", "an LLM speaker (the authors' raw prompt); needs an endpoint")
class LLMSpeaker(Policy):
    """Asks an LLM endpoint to say the agent's name, as the study did.

    ``store`` is where calls are recorded or replayed from. The library's default is
    explicit: without a store (``store=None``) nothing is recorded, so a script never
    writes a file it did not ask for; pass ``store=ResponseStore(path)`` to record. The
    command line's default is to record (to ``llm-mesa-calls.sqlite``, or ``--record
    FILE``; ``--no-record`` to not), see ``llm_mesa.llm.recording``.
    """

    game = "naming"
    is_async = True

    def __init__(self, endpoint: Endpoint | None = None, store: ResponseStore | None = None,
                 usage: Usage | None = None, base_url: str | None = None, model: str | None = None):
        if endpoint is None:
            if not (base_url and model):
                raise PolicyError("the llm speaker needs an endpoint: pass --base-url URL --model NAME "
                                  "(or llm:base_url=...,model=...)")
            endpoint = sign_endpoint(base_url, model)
        self.endpoint = endpoint
        self.store = store
        self.usage = usage if usage is not None else Usage("naming")

    def params(self) -> dict[str, Any]:
        return {"model": self.endpoint.model}

    def manifest(self) -> dict[str, Any]:
        # the prompt is the game's (its ``prompt`` parameter): the game's manifest names it and its hash
        return {"spec": self.spec(), "endpoint": endpoint_manifest(self.endpoint),
                "store": None if self.store is None else self.store.manifest()}

    def request(self, observation: NamingObservation) -> LLMRequest:
        template = template_of(observation)
        prompt = build_prompt(observation, template)
        return LLMRequest(
            prompt=prompt, messages=[{"role": "user", "content": prompt}],
            sample_key=f"{observation.game_key}|agent={observation.agent_id}|round={observation.round}",
            template_hash=template.hash, purpose="speak")

    def decide(self, observation: NamingObservation, rng: random.Random) -> Utterance:
        from llm_mesa.llm.runtime import run_sync
        return run_sync(self.adecide(observation, rng))

    async def adecide(self, observation: NamingObservation, rng: random.Random) -> Utterance:
        size = len(observation.lexicon)
        request = self.request(observation)
        if not is_schema_mode(observation.mode):
            result = await complete(self.endpoint, request, store=self.store, usage=self.usage)
            name = decode_free_text(result.text, size) if result.ok else None
            return Utterance(name, "text" if name else "none", [result.text], calls=1,
                             prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens,
                             failures=0 if result.ok else 1)
        answer = await ask(self.endpoint, request, lambda text: decode_schema(text, size), retry_suffix(observation),
                           store=self.store, usage=self.usage, retry_truncated=True)
        results = [answer.first] + ([answer.retry] if answer.retry is not None else [])
        replies = [r.text for r in results]
        failures = sum(1 for r in results if not r.ok)
        if answer.outcome in ("ok", "retry_ok"):
            name, outcome = answer.value, ("schema" if answer.outcome == "ok" else "retry")
        else:
            name = salvage([r.text for r in results if r.ok], size)
            outcome = "salvage" if name else "none"
        return Utterance(name, outcome, replies, calls=len(results), prompt_tokens=answer.prompt_tokens,
                         completion_tokens=answer.completion_tokens, failures=failures)


def game_policy(endpoint: Any, store: Any = None) -> LLMSpeaker:
    """The game contract's LLM policy factory (``NamingGame.llm.policy``)."""
    return LLMSpeaker(endpoint, store=store)
