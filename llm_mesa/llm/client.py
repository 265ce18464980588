"""One call to an OpenAI-compatible endpoint: retries, dialects, recording, usage.

``complete(endpoint, request)`` never raises for a failed call: after retries it
returns an ``LLMResult`` whose ``error`` names the kind of failure, so a game of
36 agents is not lost to one bad answer and every failure is counted.

Design choices, and why:

* One ``openai.AsyncOpenAI`` per base URL and key variable per event loop, built
  with ``max_retries=0``: ours is the only retry layer (exponential backoff with
  full jitter, honouring ``Retry-After``), so attempts are never multiplied.
* The hot path sends through the SDK's own transport, not its per-request
  pipeline. The client is built with ``openai.DefaultAioHttpClient`` (the SDK's
  httpx2 client over its vendored aiohttp transport). Once per endpoint and
  path, the SDK itself builds a request (``client._build_request``): URL,
  Authorization, User-Agent and X-Stainless headers exactly as
  ``chat.completions.create`` sends them (a test compares the two on the
  wire), and the timeouts its transport would give aiohttp. Each call then
  posts its JSON body through the aiohttp session that the SDK's transport
  owns (same connector, pool limits, keep-alive and TLS context), with the
  per-request timeouts the transport would set. Statuses map to error kinds
  as before (``_kind_of_status``, ``Retry-After``); aiohttp's timeouts are
  ``timeout``, a refused, reset or dropped connection is ``connection``.
  Why: the SDK's per-request pipeline (URL building and parsing, pydantic
  request options and deep copies, header merging, httpx2's request, auth and
  redirect wrappers) cost about 0.7 ms of CPU a call, half the client's, and
  spread the 36 sends of a round over ~100 ms. One run of
  ``benchmarks/bench_client.py`` (zero-latency loopback, 64 in flight, load
  ~2 on 2 cores), calls/s: raw aiohttp 3262, ``chat.completions.create``
  501, the SDK's ``client.post`` 885, a request prebuilt by the SDK handed to
  its transport's ``handle_async_request`` 1621 (httpx2's request and
  response objects remain), this path 2688. It is the fastest of those that
  still sends through the openai package's own transport.
  Where the shortcut would not be what the SDK does (no aiohttp transport,
  a proxy, a provider runtime, workload identity or an API-key provider),
  and for a redirect answer, the call goes through ``client.post``.
* One limit per server (base URL) bounds calls in flight, whatever endpoints
  call it: the smallest ``concurrency`` given for it (see ``limits``). A call
  holds its place while it backs off, which is what a rate-limited server
  wants.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
import weakref
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import aiohttp
import openai
from openai._models import FinalRequestOptions

from llm_mesa.llm import dialects
from llm_mesa.llm.endpoint import Endpoint, EndpointError
from llm_mesa.llm.limits import server_limit
from llm_mesa.llm.store import ResponseStore, request_identity, request_key
from llm_mesa.llm.usage import Usage, as_ledgers

try:  # httpx2 comes with openai 3; older openai used httpx
    import httpx2 as _httpx
except ImportError:  # pragma: no cover
    import httpx as _httpx  # type: ignore[no-redef]

#: backoff: the n-th retry sleeps uniform(0, min(cap, base * 2**(n-1))) seconds
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0
#: a Retry-After longer than this is cut to it (a server asking for an hour is misconfigured)
RETRY_AFTER_CAP_S = 300.0
RETRYABLE = frozenset({"rate_limit", "server", "timeout", "connection"})
ERROR_KINDS = ("rate_limit", "server", "timeout", "connection", "bad_request", "auth", "not_found")

_jitter = random.Random()  # never the model's rng: backoff must not change a game


@dataclass(slots=True)
class LLMRequest:
    """One call: chat ``messages`` or a raw ``prompt``, and how to record it."""

    messages: list[dict[str, str]] | None = None
    prompt: str | None = None
    #: JSON schema of the answer (structured output), or None for free text
    schema: dict[str, Any] | None = None
    #: distinct per agent, round and try, e.g. "g=ab12|agent=3|round=7|try=0"
    sample_key: str = ""
    #: hash of the prompt template, so an edited template never replays stale answers
    template_hash: str = ""
    #: free text for the record (e.g. "decide", "speak")
    purpose: str = ""
    schema_name: str = "answer"

    def with_reminder(self, reminder: str, suffix: str = "|retry=1") -> LLMRequest:
        """The same request with ``reminder`` added (a user message, or appended to the prompt)."""
        messages = prompt = None
        if self.messages is not None:
            messages = [*self.messages, {"role": "user", "content": reminder}]
        if self.prompt is not None:
            prompt = self.prompt + ("" if self.prompt.endswith("\n") else "\n") + reminder
        return LLMRequest(messages=messages, prompt=prompt, schema=self.schema,
                          sample_key=self.sample_key + suffix, template_hash=self.template_hash,
                          purpose=self.purpose, schema_name=self.schema_name)


@dataclass(slots=True)
class LLMResult:
    """What a call gave: text and usage, or the kind of failure (``error``)."""

    text: str = ""
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    model: str | None = None
    system_fingerprint: str | None = None
    #: None, or one of ERROR_KINDS
    error: str | None = None
    error_message: str = ""
    attempts: int = 0
    replayed: bool = False
    dialect: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_record(self) -> dict[str, Any]:
        record = asdict(self)
        del record["replayed"]
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any], replayed: bool = False) -> LLMResult:
        known = {k: v for k, v in record.items() if k in _RESULT_FIELDS}  # tolerate older/newer records
        return cls(**{**known, "replayed": replayed})


_RESULT_FIELDS = frozenset(LLMResult.__dataclass_fields__)


# -- per-loop clients ------------------------------------------------------------------------

class _LoopState:
    __slots__ = ("clients", "routes")

    def __init__(self) -> None:
        self.clients: dict[tuple[str, str], openai.AsyncOpenAI] = {}
        #: (base URL, key variable, path, timeout) -> prebuilt route, or None: use client.post
        self.routes: dict[tuple[str, str, str, float], _DirectRoute | None] = {}


_states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = weakref.WeakKeyDictionary()
_last: tuple[asyncio.AbstractEventLoop | None, _LoopState | None] = (None, None)


def _loop_state() -> _LoopState:
    global _last
    loop = asyncio.get_running_loop()
    if _last[0] is loop:
        return _last[1]  # type: ignore[return-value]
    state = _states.get(loop)
    if state is None:
        state = _states[loop] = _LoopState()
    _last = (loop, state)
    return state


def _make_http_client() -> Any:
    try:
        return openai.DefaultAioHttpClient()
    except (RuntimeError, AttributeError):  # aiohttp extra missing: httpx transport
        return None


def get_client(endpoint: Endpoint) -> openai.AsyncOpenAI:
    """The shared async client for this endpoint's URL and key (call inside the loop)."""
    state = _loop_state()
    key = (endpoint.base_url, endpoint.api_key_env)
    client = state.clients.get(key)
    if client is None:
        client = openai.AsyncOpenAI(api_key=endpoint.api_key(), base_url=endpoint.base_url,
                                    max_retries=0, http_client=_make_http_client())
        state.clients[key] = client
    return client


