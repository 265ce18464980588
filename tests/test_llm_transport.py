"""The LLM transport over real HTTP on loopback, with the real ``openai`` async client.

Each test has a server inject faults (rate limits with Retry-After, 500s, stalls,
dropped connections, malformed or truncated answers, a server that refuses
``json_schema`` like llama-cpp-python) and checks what the client did: how many
requests reached the server, how long it waited, what it returned and what it
counted. The project's loopback endpoint plays the server where it can express
the scenario; the scripted fixture (``tests/scripted_server.py``) where a test
needs a given sequence of statuses or to see what was sent.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import email.utils
import json
import threading
import time

import pytest
from scripted_server import ScriptedServer, free_port

from llm_mesa.llm import (
    Endpoint,
    EndpointError,
    LLMRequest,
    Usage,
    add_endpoint_arguments,
    ask,
    complete,
    dialects,
    endpoint_from_args,
    event_loop,
    gather_sync,
    negotiated_dialect,
    parse_json_answer,
    preflight,
    run_sync,
    runtime,
    transport,
)
from llm_mesa.llm import client as client_module
from llm_mesa.llm.dialects import endpoint_manifest
from llm_mesa.llm.limits import forget_limits
from llm_mesa.llm.store_keys import request_identity, request_key
from llm_mesa.loopback.server import LoopbackServer

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
HELLO = [{"role": "user", "content": "Answer in JSON."}]


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    """Backoff without the seconds (Retry-After still honoured in full)."""
    monkeypatch.setattr(client_module, "BACKOFF_BASE_S", 0.01)
    dialects.forget_negotiations()
    forget_limits()  # a later server on a reused port starts afresh
    yield
    dialects.forget_negotiations()


@pytest.fixture(params=["direct", "sdk-post"])
def either_path(request, monkeypatch):
    """Run a test over the prebuilt path and over the SDK's client.post (the fallback)."""
    if request.param == "sdk-post":
        monkeypatch.setattr(transport, "direct_route", lambda *args: None)
    return request.param


@pytest.fixture
def server():
    with ScriptedServer() as s:
        yield s


def call(endpoint, request=None, **kwargs):
    return run_sync(complete(endpoint, request or LLMRequest(messages=HELLO), **kwargs))


def answer_of(text):
    parsed = parse_json_answer(text)
    return parsed.get("answer") if parsed else None


# -- runtime ------------------------------------------------------------------------------

async def doubled(x, delay=0.01):
    await asyncio.sleep(delay)
    return 2 * x


def test_run_sync_works_from_a_script_a_thread_and_a_running_loop():
    assert run_sync(doubled(3)) == 6
    from_thread = []
    t = threading.Thread(target=lambda: from_thread.append(run_sync(doubled(4))))
    t.start()
    t.join()
    assert from_thread == [8]

    async def jupyter_cell():  # a loop already runs in this thread, as in Jupyter
        return run_sync(doubled(5))

    assert asyncio.run(jupyter_cell()) == 10


def test_gather_sync_keeps_input_order_and_runs_together():
    delays = [0.2, 0.0, 0.1, 0.05]
    results = gather_sync([doubled(i, d) for i, d in enumerate(delays)])
    assert results == [0, 2, 4, 6]
    assert run_sync(runtime.gather(doubled(1), doubled(2))) == [2, 4]


def test_a_failing_coroutine_cancels_the_rest_of_its_round():
    """One call of a round raises: the others are cancelled, not left to be paid and recorded."""
    finished = {"slow": False, "slower": False}

    async def fails_at_once():
        await asyncio.sleep(0.01)
        raise ValueError("bad agent")

    async def finishes_later(name, delay):
        await asyncio.sleep(delay)
        finished[name] = True

    with pytest.raises(ValueError, match="bad agent"):  # the first failure itself, not a group
        gather_sync([finishes_later("slow", 0.2), fails_at_once(), finishes_later("slower", 0.3)])
    assert finished == {"slow": False, "slower": False}
    time.sleep(0.4)  # past both sleeps: they were cancelled, not merely outrun
    assert finished == {"slow": False, "slower": False}


