"""The LLM policy of the consensus game (its command-line set-up is ``llm_options``).

An ``LLMConsensusPolicy`` is one object shared by every agent that uses it;
its ``adecide`` is a coroutine, so the round runner has all agents' calls in
flight together. A failed call or an unreadable answer (after one reminder)
never crashes the game: the agent keeps its colour and the decision is marked
``failed`` and counted.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping
from typing import Any

from llm_mesa.decisions import Question
from llm_mesa.llm.answers import ask, parse_json_answer
from llm_mesa.llm.client import LLMRequest
from llm_mesa.llm.endpoint import Endpoint
from llm_mesa.llm.store import ResponseStore
from llm_mesa.llm.usage import Usage
from llm_mesa.policy import Policy, register_policy
from llm_mesa.update import turn_key

from .observation import ConsensusDecision, ConsensusObservation
from .prompt import FIELD_TEXT, ConsensusPrompt, answer_schema
from .prompt_variants import consensus_prompt

#: answers a small model gives for "no message" or copies from a template: not a message
_PLACEHOLDERS = frozenset({"null", "none", "n/a", "na", "nil", "no", "no message", "nothing", "empty", "message"})
_FILLER = set(".…-_*?!,;:'\"()[]{}<> \t\n")
_WORD = re.compile(r"[a-z0-9']+")
#: each field's description as words, once (``is_placeholder`` reads them for every row)
_DESCRIBED = {name: _WORD.findall(text.lower()) for name, text in FIELD_TEXT.items()}


def is_placeholder(text: object, field: str | None = None) -> bool:
    """True for an empty or placeholder-like field ("...", "", "null", "n/a"), or, given its
    ``field``, one that is its bare key name ("reason") or nothing but words in a row of
    its description in ``FIELD_TEXT`` ("why" under "why, in a few words of your own"): no
    content of its own. Digits count as words, so "to 2" copies nothing.

    The game decodes messages without ``field`` (a real message, "the others", may be
    made of the description's words); the placeholder share, a measurement, passes it.
    """
    if text is None or isinstance(text, bool) or (isinstance(text, float) and text != text):
        return True  # NaN: an empty cell read back from a table
    value = str(text).strip()
    if not value or set(value) <= _FILLER or value.lower().strip(".") in _PLACEHOLDERS:
        return True
    if field not in _DESCRIBED:
        return False
    words = _WORD.findall(value.lower())
    return words == [field] or _is_run_of(words, _DESCRIBED[field])


def _is_run_of(words: list[str], described: list[str]) -> bool:
    n = len(words)
    return n > 0 and any(described[i:i + n] == words for i in range(len(described) - n + 1))


def _is_message(value: object) -> bool:
    return isinstance(value, str) and not is_placeholder(value)  # None, or NaN from a table: none


def placeholder_share(answers: Iterable[Mapping[str, Any]]) -> float:
    """Share of decoded answers (transcript rows) with a placeholder or empty field of their
    form: the diary, a move's reason, and a message that copies its description (a
    placeholder message decodes to no message at all)."""
    rows = list(answers)
    return sum(map(_has_placeholder, rows)) / max(1, len(rows))


def _has_placeholder(row: Mapping[str, Any]) -> bool:
    # a move's reason counts, with or without a message (message_replaces_move=False); a
    # message form has none (decoded as "")
    sent = _is_message(row["message"])
    is_move = not sent or bool(row["reason"])
    return (is_placeholder(row["diary"], "diary") or (is_move and is_placeholder(row["reason"], "reason"))
            or (sent and is_placeholder(row["message"], "message")))


def decode_answer(text: str, obs: ConsensusObservation) -> ConsensusDecision | None:
    """The decision in an answer, or None when it decides nothing.

    An answer is a move (a valid colour) or, where communication is on, a message:
    where a message replaces the move (the study) a message alone keeps the current
    colour. A placeholder message ("...", "null") is no message.
    """
    data = parse_json_answer(text)
    if not data:
        return None
    message = data.get("message")
    message = None if is_placeholder(message) or obs.communication == "none" else str(message).strip()
    message_to = _node_id(data.get("message_to")) if message is not None and obs.direct_messages else None
    colour = str(data.get("colour", data.get("color", ""))).strip().lower()
    if colour not in ("red", "blue"):
        if message is None or not obs.message_replaces_move:
            return None
        colour = obs.colour  # a message instead of a move
    return ConsensusDecision(colour=colour, reason=str(data.get("reason", ""))[:2000], message=message,
                             message_to=message_to, diary=str(data.get("diary", ""))[:4000])


#: node ids are below the game's largest N (10^7): anything else addresses no one
_MAX_NODE_ID = 10**7


def _node_id(value: object) -> int | None:
    """A node id an answer names (a whole number, or one written as text), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        value = value.strip()
        if not value.isdigit() or len(value) > 8:
            return None
        value = int(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and 0 <= value < _MAX_NODE_ID else None


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
    #: a cut answer gets the one reminder (where a schema bounds its text; see ``adecide``)
    retry_cut_answers = True

    def __init__(self, endpoint: Endpoint | None = None, *, store: ResponseStore | None = None,
                 usage: Usage | None = None, prompt: ConsensusPrompt | None = None, **endpoint_options: Any):
        self.endpoint = endpoint or Endpoint.from_url_and_env(
            endpoint_options.pop("base_url", None), endpoint_options.pop("model", None), **endpoint_options)
        self.store = store
        self.usage = usage or Usage("llm")
        self._prompt = prompt  # None: the wording the game names (its ``prompt`` parameter)
        #: (model, system_fingerprint) pairs the server answered with, for manifests
        self.served_by: set[tuple[str | None, str | None]] = set()

    def prompt_for(self, variant: str) -> ConsensusPrompt:
        """The templates for a game's wording (a variant or a template file: ``prompt_variants``), unless the
        policy was given its own."""
        return self._prompt or consensus_prompt(variant)

    @property
    def prompt(self) -> ConsensusPrompt:
        """The templates of the study's wording (or the policy's own)."""
        return self.prompt_for("study")

    def params(self) -> dict[str, Any]:
        return {"base_url": self.endpoint.base_url, "model": self.endpoint.model}

    def identity(self) -> str:
        return f"llm:model={self.endpoint.model}"

    def request(self, obs: ConsensusObservation) -> LLMRequest:
        key = turn_key(obs.game_key, obs.agent_id, obs.round, obs.activation)
        # max_completion_tokens also covers a reasoning model's thinking: no budget for text
        budget = self.endpoint.max_tokens
        schema = answer_schema(obs.communication, obs.direct_messages, obs.message_replaces_move, budget)
        prompt = self.prompt_for(obs.prompt)
        template_hash = prompt.template_hash_for(obs.update)
        if self.endpoint.prompt_mode == "completion":
            return LLMRequest(prompt=prompt.completion_prompt(obs), schema=None, sample_key=key,
                              template_hash=template_hash, purpose="decide")
        return LLMRequest(messages=prompt.messages(obs), schema=schema, sample_key=key,
                          template_hash=template_hash, purpose="decide", schema_name="decision")

    async def adecide(self, obs: ConsensusObservation, rng: random.Random) -> ConsensusDecision:
        # A cut answer gets the reminder too where a schema bounds its free text to the budget
        # (``text_chars``): a cut is then a draw that wandered into digits ("2:blue, 5:red, 8:"),
        # and a fresh draw fits (Gemma 3 270M: 3-6% of answers cut, at 48 tokens). Without a
        # schema (completion mode) nothing bounds it, and the reminder would be cut again.
        request = self.request(obs)
        answer = await ask(self.endpoint, request, lambda text: decode_answer(text, obs),
                           self.prompt_for(obs.prompt).reminder, store=self.store, usage=self.usage,
                           retry_truncated=self.retry_cut_answers and request.schema is not None)
        for result in (answer.first, answer.retry):
            if result is not None and result.error is None:
                self.served_by.add((result.model, result.system_fingerprint))
        calls = 1 + (answer.retry is not None)
        cost = answer.cost(self.endpoint)
        decision = answer.value if answer.ok else ConsensusDecision(obs.colour, failed=answer.outcome)
        decision.calls, decision.prompt_tokens, decision.completion_tokens = calls, answer.prompt_tokens, answer.completion_tokens
        decision.latency_s, decision.queue_s, decision.cached_tokens = answer.latency_s, answer.queue_s, answer.cached_tokens
        decision.server = (answer.retry or answer.first).server
        decision.cost, decision.outcome = cost, answer.outcome
        decision.raw = answer.text
        return decision


    # --- a person in this agent's place (llm-mesa lab): the seam of ``llm_mesa.LLMPolicy`` ----------------
    def question(self, obs: ConsensusObservation) -> Question:
        """What the agent is asked (the request ``adecide`` sends, under its key), for a seat to put to a person."""
        request = self.request(obs)
        return Question(lambda text: decode_answer(text, obs), messages=request.messages, prompt=request.prompt,
                        schema=request.schema, reminder=self.prompt_for(obs.prompt).reminder,
                        template_hash=request.template_hash, schema_name=request.schema_name,
                        sample_key=request.sample_key)

    def failed(self, obs: ConsensusObservation) -> ConsensusDecision:
        """The game's default action: the agent keeps its colour (and its diary), and says nothing."""
        return ConsensusDecision(obs.colour)

    def facts(self, obs: ConsensusObservation):
        """What a person in this agent's place reads: the prompt's facts, as a page (``seat_facts``)."""
        from .seat_facts import consensus_facts

        return consensus_facts(obs, self.prompt_for(obs.prompt))


def game_policy(endpoint: Any, store: Any = None) -> LLMConsensusPolicy:
    """The game contract's LLM policy factory (``ConsensusGame.llm.policy``)."""
    return LLMConsensusPolicy(endpoint, store=store)
