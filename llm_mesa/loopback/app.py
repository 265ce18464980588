"""The loopback endpoint's aiohttp application: its routes and the state they share.

``LoopbackApp`` answers ``POST /v1/chat/completions`` and ``POST /v1/completions``
(a behaviour named by the request's model, with latency and faults drawn from the
seeded streams), ``GET /v1/models[/NAME]``, ``GET /props`` (what it is, where
llama.cpp's llama-server says what it is) and the test controls
``GET /v1/control/stats``, ``POST /v1/control/reset`` and
``POST /v1/control/script``. Its state (counters, fault and jitter streams,
fail_first tallies) lives in the server's event loop; ``LoopbackServer`` runs it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from llm_mesa.loopback.behaviours import (
    Behaviour,
    BehaviourNotFound,
    PromptNotUnderstood,
    PromptView,
    ScriptBook,
    ScriptExhausted,
    build_behaviour,
    count_tokens,
    listed_behaviours,
)
from llm_mesa.loopback.faults import FaultSettings, LoopbackError, draw_fault
from llm_mesa.loopback.protocol import (
    LLAMA_CPP_JSON_SCHEMA_REJECTION,
    BadRequest,
    RejectJsonSchema,
    SchemaMismatch,
    completion_body,
    error_body,
    fit_text,
    model_entry,
    parse_json,
    read_prompt,
    response_schema,
    server_props,
    shape_to_schema,
    stop_sequences,
    token_limit,
)

_JSON = "application/json"
_MAX_CACHED_ROUTES = 100_000

#: largest request body served (bytes; ``max_body_bytes``, ``serve --max-body-bytes``):
#: a larger one is a 413, refused on its Content-Length before it is read
MAX_BODY_BYTES = 1024 * 1024
#: seconds a request body may take to arrive in full (``read_timeout``,
#: ``serve --read-timeout``): a stalled or trickling body is a 408; an idle
#: connection, or one whose headers never end, is closed after as long
DEFAULT_READ_TIMEOUT_S = 30.0
#: after refusing a body unread (413, 408), seconds the server keeps discarding what
#: the client still sends, so a client busy writing its body can read the refusal
LINGER_S = 1.0


class _Refused(Exception):
    """A request refused before its body was read; carries the response."""

    def __init__(self, response: web.Response):
        super().__init__(response.status)
        self.response = response


def _error(status: int, message: str, kind: str, code: str | None = None,
           param: str | None = None, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, body=error_body(message, kind, code, param), content_type=_JSON,
                        headers=headers)


@dataclass(slots=True)
class _Route:
    """A model name resolved once: its behaviour and fault settings."""

    behaviour: Behaviour
    settings: FaultSettings
    thresholds: tuple[tuple[str, float], ...]


class LoopbackStats:
    """Counters a test reads to check exactly what happened."""

    def __init__(self) -> None:
        self.requests = 0
        self.answered = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.by_endpoint: Counter[str] = Counter()
        self.by_behaviour: Counter[str] = Counter()
        self.by_fault: Counter[str] = Counter()
        self.rejected: Counter[str] = Counter()
        self.finish_reasons: Counter[str] = Counter()

    def snapshot(self) -> dict[str, Any]:
        return {
            "requests": self.requests, "answered": self.answered,
            "in_flight": self.in_flight, "max_in_flight": self.max_in_flight,
            "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
            "by_endpoint": dict(self.by_endpoint), "by_behaviour": dict(self.by_behaviour),
            "by_fault": dict(self.by_fault), "rejected": dict(self.rejected),
            "finish_reasons": dict(self.finish_reasons),
        }


class LoopbackApp:
    """The routes of the endpoint, and the counters and seeded streams they share."""

    def __init__(self, seed: int, defaults: FaultSettings, scripts: ScriptBook, *,
                 reject_json_schema: bool = False, api_key: str | None = None,
                 max_body_bytes: int = MAX_BODY_BYTES, read_timeout: float = DEFAULT_READ_TIMEOUT_S):
        self.seed = seed
        self.defaults = defaults
        self.scripts = scripts
        self.reject_json_schema = reject_json_schema
        self.max_body_bytes = max_body_bytes
        self.read_timeout = read_timeout
        self._expected_auth = f"Bearer {api_key}" if api_key is not None else None
        self._routes: dict[str, _Route] = {}
        self.reset()

    def reset(self) -> None:
        """Zero the counters, restart the fault stream, fail_first tallies and scripts."""
        self.stats = LoopbackStats()
        self._fault_rng = random.Random(f"faults:{self.seed}")
        self._jitter_rng = random.Random(f"jitter:{self.seed}")
        self._attempts: dict[bytes, int] = {}
        self._request_number = 0
        self.scripts.rewind()

    def build(self) -> web.Application:
        app = web.Application(client_max_size=self.max_body_bytes)
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/v1/models/{model:.+}", self._model)
        app.router.add_get("/props", self._props)
        app.router.add_get("/v1/control/stats", self._control_stats)
        app.router.add_post("/v1/control/reset", self._control_reset)
        app.router.add_post("/v1/control/script", self._control_script)
        return app

    def runner_settings(self) -> dict[str, Any]:
        """``web.AppRunner`` keywords bounding how long a connection may hold the server."""
        return {"keepalive_timeout": self.read_timeout, "lingering_time": LINGER_S}

    # ------------------------------------------------------------ routing and draws

    def _route(self, model: str) -> _Route:
        route = self._routes.get(model)
        if route is None:
            behaviour, settings = build_behaviour(model, self.defaults, self.scripts)
            route = _Route(behaviour, settings, settings.stacked_thresholds())
            if len(self._routes) < _MAX_CACHED_ROUTES:
                self._routes[model] = route
        return route

    def _pick_fault(self, route: _Route, model: str, prompt_text: str) -> str | None:
        draw = self._fault_rng.random()  # one draw per request, always: counts stay exact
        settings = route.settings
        if settings.fail_first:
            key = hashlib.blake2b(f"{model}\x00{prompt_text}".encode(), digest_size=16).digest()
            attempts = self._attempts.get(key, 0)
            self._attempts[key] = attempts + 1
            if attempts < settings.fail_first:
                return settings.fault
        return draw_fault(route.thresholds, draw) if route.thresholds else None

    def _request_rng(self, body: dict[str, Any], prompt_text: str) -> random.Random:
        """Seeded by (server seed, request seed, prompt): same request, same answer."""
        digest = hashlib.blake2b(f"{self.seed}\x00{body.get('seed')}\x00{prompt_text}".encode(),
                                 digest_size=8).digest()
        return random.Random(int.from_bytes(digest, "big"))

    # ------------------------------------------------------------ handlers

    async def _read_body(self, request: web.Request) -> bytes:
        """The whole body, within the size cap and the read timeout (else ``_Refused``)."""
        declared = request.content_length
        if declared is not None and declared > self.max_body_bytes:
            raise _Refused(self._too_large())
        try:
            async with asyncio.timeout(self.read_timeout):
                return await request.read()
        except web.HTTPRequestEntityTooLarge:  # a chunked body that grew past the cap
            raise _Refused(self._too_large()) from None
        except TimeoutError:
            self.stats.rejected["read_timeout"] += 1
            response = _error(408, f"the request body did not arrive within the read timeout of "
                              f"{self.read_timeout:g} s (serve --read-timeout)", "invalid_request_error",
                              "request_timeout")
            response.force_close()
            raise _Refused(response) from None

    def _too_large(self) -> web.Response:
        self.stats.rejected["too_large"] += 1
        response = _error(413, f"the request body is larger than the loopback endpoint's cap of "
                          f"{self.max_body_bytes} bytes (serve --max-body-bytes)", "invalid_request_error",
                          "request_too_large")
        response.force_close()
        return response

    def _authorised(self, request: web.Request) -> bool:
        return self._expected_auth is None or request.headers.get("Authorization") == self._expected_auth

    def _unauthorised(self) -> web.Response:
        self.stats.rejected["auth"] += 1
        return _error(401, "Incorrect API key provided; send the key the server was given "
                      "as 'Authorization: Bearer KEY'", "invalid_request_error", "invalid_api_key")

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        return await self._inference(request, chat=True)

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        return await self._inference(request, chat=False)

    async def _inference(self, request: web.Request, chat: bool) -> web.StreamResponse:
        stats = self.stats
        if not self._authorised(request):
            return self._unauthorised()
        try:
            body = parse_json(await self._read_body(request))
            if not isinstance(body, dict):
                raise BadRequest("the request body must be a JSON object")
        except _Refused as refused:
            return refused.response
        except BadRequest as exc:
            stats.rejected["bad_request"] += 1
            return _error(400, str(exc), "invalid_request_error")
        model = body.get("model")
        try:
            if not isinstance(model, str) or not model:
                raise BadRequest("give 'model', a behaviour name such as 'echo' or 'fixed?text=hi' "
                                 "(GET /v1/models lists them all)", "model")
            route = self._route(model)
            prompt, prompt_text, prompt_tokens = read_prompt(body, chat)
            limit = token_limit(body)
            stops = stop_sequences(body)
            schema = response_schema(body, self.reject_json_schema)
            if body.get("n", 1) != 1:
                raise BadRequest("the loopback endpoint answers n=1 only", "n")
            if body.get("stream"):
                raise BadRequest("the loopback endpoint does not stream; send stream=false", "stream")
        except BehaviourNotFound as exc:
            stats.rejected["unknown_model"] += 1
            return _error(404, str(exc), "invalid_request_error", "model_not_found", "model")
        except RejectJsonSchema:
            stats.rejected["json_schema"] += 1
            return _error(500, LLAMA_CPP_JSON_SCHEMA_REJECTION, "internal_server_error")
        except LoopbackError as exc:
            stats.rejected["bad_request"] += 1
            return _error(400, str(exc), "invalid_request_error", None, getattr(exc, "param", None))

        stats.requests += 1
        stats.by_endpoint["chat" if chat else "completions"] += 1
        stats.by_behaviour[route.behaviour.kind] += 1
        stats.in_flight += 1
        if stats.in_flight > stats.max_in_flight:
            stats.max_in_flight = stats.in_flight
        try:
            return await self._answer(request, body, model, route, prompt, prompt_text,
                                      prompt_tokens, limit, stops, schema, chat)
        finally:
            stats.in_flight -= 1

    async def _answer(self, request: web.Request, body: dict[str, Any], model: str, route: _Route,
                      prompt: PromptView, prompt_text: str, prompt_tokens: int, limit: int | None,
                      stops: tuple[str, ...], schema: dict[str, Any] | None,
                      chat: bool) -> web.StreamResponse:
        stats = self.stats
        settings = route.settings
        fault = self._pick_fault(route, model, prompt_text)
        if settings.capacity and stats.in_flight > settings.capacity:  # a full server refuses at once
            fault = "capacity"
        delay = settings.latency + (self._jitter_rng.random() * settings.jitter if settings.jitter else 0.0)
        if settings.slowdown and fault != "capacity":  # and a loaded one answers more slowly
            delay *= 1.0 + settings.slowdown * stats.in_flight / settings.capacity
        if delay > 0.0 and fault != "capacity":
            await asyncio.sleep(delay)
        if fault is not None:
            stats.by_fault[fault] += 1
        if fault == "drop":
            return _drop_connection(request)
        if fault == "timeout":
            await asyncio.sleep(settings.timeout_s)  # the client has given up by now
        elif fault in ("429", "capacity"):
            retry = f"{settings.retry_after:g}"
            reason = (f"loopback: {settings.capacity} calls in flight, at capacity" if fault == "capacity"
                      else "loopback: injected rate limit")
            return _error(429, f"{reason}; retry after the Retry-After header",
                          "rate_limit_error", "rate_limit_exceeded",
                          headers={"Retry-After": retry,
                                   "retry-after-ms": str(round(settings.retry_after * 1000))})
        elif fault == "500":
            return _error(500, "loopback: injected server error", "server_error", "server_error")

        behaviour = route.behaviour
        rng = self._request_rng(body, prompt_text) if behaviour.uses_rng or fault == "malformed" else None
        if fault == "malformed":
            assert rng is not None
            text = behaviour.malformed(prompt, rng)
        else:
            try:
                result = behaviour.answer(prompt, rng)
            except (PromptNotUnderstood, ScriptExhausted) as exc:
                stats.rejected["prompt_not_understood" if isinstance(exc, PromptNotUnderstood)
                               else "script_exhausted"] += 1
                return _error(400, str(exc), "invalid_request_error", None, "messages" if chat else "prompt")
            if isinstance(result, dict):
                try:
                    text = json.dumps(shape_to_schema(result, schema, behaviour.schema_aliases) if schema else result)
                except SchemaMismatch as exc:  # never an answer outside the schema asked for
                    stats.rejected["schema_mismatch"] += 1
                    return _error(500, f"{exc} (behaviour {behaviour.kind})", "server_error", "stand_in_bug")
            else:
                text = result
        text, finish_reason = fit_text(text, stops, limit, truncate=fault == "truncate")

        completion_tokens = count_tokens(text)
        stats.answered += 1
        stats.prompt_tokens += prompt_tokens
        stats.completion_tokens += completion_tokens
        stats.finish_reasons[finish_reason] += 1
        self._request_number += 1
        answer = completion_body(self._request_number, model, text, finish_reason, prompt_tokens,
                                 completion_tokens, chat)
        return web.Response(body=json.dumps(answer).encode(), content_type=_JSON)

    async def _models(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return self._unauthorised()
        data = [model_entry(m, s) for m, s in listed_behaviours().items()]
        return web.json_response({"object": "list", "data": data})

    async def _model(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return self._unauthorised()
        model = request.match_info["model"]
        try:
            route = self._route(model)
        except BehaviourNotFound as exc:
            return _error(404, str(exc), "invalid_request_error", "model_not_found", "model")
        except LoopbackError as exc:
            return _error(400, str(exc), "invalid_request_error", None, "model")
        return web.json_response(model_entry(model, type(route.behaviour).__doc__ or ""))

    async def _props(self, request: web.Request) -> web.Response:
        """What the server says of itself, where llama.cpp's llama-server says it: its build, no model file."""
        if not self._authorised(request):
            return self._unauthorised()
        return web.json_response(server_props())

    async def _control_stats(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return self._unauthorised()
        snapshot = self.stats.snapshot()
        snapshot["scripts_remaining"] = self.scripts.remaining()
        snapshot["seed"] = self.seed
        return web.json_response(snapshot)

    async def _control_reset(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return self._unauthorised()
        self.reset()
        return web.json_response({"reset": True})

    async def _control_script(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return self._unauthorised()
        try:
            self.scripts.load(parse_json(await self._read_body(request)), where="POST /v1/control/script")
        except _Refused as refused:
            return refused.response
        except LoopbackError as exc:
            return _error(400, str(exc), "invalid_request_error")
        return web.json_response({"scripts_remaining": self.scripts.remaining()})


def _drop_connection(request: web.Request) -> web.StreamResponse:
    """Close the connection without an answer (the client sees a disconnect)."""
    transport = request.transport
    if transport is not None:
        transport.abort()
    raise asyncio.CancelledError  # aiohttp drops a cancelled handler's connection silently