def test_return_exceptions_collects_failures_and_lets_the_rest_finish():
    async def fails():
        raise ValueError("bad agent")

    results = gather_sync([doubled(1, 0.05), fails(), doubled(3)], return_exceptions=True)
    assert results[0] == 2 and isinstance(results[1], ValueError) and results[2] == 6


def test_run_sync_refuses_a_foreign_gather_and_times_out():
    other_loop = asyncio.new_event_loop()  # what asyncio.gather(...) outside a loop is bound to
    try:
        foreign = other_loop.create_future()
        with pytest.raises(TypeError, match="gather_sync"):
            run_sync(foreign)
    finally:
        other_loop.close()
    with pytest.raises(TimeoutError):
        run_sync(asyncio.sleep(5), timeout=0.05)


def test_a_new_process_gets_a_new_loop(monkeypatch):
    first = runtime.get_loop()
    run_sync(transport.aclose_clients())  # this process keeps the first loop: close its HTTP sessions now
    monkeypatch.setattr(event_loop, "_pid", -1)  # as after a fork: the thread is not ours
    second = runtime.get_loop()
    assert second is not first and second.is_running()
    assert run_sync(doubled(21)) == 42


# -- endpoint ------------------------------------------------------------------------------

def test_only_set_sampling_parameters_are_sent(server):
    ep = Endpoint(server.base_url, "scripted", temperature=0.7, extra_body={"repetition_penalty": 1.1})
    assert ep.sampling_params() == {"temperature": 0.7, "repetition_penalty": 1.1}
    call(ep)
    sent = server.requests[-1]
    assert sent["temperature"] == 0.7 and sent["repetition_penalty"] == 1.1
    for unset in ("top_p", "max_tokens", "max_completion_tokens", "seed", "response_format"):
        assert unset not in sent


def test_compact_json_bans_whitespace_runs_only_where_json_is_asked_for(server):
    """llama.cpp's JSON grammar lets a small model pad answers with newlines and tabs."""
    plain = Endpoint(server.base_url, "scripted", dialect="json_schema")
    compact = dataclasses.replace(plain, compact_json=True)
    call(compact, LLMRequest(messages=HELLO, schema=SCHEMA))
    bias = server.requests[-1]["logit_bias"]
    assert bias == dialects.COMPACT_JSON_LOGIT_BIAS and set(bias.values()) == {False}
    assert {"\n", "\n\n", "\t"} <= set(bias)
    # newline and tab runs only: a key holding a space would ban the lone space token too
    # (llama-server bans every token of a key; Gemma writes "node 3" with one)
    assert all(set(key) <= {"\n", "\t"} for key in bias)
    call(compact, LLMRequest(messages=HELLO))  # free text: newlines are allowed
    assert "logit_bias" not in server.requests[-1]
    call(plain, LLMRequest(messages=HELLO, schema=SCHEMA))
    assert "logit_bias" not in server.requests[-1]
    request = LLMRequest(messages=HELLO, schema=SCHEMA)
    assert request_identity(plain, request) == {k: v for k, v in request_identity(compact, request).items()
                                                if k != "compact_json"}  # keys recorded without it hold
    assert request_key(request_identity(plain, request)) != request_key(request_identity(compact, request))
    # the key names the ban list: answers drawn under the former one (runs of 1-3 newlines,
    # 1-4 tabs) do not replay as this one's
    former = dict.fromkeys(["\n" * k for k in range(1, 4)] + ["\t" * k for k in range(1, 5)], False)
    assert request_identity(compact, request)["compact_json"] == dialects.COMPACT_JSON_ID != dialects.ban_list_id(former)
    with pytest.raises(EndpointError, match="drop logit_bias from --extra-body"):
        Endpoint(server.base_url, "m", compact_json=True, extra_body={"logit_bias": {"1": -5}})
    with pytest.raises(EndpointError, match="true or false"):
        Endpoint(server.base_url, "m", compact_json="yes")
    parser = argparse.ArgumentParser()
    add_endpoint_arguments(parser)
    assert endpoint_from_args(parser.parse_args(["--base-url", server.base_url, "--model", "m", "--compact-json"])).compact_json


