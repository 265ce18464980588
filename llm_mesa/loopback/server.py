"""The loopback endpoint: an OpenAI-compatible stand-in server for tests and dry runs.

It serves ``GET /v1/models``, ``POST /v1/chat/completions`` and
``POST /v1/completions`` with OpenAI-shaped answers computed by behaviours
(see ``behaviours``), plus latency and fault injection (see ``faults``), and
``GET /v1/control/stats``, ``POST /v1/control/reset`` and
``POST /v1/control/script`` for tests. It is not a language model and says so:
every answer carries ``system_fingerprint = "llm-mesa-loopback-<version>"``.

Use it from Python as a context manager (the server runs in a background thread
with its own event loop, so any client, sync or async, can call it)::

    with LoopbackServer(seed=1, latency=0.05) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="none")
"""

from __future__ import annotations

import asyncio
import errno
import hashlib
import json
import random
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
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
    count_tokens_cached,
    cut_to_tokens,
    listed_behaviours,
)
from llm_mesa.loopback.faults import FaultSettings, LoopbackError, draw_fault

try:
    VERSION = metadata.version("llm-mesa")
except metadata.PackageNotFoundError:  # running from a bare checkout
    VERSION = "0+unknown"

#: every answer says it came from this stand-in, never from a real model
SYSTEM_FINGERPRINT = f"llm-mesa-loopback-{VERSION}"
OWNER = "llm-mesa-loopback (stand-in, not a language model)"

#: how llama-cpp-python's server refuses response_format json_schema: its pydantic
#: validation error, wrapped by its route error handler as an HTTP 500
LLAMA_CPP_JSON_SCHEMA_REJECTION = (
    "[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}]"
)

_JSON = "application/json"
_DEFAULT_OF_TYPE = {"string": "", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}


def _error(status: int, message: str, kind: str, code: str | None = None,
           param: str | None = None, headers: dict[str, str] | None = None) -> web.Response:
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return web.Response(status=status, body=json.dumps(body).encode(), content_type=_JSON,
                        headers=headers)


class _BadRequest(LoopbackError):
    """A request the endpoint cannot answer (HTTP 400)."""

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


class _RejectJsonSchema(Exception):
    """Raised under --reject-json-schema for a json_schema response_format."""


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


def _content_text(content: Any) -> str:
    """Message content as text: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content
                       if isinstance(part, dict) and isinstance(part.get("text", ""), str))
    raise _BadRequest("message content must be a string or a list of text parts", "messages")


def _read_prompt(body: dict[str, Any], chat: bool) -> tuple[PromptView, str, int]:
    """The prompt as behaviours see it, as one text (hashed), and its token count.

    A chat prompt is counted message by message (the role is one more piece),
    which equals counting the joined text; recurring messages are counted once.
    """
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise _BadRequest("'messages' must be a non-empty list of {role, content}", "messages")
        parts, last_user, tokens = [], "", 0
        for message in messages:
            if not isinstance(message, dict):
                raise _BadRequest("each message must be an object with role and content", "messages")
            text = _content_text(message.get("content"))
            role = str(message.get("role", "user"))
            if role == "user":
                last_user = text
            parts.append(f"{role}\n{text}")
            tokens += count_tokens_cached(role) + count_tokens_cached(text)
        full = "\n".join(parts)
        return PromptView(last_user=last_user, full=full, chat=True), full, tokens
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str):
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise _BadRequest("'prompt' must be one string (the loopback endpoint answers one "
                          "prompt per request)", "prompt")
    return PromptView(last_user=prompt, full=prompt, chat=False), prompt, count_tokens(prompt)


def _token_limit(body: dict[str, Any]) -> int | None:
    limits = [body.get(k) for k in ("max_tokens", "max_completion_tokens") if body.get(k) is not None]
    for limit in limits:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise _BadRequest("max_tokens / max_completion_tokens must be an integer >= 1", "max_tokens")
    return min(limits) if limits else None


def _stop_sequences(body: dict[str, Any]) -> tuple[str, ...]:
    stop = body.get("stop")
    if stop is None:
        return ()
    if isinstance(stop, str):
        return (stop,) if stop else ()
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        return tuple(s for s in stop if s)
    raise _BadRequest("'stop' must be a string or a list of strings", "stop")


def shape_to_schema(answer: dict[str, Any], schema: dict[str, Any],
                    aliases: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Fit a JSON answer to the properties a response_format schema asks for.

    Keys the schema names come first, in its order (a key the answer lacks is read
    from its alias in ``aliases``, the behaviour's ``schema_aliases``); required keys
    the answer still lacks get an empty value of their type; other keys are dropped
    when the schema sets ``additionalProperties: false``.
    """
    aliases = aliases or {}
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return answer
    required = set(schema.get("required") or ())
    shaped: dict[str, Any] = {}
    for key, spec in properties.items():
        source = key if key in answer else aliases.get(key, key)
        if source in answer:
            shaped[key] = answer[source]
        elif key in required:
            kind = spec.get("type") if isinstance(spec, dict) else None
            shaped[key] = None if isinstance(kind, list) and "null" in kind else _DEFAULT_OF_TYPE.get(kind)
    if schema.get("additionalProperties", True) is not False:
        used = {aliases.get(k, k) for k in properties} | set(properties)
        shaped.update({k: v for k, v in answer.items() if k not in used})
    return shaped


