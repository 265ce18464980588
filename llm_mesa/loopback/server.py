"""The loopback endpoint: an OpenAI-compatible stand-in server for tests and dry runs.

It serves ``GET /v1/models``, ``POST /v1/chat/completions`` and
``POST /v1/completions`` with OpenAI-shaped answers computed by behaviours
(see ``behaviours``), plus latency and fault injection (see ``faults``), and
``GET /v1/control/stats``, ``POST /v1/control/reset`` and
``POST /v1/control/script`` for tests (the routes: ``app``; the wire format:
``protocol``). It is not a language model and says so: every answer carries
``system_fingerprint = "llm-mesa-loopback-<version>"``.

Use it from Python as a context manager (the server runs in a background thread
with its own event loop, so any client, sync or async, can call it)::

    with LoopbackServer(seed=1, latency=0.05) as server:
        client = AsyncOpenAI(base_url=server.base_url, api_key="none")
"""

from __future__ import annotations

import asyncio
import errno
import math
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from llm_mesa.loopback.app import DEFAULT_READ_TIMEOUT_S, MAX_BODY_BYTES, LoopbackApp, LoopbackStats
from llm_mesa.loopback.behaviours import ScriptBook
from llm_mesa.loopback.faults import FaultSettings, LoopbackError
from llm_mesa.loopback.protocol import OWNER, SYSTEM_FINGERPRINT, VERSION, parse_json, shape_to_schema


class LoopbackServer:
    """The loopback endpoint; a context manager running it in a background thread.

    ``defaults`` are server-wide fault settings (``latency``, ``jitter``,
    ``p429``, ``retry_after``, ``p500``, ``ptimeout``, ``timeout_s``,
    ``pmalformed``, ``pdrop``, ``ptruncate``, ``fail_first``, ``fault``); a
    model name's own parameters override them. ``max_body_bytes`` caps a request
    body (413 above it) and ``read_timeout`` is how long a body may take to
    arrive (408 after it; also how long an idle connection stays open).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, seed: int = 0, *,
                 script: str | Path | list | dict | None = None,
                 reject_json_schema: bool = False, require_api_key: str | None = None,
                 max_body_bytes: int = MAX_BODY_BYTES, read_timeout: float = DEFAULT_READ_TIMEOUT_S,
                 **defaults: Any):
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise LoopbackError(f"port {port!r} is not a TCP port; give --port a number from 0 to 65535 "
                                "(0 picks a free one)")
        if isinstance(max_body_bytes, bool) or not isinstance(max_body_bytes, int) or max_body_bytes < 1:
            raise LoopbackError(f"max_body_bytes={max_body_bytes!r} must be a whole number of bytes >= 1; "
                                "check --max-body-bytes")
        if not (isinstance(read_timeout, (int, float)) and 0 < read_timeout < math.inf):
            raise LoopbackError(f"read_timeout={read_timeout!r} must be a finite number of seconds > 0; "
                                "check --read-timeout")
        self.host = host
        self.port = port
        self.seed = int(seed)
        self.max_body_bytes = max_body_bytes
        self.read_timeout = float(read_timeout)
        self.reject_json_schema = reject_json_schema
        self.require_api_key = require_api_key
        self.defaults = FaultSettings().with_overrides(defaults, where=" (server default)")
        self.scripts = ScriptBook()
        if script is not None:
            self.scripts.load(_read_script(script) if isinstance(script, (str, Path)) else script,
                              where=f"script {script}" if isinstance(script, (str, Path)) else "script")
        self.app = LoopbackApp(self.seed, self.defaults, self.scripts,
                               reject_json_schema=reject_json_schema, api_key=require_api_key,
                               max_body_bytes=max_body_bytes, read_timeout=self.read_timeout)
        self._runner: web.AppRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._startup_error: BaseException | None = None

    # ------------------------------------------------------------ state

    @property
    def stats_counters(self) -> LoopbackStats:
        """The live counters (read them in the server's loop, or use ``stats()``)."""
        return self.app.stats

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1``, the base URL an OpenAI client takes."""
        return f"http://{self.host}:{self.port}/v1"

    def stats(self) -> dict[str, Any]:
        """A snapshot of the counters (safe to call from any thread)."""
        return self._in_loop(lambda: self.app.stats.snapshot())

    def reset(self) -> None:
        """Zero the counters, restart the fault stream, fail_first tallies and scripts."""
        self._in_loop(self.app.reset)

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
        """The aiohttp application (routes in ``llm_mesa.loopback.app``)."""
        return self.app.build()

    async def _start_site(self) -> None:
        runner = web.AppRunner(self.build_app(), access_log=None, handler_cancellation=True,
                               shutdown_timeout=0.25, **self.app.runner_settings())
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


def _read_script(path: str | Path) -> Any:
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise LoopbackError(f"cannot read script {path} ({exc.strerror}); check --script") from None
    try:
        return parse_json(text, what=f"script {path}")
    except LoopbackError as exc:
        raise LoopbackError(f"{exc}; fix the file") from None


__all__ = ["DEFAULT_READ_TIMEOUT_S", "MAX_BODY_BYTES", "OWNER", "SYSTEM_FINGERPRINT", "VERSION", "LoopbackServer",
           "LoopbackStats", "shape_to_schema"]