@pytest.mark.parametrize("kwargs, fix", [
    ({"max_tokens": 5, "max_completion_tokens": 5}, "exclude each other"),
    ({"dialect": "yaml"}, "choose one of"),
    ({"temperature": 3.0}, "outside"),
    ({"concurrency": 0}, "positive"),
    ({"api_key_env": "sk-live-abc"}, "NAME of an environment variable"),
    ({"prompt_mode": "completion", "dialect": "json_schema"}, "--dialect instructions"),
])
def test_bad_endpoints_get_one_line_naming_the_fix(kwargs, fix):
    with pytest.raises(EndpointError, match=fix) as info:
        Endpoint("http://127.0.0.1:9/v1", "m", **kwargs)
    assert "\n" not in str(info.value)


def test_cli_options_build_the_endpoint():
    parser = argparse.ArgumentParser()
    add_endpoint_arguments(parser, temperature=0.7, prompt_mode="completion")
    args = parser.parse_args(["--base-url", "http://127.0.0.1:8000/v1/", "--model", "m", "--top-p", "0.9",
                              "--max-tokens-per-call", "32", "--llm-seed", "3",
                              "--extra-body", '{"repetition_penalty": 1.1}', "--price", "0.1,0.4"])
    ep = endpoint_from_args(args)
    assert ep.base_url == "http://127.0.0.1:8000/v1"
    assert ep.sampling_params() == {"temperature": 0.7, "top_p": 0.9, "max_tokens": 32, "seed": 3,
                                    "repetition_penalty": 1.1}
    assert ep.prompt_mode == "completion" and ep.price == (0.1, 0.4)
    bad = parser.parse_args(["--base-url", "http://127.0.0.1:8000/v1", "--model", "m", "--extra-body", "{oops"])
    with pytest.raises(EndpointError, match="--extra-body is not valid JSON"):
        endpoint_from_args(bad)


def test_the_api_key_is_sent_but_never_shown(server, monkeypatch):
    monkeypatch.setenv("TRANSPORT_TEST_KEY", "sk-very-secret-1234")
    ep = Endpoint(server.base_url, "scripted", api_key_env="TRANSPORT_TEST_KEY")
    assert call(ep).ok
    assert server.headers[-1]["Authorization"] == "Bearer sk-very-secret-1234"
    shown = repr(ep) + json.dumps(endpoint_manifest(ep)) + str(ep)
    assert "sk-very-secret" not in shown and "TRANSPORT_TEST_KEY" in shown


def test_calls_carry_the_sdks_own_auth_user_agent_and_stainless_headers(server, monkeypatch):
    """What complete() sends is what openai's chat.completions.create sends (less the body)."""
    import openai

    monkeypatch.setenv("TRANSPORT_TEST_KEY", "sk-header-check-42")
    ep = Endpoint(server.base_url, "scripted", api_key_env="TRANSPORT_TEST_KEY", timeout=30.0)
    assert call(ep).ok
    ours = {k.lower(): v for k, v in server.headers[-1].items()}

    async def through_the_sdk() -> None:
        sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="sk-header-check-42", max_retries=0,
                                 http_client=openai.DefaultAioHttpClient())
        try:
            await sdk.chat.completions.create(model="scripted", messages=HELLO, timeout=30.0)
        finally:
            await sdk.close()

    async def route_of_the_call():
        return transport.direct_route(ep, transport.get_client(ep), "/chat/completions")

    assert run_sync(route_of_the_call()) is not None  # the prebuilt path sent `ours`, not client.post
    run_sync(through_the_sdk())
    theirs = {k.lower(): v for k, v in server.headers[-1].items()}
    assert ours["authorization"] == "Bearer sk-header-check-42"
    assert ours["user-agent"] == theirs["user-agent"] == f"AsyncOpenAI/Python {openai.__version__}"
    stainless = {k for k in theirs if k.startswith("x-stainless-")}
    assert {"x-stainless-lang", "x-stainless-package-version", "x-stainless-retry-count"} <= stainless
    for name in ("authorization", "accept", "content-type", *stainless):
        assert ours.get(name) == theirs[name], name
    assert set(theirs) - {"content-length"} == set(ours) - {"content-length"}


