"""A scripted OpenAI-compatible server: the transport tests' fixture.

Each request takes the next step of a script (a rate limit with Retry-After, a
500 or 503, a stall, a dropped connection, a given answer) and then answers
normally; the server records every request body and its headers. It covers
what the project's loopback endpoint (``llm_mesa.loopback``) does not express:
arbitrary statuses in a given order, a server without ``/v1/models``, one that
refuses every ``response_format``, and a look at exactly what the client sent.
Tests whose scenario the loopback endpoint can express use it instead.
"""

from __future__ import annotations

import asyncio
import collections
import json
import socket
import threading
from typing import Any

from aiohttp import web

DEFAULT_TEXT = '{"answer": "red"}'


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def completion_body(model: str, text: str, finish_reason: str = "stop", chat: bool = True,
                    prompt_tokens: int = 10, completion_tokens: int = 5) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "finish_reason": finish_reason}
    if chat:
        choice["message"] = {"role": "assistant", "content": text}
    else:
        choice["text"] = text
    return {"id": "cmpl-scripted", "object": "chat.completion" if chat else "text_completion", "created": 0,
            "model": model, "system_fingerprint": "fp_scripted", "choices": [choice],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


class ScriptedServer:
    """Loopback server whose next answers are scripted steps (then normal answers).

    Steps (dicts): ``{"status": 429, "headers": {...}, "body": "..."}``;
    ``{"sleep": s}`` (stall, then answer); ``{"drop": True}`` (close the connection);
    ``{"text": "...", "finish_reason": "length"}`` (a given answer).
    """

    def __init__(self, *, models: tuple[str, ...] = ("scripted",), delay_s: float = 0.0,
                 reject_json_schema: bool = False, reject_response_format: bool = False,
                 serve_models: bool = True, port: int | None = None) -> None:
        self.models = models
        self.delay_s = delay_s
        self.reject_json_schema = reject_json_schema
        self.reject_response_format = reject_response_format
        self.serve_models = serve_models
        self.port = port or free_port()
        self.script: collections.deque[dict[str, Any]] = collections.deque()
        self.default_text = DEFAULT_TEXT
        self.hits = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.record_requests = True
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def then(self, *steps: dict[str, Any]) -> "ScriptedServer":
        self.script.extend(steps)
        return self

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        return app

    async def _models(self, request: web.Request) -> web.Response:
        if not self.serve_models:
            return web.json_response({"error": {"message": "not found"}}, status=404)
        return web.json_response({"object": "list", "data": [{"id": m, "object": "model"} for m in self.models]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await self._answer(request, chat=True)

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        return await self._answer(request, chat=False)

    async def _answer(self, request: web.Request, chat: bool) -> web.StreamResponse:
        self.hits += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            body = json.loads(await request.read())
            if self.record_requests:
                self.requests.append(body)
                self.headers.append(dict(request.headers))
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            if self.serve_models and body.get("model") not in self.models:
                return web.json_response({"error": {"message": f"model {body.get('model')!r} not found"}},
                                         status=404)
            fmt = body.get("response_format") or {}
            if self.reject_json_schema and fmt.get("type") not in (None, "text", "json_object"):
                # what llama-cpp-python's server answers to a json_schema response_format
                return web.json_response({"detail": [{"type": "literal_error", "loc": ["body", "response_format", "type"],
                                                      "msg": "Input should be 'text' or 'json_object'"}]}, status=500)
            if self.reject_response_format and fmt:
                return web.json_response({"error": {"message": "response_format is not supported"}}, status=400)
            step = self.script.popleft() if self.script else {}
            if "sleep" in step:
                await asyncio.sleep(step["sleep"])
            if step.get("drop"):
                request.transport.abort()
                return web.Response()
            if "status" in step:
                return web.Response(status=step["status"], text=step.get("body", '{"error": {"message": "scripted"}}'),
                                    headers=step.get("headers"), content_type="application/json")
            text = step.get("text", self.default_text)
            return web.json_response(completion_body(body.get("model", ""), text,
                                                     step.get("finish_reason", "stop"), chat))
        finally:
            self.in_flight -= 1

    # -- running in a thread ---------------------------------------------------------------
    def start(self) -> "ScriptedServer":
        ready = threading.Event()

        def serve() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            self._runner = web.AppRunner(self.app(), access_log=None)
            loop.run_until_complete(self._runner.setup())
            loop.run_until_complete(web.TCPSite(self._runner, "127.0.0.1", self.port).start())
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=serve, name=f"scripted-server-{self.port}", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError(f"scripted server did not start on port {self.port}")
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def __enter__(self) -> "ScriptedServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
