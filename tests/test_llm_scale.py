"""What lets one process keep thousands of LLM calls in flight: the pool, the loop, the collector, the encoder.

Speed itself is measured in ``benchmarks/bench_scale.py``; these tests hold the properties it
depends on, each of which an earlier version lacked (and so failed these tests).
"""

from __future__ import annotations

import gc
import json
import os
import resource
import subprocess
import sys

import pytest

from llm_mesa.llm import Endpoint, LLMRequest, complete, gather_sync, run_sync, runtime, transport
from llm_mesa.loopback import LoopbackServer

MESSAGES = [{"role": "user", "content": "hello"}]


def test_the_sdk_pool_is_no_second_limit_below_the_servers():
    """1,100 calls allowed in flight reach the server together: the SDK's default pool (1,000
    connections) held the rest back, a hidden limit under ``--concurrency``."""
    with LoopbackServer(latency=5.0) as server:  # long enough for all 1,100 to arrive on a loaded machine
        endpoint = Endpoint(server.base_url, "fixed?text=ok", concurrency=1100, timeout=60)
        results = gather_sync([complete(endpoint, LLMRequest(messages=MESSAGES, sample_key=f"a={i}"))
                               for i in range(1100)])
        assert all(r.ok for r in results), next(r.error_message for r in results if not r.ok)
        assert server.stats()["max_in_flight"] == 1100


def test_the_collector_runs_rarely_while_a_caller_waits_on_the_loop_and_as_before_after():
    before = gc.get_threshold()

    async def threshold_inside():
        return gc.get_threshold()

    inside = run_sync(threshold_inside())
    assert inside[0] == runtime.DEFERRED_GC_THRESHOLD and inside[1:] == before[1:]
    assert gc.get_threshold() == before


def test_deferred_collection_nests_keeps_a_higher_threshold_and_leaves_a_disabled_collector_off():
    before = gc.get_threshold()
    try:
        with runtime.deferred_collection():
            with runtime.deferred_collection():
                assert gc.get_threshold()[0] == runtime.DEFERRED_GC_THRESHOLD
            assert gc.get_threshold()[0] == runtime.DEFERRED_GC_THRESHOLD  # the outer one still waits
        assert gc.get_threshold() == before
        gc.set_threshold(10 * runtime.DEFERRED_GC_THRESHOLD, *before[1:])
        with runtime.deferred_collection():
            assert gc.get_threshold()[0] == 10 * runtime.DEFERRED_GC_THRESHOLD  # the program's, higher: kept
        gc.set_threshold(0, *before[1:])  # 0: the program turned automatic collection off
        with runtime.deferred_collection():
            assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*before)


@pytest.mark.parametrize(("setting", "expected"), [(None, "uvloop"), ("asyncio", "asyncio")])
def test_the_loop_is_uvloops_unless_asked_for_asyncios(setting, expected):
    pytest.importorskip("uvloop")
    env = {k: v for k, v in os.environ.items() if k != "LLM_MESA_EVENT_LOOP"}
    if setting:
        env["LLM_MESA_EVENT_LOOP"] = setting
    code = "from llm_mesa.llm import runtime; print(type(runtime.get_loop()).__module__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True)
    assert done.stdout.strip().split(".")[0] == expected


@pytest.mark.parametrize("body", [
    {"model": "m", "messages": [{"role": "user", "content": "naïve ☃ \u2028 \x01 \"quoted\" \\ 日本"}],
     "temperature": 0.7, "top_p": 1.0, "max_tokens": 64, "seed": -3, "stop": None, "logprobs": False},
    {"model": "m", "prompt": "x", "response_format": {"type": "json_schema", "json_schema": {
        "name": "a", "schema": {"type": "object", "properties": {"n": {"type": "integer", "maximum": 10**15}}},
        "strict": False}}, "logit_bias": {"\n\n": False}, "extra": [1.5e300, -0.0, 1e-7]},
])
def test_the_encoded_body_is_what_json_would_send(body):
    sent = transport.json_bytes(body)
    assert json.loads(sent) == body
    if "extra" not in body:  # floats aside (1e-07 against 1e-7, the same number), the same bytes
        assert sent == json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def test_a_body_orjson_refuses_is_encoded_by_json():
    body = {"model": "m", "extra": 2**70, "keys": {1: "a"}}
    assert json.loads(transport.json_bytes(body)) == {"model": "m", "extra": 2**70, "keys": {"1": "a"}}


def test_a_client_raises_its_open_files_limit_to_what_the_system_allows():
    code = ("import resource, asyncio\n"
            "from llm_mesa.llm import Endpoint, run_sync, transport\n"
            "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
            "resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard))\n"
            "async def make():\n"
            "    transport.get_client(Endpoint('http://127.0.0.1:9/v1', 'm'))\n"
            "run_sync(make())\n"
            "print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], hard)")
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard <= 256:
        pytest.skip(f"the hard limit here ({hard}) leaves nothing to raise")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    soft_after, hard_seen = map(int, done.stdout.split())
    assert soft_after > 256 and (soft_after == hard_seen or hard_seen == resource.RLIM_INFINITY)