def test_a_retry_is_counted_in_the_sdks_retry_header(server):
    server.then({"status": 500})
    assert call(Endpoint(server.base_url, "scripted")).attempts == 2
    assert [h["x-stainless-retry-count"] for h in server.headers] == ["0", "1"]


# -- the call: concurrency, retries, failures -------------------------------------------------

def test_in_flight_calls_never_exceed_the_endpoint_limit():
    with LoopbackServer(latency=0.05) as s:
        ep = Endpoint(s.base_url, "echo", concurrency=3)
        results = gather_sync([complete(ep, LLMRequest(messages=HELLO)) for _ in range(12)])
        assert all(r.ok for r in results)
        stats = s.stats()
        assert stats["requests"] == 12 and stats["max_in_flight"] == 3


def test_rate_limit_waits_at_least_retry_after():
    with LoopbackServer() as s:
        usage = Usage()
        started = time.perf_counter()
        result = call(Endpoint(s.base_url, "echo?fail_first=1&fault=429&retry_after=1"), usage=usage)
        waited = time.perf_counter() - started
        stats = s.stats()
    assert result.ok and result.attempts == 2 and stats["requests"] == 2 and stats["by_fault"] == {"429": 1}
    assert waited >= 1.0 and result.latency_s >= 1.0
    assert usage.failures == {} and usage.attempts == 2


def test_retry_after_as_http_date_and_in_milliseconds():
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= transport.retry_after_s({"retry-after": future}) <= 30
    assert transport.retry_after_s({"retry-after-ms": "1500"}) == 1.5
    assert transport.retry_after_s({"retry-after": "soon"}) is None
    assert client_module._backoff_s(1, 2.0) >= 2.0


@pytest.mark.parametrize("fault", ["500", "drop"])
def test_a_transient_fault_then_success(fault, either_path):
    with LoopbackServer() as s:
        result = call(Endpoint(s.base_url, f"fixed?text=red&fail_first=1&fault={fault}"))
        stats = s.stats()
    assert result.ok and result.text == "red"
    assert result.attempts == 2 and stats["requests"] == 2 and stats["by_fault"] == {fault: 1}


def test_a_503_then_success(server, either_path):
    server.then({"status": 503})
    result = call(Endpoint(server.base_url, "scripted"))
    assert result.ok and result.text == '{"answer": "red"}'
    assert result.attempts == 2 and server.hits == 2


def test_a_stalled_call_times_out_then_succeeds(either_path):
    with LoopbackServer() as s:
        result = call(Endpoint(s.base_url, "echo?fail_first=1&fault=timeout&timeout_s=3", timeout=1.0))
        stats = s.stats()
    assert result.ok and result.attempts == 2 and stats["by_fault"] == {"timeout": 1}
    assert 1.0 <= result.latency_s  # the first attempt waited out its timeout


def test_a_permanent_failure_returns_an_error_result_and_is_counted(server):
    server.then(*[{"status": 503}] * 3)
    usage = Usage()
    result = call(Endpoint(server.base_url, "scripted", max_attempts=3), usage=usage)
    assert not result.ok and result.error == "server" and result.attempts == 3 and server.hits == 3
    assert "503" in result.error_message
    assert usage.failures == {"server": 1} and usage.calls == 1


@pytest.mark.parametrize("status, kind", [(401, "auth"), (404, "not_found"), (400, "bad_request")])
def test_client_errors_are_not_retried(server, status, kind, either_path):
    server.then({"status": status})
    result = call(Endpoint(server.base_url, "scripted"))
    assert result.error == kind and result.attempts == 1 and server.hits == 1


def test_an_unreachable_server_is_a_connection_failure(either_path):
    result = call(Endpoint(f"http://127.0.0.1:{free_port()}/v1", "m", max_attempts=2))
    assert result.error == "connection" and result.attempts == 2


def test_completion_mode_posts_a_raw_prompt(server):
    ep = Endpoint(server.base_url, "scripted", prompt_mode="completion", max_tokens=32)
    result = call(ep, LLMRequest(prompt="You are agent 1 in round 0.\n", schema=SCHEMA))
    assert result.ok and result.text == '{"answer": "red"}'
    sent = server.requests[-1]
    assert sent["prompt"].startswith("You are agent 1") and "response_format" not in sent
    assert result.dialect == "instructions"