async def aclose_clients() -> None:
    """Close this loop's clients (end of a script that used its own loop)."""
    state = _states.pop(asyncio.get_running_loop(), None)
    global _last
    _last = (None, None)
    if state is not None:
        for client in state.clients.values():
            await client.close()


def _register_shutdown() -> None:
    from llm_mesa.llm.runtime import on_shutdown
    on_shutdown(aclose_clients)


_register_shutdown()


# -- the SDK's transport, without its per-request pipeline -------------------------------------

class _DirectRoute:
    """One endpoint path as the SDK would send it, built once: URL, headers, timeouts, session."""

    __slots__ = ("_headers", "client", "client_timeout", "path", "timeout", "transport", "url")

    def __init__(self, client: openai.AsyncOpenAI, transport: Any, path: str, timeout: float) -> None:
        self.client, self.transport, self.path, self.timeout = client, transport, path, timeout
        first = self._sdk_request(0)
        self.url = str(first.url)
        limits = first.extensions.get("timeout", {})
        # what the SDK's aiohttp transport turns the request's timeouts into
        self.client_timeout = aiohttp.ClientTimeout(sock_connect=limits.get("connect"),
                                                    sock_read=limits.get("read"), connect=limits.get("pool"))
        self._headers: list[dict[str, str]] = [self._headers_of(first)]

    def _sdk_request(self, retries_taken: int) -> Any:
        options = FinalRequestOptions.construct(method="post", url=self.path, json_data={},
                                                timeout=self.timeout, security={"bearer_auth": True})
        return self.client._build_request(options, retries_taken=retries_taken)

    @staticmethod
    def _headers_of(request: Any) -> dict[str, str]:
        # as the SDK's transport hands them to aiohttp, less the length of the empty body
        return {k.decode("latin-1"): v.decode("latin-1") for k, v in request.headers.raw
                if k.lower() != b"content-length"}

    def headers(self, retries_taken: int) -> dict[str, str]:
        """The headers of an attempt (the SDK counts retries in x-stainless-retry-count)."""
        while len(self._headers) <= retries_taken:
            self._headers.append(self._headers_of(self._sdk_request(len(self._headers))))
        return self._headers[retries_taken]

    def session(self) -> aiohttp.ClientSession:
        """The aiohttp session of the SDK's transport (created as the transport itself does)."""
        session = self.transport.client
        if not isinstance(session, aiohttp.ClientSession):
            session = self.transport.client = self.transport.get_client()
        return session


