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
  thread, off the loop) and recorded when made.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import Iterable
from typing import Any

import openai

from llm_mesa.llm import dialects, transport
from llm_mesa.llm.endpoint import Endpoint, EndpointError
from llm_mesa.llm.limits import ServerLimit, pick_server, server_limit
from llm_mesa.llm.store import ResponseStore, request_identity, request_key
from llm_mesa.llm.transport import aclose_clients, get_client
from llm_mesa.llm.types import LLMRequest, LLMResult
from llm_mesa.llm.usage import Usage, as_ledgers

__all__ = ["ERROR_KINDS", "RETRYABLE", "LLMRequest", "LLMResult", "aclose_clients", "apreflight", "complete",
           "get_client", "preflight"]

#: backoff: the n-th retry sleeps uniform(0, min(cap, base * 2**(n-1))) seconds
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0
#: a Retry-After longer than this is cut to it (a server asking for an hour is misconfigured)
RETRY_AFTER_CAP_S = 300.0
RETRYABLE = frozenset({"rate_limit", "server", "timeout", "connection"})
ERROR_KINDS = ("rate_limit", "server", "timeout", "connection", "bad_request", "auth", "not_found")

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


def _parse_success(data: Any, chat: bool) -> tuple[str, str | None, int, int, str | None, str | None, int]:
    choice = data["choices"][0]
    if chat:
        text = (choice.get("message") or {}).get("content") or ""
    else:
        text = choice.get("text") or ""
    usage = data.get("usage") or {}
    details = usage.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return (text, choice.get("finish_reason"), int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0), data.get("model"), data.get("system_fingerprint"),
            int(cached or 0))


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
                                                       endpoint.timeout, retries)
            except transport.Failure as failure:
                kind, message = failure.kind, failure.message
            else:
                if status < 300:
                    try:
                        text, finish, pt, ct, model, fingerprint, cached = _parse_success(json.loads(content), chat)
                    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
                        kind, message = "server", f"malformed response body: {type(exc).__name__}"
                    else:
                        dialects.remember_success(endpoint, dialect)
                        return LLMResult(text, finish, pt, ct, round(time.perf_counter() - started, 6), model,
                                         fingerprint, None, "", attempts, False, dialect, queue_s, cached, server.base_url)
                else:
                    body_text = content.decode("utf-8", "replace")
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
            await asyncio.sleep(_backoff_s(retries, retry_after))


async def _send(limit: ServerLimit, client: openai.AsyncOpenAI, route: Any, path: str, body: dict[str, Any],
                payload: bytes, timeout: float, retries: int) -> tuple[int, Any, bytes]:
    """One attempt (``transport.post``), its outcome told to the server's limit: ``auto`` learns from it."""
    ticket, sent = limit.sent(), time.perf_counter()
    kind: str | None = "cancelled"  # nothing to learn from an attempt that never came back
    retry_after = None
    try:
        status, headers, content = await transport.post(client, route, path, body, payload, timeout, retries)
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
                       None if retry_after is None else min(retry_after, RETRY_AFTER_CAP_S))


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
        result = await asyncio.to_thread(store.get, key) if recorded else None
        if result is not None and store.mode == "record":
            raise store.already_recorded(request.sample_key)  # before paying for an answer it would replace
        if result is not None and result.ok and request.schema is not None:
            dialects.remember_success(endpoint, result.dialect)  # the recorded row names the dialect that worked
        if result is None:
            if store.mode == "replay":
                raise store.miss(key, request.sample_key)
            result = await _call(endpoint, request)
            store.put(key, identity, result)
    else:
        result = await _call(endpoint, request)
    for ledger in as_ledgers(usage):
        ledger.add_result(result, endpoint)
    return result


# -- preflight --------------------------------------------------------------------------------

