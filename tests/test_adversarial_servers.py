"""Every hostile answer a server can give, one row each: the game goes on, or one line and exit 2; never a traceback.

Three tables, each a class of failure that must stay fixed:

* ``GAME_ROWS``: the pre-flight passes, then the game's calls meet the hostile answer. The
  game finishes (exit 0, or 3 when too many decisions failed) with at most one line on
  stderr; the call fails with the expected kind (or the decision decides nothing), the
  failure is recorded as that kind, and no API key reaches any file.
* ``PREFLIGHT_ROWS``: the listing route (``/models``) is hostile; the game goes on with at
  most a warning line (see ``llm_mesa.llm.preflight_check`` for why).
* ``PROBE_ROWS``: the pre-flight's test call is hostile: one line naming the fix, exit 2,
  nothing written.

A redirect points at 127.0.0.2 (another host, still loopback): that host must see nothing.
"""

from __future__ import annotations

import asyncio
import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pandas as pd
import pytest
from aiohttp import web
from hostile_server import HostileServer, completion, is_probe, raw

from llm_mesa.cli import main
from llm_mesa.llm.store import ResponseStore

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
GAME_ROWS = [
    ("lone surrogate", body_text(json.dumps(completion("\ud800"))), [], "malformed", True, 3),
    ("usage 1e999", body_text(json.dumps(completion(MOVE)).replace('"prompt_tokens": 10', '"prompt_tokens": 1e999')),
     [], "malformed", True, 3),
    ("negative usage", answer(MOVE, usage={"prompt_tokens": -1000000, "completion_tokens": -5}), [], "malformed",
     True, 3),
    ("absurd usage", answer(MOVE, usage={"prompt_tokens": 10**15, "completion_tokens": 5}), [], "malformed", True, 3),
    ("cached above prompt", answer(MOVE, usage={"prompt_tokens": 5, "completion_tokens": 5,
                                               "prompt_tokens_details": {"cached_tokens": 50}}), [], "malformed", True, 3),
    ("body nested 200,000 deep", body_text(deep(200_000)), [], "malformed", True, 3),
    ("text not a string", body_text(json.dumps({"choices": [{"message": {"content": {"colour": "red"}}}]})), [],
     "malformed", True, 3),
    ("no choices", body_text('{"choices": []}'), [], "malformed", True, 3),
    ("HTML page", body_text("<html>Welcome to nginx</html>"), [], "malformed", True, 3),
    ("answer nested 200,000 deep", answer('{"colour": "red", "x": ' + deep(200_000) + "}"), [], None, True, 3),
    ("answer with a non-finite number", answer('{"colour": "red", "reason": 1e999, "diary": "d"}'), [], None, True, 3),
    ("message_to 1e999", answer('{"message": "hi", "message_to": 1e999, "diary": "d"}'), ["--dm"], None, True, 3),
    ("message_to 1e300", answer('{"message": "hi", "message_to": 1e300, "diary": "d"}'), ["--dm"], None, False, 0),
    ("message_to a long number", answer('{"message": "hi", "message_to": "' + "9" * 5000 + '", "diary": "d"}'),
     ["--dm"], None, False, 0),
    ("200 KB header", body_text(json.dumps(completion(MOVE)), headers={"X-Big": "a" * 200_000}), [], "malformed",
     True, 3),
    ("answer over --max-answer-bytes", huge(200_000), ["--max-answer-bytes", "65536"], "malformed", True, 3),
    ("key echoed in a normal answer", echo_key(), [], None, False, 0),
    ("401 on every call", body_text('{"error": {"message": "bad key"}}', 401), [], "auth", True, 3),
    ("500 on every call", body_text('{"error": {"message": "down"}}', 500), [], "server", True, 3),
]


def play(base_url, tmp_path, *extra, recording=("--record",)):
    err, out = io.StringIO(), io.StringIO()
    argv = ["consensus", "--policy", "llm", "--base-url", base_url, "--model", "m", "--api-key-env", "ADVERSARIAL_KEY",
            "--n", "8", "--topology", "caveman", "--comm", "local", "--max-rounds", "1", "--max-attempts", "1",
            "--timeout", "10", recording[0], str(tmp_path / "calls.sqlite"), *recording[1:], "--out",
            str(tmp_path / "run"), "--json", *extra]
    with redirect_stderr(err), redirect_stdout(out):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def recorded(tmp_path) -> list[dict]:
    path = tmp_path / "calls.sqlite"
    if not path.exists():
        return []
    store = ResponseStore(path, "replay")
    try:
        return store.rows()
    finally:
        store.close()


