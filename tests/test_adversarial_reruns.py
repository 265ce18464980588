"""What a rerun does with a recorded failure, how long a server can make a call wait, and the pre-flight's overlap.

* A malformed answer is the server's answer and replays; a failure of the service is
  called for again by ``--replay-fill`` (a resumed sweep), replayed by a strict replay.
* ``Retry-After`` of any size waits at most ``client.RETRY_AFTER_CAP_S``; the public SDK path
  is bounded in bytes and follows no redirect, as the fast path.
* The pre-flight check overlaps round 1, and nothing of that round is kept before its verdict.
"""

from __future__ import annotations

import asyncio
import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest
from aiohttp import web
from hostile_server import (
    MOVE,
    SECRET,
    HostileServer,
    completion,
    game_handler,
    huge,
    is_probe,
    play,
    raw,
    recorded,
    redirect_to,
)

from llm_mesa.cli import main


def sweep(base_url, out):
    argv = ["sweep", "--game", "consensus", "--conditions", "cc-local", "--policies", "llm", "--base-url", base_url,
            "--model", "m", "--seeds", "2", "--set", "n=8", "--set", "max_rounds=1", "--set", "baseline_permutations=0",
            "--max-attempts", "1", "--out", str(out), "--quiet"]
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        status = main(argv)
    return status, err.getvalue()


def test_a_sweep_meeting_one_lone_surrogate_finishes_counts_one_failure_and_its_rerun_calls_nothing(tmp_path):
    from llm_mesa.sweep import read_sweep

    sent = []

    async def once(request, body):
        sent.append(body)
        if len(sent) == 1:
            return raw(json.dumps(completion("\ud800")))
        return web.json_response(completion(MOVE))

    with HostileServer(game_handler(once)) as server:
        status, err = sweep(server.base_url, tmp_path / "s")
        assert status == 0 and "Traceback" not in err, err
        games = read_sweep(tmp_path / "s")
        assert len(games) == 2 and int(games["call_failures"].sum()) == 1
        before = len(server.hits)
        status, err = sweep(server.base_url, tmp_path / "s")  # the same command: a rerun
        assert status == 0, err
        assert len(server.hits) == before  # zero calls: no pre-flight, no completion
    assert read_sweep(tmp_path / "s")["call_failures"].sum() == 1


