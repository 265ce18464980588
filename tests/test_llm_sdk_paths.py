"""The two ways an attempt reaches the server: the fast path through the SDK's private
internals, and the SDK's public ``client.post``. Both must send the same request and give
the same answer and recording; without the internals the call takes the public path and
says so once."""

from __future__ import annotations

import warnings

import openai
import openai._base_client
import openai._models
import pytest
from scripted_server import ScriptedServer

from llm_mesa.llm import (
    Endpoint,
    LLMRequest,
    ResponseStore,
    Usage,
    complete,
    dialects,
    run_sync,
    transport,
)

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
REQUEST = LLMRequest(messages=[{"role": "user", "content": "Answer in JSON."}], schema=SCHEMA,
                     sample_key="g=1|agent=0|round=0", template_hash="t1")


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(transport, "_warned_public_path", False)  # each test sees its own first warning
    dialects.forget_negotiations()
    yield
    dialects.forget_negotiations()


def route_of(ep):
    async def route():
        return transport.direct_route(ep, transport.get_client(ep), "/chat/completions")
    return run_sync(route())


def count_public_posts(monkeypatch) -> list[str]:
    """Spy on the SDK's public client.post: the paths it was asked to post to."""
    seen: list[str] = []
    original = openai.AsyncOpenAI.post

    async def post(self, path, *args, **kwargs):
        seen.append(path)
        return await original(self, path, *args, **kwargs)

    monkeypatch.setattr(openai.AsyncOpenAI, "post", post)
    return seen


def one_call(tmp_path, name, server_then=()):
    """One recorded schema call to a fresh scripted server: result, stored row, sent body, headers."""
    with ScriptedServer() as s:
        s.then(*server_then)
        ep = Endpoint(s.base_url, "scripted", temperature=0.5, max_attempts=3)
        store = ResponseStore(tmp_path / f"{name}.sqlite")
        usage = Usage()
        result = run_sync(complete(ep, REQUEST, store=store, usage=usage))
        rows = store.rows()
        store.close()
        return ep, result, rows, s.requests, s.headers, usage


#: what differs from run to run: times, and which server (URL) answered
PER_RUN = ("latency_s", "queue_s", "server")


def comparable(result, rows, bodies, headers, usage):
    record = {k: v for k, v in result.to_record().items() if k not in PER_RUN}
    stored = [{"key": r["key"], "request": r["request"],
               "response": {k: v for k, v in r["response"].items() if k not in PER_RUN}} for r in rows]
    # the public path asks the SDK for its response unread (streamed, so the body can be capped): a marker
    # of the SDK's own, as its with_streaming_response sends
    sent_headers = [{k.lower(): v for k, v in h.items()
                     if k.lower() not in ("content-length", "host", "x-stainless-raw-response")} for h in headers]
    return record, stored, bodies, sent_headers, usage.as_dict() | {"latency_s": None, "queue_s": None}


def test_the_public_sdk_path_answers_and_records_as_the_fast_path(tmp_path, monkeypatch):
    posts = count_public_posts(monkeypatch)
    script = ({"status": 503}, {"text": '{"answer": "red"}'})  # one retry, so the retry header is compared too
    ep, *fast = one_call(tmp_path, "fast", script)
    assert route_of(ep) is not None and posts == []  # the fast path sent it
    monkeypatch.setattr(transport, "direct_route", lambda *args: None)
    _, *public = one_call(tmp_path, "public", script)
    assert posts == ["/chat/completions"] * 2  # the public path sent both attempts
    assert fast[0].ok and fast[0].text == '{"answer": "red"}' and fast[0].attempts == 2
    assert comparable(*public) == comparable(*fast)


def test_without_the_private_members_calls_take_the_public_path_with_one_warning(tmp_path, monkeypatch):
    """FinalRequestOptions gone from openai._models (the SDK's own modules hold it by another
    name, so its public path still works): the calls still work, over client.post."""
    missing = "FinalRequestOptions"
    monkeypatch.delattr(openai._models, missing)
    posts = count_public_posts(monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ep, first, *_ = one_call(tmp_path, "first")
        _, second, *_ = one_call(tmp_path, "second")  # another server, another route: no second warning
    assert first.ok and second.ok and posts == ["/chat/completions"] * 2
    ours = [w for w in caught if "public client.post" in str(w.message)]
    assert len(ours) == 1 and missing in str(ours[0].message) and "\n" not in str(ours[0].message)
    assert route_of(ep) is None


@pytest.mark.parametrize("missing", ["_build_request", "_prepare_url"])
def test_a_client_without_its_private_methods_gets_no_route_and_one_warning(monkeypatch, missing):
    """The SDK's own pipeline uses these too, so only the route is checked, not a whole call."""
    monkeypatch.delattr(openai._base_client.BaseClient, missing)
    ep = Endpoint(f"http://127.0.0.1:9/{missing}/v1", "m")  # a URL of its own: routes are kept per URL
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert route_of(ep) is None
        assert route_of(Endpoint(ep.base_url, "m", timeout=7.0)) is None  # another route: no second warning
    ours = [w for w in caught if "public client.post" in str(w.message)]
    assert len(ours) == 1 and missing in str(ours[0].message)