@pytest.mark.parametrize("name, hostile, extra, kind, decisions_fail, status", GAME_ROWS,
                         ids=[row[0] for row in GAME_ROWS])
def test_a_hostile_answer_is_a_counted_failure_never_a_crash(name, hostile, extra, kind, decisions_fail, status,
                                                             tmp_path, monkeypatch):
    monkeypatch.setenv("ADVERSARIAL_KEY", SECRET)
    with HostileServer(game_handler(hostile)) as server:
        got, out, err = play(server.base_url, tmp_path, *extra)
    assert got == status, err[-600:]
    assert "Traceback" not in err and len(err.strip().splitlines()) <= 1, err[-600:]
    summary = json.loads(out)
    assert (summary["call_failures"] + summary["parse_failures"] == 8) == decisions_fail
    rows = recorded(tmp_path)
    assert len(rows) >= 8 and all(r["response"]["error"] == kind for r in rows)
    if kind == "malformed":
        assert all("malformed answer" in r["response"]["error_message"] for r in rows)
        assert summary["prompt_tokens"] == 0  # usage of a malformed answer is never counted
    if kind == "auth":  # the one line names the refused key's variable and the option
        assert "ADVERSARIAL_KEY" in err and "--api-key-env" in err
    for path in (p for p in tmp_path.rglob("*") if p.is_file()):
        assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in json.dumps(rows) + out + err


def test_an_echoed_key_is_redacted_in_the_answer_the_messages_and_the_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVERSARIAL_KEY", SECRET)
    with HostileServer(game_handler(echo_key())) as server:
        assert play(server.base_url, tmp_path)[0] == 0
    transcript = pd.read_parquet(tmp_path / "run" / "transcript.parquet")
    messages = pd.read_parquet(tmp_path / "run" / "messages.parquet")
    assert transcript["answer"].str.contains("[redacted]", regex=False).all()
    assert messages["text"].str.contains("[redacted]", regex=False).all() and len(messages) > 0
    assert all("[redacted]" in r["response"]["text"] for r in recorded(tmp_path))


