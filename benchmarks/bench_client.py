"""Sustained calls/s of the transport vs a bare openai loop vs raw aiohttp.

The server (the project's loopback endpoint, ``llm-mesa serve``, model ``echo``,
zero latency) runs in a separate process, so what is measured is the client's
CPU per call. Each variant sends ``--calls``
chat requests with ``--concurrency`` in flight; the figure is the median over
``--repeats`` runs, after one warm-up run each.

    python benchmarks/bench_client.py [--calls 2000] [--concurrency 64] [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import httpx2
import openai

from llm_mesa.llm import Endpoint, LLMRequest, ResponseStore, Usage, complete, run_sync

MESSAGES = [{"role": "system", "content": "You play a colour game. " * 20},
            {"role": "user", "content": "Your neighbours are red, blue, red. Answer as JSON."}]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server() -> tuple[subprocess.Popen, str]:
    """``llm-mesa serve`` in its own process; returns it and its base URL."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "llm_mesa.cli", "serve", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
    except RuntimeError:
        server.kill()
        raise
    return server, f"http://127.0.0.1:{port}/v1"


def wait_for_port(port: int, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"benchmark server did not start on port {port}")


async def bounded(n: int, concurrency: int, one) -> None:
    sem = asyncio.Semaphore(concurrency)

    async def guarded(i: int):
        async with sem:
            return await one(i)

    await asyncio.gather(*(guarded(i) for i in range(n)))


def variants(base_url: str, model: str, concurrency: int, store_dir: Path):
    endpoint = Endpoint(base_url, model, temperature=0.7, max_tokens=64, concurrency=concurrency)
    bare = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0,
                              http_client=openai.DefaultAioHttpClient())
    session: dict[str, aiohttp.ClientSession] = {}
    usage = Usage()

    async def run_complete(n: int) -> None:
        results = await asyncio.gather(*(complete(endpoint, LLMRequest(messages=MESSAGES), usage=usage)
                                         for _ in range(n)))
        assert all(r.ok for r in results), results[0]

    store_runs = iter(range(10**6))

    async def run_complete_recorded(n: int) -> None:
        store = ResponseStore(store_dir / f"run{next(store_runs)}.sqlite")
        results = await asyncio.gather(*(complete(endpoint, LLMRequest(messages=MESSAGES, sample_key=f"a={i}"),
                                                  store=store, usage=usage) for i in range(n)))
        assert all(r.ok for r in results)
        store.close()

    async def run_bare(n: int) -> None:
        async def one(_: int) -> str | None:
            r = await bare.chat.completions.create(model=model, messages=MESSAGES, temperature=0.7, max_tokens=64)
            return r.choices[0].message.content
        await bounded(n, concurrency, one)

    async def run_aiohttp(n: int) -> None:
        if "s" not in session:
            session["s"] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency))
        body = {"model": model, "messages": MESSAGES, "temperature": 0.7, "max_tokens": 64}

        async def one(_: int) -> str:
            async with session["s"].post(base_url + "/chat/completions", json=body,
                                         headers={"Authorization": "Bearer bench"}) as r:
                return json.loads(await r.read())["choices"][0]["message"]["content"]
        await bounded(n, concurrency, one)

    async def run_sdk_post(n: int) -> None:
        """What complete() sent through before: the SDK's generic post, raw response."""
        body = {"model": model, "messages": MESSAGES, "temperature": 0.7, "max_tokens": 64}

        async def one(_: int) -> str:
            r = await bare.post("/chat/completions", body=body, cast_to=httpx2.Response,
                                options={"timeout": 60.0})
            return json.loads(r.content)["choices"][0]["message"]["content"]
        await bounded(n, concurrency, one)

    async def run_transport(n: int) -> None:
        """A request prebuilt by the SDK, handed to its transport's handle_async_request."""
        from openai._models import FinalRequestOptions
        options = FinalRequestOptions.construct(method="post", url="/chat/completions", json_data={},
                                                timeout=60.0, security={"bearer_auth": True})
        template = bare._build_request(options)
        transport = bare._client._transport
        body = {"model": model, "messages": MESSAGES, "temperature": 0.7, "max_tokens": 64}
        headers = [(k, v) for k, v in template.headers.raw if k.lower() != b"content-length"]

        async def one(_: int) -> str:
            request = httpx2.Request("POST", template.url, headers=headers,
                                     content=json.dumps(body, separators=(",", ":")).encode(),
                                     extensions=template.extensions)
            response = await transport.handle_async_request(request)
            content = await response.aread()
            return json.loads(content)["choices"][0]["message"]["content"]
        await bounded(n, concurrency, one)

    async def close() -> None:
        await bare.close()
        if "s" in session:
            await session["s"].close()

    return close, {
        "raw aiohttp": run_aiohttp,
        "bare openai (create)": run_bare,
        "openai client.post": run_sdk_post,
        "openai transport, prebuilt": run_transport,
        "complete()": run_complete,
        "complete() + store + usage": run_complete_recorded,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    server, base_url = start_server()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            close, table = variants(base_url, "echo", args.concurrency, Path(tmp))
            rates: dict[str, list[float]] = {name: [] for name in table}
            for run in table.values():  # warm-up: connections, imports, caches
                run_sync(run(min(200, args.calls)))
            for _ in range(args.repeats):  # interleaved, so drift hits every variant alike
                for name, run in table.items():
                    started = time.perf_counter()
                    run_sync(run(args.calls))
                    rates[name].append(args.calls / (time.perf_counter() - started))
            run_sync(close())
    finally:
        server.terminate()
        server.wait(10)

    medians = {name: statistics.median(r) for name, r in rates.items()}
    reference = medians["bare openai (create)"]
    print(f"{args.calls} calls x {args.repeats} repeats, {args.concurrency} in flight, "
          f"zero-latency loopback endpoint in its own process, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f} at the end, openai {openai.__version__}")
    print(f"{'client':<28} {'calls/s (median)':>17} {'min':>8} {'max':>8} {'vs bare openai':>15}")
    for name, median in medians.items():
        print(f"{name:<28} {median:>17.0f} {min(rates[name]):>8.0f} {max(rates[name]):>8.0f} "
              f"{median / reference:>14.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
