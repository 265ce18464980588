"""Structured answers: tolerant JSON parsing, one retry with a reminder, counted outcomes.

Small models wrap JSON in code fences or prose, leave trailing commas, or use
single quotes. ``parse_json_answer`` accepts those; anything it still cannot read
gets exactly one retry with a reminder (a further user message in chat, appended
text for a raw prompt), recorded under its own sample key. Every outcome is
counted, because the share of answers that needed the fallback is a result:

* ``ok``: decoded at once; ``retry_ok``: decoded after the reminder;
* ``truncated``: cut off by the token limit (``finish_reason == "length"``) and
  undecodable, counted apart from bad answers since the cure is a larger limit;
* ``parse_failure``: still undecodable after the reminder (the caller applies
  its documented fallback);
* ``call_failure``: the endpoint failed after all retries.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from llm_mesa.boundary import Malformed, check_tree, loads_json
from llm_mesa.llm.client import complete
from llm_mesa.llm.endpoint import Endpoint
from llm_mesa.llm.store import ResponseStore
from llm_mesa.llm.types import LLMRequest, LLMResult
from llm_mesa.llm.usage import Usage, as_ledgers, call_cost

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def _balanced_objects(text: str) -> Iterable[str]:
    """Each top-level ``{...}`` span in ``text``, braces inside strings ignored."""
    depth, start, quote, escaped = 0, -1, "", False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch == '"' or (ch == "'" and depth > 0 and _opens_single_quoted(text, i)):
            quote = ch
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                yield text[start:i + 1]


def _opens_single_quoted(text: str, i: int) -> bool:
    # A quote after { , : [ or space opens a string; an apostrophe inside a word does not.
    j = i - 1
    while j >= 0 and text[j] in " \t\r\n":
        j -= 1
    return j < 0 or text[j] in "{,:["


def _load_object(candidate: str) -> dict[str, Any] | None:
    attempts = [candidate, _TRAILING_COMMA.sub(r"\1", candidate)]
    for attempt in attempts:
        try:  # within the boundary's bounds: a game's decoder only ever sees finite, shallow, valid text
            value = loads_json(attempt)
        except Malformed:
            continue
        return value if isinstance(value, dict) else None
    # single quotes / Python literals: literal_eval is safe and quote-aware
    pythonic = re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", attempts[1])))
    for attempt in (attempts[1], pythonic):
        try:
            value = ast.literal_eval(attempt)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict) and all(isinstance(k, str) for k in value):
            try:
                json.dumps(value)
                check_tree(value)
            except (TypeError, ValueError):  # Malformed is a ValueError
                return None
            return value
    return None


def parse_json_answer(text: str | None) -> dict[str, Any] | None:
    """The first JSON object in a model's reply, or None.

    Tolerates code fences, prose around the object, trailing commas and single
    quotes (where they are unambiguous). An object outside the boundary's bounds
    (nested deeper than ``MAX_DEPTH``, a number that is not finite such as
    ``1e999``, a lone surrogate) is not an answer: the caller's decoder never sees it.
    """
    if not text:
        return None
    sources = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for source in sources:
        stripped = source.strip()
        if stripped.startswith("{"):
            found = _load_object(stripped)
            if found is not None:
                return found
        for candidate in _balanced_objects(source):
            found = _load_object(candidate)
            if found is not None:
                return found
    return None


@dataclass(slots=True)
class Answer[T]:
    """A decoded answer (or None) and how it was obtained."""

    value: T | None
    #: ok | retry_ok | truncated | parse_failure | call_failure
    outcome: str
    first: LLMResult
    retry: LLMResult | None = None

    @property
    def ok(self) -> bool:
        return self.outcome in ("ok", "retry_ok")

    @property
    def prompt_tokens(self) -> int:
        return self.first.prompt_tokens + (self.retry.prompt_tokens if self.retry else 0)

    @property
    def completion_tokens(self) -> int:
        return self.first.completion_tokens + (self.retry.completion_tokens if self.retry else 0)

    @property
    def cached_tokens(self) -> int:
        return self.first.cached_tokens + (self.retry.cached_tokens if self.retry else 0)

    @property
    def latency_s(self) -> float:
        """Service time of the answer's calls (waits for a concurrency slot apart: ``queue_s``)."""
        return self.first.latency_s + (self.retry.latency_s if self.retry else 0.0)

    @property
    def queue_s(self) -> float:
        return self.first.queue_s + (self.retry.queue_s if self.retry else 0.0)

    def cost(self, endpoint: Endpoint) -> float:
        """What the answer's calls cost at ``endpoint``'s price, priced as the usage ledger prices them."""
        return sum(call_cost(result, endpoint) for result in (self.first, self.retry) if result is not None)

    @property
    def text(self) -> str:
        """The text that was decoded (or the last one received)."""
        return (self.retry or self.first).text


def _safe_decode[T](decode: Callable[[str], T | None], text: str) -> T | None:
    """A game's decoder on a reply: whatever it cannot make of the reply is no answer, never a crash."""
    try:
        return decode(text)
    except (ValueError, KeyError, TypeError, AttributeError, ArithmeticError, RecursionError):
        return None


async def ask[T](endpoint: Endpoint, request: LLMRequest, decode: Callable[[str], T | None], reminder: str, *,
              store: ResponseStore | None = None, usage: Usage | Iterable[Usage] | None = None,
              retry_truncated: bool = False) -> Answer[T]:
    """Call, decode, and on an undecodable reply retry once with ``reminder``.

    A reply cut off by the token limit is final ("truncated") unless
    ``retry_truncated`` (a reminder rarely makes a reply shorter than the limit).
    """
    ledgers = as_ledgers(usage)
    first = await complete(endpoint, request, store=store, usage=ledgers)
    retry: LLMResult | None = None
    value: T | None = None
    if first.error is not None:
        outcome = "call_failure"
    elif (value := _safe_decode(decode, first.text)) is not None:
        outcome = "ok"
    elif first.finish_reason == "length" and not retry_truncated:
        outcome = "truncated"
    else:
        retry = await complete(endpoint, request.with_reminder(reminder), store=store, usage=ledgers)
        if retry.error is not None:
            outcome = "call_failure"
        elif (value := _safe_decode(decode, retry.text)) is not None:
            outcome = "retry_ok"
        elif retry.finish_reason == "length":
            outcome = "truncated"
        else:
            outcome = "parse_failure"
    for ledger in ledgers:
        ledger.add_outcome(outcome)
    return Answer(value, outcome, first, retry)