# -- structured answers -------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ('{"answer": "red"}', {"answer": "red"}),
    ('Sure! Here it is:\n```json\n{"answer": "blue", "why": "a {brace} in text"}\n```\nThanks.',
     {"answer": "blue", "why": "a {brace} in text"}),
    ('My choice: {"answer": "red", "n": [1, 2,],} as asked', {"answer": "red", "n": [1, 2]}),
    ("{'answer': 'red', 'keep': True}", {"answer": "red", "keep": True}),
    ("{'answer': \"it's red\"}", {"answer": "it's red"}),
    ("I'd say {\"answer\": \"red\"}", {"answer": "red"}),
    ("no json here", None),
    ('[1, 2]', None),
    ('{"answer": "re', None),
])
def test_parse_json_answer_is_tolerant(text, expected):
    assert parse_json_answer(text) == expected


def test_a_malformed_answer_gets_one_reminder_and_then_succeeds(server):
    server.then({"text": "I pick red because it is nice."}, {"text": '{"answer": "blue"}'})
    usage = Usage()
    request = LLMRequest(messages=HELLO, schema=SCHEMA, sample_key="agent=1|round=0")
    ans = run_sync(ask(Endpoint(server.base_url, "scripted"), request, answer_of,
                       "Reply with JSON only.", usage=usage))
    assert ans.outcome == "retry_ok" and ans.value == "blue"
    assert server.requests[-1]["messages"][-1] == {"role": "user", "content": "Reply with JSON only."}
    assert ans.prompt_tokens == 20 and ans.completion_tokens == 10
    assert usage.calls == 2 and usage.outcomes == {"retry_ok": 1}


def test_a_second_malformed_answer_is_a_parse_failure(server):
    server.then({"text": "red"}, {"text": "still red"})
    usage = Usage()
    ans = run_sync(ask(Endpoint(server.base_url, "scripted"), LLMRequest(messages=HELLO), answer_of,
                       "JSON!", usage=usage))
    assert ans.outcome == "parse_failure" and ans.value is None and server.hits == 2
    assert usage.outcomes == {"parse_failure": 1}


def test_a_truncated_answer_is_counted_as_truncated(server):
    server.then({"text": '{"answer": "re', "finish_reason": "length"})
    usage = Usage()
    ans = run_sync(ask(Endpoint(server.base_url, "scripted", max_tokens=4), LLMRequest(messages=HELLO),
                       answer_of, "JSON!", usage=usage))
    assert ans.outcome == "truncated" and server.hits == 1
    assert usage.outcomes == {"truncated": 1}


def test_a_failed_call_is_a_call_failure(server):
    server.then({"status": 401})
    usage = Usage()
    ans = run_sync(ask(Endpoint(server.base_url, "scripted"), LLMRequest(messages=HELLO), answer_of,
                       "JSON!", usage=usage))
    assert ans.outcome == "call_failure" and ans.value is None
    assert usage.outcomes == {"call_failure": 1} and usage.failures == {"auth": 1}


def test_the_completion_reminder_is_appended_to_the_prompt(server):
    server.then({"text": "hmm"})
    ep = Endpoint(server.base_url, "scripted", prompt_mode="completion")
    ans = run_sync(ask(ep, LLMRequest(prompt="Say it.\n"), answer_of, "Follow EXACTLY: {\"answer\": ...}"))
    assert ans.outcome == "retry_ok"
    assert server.requests[-1]["prompt"] == 'Say it.\nFollow EXACTLY: {"answer": ...}'


# -- dialects --------------------------------------------------------------------------------------

