"""How a call reaches an OpenAI-compatible server, and what its answer's status means.

``client`` decides what to send and whether to try again; this module sends
one attempt and reports an HTTP status, headers and body, or raises
``Failure`` (``timeout`` or ``connection``) when no HTTP answer came.

Design choices, and why:

* One ``openai.AsyncOpenAI`` per base URL and key variable per event loop, built
  with ``max_retries=0``: the client's retry layer is the only one, so attempts
  are never multiplied.
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
  (``kind_of_status``, ``retry_after_s``); aiohttp's timeouts are
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
  the call goes through ``client.post``.
* No redirect is followed, on any route and either path (the SDK's client is
  built with ``follow_redirects=False``): a 307 on the completions route would
  re-send the game's prompt to wherever it points, and the key is only stripped
  on the way, not the prompt. A redirect to the same host is not followed either:
  it means ``--base-url`` is not the server's (http for https, a missing path
  part), every call would pay two round trips, and a POST turned into a GET by a
  302 loses its body. It is a failed call of kind ``redirect`` (never recorded,
  and the pre-flight says where it points, so the fix is one edit of
  ``--base-url``).
* Bounds: a body is read up to the endpoint's ``max_answer_bytes``
  (``wire.read_body``) and every attempt, reads and all, is bounded by its
  ``timeout``; on the public path the body is streamed too (the SDK's raw
  streaming response), so no path holds more than the cap.
* The shortcut leans on private members of the SDK (``_build_request``,
  ``_prepare_url``, ``openai._models.FinalRequestOptions``, the vendored
  ``AiohttpTransport`` and its session, httpx2's ``_transport_for_url``), which
  any release may change. So the openai version is pinned to the minor range
  the tests ran on (pyproject.toml), and every member is looked up when a
  route is built: where one is missing, or building the route fails, calls go
  through the public ``client.post`` (the same requests, a test compares the
  two paths; more CPU a call) and one warning says so, once per process.
"""

from __future__ import annotations

import asyncio
import json
import warnings
import weakref
from typing import Any

import aiohttp
import openai
import orjson

from llm_mesa.llm import wire
from llm_mesa.llm.endpoint import MAX_CONCURRENCY, Endpoint

try:  # httpx2 comes with openai 3; older openai used httpx
    import httpx2 as _httpx
except ImportError:  # pragma: no cover
    import httpx as _httpx  # type: ignore[no-redef]

#: what ``client.get``/``client.post`` return when asked for the raw HTTP response
RawResponse = _httpx.Response


# -- per-loop clients ------------------------------------------------------------------------

class _LoopState:
    __slots__ = ("clients", "routes")

    def __init__(self) -> None:
        self.clients: dict[tuple[str, str], openai.AsyncOpenAI] = {}
        #: (base URL, key variable, path, timeout, method) -> prebuilt route, or None: use client.post
        self.routes: dict[tuple[str, str, str, float, str], DirectRoute | None] = {}


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


#: connections the SDK's pool may hold to one server: as many as calls may be in flight. The
#: server's limit (``limits``) bounds the calls; the SDK's default pool (1,000) would be a second,
#: hidden limit below it, and would hold a 10,000-agent round to ten waves of its latency.
POOL_CONNECTIONS = MAX_CONCURRENCY


def _make_http_client() -> Any:
    limits = _httpx.Limits(max_connections=POOL_CONNECTIONS, max_keepalive_connections=POOL_CONNECTIONS)
    try:  # follow no redirect (see the module's notes)
        return openai.DefaultAioHttpClient(follow_redirects=False, limits=limits)
    except (RuntimeError, AttributeError):  # aiohttp extra missing: httpx transport
        return openai.DefaultAsyncHttpxClient(follow_redirects=False, limits=limits)


def _raise_open_files_limit() -> None:
    """Let this process open as many sockets as the system allows it (the soft limit up to the hard one).

    A connection is a file descriptor: 10,000 calls in flight need 10,000, and a soft limit
    of 1,024 (a common default) would fail the calls past it as refused connections.
    """
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        wanted = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        if soft != resource.RLIM_INFINITY and soft < wanted:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    except (ImportError, ValueError, OSError):  # no such limit here, or not ours to raise
        pass


def get_client(endpoint: Endpoint) -> openai.AsyncOpenAI:
    """The shared async client for this endpoint's URL and key (call inside the loop)."""
    state = _loop_state()
    key = (endpoint.base_url, endpoint.api_key_env)
    client = state.clients.get(key)
    if client is None:
        _raise_open_files_limit()
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

