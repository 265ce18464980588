"""A hostile OpenAI-compatible server on loopback: every request answered by a handler of the test's choosing.

What ``scripted_server`` cannot say: bodies that break JSON, UTF-8 or HTTP itself, answers
that drip or never end, redirects to another host (127.0.0.2, still loopback), keys echoed
back. The server keeps every request it was sent (``hits``), so a test can tell whether a
prompt reached a host it should not have. Below it, what the adversarial suites share:
handlers of hostile answers, and ``play`` (a small LLM game against such a server).
"""

from __future__ import annotations

import asyncio
import io
import json
import socket
import threading
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

from aiohttp import web


def completion(text: str = '{"colour": "red", "reason": "r", "diary": "d"}', usage: Any = None,
               model: str = "m") -> dict[str, Any]:
    """An OpenAI chat completion of ``text`` (``usage``: the usage object, or the default)."""
    return {"id": "x", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5} if usage is None else usage}


def raw(text: str, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, text=text, content_type="application/json", headers=headers)


def is_probe(body: bytes) -> bool:
    """The pre-flight's 1-token test call (a game's calls never ask for one token)."""
    try:
        return json.loads(body).get("max_tokens") == 1
    except ValueError:
        return False


class HostileServer:
    """An aiohttp app on ``host`` (loopback), in its own thread, answering every request with ``handler``.

    ``GET /props`` (where llama.cpp's server says what it is; the pre-flight asks it) is answered 404,
    as most servers answer it, and not kept in ``hits``, unless ``props``: the handlers speak for the
    OpenAI routes, and count what reaches them."""

    def __init__(self, handler, host: str = "127.0.0.1", *, props: bool = False) -> None:
        self.handler, self.host, self.props = handler, host, props
        with socket.socket() as s:
            s.bind((host, 0))
            self.port = s.getsockname()[1]
        self.base_url = f"http://{host}:{self.port}/v1"
        self.hits: list[tuple[str, str, bytes]] = []
        self.ready = threading.Event()

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        if request.path == "/props" and not self.props:
            return web.Response(status=404)
        body = await request.read()
        self.hits.append((request.method, request.path, body))
        return await self.handler(request, body)

    def completions(self, *, probes: bool = False) -> list[bytes]:
        """The bodies of the completion requests it was sent (the pre-flight's test call left out)."""
        return [b for m, p, b in self.hits if m == "POST" and p.endswith("completions") and (probes or not is_probe(b))]

    def __enter__(self) -> HostileServer:
        app = web.Application(handler_args={"max_field_size": 1 << 20})
        app.router.add_route("*", "/{tail:.*}", self._dispatch)

        def serve() -> None:
            self.loop = asyncio.new_event_loop()
            self.runner = web.AppRunner(app, shutdown_timeout=0.5)
            self.loop.run_until_complete(self.runner.setup())
            self.loop.run_until_complete(web.TCPSite(self.runner, self.host, self.port).start())
            self.ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        self.ready.wait(10)
        return self

    def __exit__(self, *exc: Any) -> None:
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)


# -- what the adversarial suites drive: a game against such a server, and what it recorded -------------

SECRET = "sk-adversarial-NEVER-WRITE-ME-0123456789"
MOVE = '{"colour": "blue", "reason": "r", "diary": "d"}'


def game_handler(hostile):
    """/models lists "m", the pre-flight's test call is answered, every other call meets ``hostile``."""
    async def handler(request, body):
        if request.path.endswith("/models"):
            return web.json_response({"data": [{"id": "m"}]})
        if is_probe(body):
            return web.json_response(completion("x"))
        return await hostile(request, body)
    return handler


def answer(text: str, **kw):
    async def hostile(request, body):
        return web.json_response(completion(text, **kw))
    return hostile


def body_text(text: str, status: int = 200, headers=None):
    async def hostile(request, body):
        return raw(text, status, headers)
    return hostile


def echo_key():
    async def hostile(request, body):
        said = request.headers.get("Authorization", "")
        return web.json_response(completion(json.dumps({"colour": "red", "reason": f"I saw {said}", "diary": said,
                                                        "message": f"psst {said}"})))
    return hostile


def huge(n: int):
    async def hostile(request, body):
        return web.json_response(completion("x" * n))
    return hostile


def redirect_to(other):
    async def hostile(request, body):
        return web.Response(status=307, headers={"Location": f"{other.base_url}/chat/completions"})
    return hostile


def deep(n: int) -> str:
    return "[" * n + "]" * n


#: (id, the game's calls meet this, extra options, the failure kind of every call (None: calls succeed),
#:  decisions must fail (answers decided nothing), exit status)


def play(base_url, tmp_path, *extra, recording=("--record",)):
    """A 1-round, 8-agent consensus game of LLM agents against ``base_url``: (status, stdout, stderr)."""
    from llm_mesa.cli import main

    err, out = io.StringIO(), io.StringIO()
    argv = ["consensus", "--policy", "llm", "--base-url", base_url, "--model", "m", "--api-key-env", "ADVERSARIAL_KEY",
            "--n", "8", "--topology", "caveman", "--comm", "local", "--max-rounds", "1", "--max-attempts", "1",
            "--timeout", "10", recording[0], str(tmp_path / "calls.sqlite"), *recording[1:], "--out",
            str(tmp_path / "run"), "--json", *extra]
    with redirect_stderr(err), redirect_stdout(out):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def recorded(tmp_path) -> list[dict]:
    """The calls ``play`` recorded, decoded."""
    from llm_mesa.llm.store import ResponseStore

    path = tmp_path / "calls.sqlite"
    if not path.exists():
        return []
    store = ResponseStore(path, "replay")
    try:
        return store.rows()
    finally:
        store.close()