def test_auto_falls_back_from_json_schema_to_json_object_like_llama_cpp_python(either_path):
    with ScriptedServer(reject_json_schema=True) as s:
        ep = Endpoint(s.base_url, "scripted")
        usage = Usage()
        first = call(ep, LLMRequest(messages=HELLO, schema=SCHEMA), usage=usage)
        assert first.ok and first.dialect == "json_object" and s.hits == 2
        assert [r["response_format"]["type"] for r in s.requests] == ["json_schema", "json_object"]
        assert s.requests[1]["response_format"]["schema"] == SCHEMA
        assert usage.failures == {}  # a refusal is not a server failure
        assert negotiated_dialect(ep) == "json_object" and endpoint_manifest(ep)["negotiated_dialect"] == "json_object"
        second = call(ep, LLMRequest(messages=HELLO, schema=SCHEMA))  # cached: straight to json_object
        assert second.ok and s.hits == 3 and s.requests[-1]["response_format"]["type"] == "json_object"


def test_auto_ends_at_instructions_when_no_response_format_is_accepted():
    with ScriptedServer(reject_response_format=True) as s:
        ep = Endpoint(s.base_url, "scripted")
        result = call(ep, LLMRequest(messages=HELLO, schema=SCHEMA))
        assert result.ok and result.dialect == "instructions" and s.hits == 3
        assert "response_format" not in s.requests[-1]
        assert negotiated_dialect(ep) == "instructions"


def test_a_forced_dialect_that_is_refused_fails_at_once():
    with ScriptedServer(reject_json_schema=True) as s:
        result = call(Endpoint(s.base_url, "scripted", dialect="json_schema"),
                      LLMRequest(messages=HELLO, schema=SCHEMA))
        assert result.error == "bad_request" and "--dialect auto" in result.error_message and s.hits == 1


# -- preflight ---------------------------------------------------------------------------------------

def test_preflight_accepts_a_served_model_and_names_what_is_offered(server):
    assert preflight(Endpoint(server.base_url, "scripted")) == ["scripted"]
    with pytest.raises(EndpointError, match="it offers: scripted"):
        preflight(Endpoint(server.base_url, "gpt-imaginary"))


def test_preflight_names_an_unreachable_url_and_the_fix():
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(EndpointError, match="llm-mesa serve") as info:
        preflight(Endpoint(url, "m"))
    assert url in str(info.value)


def test_preflight_names_the_missing_key_variable(monkeypatch):
    monkeypatch.delenv("REMOTE_TEST_KEY", raising=False)
    with pytest.raises(EndpointError, match="REMOTE_TEST_KEY"):
        preflight(Endpoint("https://llm.example.invalid/v1", "m", api_key_env="REMOTE_TEST_KEY"))


def test_preflight_probes_with_one_token_when_models_is_unsupported():
    with ScriptedServer(serve_models=False) as s:
        assert preflight(Endpoint(s.base_url, "anything")) == []
        assert s.hits == 1 and s.requests[-1]["max_tokens"] == 1


# -- usage ---------------------------------------------------------------------------------------------

def test_usage_nests_and_prices_live_calls(server):
    ep = Endpoint(server.base_url, "scripted", price=(1.0, 2.0))
    game = Usage("game")
    for rnd in range(2):
        for _agent in range(3):
            call(ep, usage=game.child(f"round={rnd}"))
    assert game.calls == 6 and game.prompt_tokens == 60 and game.completion_tokens == 30
    assert game.children["round=1"].calls == 3
    assert game.cost == pytest.approx((60 * 1.0 + 30 * 2.0) / 1e6)
    frame = game.to_frame()
    assert list(frame["ledger"]) == ["game", "game/round=0", "game/round=1"]
    assert list(frame["calls"]) == [6, 3, 3]


# -- against the project's loopback stand-in endpoint ------------------------------------------------

def test_the_transport_negotiates_with_the_loopback_endpoint():
    from llm_mesa.loopback.server import LoopbackServer

    with LoopbackServer(reject_json_schema=True) as stand_in:
        ep = Endpoint(stand_in.base_url, 'fixed?text={"answer": "blue"}')
        assert preflight(ep) != []  # a parameterised name is not listed: the 1-token probe accepts it
        usage = Usage()
        ans = run_sync(ask(ep, LLMRequest(messages=HELLO, schema=SCHEMA), answer_of, "JSON!", usage=usage))
        assert ans.outcome == "ok" and ans.value == "blue" and ans.first.dialect == "json_object"
        assert ans.first.system_fingerprint.startswith("llm-mesa-loopback")
        assert usage.failures == {} and negotiated_dialect(ep) == "json_object"
        with pytest.raises(EndpointError) as refused:
            preflight(Endpoint(stand_in.base_url, "no-such-behaviour"))
        from llm_mesa.llm.preflight_check import offered
        from llm_mesa.loopback import listed_behaviours

        assert f"it offers: {offered(list(listed_behaviours()))} (pass one" in str(refused.value)