class DirectRoute:
    """One endpoint path as the SDK would send it, built once: URL, headers, timeouts, session."""

    __slots__ = ("_headers", "_options", "client", "client_timeout", "method", "path", "timeout", "transport", "url")

    def __init__(self, client: openai.AsyncOpenAI, transport: Any, path: str, timeout: float,
                 options_class: Any, method: str = "post") -> None:
        self.client, self.transport, self.path, self.timeout, self.method = client, transport, path, timeout, method
        self._options = options_class  # the SDK's FinalRequestOptions
        first = self._sdk_request(0)
        self.url = str(first.url)
        limits = first.extensions.get("timeout", {})
        # what the SDK's aiohttp transport turns the request's timeouts into
        self.client_timeout = aiohttp.ClientTimeout(sock_connect=limits.get("connect"),
                                                    sock_read=limits.get("read"), connect=limits.get("pool"))
        self._headers: list[dict[str, str]] = [self._headers_of(first)]

    def _sdk_request(self, retries_taken: int) -> Any:
        options = self._options.construct(method=self.method, url=self.path,
                                          json_data={} if self.method == "post" else None,
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


#: attributes an SDK client has where the shortcut would not send what the SDK sends
_SPECIAL_AUTH = ("_provider_runtime", "_workload_identity_auth", "_api_key_provider")
_warned_public_path = False


def _sdk_internals(client: openai.AsyncOpenAI) -> tuple[Any, type] | str:
    """``(FinalRequestOptions, AiohttpTransport)``, or the name of a private member this SDK lacks."""
    try:
        from openai import _models
        from openai._vendor.httpx_aiohttp import transport as vendored
    except ImportError:
        return "openai._vendor.httpx_aiohttp.transport"
    options_class = getattr(_models, "FinalRequestOptions", None)
    if not callable(getattr(options_class, "construct", None)):
        return "openai._models.FinalRequestOptions"
    transport_class = getattr(vendored, "AiohttpTransport", None)
    if not isinstance(transport_class, type):
        return "openai._vendor.httpx_aiohttp.transport.AiohttpTransport"
    for name in ("_build_request", "_prepare_url"):
        if not callable(getattr(client, name, None)):
            return f"AsyncOpenAI.{name}"
    if not callable(getattr(getattr(client, "_client", None), "_transport_for_url", None)):
        return "AsyncOpenAI._client._transport_for_url"
    for name in _SPECIAL_AUTH:
        if not hasattr(client, name):  # cannot tell whether the SDK would add its own auth
            return f"AsyncOpenAI.{name}"
    return options_class, transport_class


def _warn_public_path(missing: str) -> None:
    global _warned_public_path
    if not _warned_public_path:
        _warned_public_path = True
        warnings.warn(f"openai {openai.__version__} lacks {missing}, which llm-mesa's fast path uses; calls go "
                      "through the SDK's public client.post instead (the same requests, more CPU a call)",
                      RuntimeWarning, stacklevel=3)


def direct_route(endpoint: Endpoint, client: openai.AsyncOpenAI, path: str,
                 method: str = "post") -> DirectRoute | None:
    """The prebuilt route for ``path``, or None: calls go through ``client.post``.

    None where only ``client.post`` does what the SDK does (see the module's
    notes), and, with one warning, where this SDK lacks a private member the
    route is built from.
    """
    state = _loop_state()
    key = (endpoint.base_url, endpoint.api_key_env, path, endpoint.timeout, method)
    if key in state.routes:
        return state.routes[key]
    route = None
    internals = _sdk_internals(client)
    if isinstance(internals, str):
        _warn_public_path(internals)
    elif not any(getattr(client, name) is not None for name in _SPECIAL_AUTH) and not client.default_query:
        options_class, transport_class = internals
        try:
            transport = client._client._transport_for_url(client._prepare_url(path))
            if isinstance(transport, transport_class) and transport.proxy is None:
                if not (hasattr(transport, "client") and callable(getattr(transport, "get_client", None))):
                    raise AttributeError("AiohttpTransport.client or .get_client")
                route = DirectRoute(client, transport, path, endpoint.timeout, options_class, method)
        except (AttributeError, TypeError, ValueError) as exc:  # internals that moved in another way
            _warn_public_path(f"what building a request needs ({type(exc).__name__}: {str(exc)[:100]})")
            route = None
    state.routes[key] = route
    return route


class Failure(Exception):
    """An attempt that got no HTTP answer: its error kind and message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.message = kind, message


async def _send_direct(route: DirectRoute, payload: bytes | None, retries_taken: int,
                       max_bytes: int) -> tuple[int, Any, bytes]:
    """Send through the SDK transport's aiohttp session: status, headers, body (at most ``max_bytes``)."""
    try:
        async with route.session().request(route.method.upper(), route.url, data=payload,
                                           headers=route.headers(retries_taken), timeout=route.client_timeout,
                                           allow_redirects=False) as response:
            return response.status, response.headers, await wire.read_body(response, max_bytes)
    except TimeoutError:  # aiohttp's connect and read timeouts are TimeoutErrors
        raise Failure("timeout", f"no answer within {route.timeout} s") from None
    except aiohttp.ClientResponseError as exc:  # it answered, but not in HTTP we can read (a 200 KB header...)
        raise wire.Malformed(f"an HTTP answer that cannot be read ({str(exc.message)[:120]})") from None
    except (aiohttp.ClientError, OSError) as exc:  # refused, reset, dropped, truncated
        raise Failure("connection", f"{type(exc).__name__}: {str(exc)[:200]}") from None


#: asks the SDK for its raw response unread (what its ``with_streaming_response`` asks)
_STREAM_HEADER = {"X-Stainless-Raw-Response": "stream"}


async def _send_via_sdk(client: openai.AsyncOpenAI, method: str, path: str, body: dict[str, Any] | None,
                        timeout: float, retries_taken: int, max_bytes: int) -> tuple[int, Any, bytes]:
    """Send through ``client.post``/``client.get`` (the SDK's whole pipeline): status, headers, body.

    The body is streamed, and read no further than ``max_bytes``.
    """
    # our retries are not the SDK's (max_retries=0): tell the server the count, as the fast path does
    options = {"timeout": timeout, "headers": {"x-stainless-retry-count": str(retries_taken), **_STREAM_HEADER}}
    try:
        if method == "get":
            response = await client.get(path, cast_to=RawResponse, options=options)
        else:
            response = await client.post(path, body=body, cast_to=RawResponse, options=options)
        raw = getattr(response, "http_response", response)  # the SDK's streaming wrapper, or the response
        try:
            declared = raw.headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > max_bytes:
                raise wire.TooLarge(f"an answer of {int(declared):,} bytes, above --max-answer-bytes {max_bytes:,}")
            chunks, size = [], 0
            async for chunk in raw.aiter_bytes():
                size += len(chunk)
                if size > max_bytes:
                    raise wire.TooLarge(f"an answer of more than {max_bytes:,} bytes (--max-answer-bytes)")
                chunks.append(chunk)
        finally:
            await raw.aclose()
        return raw.status_code, raw.headers, b"".join(chunks)
    except openai.APIStatusError as exc:
        return exc.status_code, exc.response.headers, error_text(exc).encode("utf-8", "replace")[:max_bytes]
    except openai.APITimeoutError as exc:
        refused = _refused_connection(exc)
        if refused is None:
            raise Failure("timeout", f"no answer within {timeout} s") from None
        # the aiohttp transport reports a refused connection as a connect timeout
        raise Failure("connection", f"{type(refused).__name__}: {str(refused)[:200]}") from None
    except openai.APIConnectionError as exc:
        cause = exc.__cause__ or exc
        raise Failure("connection", f"{type(cause).__name__}: {str(cause)[:200]}") from None
    except (openai.OpenAIError, OSError, _httpx.HTTPError) as exc:  # a transport error the client did not map
        raise Failure("connection", f"{type(exc).__name__}: {str(exc)[:200]}") from None


def json_bytes(body: dict[str, Any]) -> bytes:
    """The body as the SDK serialises it (compact, UTF-8).

    orjson writes the same bytes as ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``
    for a request's values at a fifth of the CPU (5 against 24 us for a 2 KB prompt); what it
    refuses (an integer beyond 64 bits, a key that is not text, in ``--extra-body``) goes through
    ``json``.
    """
    try:
        return orjson.dumps(body)
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


async def send(client: openai.AsyncOpenAI, route: DirectRoute | None, method: str, path: str,
               body: dict[str, Any] | None, payload: bytes | None, timeout: float, retries_taken: int,
               max_bytes: int) -> tuple[int, Any, bytes]:
    """One attempt: status, headers and body (at most ``max_bytes``), over ``route``
    (``payload`` is ``body`` as ``json_bytes``) or, without one, through the SDK's
    ``client.post``/``client.get``; raises ``Failure`` when no HTTP answer came, and
    ``wire.TooLarge`` for a body over ``max_bytes``.

    ``timeout`` bounds the whole attempt as well as each read: a server that drips
    one byte every few seconds would otherwise hold a call (and its game) forever.
    A redirect is returned as it is, never followed.
    """
    try:
        async with asyncio.timeout(timeout):
            if route is not None:
                return await _send_direct(route, payload, retries_taken, max_bytes)
            return await _send_via_sdk(client, method, path, body, timeout, retries_taken, max_bytes)
    except TimeoutError:
        raise Failure("timeout", f"no whole answer within {timeout} s") from None


async def post(client: openai.AsyncOpenAI, route: DirectRoute | None, path: str, body: dict[str, Any],
               payload: bytes, timeout: float, retries_taken: int,
               max_bytes: int = wire.MAX_ANSWER_BYTES) -> tuple[int, Any, bytes]:
    """One POST attempt (see ``send``)."""
    return await send(client, route, "post", path, body, payload, timeout, retries_taken, max_bytes)


# -- what an answer means -------------------------------------------------------------------

#: kept here for callers of the transport; the parsing is the wire's
retry_after_s = wire.retry_after_s


def kind_of_status(status: int) -> str:
    if 300 <= status < 400:
        return "redirect"
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


def error_text(exc: openai.APIStatusError) -> str:
    try:
        return exc.response.text
    except Exception:  # noqa: BLE001 - a streamed or unreadable body: any failure to read it
        return str(exc.message)


