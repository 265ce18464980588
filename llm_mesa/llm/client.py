"""One call to an OpenAI-compatible endpoint: retries, dialects, recording, usage, preflight.

``complete(endpoint, request)`` never raises for a failed call: after retries it
returns an ``LLMResult`` whose ``error`` names the kind of failure, so a game of
36 agents is not lost to one bad answer and every failure is counted.

Design choices, and why:

* Ours is the only retry layer (exponential backoff with full jitter,
  honouring ``Retry-After``): the SDK's clients are built with
  ``max_retries=0``, so attempts are never multiplied. Rate limits, server
  errors, timeouts and dropped connections are retried; client errors and
  refusals of a forced dialect are not.
* How an attempt reaches the server (the SDK's transport without its
  per-request pipeline, or ``client.post``) and what its status means is
  ``transport``'s business; this module decides what to send and whether to
  try again.
* One limit per server (base URL) bounds calls in flight, whatever endpoints
  call it: the smallest ``concurrency`` given for it, or under ``auto`` what the
  limit learns from each attempt's outcome (see ``limits``; ``_send`` tells it).
  A call holds its place while it backs off, which is what a rate-limited
  server wants.
* Structured output goes through ``dialects``: the dialect is chosen once a
  call has its place, and a refusal switches it at once, never counted as a
  fault.
* With a ``ResponseStore`` a call is replayed when recorded (read in a worker
  thread, off the loop) and recorded when made. What a rerun does with a
  recorded failure depends on what failed: an answer that arrived but is
  malformed (``wire``: not JSON, too deep, a lone surrogate, absurd usage, too
  large) or refused for what it asked (``bad_request``) is the server's answer
  to this request and replays, so a rerun never calls for it again
  (``ANSWER_FAILURES``); a failure of the service (refused, reset, timed out,
  429, 5xx, a refused key, a wrong URL, a redirect) says nothing about the
  answer: a strict replay still replays it (so the game replays exactly), but
  ``replay-fill`` (a resumed sweep, ``--replay-fill``) calls for it again.
* ``Retry-After`` is honoured up to ``RETRY_AFTER_CAP_S`` (60 s): per-minute
  windows are the longest that servers' rate limits commonly reset in, so a
  minute covers every wait that waiting can cure; a server asking for more (a
  daily quota, a misconfiguration; 999999 was seen) is not cured by holding a
  round for it, and the call fails counted after its attempts instead.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from llm_mesa.llm import dialects, preflight_check, stopping, transport, wire
from llm_mesa.llm.endpoint import Endpoint, EndpointError
from llm_mesa.llm.limits import ServerLimit, pick_server, server_limit
from llm_mesa.llm.store import DamagedRow, ResponseStore
from llm_mesa.llm.store_keys import request_identity, request_key
from llm_mesa.llm.transport import aclose_clients, get_client
from llm_mesa.llm.types import LLMRequest, LLMResult
from llm_mesa.llm.usage import Usage, as_ledgers

if TYPE_CHECKING:
    import openai

__all__ = ["ERROR_KINDS", "RETRYABLE", "LLMRequest", "LLMResult", "aclose_clients", "apreflight", "complete",
           "get_client", "preflight"]

#: backoff: the n-th retry sleeps uniform(0, min(cap, base * 2**(n-1))) seconds
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0
#: a Retry-After longer than this is cut to it (see the module's notes)
RETRY_AFTER_CAP_S = 60.0
RETRYABLE = frozenset({"rate_limit", "server", "timeout", "connection"})
ERROR_KINDS = ("rate_limit", "server", "timeout", "connection", "bad_request", "auth", "not_found", "redirect",
               "malformed")
#: failures that are the server's answer to the request: a rerun replays them (the rest it calls again)
ANSWER_FAILURES = frozenset({"malformed", "bad_request"})

_jitter = random.Random()  # never the model's rng: backoff must not change a game


# -- the call --------------------------------------------------------------------------------

def _backoff_s(retry: int, retry_after: float | None) -> float:
    sleep = _jitter.uniform(0, min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (retry - 1)))
    if retry_after is not None:
        sleep = max(sleep, min(retry_after, RETRY_AFTER_CAP_S))
    return sleep


def _body(endpoint: Endpoint, request: LLMRequest, dialect: str) -> dict[str, Any]:
    body: dict[str, Any] = {"model": endpoint.model}
    if endpoint.prompt_mode == "completion":
        if request.prompt is None:
            raise EndpointError("completion prompt mode needs LLMRequest(prompt=...), got messages only")
        body["prompt"] = request.prompt
    else:
        if request.messages is None:
            raise EndpointError("chat prompt mode needs LLMRequest(messages=...); "
                                "use --prompt-mode completion for raw prompts")
        body["messages"] = request.messages
    body.update(endpoint._sampling_params)
    fmt = dialects.response_format(dialect, request.schema, request.schema_name)
    if fmt is not None:
        body["response_format"] = fmt
        if endpoint.compact_json:
            body["logit_bias"] = dialects.COMPACT_JSON_LOGIT_BIAS
    return body


async def _call(endpoint: Endpoint, request: LLMRequest) -> LLMResult:
    """Send one request with retries; never raises for a failed call.

    The dialect is chosen once the call has its place: a call that waited
    behind the server's limit starts under the dialect the calls before it
    negotiated. Until then an ``auto`` endpoint's calls all try the best one
    (``json_schema``) together, each falling back on its own refusal, so the
    first round is not held up behind a lone probe.
    """
    # dialects are negotiated per endpoint (its servers serve one model alike); the rest is per server
    server = endpoint.for_server(pick_server(endpoint))
    client = get_client(server)
    chat = endpoint.prompt_mode == "chat"
    path = "/chat/completions" if chat else "/completions"
    route = transport.direct_route(server, client, path)
    attempts = retries = 0
    queued = time.perf_counter()
    limit = server_limit(server)
    async with limit:
        started = time.perf_counter()
        queue_s = round(started - queued, 6)  # microseconds: what the store keeps
        dialect = dialects.starting_dialect(endpoint, request.schema is not None)
        body = _body(endpoint, request, dialect)
        payload = transport.json_bytes(body) if route is not None else b""
        while True:
            attempts += 1
            retry_after = None
            try:
                status, headers, content = await _send(limit, client, route, path, body, payload,
                                                       endpoint.timeout, retries, endpoint.max_answer_bytes)
            except transport.Failure as failure:
                kind, message = failure.kind, failure.message
            except wire.Malformed as exc:  # larger than --max-answer-bytes
                kind, message = "malformed", f"malformed answer: {exc}"
            else:
                if status < 300:
                    try:
                        answer = wire.parse_completion(content, chat, client.api_key)
                    except wire.Malformed as exc:  # it arrived: the call's failure, recorded as such
                        kind, message = "malformed", f"malformed answer: {exc}"
                    else:
                        dialects.remember_success(endpoint, dialect)
                        return LLMResult(answer.text, answer.finish_reason, answer.prompt_tokens,
                                         answer.completion_tokens, round(time.perf_counter() - started, 6),
                                         answer.model, answer.system_fingerprint, None, "", attempts, False, dialect,
                                         queue_s, answer.cached_tokens, server.base_url)
                elif status < 400:
                    kind = "redirect"
                    message = f"HTTP {status}: {wire.redirect_advice(server.base_url, path, headers, client.api_key)}"
                else:
                    body_text = content[:4096].decode("utf-8", "replace")
                    if request.schema is not None and dialects.is_response_format_refusal(status, body_text):
                        following = dialects.next_dialect(endpoint, dialect)
                        if following is not None:  # a refusal, not a fault: switch at once
                            dialect = following
                            body = _body(endpoint, request, dialect)
                            payload = transport.json_bytes(body) if route is not None else b""
                            continue
                        # a forced dialect the server refuses: retrying cannot help
                        return LLMResult(latency_s=time.perf_counter() - started, error="bad_request",
                                         error_message=f"server refuses dialect {dialect!r} (HTTP {status}); "
                                                       "use --dialect auto", attempts=attempts, dialect=dialect,
                                         queue_s=queue_s, server=server.base_url)
                    kind = transport.kind_of_status(status)
                    message = f"HTTP {status}: {redact(body_text, client.api_key)[:300]}"
                    retry_after = transport.retry_after_s(headers)
            if kind not in RETRYABLE or retries + 1 >= endpoint.max_attempts:
                return LLMResult(latency_s=time.perf_counter() - started, error=kind, error_message=message,
                                 attempts=attempts, dialect=dialect, queue_s=queue_s, server=server.base_url)
            retries += 1
            await limit.before_retry(_backoff_s(retries, retry_after))  # its backoff, or in line again, and any pause


async def _send(limit: ServerLimit, client: openai.AsyncOpenAI, route: Any, path: str, body: dict[str, Any],
                payload: bytes, timeout: float, retries: int, max_bytes: int) -> tuple[int, Any, bytes]:
    """One attempt (``transport.post``), its outcome told to the server's limit: ``auto`` learns from it.
    After a stop (``stopping``) no attempt leaves, a retry included."""
    if stopping.requested():
        await stopping.hold()
    ticket, sent = limit.sent(), time.perf_counter()
    kind: str | None = "cancelled"  # nothing to learn from an attempt that never came back
    retry_after = headers = None
    try:
        status, headers, content = await transport.post(client, route, path, body, payload, timeout, retries, max_bytes)
        if status < 300:
            kind = None
        else:
            kind, retry_after = transport.kind_of_status(status), transport.retry_after_s(headers)
        return status, headers, content
    except transport.Failure as failure:
        kind = failure.kind
        raise
    finally:
        limit.answered(ticket, kind, time.perf_counter() - sent,
                       None if retry_after is None else min(retry_after, RETRY_AFTER_CAP_S), headers)


async def complete(endpoint: Endpoint, request: LLMRequest, *, store: ResponseStore | None = None,
                   usage: Usage | Iterable[Usage] | None = None) -> LLMResult:
    """One answer for ``request``: replayed from ``store``, or called (and recorded).

    Never raises for a failed call (see ``LLMResult.error``); raises ``ReplayMiss``
    in strict replay when the call was never recorded.
    """
    server_limit(endpoint)  # before any await: the round's other calls must not be let in under a wider limit
    if store is not None and store.mode != "off":
        identity = request_identity(endpoint, request)
        key = request_key(identity)
        # in a worker thread: a read may wait on the file, and the loop runs the whole round
        recorded = store.replays or store.mode == "record"
        try:
            result = await asyncio.to_thread(store.get, key) if recorded else None
        except DamagedRow:
            if store.mode != "replay-fill":
                raise
            result = None  # called again, and the damaged row replaced
        if result is not None and store.mode == "record" and _replays(result):
            raise store.already_recorded(request.sample_key)  # before paying for an answer it would replace
        if result is not None and store.mode == "record":
            result = None  # a failure of the service is no answer: recording the call again replaces it
        if result is not None and result.ok and request.schema is not None:
            dialects.remember_success(endpoint, result.dialect)  # the recorded row names the dialect that worked
        if result is not None and store.mode == "replay-fill" and not _replays(result):
            result = None  # a failure of the service, not an answer: call again
        if result is None:
            if store.mode == "replay":
                raise store.miss(key, request.sample_key)
            result = await _live_call(endpoint, request)
            store.put(key, identity, result)
    else:
        result = await _live_call(endpoint, request)
    for ledger in as_ledgers(usage):
        ledger.add_result(result, endpoint)
    return result


async def _live_call(endpoint: Endpoint, request: LLMRequest) -> LLMResult:
    """``_call``, overlapping the endpoint's scheduled pre-flight (if any): the call goes out at
    once, and its result is kept (recorded, counted, used) only once the check has passed, so a
    game's first round costs one latency, not the check's and then its own; an endpoint that
    fails the check raises its ``EndpointError`` here, before anything is kept."""
    if not preflight_check.scheduled:
        return await _call(endpoint, request)
    checking = asyncio.ensure_future(preflight_check.passed(endpoint))  # a lazy check starts with the call
    try:
        result = await _call(endpoint, request)
        await checking
    finally:  # cancelled with its round (another call raised the check's error): leave no orphan behind
        if not checking.done():
            checking.cancel()
        elif not checking.cancelled():
            checking.exception()  # retrieved: raised once, by whichever call awaited it
    return result


def _replays(result: LLMResult) -> bool:
    """Is a recorded result the server's answer (replayed by a rerun), not a failure of the service?"""
    return result.error is None or result.error in ANSWER_FAILURES


# -- preflight --------------------------------------------------------------------------------

#: cut the key (and anything shaped like one) out of a server's text; the one place is ``wire``
redact = wire.redact


def apreflight(endpoint: Endpoint, store: ResponseStore | None = None):
    """The pre-flight check (``llm_mesa.llm.preflight_check.apreflight``), kept here for its callers."""
    return preflight_check.apreflight(endpoint, store)


def preflight(endpoint: Endpoint, store: ResponseStore | None = None) -> list[str]:
    """Blocking pre-flight check (``llm_mesa.llm.preflight_check.preflight``), kept here for its callers."""
    return preflight_check.preflight(endpoint, store)
