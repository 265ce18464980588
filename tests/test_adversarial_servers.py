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
import json

import pandas as pd
import pytest
from aiohttp import web
from hostile_server import (
    MOVE,
    SECRET,
    HostileServer,
    answer,
    body_text,
    completion,
    deep,
    echo_key,
    game_handler,
    huge,
    play,
    recorded,
    redirect_to,
)

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