def test_a_redirect_of_the_game_s_calls_sends_no_prompt_to_the_other_host(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVERSARIAL_KEY", SECRET)

    async def elsewhere(request, body):
        return web.json_response(completion(MOVE))

    with HostileServer(elsewhere, host="127.0.0.2") as other:
        with HostileServer(game_handler(redirect_to(other))) as server:
            status, out, err = play(server.base_url, tmp_path)
    assert status == 3 and "redirect" in err and "--base-url" in err, err
    assert other.hits == []  # neither the prompt nor the key went there
    rows = recorded(tmp_path)
    assert rows and all(r["response"]["error"] == "redirect" and other.base_url in r["response"]["error_message"]
                        for r in rows)


def test_a_control_token_of_every_family_never_reaches_another_agent_s_prompt(tmp_path, monkeypatch):
    from llm_mesa.quoting import TEMPLATE_TOKEN_FAMILIES

    tokens = [token for _, examples in TEMPLATE_TOKEN_FAMILIES.values() for token in examples]
    said = "go blue " + " ".join(tokens)
    monkeypatch.setenv("ADVERSARIAL_KEY", SECRET)
    with HostileServer(game_handler(answer(json.dumps({"message": said, "diary": "d"})))) as server:
        assert play(server.base_url, tmp_path, "--max-rounds", "2")[0] == 0
        second_round = [json.loads(b) for b in server.completions()][8:]
    prompts = [m["content"] for body in second_round for m in body["messages"]]
    assert second_round and any("go blue" in p for p in prompts)  # the messages were delivered ...
    assert not [t for t in tokens for p in prompts if t in p]  # ... with every control token broken


# -- the listing route: a warning at most, and the game goes on ---------------------------------------


def models_handler(hostile):
    async def handler(request, body):
        if request.path.endswith("/models"):
            return await hostile(request, body)
        return web.json_response(completion(MOVE))
    return handler


async def drip(request, body):
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    await response.prepare(request)
    try:
        for _ in range(600):  # one byte every half second: every read succeeds, the answer never ends
            await response.write(b" ")
            await asyncio.sleep(0.5)
    except (ConnectionError, RuntimeError):
        pass
    return response


PREFLIGHT_ROWS = [
    ("data null", body_text('{"data": null}'), "not a model list"),
    ("a list", body_text("[1, 2]"), "not a model list"),
    ("nested 200,000 deep", body_text(deep(200_000)), "not a model list"),
    ("not JSON", body_text("<html>"), "not a model list"),
    ("200 KB header", body_text('{"data": []}', headers={"X-Big": "a" * 200_000}), "cannot be read"),
    ("dripping", drip, None),
]


@pytest.mark.parametrize("name, hostile, warning", PREFLIGHT_ROWS, ids=[row[0] for row in PREFLIGHT_ROWS])
def test_a_hostile_model_list_is_a_warning_and_the_game_goes_on(name, hostile, warning, tmp_path, monkeypatch):
    monkeypatch.setenv("ADVERSARIAL_KEY", SECRET)
    with HostileServer(models_handler(hostile)) as server:
        status, out, err = play(server.base_url, tmp_path, "--timeout", "3")
    assert status == 0 and "Traceback" not in err, err[-600:]
    lines = err.strip().splitlines()
    assert len(lines) <= 1 and (warning is None or warning in err), err
    assert json.loads(out)["call_failures"] == 0


def test_a_model_list_redirected_elsewhere_is_not_followed(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVERSARIAL_KEY", SECRET)

    async def elsewhere(request, body):
        return web.json_response({"data": [{"id": "m"}]})

    with HostileServer(elsewhere, host="127.0.0.2") as other:
        async def moved(request, body):
            return web.Response(status=302, headers={"Location": f"{other.base_url}/models"})

        with HostileServer(models_handler(moved)) as server:
            status, _, err = play(server.base_url, tmp_path)
    assert status == 0 and other.hits == [] and "follows no redirect" in err and len(err.strip().splitlines()) == 1


# -- the pre-flight's test call: one line naming the fix, exit 2, nothing written ----------------------


def probe_handler(hostile):
    async def handler(request, body):
        if request.path.endswith("/models"):
            return web.json_response({"data": [{"id": "m"}]})
        return await hostile(request, body)
    return handler


PROBE_ROWS = [
    ("401", body_text('{"error": "no"}', 401), "ADVERSARIAL_KEY; put a valid key there, or name the variable"),
    ("404", body_text('{"error": "no"}', 404), "does not know model 'm'"),
    ("500", body_text('{"error": "no"}', 500), "refused a 1-token test call"),
    ("HTML", body_text("<html>nginx</html>"), "not an OpenAI completion"),
    ("lone surrogate", body_text(json.dumps(completion("\ud800"))), "not valid UTF-8"),
    ("dripping", drip, "within --timeout 2 s"),
    ("200 KB header", body_text("{}", headers={"X-Big": "a" * 200_000}), "cannot be read"),
    ("too large", huge(5 * 1024 * 1024), "--max-answer-bytes"),
]


@pytest.mark.parametrize("name, hostile, fragment", PROBE_ROWS, ids=[row[0] for row in PROBE_ROWS])
def test_a_hostile_test_call_is_one_line_and_exit_2(name, hostile, fragment, tmp_path, monkeypatch):
    monkeypatch.setenv("ADVERSARIAL_KEY", SECRET)
    with HostileServer(probe_handler(hostile)) as server:
        status, out, err = play(server.base_url, tmp_path, "--timeout", "2")
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and fragment in lines[0], err[-600:]
    assert list(tmp_path.iterdir()) == []  # no run, no store


def test_a_redirected_test_call_names_where_and_sends_nothing_there(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVERSARIAL_KEY", SECRET)

    async def elsewhere(request, body):
        return web.json_response(completion(MOVE))

    with HostileServer(elsewhere, host="127.0.0.2") as other:
        with HostileServer(probe_handler(redirect_to(other))) as server:
            status, _, err = play(server.base_url, tmp_path)
    assert status == 2 and other.hits == [] and f"--base-url {other.base_url}" in err
    assert list(tmp_path.iterdir()) == []


# -- what a rerun does with a recorded failure ----------------------------------------------------------


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