def test_a_rerun_replays_a_malformed_answer_but_calls_again_for_a_failure_of_the_service(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVERSARIAL_KEY", SECRET)
    first = {"n": 0}

    async def flaky(request, body):
        first["n"] += 1
        if first["n"] <= 4:
            request.transport.abort()  # four dropped connections: a failure of the service
            return web.Response()
        if first["n"] <= 8:
            return raw("not json")  # four malformed answers: the server's answer
        return web.json_response(completion(MOVE))

    with HostileServer(game_handler(flaky)) as server:
        assert play(server.base_url, tmp_path)[0] == 3
        rows = recorded(tmp_path)
        assert sorted(r["response"]["error"] for r in rows) == ["connection"] * 4 + ["malformed"] * 4
        calls = len(server.completions())
        replay = ["--replay", str(tmp_path / "calls.sqlite")]
        err = io.StringIO()
        with redirect_stderr(err), redirect_stdout(io.StringIO()):
            strict = main(["consensus", "--policy", "llm", "--base-url", server.base_url, "--model", "m",
                           "--api-key-env", "ADVERSARIAL_KEY", "--n", "8", "--topology", "caveman", "--comm", "local",
                           "--max-rounds", "1", "--max-attempts", "1", *replay])
        assert strict == 3 and len(server.completions()) == calls  # a strict replay replays every failure
        (tmp_path / "run").rename(tmp_path / "first-run")
        status, out, _ = play(server.base_url, tmp_path, recording=("--replay", "--replay-fill"))
    assert len(server.completions()) == calls + 4  # only the dropped calls were made again ...
    assert json.loads(out)["call_failures"] == 4  # ... and the malformed answers replayed as failures


# -- waits: Retry-After is capped; the public SDK path is bounded and follows no redirect either --------


@pytest.mark.parametrize("headers", [{"retry-after": "999999"}, {"retry-after": "1e999"}, {"retry-after": "inf"},
                                     {"retry-after-ms": "1e999"}, {"retry-after": "Fri, 31 Dec 9999 23:59:59 GMT"}],
                         ids=["999999", "1e999", "inf", "ms 1e999", "year 9999"])
def test_a_retry_after_of_any_size_waits_at_most_the_cap(headers):
    from llm_mesa.llm import client, transport

    asked = transport.retry_after_s(headers)
    assert asked is not None and asked > client.RETRY_AFTER_CAP_S
    assert client._backoff_s(1, asked) == client.RETRY_AFTER_CAP_S


@pytest.mark.parametrize("value", ["nan", "-5", "soon", ""])
def test_a_retry_after_that_is_no_number_of_seconds_asks_for_no_wait(value):
    from llm_mesa.llm import transport

    assert transport.retry_after_s({"retry-after": value}) in (None, 0.0)


def test_a_server_asking_to_wait_for_days_holds_a_call_only_up_to_the_cap(monkeypatch):
    from llm_mesa.llm import LLMRequest, client, complete, run_sync
    from llm_mesa.llm.endpoint import Endpoint

    monkeypatch.setattr(client, "RETRY_AFTER_CAP_S", 0.2)  # the cap, made short enough to wait for in a test
    asked = []

    async def busy(request, body):
        asked.append(1)
        return raw('{"error": "slow down"}', 429, {"Retry-After": "999999"})

    with HostileServer(busy) as server:
        endpoint = Endpoint(server.base_url, "m", max_attempts=3)
        result = run_sync(complete(endpoint, LLMRequest(messages=[{"role": "user", "content": "hi"}])), timeout=20)
    assert result.error == "rate_limit" and result.attempts == 3 and len(asked) == 3


@pytest.fixture
def public_path(monkeypatch):
    """Every call through the SDK's public client.post (as with a proxy, or an SDK without our shortcut)."""
    from llm_mesa.llm import transport

    monkeypatch.setattr(transport, "direct_route", lambda *args, **kwargs: None)


def test_the_public_path_caps_an_answer_in_bytes(public_path):
    from llm_mesa.llm import LLMRequest, complete, run_sync
    from llm_mesa.llm.endpoint import Endpoint

    with HostileServer(lambda request, body: huge(300_000)(request, body)) as server:
        endpoint = Endpoint(server.base_url, "m", max_attempts=1, max_answer_bytes=65536)
        result = run_sync(complete(endpoint, LLMRequest(messages=[{"role": "user", "content": "hi"}])), timeout=20)
    assert result.error == "malformed" and "--max-answer-bytes" in result.error_message


def test_the_public_path_follows_no_redirect_to_another_host(public_path):
    from llm_mesa.llm import LLMRequest, complete, run_sync
    from llm_mesa.llm.endpoint import Endpoint

    async def elsewhere(request, body):
        return web.json_response(completion(MOVE))

    with HostileServer(elsewhere, host="127.0.0.2") as other:
        with HostileServer(redirect_to(other)) as server:
            endpoint = Endpoint(server.base_url, "m", max_attempts=1)
            result = run_sync(complete(endpoint, LLMRequest(messages=[{"role": "user", "content": "hi"}])), timeout=20)
    assert result.error == "redirect" and other.hits == []


# -- the pre-flight overlaps round 1, and nothing is kept before its verdict ---------------------------


def test_round_one_goes_out_while_the_pre_flight_check_is_still_waiting(tmp_path, monkeypatch):
    """The test call is answered only once a game call has arrived (or after 8 s): one after the other,
    the game's calls would come only after it, and the order would say so."""
    monkeypatch.setenv("ADVERSARIAL_KEY", SECRET)
    events = []
    arrived: list[asyncio.Event] = []

    async def waiting_probe(request, body):
        if not arrived:
            arrived.append(asyncio.Event())
        if request.path.endswith("/models"):
            return web.json_response({"data": [{"id": "m"}]})
        if is_probe(body):
            events.append("probe asked")
            try:
                await asyncio.wait_for(arrived[0].wait(), 8)
            except TimeoutError:
                pass
            events.append("probe answered")
            return web.json_response(completion("x"))
        events.append("game call")
        arrived[0].set()
        return web.json_response(completion(MOVE))

    with HostileServer(waiting_probe) as server:
        status, out, err = play(server.base_url, tmp_path)
    assert status == 0, err
    assert events.index("game call") < events.index("probe answered"), events[:5]  # overlapped


def test_a_failed_check_keeps_nothing_of_the_round_that_overlapped_it(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVERSARIAL_KEY", SECRET)

    async def refusing_probe(request, body):
        if request.path.endswith("/models"):
            return web.json_response({"data": [{"id": "m"}]})
        if is_probe(body):
            await asyncio.sleep(0.3)  # the game's calls are answered first
            return raw('{"error": "bad key"}', 401)
        return web.json_response(completion(MOVE))

    with HostileServer(refusing_probe) as server:
        status, out, err = play(server.base_url, tmp_path)
    assert status == 2 and "--api-key-env" in err and len(err.strip().splitlines()) == 1, err
    assert list(tmp_path.iterdir()) == []  # no store, no run: the answers were never kept
