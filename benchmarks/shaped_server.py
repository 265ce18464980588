"""An OpenAI-compatible server of one shape, for the concurrency benchmarks (run as its own process).

Shapes (``--shape``), each timed from the last ``POST /reset``:

* ``capacity``: 429 (``Retry-After`` ``--retry-after``) above ``--capacity`` attempts in flight; latency
  ``--latency`` x (1 + 0.25 x in flight / capacity);
* ``jump``: as ``capacity``, but the latency is ``--latency`` until ``--at`` seconds, then 10x;
* ``storm``: every attempt refused (429, no Retry-After) until ``--at`` seconds (``inf``: for ever), then
  ``capacity``;
* ``swing``: the latency swings whatever the load: ``--latency`` for ``--period`` seconds, then 10x for as
  long, and so on (no 429, no timeout; ``--capacity`` 0: no capacity); ``--jitter`` adds a uniform
  [0, jitter) seconds to each answer.

Each answer's text is one of ``--answers`` at random (a game's sweep needs answers it can read).
``GET /stats`` says how many attempts it answered and refused and the most it held at once.
Binds 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import time

from aiohttp import web


def completion(content: str) -> str:
    return json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content}}],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 1}})


class Shaped:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.answers = [completion(text) for text in args.answers.split("|")]
        self.reset()

    def reset(self) -> None:
        self.started = time.monotonic()
        self.active = self.peak = self.answered = self.refused = 0

    async def complete(self, request: web.Request) -> web.Response:
        await request.read()
        a, now = self.args, time.monotonic() - self.started
        if a.shape == "storm" and now < a.at:
            self.refused += 1
            return web.json_response({"error": {"message": "busy"}}, status=429)
        if a.capacity and self.active >= a.capacity:
            self.refused += 1
            return web.json_response({"error": {"message": "over capacity"}}, status=429,
                                     headers={"Retry-After": f"{a.retry_after:g}"})
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            if a.shape == "swing":  # the server's own doing: the time alone says how slow
                await asyncio.sleep(a.latency * (10.0 if int(now / a.period) % 2 else 1.0) + random.uniform(0, a.jitter))
            else:
                latency = a.latency * (10.0 if a.shape == "jump" and now >= a.at else 1.0)
                await asyncio.sleep(latency * (1 + 0.25 * self.active / a.capacity))
        finally:
            self.active -= 1
        self.answered += 1
        return web.Response(text=random.choice(self.answers), content_type="application/json")

    async def stats(self, request: web.Request) -> web.Response:
        return web.json_response({"answered": self.answered, "refused": self.refused, "peak": self.peak})

    async def restart(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response({"ok": True})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--shape", choices=("capacity", "jump", "storm", "swing"), default="capacity")
    parser.add_argument("--capacity", type=int, default=50)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--retry-after", type=float, default=0.1)
    parser.add_argument("--at", type=float, default=math.inf)
    parser.add_argument("--period", type=float, default=1.0, help="swing: seconds at each latency")
    parser.add_argument("--jitter", type=float, default=0.0, help="swing: at most this many seconds more an answer")
    parser.add_argument("--answers", default="ok", help="the answers' texts, '|'-separated: one at random each call")
    args = parser.parse_args()
    shaped = Shaped(args)
    app = web.Application()
    app.router.add_post("/v1/chat/completions", shaped.complete)
    app.router.add_get("/stats", shaped.stats)
    app.router.add_post("/reset", shaped.restart)
    web.run_app(app, host="127.0.0.1", port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
