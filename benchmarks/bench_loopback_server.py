"""Measure how many requests per second the loopback endpoint answers (zero latency).

The server runs in its own process (as ``llm-mesa serve`` would) and a bare
aiohttp client loop keeps ``--concurrency`` requests in flight, so the figure is
the endpoint's own ceiling, not the ``openai`` client's. Prints the median of
``--repeats`` runs per behaviour.

    python benchmarks/bench_loopback_server.py --requests 5000 --repeats 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import time

import aiohttp

CONSENSUS_USER = (
    "Your preferred colour: red\nYour current colour: blue\n"
    "Your neighbours' current colours: 4: red, 7: blue, 12: red, 15: blue, 21: red\n"
    "Round: 3 of 50\nCommunication: local\nAnswer with JSON."
)
RULES = "You play a network colouring game. " * 20  # about 140 tokens of identical rules
WORKLOADS = {
    "fixed": {"model": "fixed?text=ok", "messages": [{"role": "user", "content": "hi"}]},
    "rule:majority-inertia": {
        "model": "rule:majority-inertia?inertia=0.2",
        "messages": [{"role": "system", "content": RULES}, {"role": "user", "content": CONSENSUS_USER}],
    },
}


async def one_run(base_url: str, body: dict, requests: int, concurrency: int) -> float:
    """Requests per second for ``requests`` calls with ``concurrency`` in flight."""
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        url = base_url + "/chat/completions"
        payloads = [json.dumps({**body, "seed": i}).encode() for i in range(requests)]
        queue = iter(payloads)
        headers = {"Content-Type": "application/json"}

        async def worker() -> None:
            for payload in queue:
                async with session.post(url, data=payload, headers=headers) as response:
                    await response.read()
                    if response.status != 200:
                        raise RuntimeError(f"HTTP {response.status}")

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return requests / (time.perf_counter() - start)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc), or NaN elsewhere."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    server = subprocess.Popen(
        [sys.executable, "-c", "from llm_mesa.loopback.cli import configure, run; import argparse;"
         "p = argparse.ArgumentParser(); configure(p); run(p.parse_args(['--port', '0']))"],
        stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline() if server.stdout else ""
        found = re.search(r"(http://\S+/v1)", line)
        if not found:
            print(f"the server did not start: {line!r}", file=sys.stderr)
            return 1
        base_url = found.group(1)
        for name, body in WORKLOADS.items():
            asyncio.run(one_run(base_url, body, 500, args.concurrency))  # warm up
            rates, cpu_rates = [], []
            for _ in range(args.repeats):
                cpu_before = _cpu_seconds(server.pid)
                rates.append(asyncio.run(one_run(base_url, body, args.requests, args.concurrency)))
                cpu_rates.append(args.requests / (_cpu_seconds(server.pid) - cpu_before))
            print(f"{name:24s} median {statistics.median(rates):7.0f} requests/s wall "
                  f"(runs: {', '.join(f'{r:.0f}' for r in rates)}); server CPU bound "
                  f"{statistics.median(cpu_rates):7.0f} requests per CPU-second "
                  f"({args.requests} requests, {args.concurrency} in flight)")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
