"""Hostile servers over real sockets: HTML answers, a dripping body, a hung server, an error echoing the key."""

from __future__ import annotations

import asyncio
import json
import socket
import threading

import pytest
from aiohttp import web

from llm_mesa.cli import main
from llm_mesa.llm.client import LLMRequest, complete, preflight
from llm_mesa.llm.endpoint import Endpoint, EndpointError
from llm_mesa.llm.runtime import run_sync
from llm_mesa.llm.store import ResponseStore

SECRET = "sk-test-NEVER-WRITE-ME-0123456789"
BOUND_S = 20  # no call may outlive this, whatever the server does


class HostileServer:
    """An aiohttp app on loopback, in its own thread, answering every request with ``handler``."""

    def __init__(self, handler):
        self.handler = handler
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.ready = threading.Event()

    def __enter__(self):
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handler)

        def serve():
            self.loop = asyncio.new_event_loop()
            self.runner = web.AppRunner(app, shutdown_timeout=0.5)
            self.loop.run_until_complete(self.runner.setup())
            self.loop.run_until_complete(web.TCPSite(self.runner, "127.0.0.1", self.port).start())
            self.ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()
        self.ready.wait(10)
        return self

    def __exit__(self, *exc):
        asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)


async def html(request):
    return web.Response(text="<!doctype html><html><body>Welcome to nginx!</body></html>", content_type="text/html")


async def drip(request):
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    await response.prepare(request)
    for _ in range(1000):  # one byte every half second: every read succeeds, the answer never ends
        await response.write(b" ")
        await asyncio.sleep(0.5)
    return response


async def hang(request):
    await asyncio.sleep(3600)
    return web.Response(text="{}")


async def echo_headers(request):
    if request.path.endswith("/models"):
        return web.json_response({"data": [{"id": "m"}]})
    if (await request.json()).get("max_tokens") == 1:  # the pre-flight's test call: the server looks fine
        return web.json_response({"choices": [{"message": {"content": "x"}, "finish_reason": "length"}]})
    echoed = "; ".join(f"{k}: {v}" for k, v in request.headers.items())
    return web.Response(status=500, text=f'{{"error": {{"message": "upstream failed, request was: {echoed}"}}}}',
                        content_type="application/json")


def test_a_server_answering_html_fails_its_preflight_in_one_line(capsys):
    with HostileServer(html) as server:
        with pytest.raises(EndpointError, match="not an OpenAI completion"):
            preflight(Endpoint(server.base_url, "m", timeout=5))
        assert main(["consensus", "--policy", "llm", "--base-url", server.base_url, "--model", "m", "--no-record"]) == 2
    err = capsys.readouterr().err.strip()
    assert "not an OpenAI completion" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("handler", [drip, hang], ids=["dripping", "hung"])
def test_the_timeout_bounds_the_whole_call(handler):
    with HostileServer(handler) as server:
        endpoint = Endpoint(server.base_url, "m", timeout=1.5, max_attempts=1)
        result = run_sync(complete(endpoint, LLMRequest(messages=[{"role": "user", "content": "hi"}])), timeout=BOUND_S)
    assert result.error == "timeout" and "1.5 s" in result.error_message


def test_an_error_echoing_the_key_writes_it_nowhere(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HOSTILE_KEY", SECRET)
    store, out = tmp_path / "calls.sqlite", tmp_path / "run"
    with HostileServer(echo_headers) as server:
        url = server.base_url.replace("127.0.0.1", "localhost")
        status = main(["consensus", "--policy", "llm", "--base-url", url, "--model", "m", "--api-key-env", "HOSTILE_KEY",
                       "--n", "4", "--topology", "caveman", "--n", "8", "--max-rounds", "1", "--max-attempts", "1",
                       "--record", str(store), "--out", str(out)])
    captured = capsys.readouterr()
    assert status == 3  # every call failed: an invalid game
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert store in written and any(p.parent == out for p in written)
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), path
    # the failure was kept, without the key (rows are compressed: read them decoded)
    recorded = ResponseStore(store, "replay")
    try:
        kept = json.dumps(recorded.rows())
    finally:
        recorded.close()
    assert "[redacted]" in kept and SECRET not in kept
    assert SECRET not in captured.out + captured.err
