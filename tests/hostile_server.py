"""A hostile OpenAI-compatible server on loopback: every request answered by a handler of the test's choosing.

What ``scripted_server`` cannot say: bodies that break JSON, UTF-8 or HTTP itself, answers
that drip or never end, redirects to another host (127.0.0.2, still loopback), keys echoed
back. The server keeps every request it was sent (``hits``), so a test can tell whether a
prompt reached a host it should not have.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
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
    """An aiohttp app on ``host`` (loopback), in its own thread, answering every request with ``handler``."""

    def __init__(self, handler, host: str = "127.0.0.1") -> None:
        self.handler, self.host = handler, host
        with socket.socket() as s:
            s.bind((host, 0))
            self.port = s.getsockname()[1]
        self.base_url = f"http://{host}:{self.port}/v1"
        self.hits: list[tuple[str, str, bytes]] = []
        self.ready = threading.Event()

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
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
