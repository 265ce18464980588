"""A minimal OpenAI-compatible latency server: every completion answers after ``--latency`` seconds.

Why a server of its own: the project's stand-in (``llm-mesa serve``) reads every
prompt and answers as a rule would, which costs it more CPU a call than the
client it serves; at 10,000 calls in flight a second, on 2 cores, it would
measure itself. This one is an ``asyncio.Protocol`` that parses only what
HTTP/1.1 needs (the header block, ``Content-Length``, keep-alive), never reads
the prompt, and answers each request from a timer (``loop.call_later``): no
coroutine, no JSON decoding, a prebuilt answer with a seeded coin for the colour.
So the server's CPU a call is a few microseconds beyond the kernel's, and what
a benchmark measures against it is the client.

It binds 127.0.0.1 only. ``GET /v1/models`` answers at once; ``POST`` to
``/v1/chat/completions`` (or ``/v1/completions``) after the latency; anything
else 404. ``python benchmarks/latency_server.py --port 0 --latency 1`` prints
``port N`` once it listens and serves until SIGTERM or Ctrl-C; ``--stats FILE``
writes the calls answered and the peak in flight there when it stops.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import signal
import sys
import time
from pathlib import Path

MODELS = json.dumps({"object": "list", "data": [{"id": "latency", "object": "model", "owned_by": "bench"}]}).encode()


def _completion(colour: str) -> bytes:
    content = json.dumps({"colour": colour, "reason": "a coin"})
    return json.dumps({"id": "cmpl-1", "object": "chat.completion", "created": 0, "model": "latency",
                       "system_fingerprint": "latency-server",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content}}],
                       "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}).encode()


def _response(status: str, body: bytes) -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: keep-alive\r\n\r\n").encode() + body


ANSWERS = {colour: _response("200 OK", _completion(colour)) for colour in ("red", "blue")}
MODELS_RESPONSE = _response("200 OK", MODELS)
NOT_FOUND = _response("404 Not Found", b'{"error":{"message":"no such route"}}')


class Stats:
    """Calls answered, and the most that were in flight at once."""

    def __init__(self) -> None:
        self.answered = 0
        self.in_flight = 0
        self.peak = 0


class LatencyProtocol(asyncio.Protocol):
    """One connection: requests parsed as they arrive, each answered from a timer."""

    def __init__(self, loop: asyncio.AbstractEventLoop, latency: float, coin: random.Random, stats: Stats) -> None:
        self.loop, self.latency, self.coin, self.stats = loop, latency, coin, stats
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end]
            length = 0
            for line in head.split(b"\r\n")[1:]:
                if line[:15].lower() == b"content-length:":
                    length = int(line[15:])
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length:]
            self._answer(head.split(b" ", 2))

    def _answer(self, request_line: list[bytes]) -> None:
        method, path = request_line[0], request_line[1] if len(request_line) > 1 else b""
        if method == b"GET" and path.endswith(b"/models"):
            self._write(MODELS_RESPONSE)
        elif method == b"POST" and path.endswith(b"completions"):
            stats = self.stats
            stats.in_flight += 1
            stats.peak = max(stats.peak, stats.in_flight)
            self.loop.call_later(self.latency, self._done, ANSWERS["blue" if self.coin.random() < 0.5 else "red"])
        else:
            self._write(NOT_FOUND)

    def _done(self, answer: bytes) -> None:
        self.stats.in_flight -= 1
        self.stats.answered += 1
        self._write(answer)

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)


async def serve(port: int, latency: float, seed: int, stats_file: Path | None) -> None:
    loop = asyncio.get_running_loop()
    coin, stats = random.Random(seed), Stats()
    server = await loop.create_server(lambda: LatencyProtocol(loop, latency, coin, stats), "127.0.0.1", port,
                                      backlog=16384, reuse_address=True)
    print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    started = time.perf_counter()
    await stop.wait()
    server.close()
    if stats_file is not None:
        stats_file.write_text(json.dumps({"answered": stats.answered, "peak_in_flight": stats.peak,
                                          "seconds": round(time.perf_counter() - started, 3),
                                          "cpu_s": round(time.process_time(), 3)}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free one (printed)")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds before a completion answers")
    parser.add_argument("--seed", type=int, default=0, help="seed of the colour coin")
    parser.add_argument("--stats", type=Path, help="write calls answered and the peak in flight here on exit")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535 or not 0 <= args.latency <= 60:
        print("error: give --port 0..65535 and --latency 0..60 seconds", file=sys.stderr)
        return 2
    try:
        import uvloop  # a dependency off Windows: the server's own loop in C as well
    except ImportError:
        asyncio.run(serve(args.port, args.latency, args.seed, args.stats))
    else:
        uvloop.run(serve(args.port, args.latency, args.seed, args.stats))
    return 0


if __name__ == "__main__":
    sys.exit(main())