class LoopbackServer:
    """The loopback endpoint; a context manager running it in a background thread.

    ``defaults`` are server-wide fault settings (``latency``, ``jitter``,
    ``p429``, ``retry_after``, ``p500``, ``ptimeout``, ``timeout_s``,
    ``pmalformed``, ``pdrop``, ``ptruncate``, ``fail_first``, ``fault``); a
    model name's own parameters override them.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, seed: int = 0, *,
                 script: str | Path | list | dict | None = None,
                 reject_json_schema: bool = False, require_api_key: str | None = None,
                 **defaults: Any):
        self.host = host
        self.port = port
        self.seed = int(seed)
        self.reject_json_schema = reject_json_schema
        self.require_api_key = require_api_key
        self._expected_auth = f"Bearer {require_api_key}" if require_api_key is not None else None
        self.defaults = FaultSettings().with_overrides(defaults, where=" (server default)")
        self.scripts = ScriptBook()
        if script is not None:
            self.scripts.load(_read_script(script) if isinstance(script, (str, Path)) else script,
                              where=f"script {script}" if isinstance(script, (str, Path)) else "script")
        self._routes: dict[str, _Route] = {}
        self._reset_state()
        self._runner: web.AppRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._startup_error: BaseException | None = None

    # ------------------------------------------------------------ state

    def _reset_state(self) -> None:
        self.stats_counters = LoopbackStats()
        self._fault_rng = random.Random(f"faults:{self.seed}")
        self._jitter_rng = random.Random(f"jitter:{self.seed}")
        self._attempts: dict[bytes, int] = {}
        self._request_number = 0
        self.scripts.rewind()

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1``, the base URL an OpenAI client takes."""
        return f"http://{self.host}:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        """A snapshot of the counters (safe to call from any thread)."""
        return self._in_loop(lambda: self.stats_counters.snapshot())

    def reset(self) -> None:
        """Zero the counters, restart the fault stream, fail_first tallies and scripts."""
        self._in_loop(self._reset_state)

    def set_script(self, script: list | dict) -> None:
        """Add scripted answers (a list for model ``scripted``, or {model: list})."""
        self._in_loop(lambda: self.scripts.load(script))

    def _in_loop(self, fn: Callable[[], Any]) -> Any:
        loop = self._loop
        if loop is None or not loop.is_running() or threading.current_thread() is self._thread:
            return fn()

        async def call() -> Any:
            return fn()

        return asyncio.run_coroutine_threadsafe(call(), loop).result(timeout=10)

    # ------------------------------------------------------------ running

    def build_app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/v1/models/{model:.+}", self._model)
        app.router.add_get("/v1/control/stats", self._control_stats)
        app.router.add_post("/v1/control/reset", self._control_reset)
        app.router.add_post("/v1/control/script", self._control_script)
        return app

    async def _start_site(self) -> None:
        runner = web.AppRunner(self.build_app(), access_log=None, handler_cancellation=True,
                               shutdown_timeout=0.25)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            if exc.errno == errno.EADDRINUSE:
                raise LoopbackError(f"port {self.port} on {self.host} is taken; choose another with "
                                    "--port, or --port 0 for any free port") from None
            raise LoopbackError(f"cannot listen on {self.host}:{self.port} ({exc.strerror}); "
                                "check --host and --port") from None
        self._runner = runner
        self.port = runner.addresses[0][1]

    def start(self) -> LoopbackServer:
        """Start serving in a background thread; returns once the port is bound."""
        if self._thread is not None:
            return self
        ready = threading.Event()

        def main() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._start_site())
            except BaseException as exc:  # handed to the starting thread
                self._startup_error = exc
                loop.close()
                ready.set()
                return
            self._loop = loop
            ready.set()
            try:
                loop.run_forever()
            finally:
                assert self._runner is not None
                loop.run_until_complete(self._runner.cleanup())
                loop.close()

        self._thread = threading.Thread(target=main, name="llm-mesa-loopback", daemon=True)
        self._thread.start()
        ready.wait()
        if self._startup_error is not None:
            self._thread.join()
            self._thread = None
            error, self._startup_error = self._startup_error, None
            raise error
        return self

    def stop(self) -> None:
        """Stop the background server (in-flight requests are cancelled)."""
        thread, loop = self._thread, self._loop
        if thread is None or loop is None:
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        self._thread = self._loop = self._runner = None

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    def serve_forever(self, on_ready: Callable[[LoopbackServer], None] | None = None) -> None:
        """Serve in this thread until interrupted; ``on_ready`` runs once the port is bound."""

        async def serve() -> None:
            await self._start_site()
            self._loop = asyncio.get_running_loop()
            try:
                if on_ready is not None:
                    on_ready(self)
                await asyncio.Event().wait()
            finally:
                assert self._runner is not None
                await self._runner.cleanup()
                self._loop = self._runner = None

        asyncio.run(serve())

    # ------------------------------------------------------------ handlers

    def _authorised(self, request: web.Request) -> bool:
        return self._expected_auth is None or request.headers.get("Authorization") == self._expected_auth

    def _unauthorised(self) -> web.Response:
        self.stats_counters.rejected["auth"] += 1
        return _error(401, "Incorrect API key provided; send the key given to --require-api-key "
                      "as 'Authorization: Bearer KEY'", "invalid_request_error", "invalid_api_key")

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        return await self._inference(request, chat=True)

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        return await self._inference(request, chat=False)

    def _route(self, model: str) -> _Route:
        route = self._routes.get(model)
        if route is None:
            behaviour, settings = build_behaviour(model, self.defaults, self.scripts)
            route = _Route(behaviour, settings, settings.stacked_thresholds())
            if len(self._routes) < 100_000:
                self._routes[model] = route
        return route

    def _response_schema(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """None for free text; a schema dict ({} when none is given) for JSON answers."""
        response_format = body.get("response_format")
        if response_format is None:
            return None
        if not isinstance(response_format, dict):
            raise _BadRequest("response_format must be an object with a 'type'", "response_format")
        kind = response_format.get("type")
        if kind == "text":
            return None
        if kind == "json_schema":
            if self.reject_json_schema:
                raise _RejectJsonSchema
            wrapper = response_format.get("json_schema")
            schema = wrapper.get("schema") if isinstance(wrapper, dict) else None
            return schema if isinstance(schema, dict) else {}
        if kind == "json_object":
            schema = response_format.get("schema")  # llama-cpp-python's dialect
            return schema if isinstance(schema, dict) else {}
        raise _BadRequest(f"response_format type {kind!r} must be 'text', 'json_object' or "
                          "'json_schema'", "response_format")

    async def _inference(self, request: web.Request, chat: bool) -> web.StreamResponse:
        stats = self.stats_counters
        if not self._authorised(request):
            return self._unauthorised()
        try:
            body = json.loads(await request.read())
            if not isinstance(body, dict):
                raise ValueError
        except ValueError:
            stats.rejected["bad_request"] += 1
            return _error(400, "the request body must be a JSON object", "invalid_request_error")
        model = body.get("model")
        try:
            if not isinstance(model, str) or not model:
                raise _BadRequest("give 'model', a behaviour name such as 'echo' or 'fixed?text=hi' "
                                  "(GET /v1/models lists them all)", "model")
            route = self._route(model)
            prompt, prompt_text, prompt_tokens = _read_prompt(body, chat)
            limit = _token_limit(body)
            stops = _stop_sequences(body)
            schema = self._response_schema(body)
            if body.get("n", 1) != 1:
                raise _BadRequest("the loopback endpoint answers n=1 only", "n")
            if body.get("stream"):
                raise _BadRequest("the loopback endpoint does not stream; send stream=false", "stream")
        except BehaviourNotFound as exc:
            stats.rejected["unknown_model"] += 1
            return _error(404, str(exc), "invalid_request_error", "model_not_found", "model")
        except _RejectJsonSchema:
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

    async def _answer(self, request: web.Request, body: dict[str, Any], model: str, route: _Route,
                      prompt: PromptView, prompt_text: str, prompt_tokens: int, limit: int | None,
                      stops: tuple[str, ...], schema: dict[str, Any] | None,
                      chat: bool) -> web.StreamResponse:
        stats = self.stats_counters
        settings = route.settings
        fault = self._pick_fault(route, model, prompt_text)
        delay = settings.latency + (self._jitter_rng.random() * settings.jitter if settings.jitter else 0.0)
        if delay > 0.0:
            await asyncio.sleep(delay)
        if fault is not None:
            stats.by_fault[fault] += 1
        if fault == "drop":
            return _drop_connection(request)
        if fault == "timeout":
            await asyncio.sleep(settings.timeout_s)  # the client has given up by now
        elif fault == "429":
            retry = f"{settings.retry_after:g}"
            return _error(429, "loopback: injected rate limit; retry after the Retry-After header",
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
                text = json.dumps(shape_to_schema(result, schema, behaviour.schema_aliases) if schema else result)
            else:
                text = result
        finish_reason = "stop"
        if stops:
            cut_at = min((i for i in (text.find(s) for s in stops) if i >= 0), default=-1)
            if cut_at >= 0:
                text = text[:cut_at]
        if fault == "truncate":
            text, _ = cut_to_tokens(text, count_tokens(text) // 2)
            finish_reason = "length"
        if limit is not None:
            text, was_cut = cut_to_tokens(text, limit)
            if was_cut:
                finish_reason = "length"

        completion_tokens = count_tokens(text)
        stats.answered += 1
        stats.prompt_tokens += prompt_tokens
        stats.completion_tokens += completion_tokens
        stats.finish_reasons[finish_reason] += 1
        self._request_number += 1
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                 "total_tokens": prompt_tokens + completion_tokens}
        if chat:
            choice = {"index": 0, "message": {"role": "assistant", "content": text, "refusal": None},
                      "logprobs": None, "finish_reason": finish_reason}
            answer = {"id": f"chatcmpl-loopback-{self._request_number}", "object": "chat.completion"}
        else:
            choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason}
            answer = {"id": f"cmpl-loopback-{self._request_number}", "object": "text_completion"}
        answer.update(created=int(time.time()), model=model, system_fingerprint=SYSTEM_FINGERPRINT,
                      choices=[choice], usage=usage)
        return web.Response(body=json.dumps(answer).encode(), content_type=_JSON)

    def _model_entry(self, model_id: str, summary: str) -> dict[str, Any]:
        return {"id": model_id, "object": "model", "created": 0, "owned_by": OWNER,
                "stand_in": True, "description": summary}

    async def _models(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return self._unauthorised()
        data = [self._model_entry(m, s) for m, s in listed_behaviours().items()]
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
        return web.json_response(self._model_entry(model, type(route.behaviour).__doc__ or ""))

    async def _control_stats(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return self._unauthorised()
        snapshot = self.stats_counters.snapshot()
        snapshot["scripts_remaining"] = self.scripts.remaining()
        snapshot["seed"] = self.seed
        return web.json_response(snapshot)

    async def _control_reset(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return self._unauthorised()
        self._reset_state()
        return web.json_response({"reset": True})

    async def _control_script(self, request: web.Request) -> web.Response:
        if not self._authorised(request):
            return self._unauthorised()
        try:
            self.scripts.load(json.loads(await request.read()), where="POST /v1/control/script")
        except (ValueError, LoopbackError) as exc:
            return _error(400, str(exc), "invalid_request_error")
        return web.json_response({"scripts_remaining": self.scripts.remaining()})


def _drop_connection(request: web.Request) -> web.StreamResponse:
    """Close the connection without an answer (the client sees a disconnect)."""
    transport = request.transport
    if transport is not None:
        transport.abort()
    raise asyncio.CancelledError  # aiohttp drops a cancelled handler's connection silently


def _read_script(path: str | Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise LoopbackError(f"cannot read script {path} ({exc.strerror}); check --script") from None
    except ValueError as exc:
        raise LoopbackError(f"script {path} is not valid JSON ({exc}); fix the file") from None