async def apreflight(endpoint: Endpoint, store: ResponseStore | None = None) -> list[str]:
    """Check that the endpoint answers and serves the model; returns the models it lists.

    Raises ``EndpointError`` with one line that names the fix. Skipped (returns []) in
    strict replay, which makes no calls.
    """
    if store is not None and store.mode == "replay":
        return []
    if len(endpoint.base_urls) > 1:  # every server of the model must answer
        listed: list[str] = []
        for url in endpoint.base_urls:
            listed = await apreflight(endpoint.for_server(url), store)
        return listed
    client = get_client(endpoint)  # raises for a missing key on a remote URL
    options = {"timeout": min(endpoint.timeout, 15.0)}
    try:
        response = await client.get("/models", cast_to=transport.RawResponse, options=options)
        listed = [m.get("id") for m in json.loads(response.content).get("data", []) if isinstance(m, dict)]
    except openai.APIConnectionError as exc:
        raise _unreachable(endpoint, exc) from None
    except openai.APIStatusError as exc:
        if exc.status_code in (401, 403):
            raise _auth_refused(endpoint, exc.status_code) from None
        listed = None  # /models unsupported: try one token instead
    except (ValueError, AttributeError):
        listed = None
    if listed and endpoint.model in listed:
        return listed
    # Not listed (servers that resolve aliases, e.g. Ollama's "llama3" for "llama3:latest",
    # or parameterised stand-in names), or /models unsupported: one 1-token call decides.
    chat = endpoint.prompt_mode == "chat"
    probe = {"model": endpoint.model, "max_tokens": 1}
    probe.update({"messages": [{"role": "user", "content": "ping"}]} if chat else {"prompt": "ping"})
    try:
        answer = await client.post("/chat/completions" if chat else "/completions", body=probe,
                                   cast_to=transport.RawResponse, options=options)
        _check_completion_shape(endpoint, answer.content, chat)
    except openai.APIConnectionError as exc:
        raise _unreachable(endpoint, exc) from None
    except openai.APIStatusError as exc:
        if exc.status_code in (401, 403):
            raise _auth_refused(endpoint, exc.status_code) from None
        if listed and exc.status_code == 404:
            raise EndpointError(f"model {endpoint.model!r} is not served by {endpoint.base_url}; "
                                f"it offers: {', '.join(map(str, listed[:20]))} (pass one with --model)") from None
        if exc.status_code in (400, 422):
            return listed or []  # the model answered; it only disliked the 1-token probe
        if exc.status_code == 404:
            raise EndpointError(f"{endpoint.base_url} does not know model {endpoint.model!r} "
                                "(HTTP 404); check --model and --base-url (it usually ends in /v1)") from None
        raise EndpointError(f"{endpoint.base_url} refused a 1-token test call to {endpoint.model!r} "
                            f"(HTTP {exc.status_code}): {redact(transport.error_text(exc), client.api_key)[:150]}") from None
    return listed or []


_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+")
_KEY_LIKE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{6,})")


def redact(text: str, key: str | None = None) -> str:
    """``text`` with the API key, and anything that looks like a bearer token or key, cut out.

    A server's error body may echo the request's headers; it is kept (the store and
    the transcript record failures) only after this.
    """
    if key:
        text = text.replace(key, "[redacted]")
    return _KEY_LIKE.sub("[redacted]", _BEARER.sub(r"\1[redacted]", text))


def _check_completion_shape(endpoint: Endpoint, content: bytes, chat: bool) -> None:
    """A test call's answer must be an OpenAI-style completion, not an HTML page or other JSON."""
    try:
        _parse_success(json.loads(content), chat)
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        start = content[:60].decode("utf-8", "replace").strip().replace("\n", " ")
        raise EndpointError(f"{endpoint.base_url} answered a test call with something that is not an OpenAI "
                            f"completion ({start!r}...); check --base-url (it usually ends in /v1)") from None


def _unreachable(endpoint: Endpoint, exc: Exception) -> EndpointError:
    hint = "start one with `llm-mesa serve`" if endpoint.is_loopback else "check the URL and that the server is up"
    return EndpointError(f"cannot reach the LLM endpoint {endpoint.base_url} "
                         f"({type(exc).__name__}); {hint}")


def _auth_refused(endpoint: Endpoint, status: int) -> EndpointError:
    return EndpointError(f"{endpoint.base_url} refused the API key (HTTP {status}); "
                         f"put a valid key in the environment variable {endpoint.api_key_env}")


def preflight(endpoint: Endpoint, store: ResponseStore | None = None) -> list[str]:
    """Blocking ``apreflight`` on the shared loop (for CLIs and model constructors)."""
    from llm_mesa.llm.runtime import run_sync
    return run_sync(apreflight(endpoint, store))