def _direct_route(endpoint: Endpoint, client: openai.AsyncOpenAI, path: str) -> _DirectRoute | None:
    """The prebuilt route for ``path``, or None where only ``client.post`` does what the SDK does."""
    state = _loop_state()
    key = (endpoint.base_url, endpoint.api_key_env, path, endpoint.timeout)
    if key in state.routes:
        return state.routes[key]
    route = None
    try:
        from openai._vendor.httpx_aiohttp.transport import AiohttpTransport
    except ImportError:  # pragma: no cover - the aiohttp extra is missing
        AiohttpTransport = None  # type: ignore[assignment,misc]
    special_auth = any(getattr(client, name, None) is not None
                       for name in ("_provider_runtime", "_workload_identity_auth", "_api_key_provider"))
    if AiohttpTransport is not None and not special_auth and not client.default_query:
        try:
            url = client._prepare_url(path)
            transport = client._client._transport_for_url(url)
            if isinstance(transport, AiohttpTransport) and transport.proxy is None:
                route = _DirectRoute(client, transport, path, endpoint.timeout)
        except (AttributeError, TypeError, ValueError):  # an SDK whose internals moved: its own path
            route = None
    state.routes[key] = route
    return route


class _Failure(Exception):
    """An attempt that got no HTTP answer: its error kind and message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.message = kind, message


async def _send_direct(route: _DirectRoute, payload: bytes, retries_taken: int) -> tuple[int, Any, bytes]:
    """POST through the SDK transport's aiohttp session: status, headers, body."""
    try:
        async with route.session().post(route.url, data=payload, headers=route.headers(retries_taken),
                                        timeout=route.client_timeout, allow_redirects=False) as response:
            return response.status, response.headers, await response.read()
    except TimeoutError:  # aiohttp's connect and read timeouts are TimeoutErrors
        raise _Failure("timeout", f"no answer within {route.timeout} s") from None
    except (aiohttp.ClientError, OSError) as exc:  # refused, reset, dropped, truncated
        raise _Failure("connection", f"{type(exc).__name__}: {str(exc)[:200]}") from None


async def _send_via_sdk(client: openai.AsyncOpenAI, path: str, body: dict[str, Any],
                        timeout: float) -> tuple[int, Any, bytes]:
    """POST through ``client.post`` (the SDK's whole pipeline): status, headers, body."""
    try:
        response = await client.post(path, body=body, cast_to=_httpx.Response, options={"timeout": timeout})
        return response.status_code, response.headers, response.content
    except openai.APIStatusError as exc:
        return exc.status_code, exc.response.headers, _error_text(exc).encode()
    except openai.APITimeoutError as exc:
        refused = _refused_connection(exc)
        if refused is None:
            raise _Failure("timeout", f"no answer within {timeout} s") from None
        # the aiohttp transport reports a refused connection as a connect timeout
        raise _Failure("connection", f"{type(refused).__name__}: {str(refused)[:200]}") from None
    except openai.APIConnectionError as exc:
        cause = exc.__cause__ or exc
        raise _Failure("connection", f"{type(cause).__name__}: {str(cause)[:200]}") from None
    except (openai.OpenAIError, OSError) as exc:  # a transport error the client did not map
        raise _Failure("connection", f"{type(exc).__name__}: {str(exc)[:200]}") from None


def _json_bytes(body: dict[str, Any]) -> bytes:
    """The body as the SDK serialises it (compact, UTF-8)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


# -- the call --------------------------------------------------------------------------------

def _retry_after_s(headers: Any) -> float | None:
    """Seconds a server asked us to wait (Retry-After seconds or HTTP date, or retry-after-ms)."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _kind_of_status(status: int) -> str:
    if status == 429:
        return "rate_limit"
    if status >= 500:
        return "server"
    if status == 408:
        return "timeout"
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    return "bad_request"


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
    return body