def test_auto_sends_the_first_round_together_under_json_schema():
    """No lone probe: a round's schema calls all go out at once, so round 1 costs one latency, not two."""
    with LoopbackServer() as stand_in:
        ep = Endpoint(stand_in.base_url, 'fixed?text={"answer": "red"}&latency=0.5')
        assert negotiated_dialect(ep) is None
        results = gather_sync([complete(ep, LLMRequest(messages=HELLO, schema=SCHEMA, sample_key=f"a={i}"))
                               for i in range(12)])
        assert all(r.ok and r.dialect == "json_schema" for r in results)
        stats = stand_in.stats()
        assert stats["answered"] == 12 and stats["max_in_flight"] == 12  # all started before any finished
        assert negotiated_dialect(ep) == "json_schema" and endpoint_manifest(ep)["negotiated_dialect"] == "json_schema"


def test_a_refusing_server_costs_each_first_round_call_at_most_one_refusal():
    with LoopbackServer(reject_json_schema=True) as stand_in:
        ep = Endpoint(stand_in.base_url, 'fixed?text={"answer": "red"}', concurrency=4)
        results = gather_sync([complete(ep, LLMRequest(messages=HELLO, schema=SCHEMA, sample_key=f"a={i}"))
                               for i in range(12)])
        assert all(r.ok and r.dialect == "json_object" for r in results)
        stats = stand_in.stats()
        # the 4 calls let in first were refused once each; the 8 that waited for a place
        # started under the dialect negotiated meanwhile
        assert stats["answered"] == 12 and stats["rejected"] == {"json_schema": 4}
        assert negotiated_dialect(ep) == "json_object"
        gather_sync([complete(ep, LLMRequest(messages=HELLO, schema=SCHEMA, sample_key=f"b={i}")) for i in range(12)])
        assert stand_in.stats()["rejected"] == {"json_schema": 4}  # the next round: none


def test_a_failing_server_is_called_concurrently_from_the_first_round():
    with LoopbackServer(latency=0.3) as stand_in:
        ep = Endpoint(stand_in.base_url, "fixed?text=%7B%7D&p500=1", max_attempts=1)
        results = gather_sync([complete(ep, LLMRequest(messages=HELLO, schema=SCHEMA, sample_key=f"a={i}"))
                               for i in range(8)])
        assert all(r.error == "server" for r in results)
        assert stand_in.stats()["max_in_flight"] == 8  # no lone probe before the rest
        assert negotiated_dialect(ep) is None  # nothing worked, nothing refused: still unknown


def test_one_concurrency_limit_per_server_across_its_models():
    from llm_mesa.llm.runtime import gather_sync
    from llm_mesa.loopback.server import LoopbackServer

    with LoopbackServer(latency=0.1) as stand_in:
        eps = [Endpoint(stand_in.base_url, f"fixed?text=m{i}", concurrency=2) for i in range(4)]
        gather_sync([complete(ep, LLMRequest(messages=HELLO, sample_key=f"k={j}")) for ep in eps for j in range(3)])
        assert stand_in.stats()["max_in_flight"] == 2


def test_two_limits_for_one_server_do_not_add_up_the_smaller_holds():
    with LoopbackServer() as stand_in:
        wide = Endpoint(stand_in.base_url, "fixed?text=x&latency=0.2", concurrency=3)
        narrow = Endpoint(stand_in.base_url, "fixed?text=y&latency=0.2", concurrency=2)
        # the wider endpoint's calls come first: they must not be let in before the narrower limit is known
        results = gather_sync([complete(ep, LLMRequest(messages=HELLO, sample_key=f"k={j}"))
                               for ep in (wide, narrow) for j in range(5)])
        assert all(r.ok for r in results)
        stats = stand_in.stats()
        assert stats["requests"] == 10 and stats["max_in_flight"] == 2