def _parse_success(data: Any, chat: bool) -> tuple[str, str | None, int, int, str | None, str | None]:
    choice = data["choices"][0]
    if chat:
        text = (choice.get("message") or {}).get("content") or ""
    else:
        text = choice.get("text") or ""
    usage = data.get("usage") or {}
    return (text, choice.get("finish_reason"), int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0), data.get("model"), data.get("system_fingerprint"))


async def _call(endpoint: Endpoint, request: LLMRequest) -> LLMResult:
    """Send one request with retries; never raises for a failed call.

    The dialect is chosen once the call has its place: a call that waited
    behind the server's limit starts under the dialect the calls before it
    negotiated. Until then an ``auto`` endpoint's calls all try the best one
    (``json_schema``) together, each falling back on its own refusal, so the
    first round is not held up behind a lone probe.
    """
    client = get_client(endpoint)
    chat = endpoint.prompt_mode == "chat"
    path = "/chat/completions" if chat else "/completions"
    route = _direct_route(endpoint, client, path)
    attempts = retries = 0
    started = time.perf_counter()
    async with server_limit(endpoint):
        dialect = dialects.starting_dialect(endpoint, request.schema is not None)
        body = _body(endpoint, request, dialect)
        payload = _json_bytes(body) if route is not None else b""
        while True:
            attempts += 1
            retry_after = None
            try:
                if route is not None:
                    status, headers, content = await _send_direct(route, payload, retries)
                    if 300 <= status < 400:  # a redirect: the SDK's httpx2 client follows it
                        status, headers, content = await _send_via_sdk(client, path, body, endpoint.timeout)
                else:
                    status, headers, content = await _send_via_sdk(client, path, body, endpoint.timeout)
            except _Failure as failure:
                kind, message = failure.kind, failure.message
            else:
                if status < 300:
                    try:
                        text, finish, pt, ct, model, fingerprint = _parse_success(json.loads(content), chat)
                    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
                        kind, message = "server", f"malformed response body: {type(exc).__name__}"
                    else:
                        dialects.remember_success(endpoint, dialect)
                        return LLMResult(text, finish, pt, ct, time.perf_counter() - started, model,
                                         fingerprint, None, "", attempts, False, dialect)
                else:
                    body_text = content.decode("utf-8", "replace")
                    if request.schema is not None and dialects.is_response_format_refusal(status, body_text):
                        following = dialects.next_dialect(endpoint, dialect)
                        if following is not None:  # a refusal, not a fault: switch at once
                            dialect = following
                            body = _body(endpoint, request, dialect)
                            payload = _json_bytes(body) if route is not None else b""
                            continue
                        # a forced dialect the server refuses: retrying cannot help
                        return LLMResult(latency_s=time.perf_counter() - started, error="bad_request",
                                         error_message=f"server refuses dialect {dialect!r} (HTTP {status}); "
                                                       "use --dialect auto", attempts=attempts, dialect=dialect)
                    kind, message = _kind_of_status(status), f"HTTP {status}: {body_text[:300]}"
                    retry_after = _retry_after_s(headers)
            if kind not in RETRYABLE or retries + 1 >= endpoint.max_attempts:
                return LLMResult(latency_s=time.perf_counter() - started, error=kind, error_message=message,
                                 attempts=attempts, dialect=dialect)
            retries += 1
            await asyncio.sleep(_backoff_s(retries, retry_after))


def _refused_connection(exc: BaseException) -> BaseException | None:
    """The refused/reset connection behind a reported timeout, if that is what it was."""
    seen: BaseException | None = exc
    for _ in range(8):
        seen = seen.__cause__ or seen.__context__ if seen is not None else None
        if seen is None:
            return None
        if isinstance(seen, (ConnectionError, OSError)) and not isinstance(seen, TimeoutError):
            return seen
    return None


def _error_text(exc: openai.APIStatusError) -> str:
    try:
        return exc.response.text
    except Exception:  # noqa: BLE001 - a streamed or unreadable body: any failure to read it
        return str(exc.message)


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
        result = await asyncio.to_thread(store.get, key) if store.replays else None
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

    Raises ``EndpointError`` with one line naming the fix. Skipped (returns []) in
    strict replay, which makes no calls.
    """
    if store is not None and store.mode == "replay":
        return []
    client = get_client(endpoint)  # raises for a missing key on a remote URL
    options = {"timeout": min(endpoint.timeout, 15.0)}
    try:
        response = await client.get("/models", cast_to=_httpx.Response, options=options)
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
        await client.post("/chat/completions" if chat else "/completions", body=probe,
                          cast_to=_httpx.Response, options=options)
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
                            f"(HTTP {exc.status_code}): {_error_text(exc)[:150]}") from None
    return listed or []


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
