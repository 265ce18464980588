"""Record and replay: a recorded run replays exactly with zero calls, a miss is loud,
a crashed run resumes paying only for what is missing, and no secret is stored."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from scripted_server import ScriptedServer

from llm_mesa.llm import (
    Endpoint,
    LLMRequest,
    ReplayMiss,
    ResponseStore,
    StoreError,
    Usage,
    ask,
    complete,
    gather_sync,
    parse_json_answer,
    run_sync,
)
from llm_mesa.llm import client as client_module
from llm_mesa.llm.dialects import endpoint_manifest
from llm_mesa.llm.store_keys import request_identity, request_key

SECRET = "sk-record-replay-secret-987"


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    monkeypatch.setattr(client_module, "BACKOFF_BASE_S", 0.01)


def request(agent: int, rnd: int = 0, template: str = "t1") -> LLMRequest:
    # identical prompts: only the sample key tells the agents' calls apart
    return LLMRequest(messages=[{"role": "user", "content": "Pick a colour as JSON."}],
                      sample_key=f"g=1|agent={agent}|round={rnd}|try=0", template_hash=template)


def run_game(endpoint, store, agents=range(4), usage=None):
    return gather_sync([complete(endpoint, request(a), store=store, usage=usage) for a in agents])


def test_strict_replay_returns_identical_results_with_zero_calls(tmp_path):
    path = tmp_path / "calls.sqlite"
    with ScriptedServer() as s:
        ep = Endpoint(s.base_url, "scripted", temperature=0.7)
        s.then({"text": '{"c": "red"}'}, {"text": '{"c": "blue"}'}, {"status": 400}, {"text": '{"c": "blue"}'})
        recorded = run_game(ep, ResponseStore(path))
        assert s.hits == 4
    # the server is gone: a replay cannot call anything
    usage = Usage()
    replayed = run_game(ep, ResponseStore(path, "replay"), usage=usage)
    assert sorted(r.text for r in replayed) == sorted(r.text for r in recorded)
    for old, new in zip(recorded, replayed):
        assert new.replayed and not old.replayed
        assert (new.text, new.finish_reason, new.prompt_tokens, new.completion_tokens, new.model,
                new.system_fingerprint, new.error, new.attempts) == \
               (old.text, old.finish_reason, old.prompt_tokens, old.completion_tokens, old.model,
                old.system_fingerprint, old.error, old.attempts)
    assert sum(r.error == "bad_request" for r in replayed) == 1  # the failure replays too
    assert usage.replayed == 4 and usage.failures == {"bad_request": 1}


def test_a_replay_miss_names_the_sample_key_and_replay_fill(tmp_path):
    path = tmp_path / "calls.sqlite"
    with ScriptedServer() as s:
        ep = Endpoint(s.base_url, "scripted")
        run_game(ep, ResponseStore(path), agents=[0])
        store = ResponseStore(path, "replay")
        with pytest.raises(ReplayMiss, match=r"agent=1\|round=0.*replay-fill"):
            run_sync(complete(ep, request(1), store=store))
        edited = request(0, template="t2")  # an edited prompt template never replays stale answers
        with pytest.raises(ReplayMiss):
            run_sync(complete(ep, edited, store=store))
        assert s.hits == 1
    with pytest.raises(StoreError, match="record a run first"):
        ResponseStore(tmp_path / "missing.sqlite", "replay")


def test_replay_fill_calls_only_for_the_missing_answers(tmp_path):
    path = tmp_path / "calls.sqlite"
    with ScriptedServer() as s:
        ep = Endpoint(s.base_url, "scripted")
        first = run_game(ep, ResponseStore(path), agents=range(3))  # a run that crashed after 3 calls
        assert s.hits == 3
        usage = Usage()
        resumed = run_game(ep, ResponseStore(path, "replay-fill"), agents=range(5), usage=usage)
        assert s.hits == 5 and usage.replayed == 3
        assert [r.replayed for r in resumed] == [True, True, True, False, False]
        assert [r.text for r in resumed[:3]] == [r.text for r in first]
        assert len(ResponseStore(path, "replay")) == 5


def test_sample_key_sampling_and_template_change_the_key():
    ep = Endpoint("http://127.0.0.1:9/v1", "m", temperature=0.7)
    base = request_key(request_identity(ep, request(0)))
    assert base == request_key(request_identity(ep, request(0)))
    assert base != request_key(request_identity(ep, request(1)))
    assert base != request_key(request_identity(ep, request(0, template="t2")))
    assert base != request_key(request_identity(Endpoint(ep.base_url, "m", temperature=0.8), request(0)))
    assert base != request_key(request_identity(Endpoint(ep.base_url, "m2", temperature=0.7), request(0)))


def test_a_reminder_retry_is_recorded_apart_and_replays_its_outcome(tmp_path):
    path = tmp_path / "calls.sqlite"

    def decode(text):
        parsed = parse_json_answer(text)
        return parsed and parsed.get("c")

    with ScriptedServer() as s:
        ep = Endpoint(s.base_url, "scripted")
        s.then({"text": "red, I think"}, {"text": '{"c": "red"}'})
        live = run_sync(ask(ep, request(0), decode, "JSON only.", store=ResponseStore(path)))
        assert live.outcome == "retry_ok" and s.hits == 2
        keys = [row["request"]["sample_key"] for row in ResponseStore(path).rows()]
        assert keys == ["g=1|agent=0|round=0|try=0", "g=1|agent=0|round=0|try=0|retry=1"]
        again = run_sync(ask(ep, request(0), decode, "JSON only.", store=ResponseStore(path, "replay")))
        assert again.outcome == "retry_ok" and again.value == "red" and s.hits == 2


def test_the_api_key_is_never_stored(tmp_path, monkeypatch):
    monkeypatch.setenv("REPLAY_TEST_KEY", SECRET)
    path = tmp_path / "calls.sqlite"
    with ScriptedServer() as s:
        ep = Endpoint(s.base_url, "scripted", api_key_env="REPLAY_TEST_KEY")
        store = ResponseStore(path)
        run_game(ep, store)
        assert s.headers[-1]["Authorization"] == f"Bearer {SECRET}"  # it was used
        stored_rows = json.dumps(store.rows())
        store.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())  # database, WAL and shared memory
    assert SECRET.encode() not in raw and SECRET not in stored_rows
    assert SECRET not in json.dumps(endpoint_manifest(ep)) + json.dumps(store.manifest())
    assert "Pick a colour" in stored_rows  # the request itself is there


def test_off_mode_neither_reads_nor_writes(tmp_path):
    with ScriptedServer() as s:
        ep = Endpoint(s.base_url, "scripted")
        store = ResponseStore(tmp_path / "off.sqlite", "off")
        run_game(ep, store, agents=[0, 0])
        assert s.hits == 2 and not (tmp_path / "off.sqlite").exists()
    with pytest.raises(StoreError, match="choose one of"):
        ResponseStore(tmp_path / "x.sqlite", "replay-strict")


def _record_in_worker(base_url: str, path: str, worker: int, calls: int) -> int:
    """A sweep worker process: its own loop, client and store connection, one shared file."""
    ep = Endpoint(base_url, "scripted")
    store = ResponseStore(path)
    results = gather_sync([complete(ep, request(agent, rnd=worker), store=store) for agent in range(calls)])
    store.close()
    return sum(r.ok for r in results)


@pytest.mark.parametrize("start_method", ["spawn", "fork"])
def test_worker_processes_call_and_record_into_one_store(tmp_path, start_method):
    import multiprocessing
    import warnings

    path = str(tmp_path / "sweep.sqlite")
    run_sync(complete(Endpoint("http://127.0.0.1:9/v1", "m", max_attempts=1), request(0)))  # parent loop is up
    with ScriptedServer() as s, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork of a threaded parent: the point of the test
        ctx = multiprocessing.get_context(start_method)
        with ctx.Pool(2) as pool:
            oks = pool.starmap(_record_in_worker, [(s.base_url, path, w, 25) for w in range(2)])
        assert oks == [25, 25] and s.hits == 50
    assert len(ResponseStore(path, "replay")) == 50


def _rows_on_disk(path) -> int:
    """Rows a separate connection sees: what is committed to the file (none before its first commit,
    which creates the file and its tables)."""
    import sqlite3

    if not path.exists():
        return 0
    conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    except sqlite3.OperationalError:  # the writer is creating the tables right now
        return 0
    finally:
        conn.close()


def test_writes_are_batched_off_the_caller_yet_read_back_at_once(tmp_path, monkeypatch):
    from llm_mesa.llm import LLMResult
    from llm_mesa.llm import store as store_module

    monkeypatch.setattr(store_module, "BATCH_WINDOW_S", 30.0)  # the writer holds its batch open
    path = tmp_path / "calls.sqlite"
    store = ResponseStore(path)
    ep = Endpoint("http://127.0.0.1:9/v1", "m")
    identities = [request_identity(ep, request(a)) for a in range(3)]
    for agent, identity in enumerate(identities):
        store.put(request_key(identity), identity, LLMResult(text=f"colour {agent}", attempts=1))
    assert _rows_on_disk(path) == 0  # not yet committed ...
    assert store.get(request_key(identities[1])).text == "colour 1"  # ... yet readable, as replayed
    assert store.get(request_key(identities[1])).replayed
    store.flush()  # commits now, without waiting out the window
    assert _rows_on_disk(path) == 3 and len(store) == 3
    store.put(request_key(identities[0]), identities[0], LLMResult(text="colour 0, again", attempts=1))
    store.close()  # close commits what is pending
    assert _rows_on_disk(path) == 3
    assert ResponseStore(path, "replay").get(request_key(identities[0])).text == "colour 0, again"


def test_a_new_store_on_the_same_file_sees_rows_not_yet_committed(tmp_path, monkeypatch):
    from llm_mesa.llm import store as store_module

    monkeypatch.setattr(store_module, "BATCH_WINDOW_S", 30.0)
    path = tmp_path / "calls.sqlite"
    with ScriptedServer() as s:
        ep = Endpoint(s.base_url, "scripted")
        recorder = ResponseStore(path)  # never closed, as a script that forgets to
        recorded = run_game(ep, recorder)
        assert _rows_on_disk(path) == 0
        replayed = run_game(ep, ResponseStore(path, "replay"))
        assert [r.text for r in replayed] == [r.text for r in recorded] and s.hits == 4
    recorder.close()


def test_an_exit_without_close_loses_nothing(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "calls.sqlite"
    script = (
        "from llm_mesa.llm import Endpoint, LLMRequest, LLMResult, ResponseStore\n"
        "from llm_mesa.llm import store as m\n"
        "from llm_mesa.llm.store_keys import request_identity, request_key\n"
        "m.BATCH_WINDOW_S = 30.0\n"
        f"store = ResponseStore({str(path)!r})\n"
        "ep = Endpoint('http://127.0.0.1:9/v1', 'm')\n"
        "for a in range(5):\n"
        "    ident = request_identity(ep, LLMRequest(prompt='p', sample_key=f'a={a}'))\n"
        "    store.put(request_key(ident), ident, LLMResult(text=str(a)))\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert _rows_on_disk(path) == 5


class _SlowReads:
    """A store connection whose SELECTs take ``delay`` seconds, as on a busy disk or a locked file."""

    def __init__(self, conn, delay: float) -> None:
        self._conn, self._delay = conn, delay

    def execute(self, sql, *args):
        if sql.lstrip().upper().startswith("SELECT"):
            time.sleep(self._delay)
        return self._conn.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self._conn, name)


def test_a_slow_store_read_does_not_stall_the_event_loop(tmp_path):
    path = tmp_path / "calls.sqlite"
    with ScriptedServer() as s:
        ep = Endpoint(s.base_url, "scripted")
        s.then({"text": '{"c": "red"}'})
        recorder = ResponseStore(path)
        run_game(ep, recorder, agents=[0])
        recorder.close()
    store = ResponseStore(path, "replay")
    store._conn = _SlowReads(store._conn, 0.3)

    async def replay_while_ticking():
        call = asyncio.create_task(complete(ep, request(0), store=store))
        await asyncio.sleep(0)  # the call starts; a read on the loop thread would run to its end here
        ticks = 0
        while not call.done():  # other work on the loop (the rest of a round) goes on meanwhile
            ticks += 1
            await asyncio.sleep(0.005)
        return ticks, await call

    ticks, result = run_sync(replay_while_ticking())
    assert result.replayed and result.text == '{"c": "red"}'
    assert ticks > 0


def test_replayed_calls_count_their_tokens_and_cost_in_the_one_ledger(tmp_path):
    """A game's summary (its calls' tokens at the endpoint's price) and its manifest (the
    ledger) read the same cost whether the calls were made or replayed."""
    path = tmp_path / "calls.sqlite"
    with ScriptedServer() as s:
        ep = Endpoint(s.base_url, "scripted", price=(1.0, 2.0))
        live = Usage("game")
        recorded = run_game(ep, ResponseStore(path), agents=range(3), usage=live)
    replay = Usage("game")
    replayed = run_game(ep, ResponseStore(path, "replay"), agents=range(3), usage=replay)
    summary_cost = sum(ep.cost(r.prompt_tokens, r.completion_tokens) for r in replayed)
    assert summary_cost > 0
    assert replay.as_dict()["cost"] == pytest.approx(summary_cost)
    assert replay.as_dict()["cost"] == pytest.approx(live.as_dict()["cost"])
    for key in ("calls", "prompt_tokens", "completion_tokens", "total_tokens"):
        assert replay.as_dict()[key] == live.as_dict()[key]
    # what was replayed stays apart: a count, and the part of the cost this run did not pay
    assert (replay.replayed, live.replayed) == (3, 0)
    assert replay.as_dict()["replayed_cost"] == pytest.approx(summary_cost)
    assert live.as_dict()["replayed_cost"] == 0
    assert [r.text for r in replayed] == [r.text for r in recorded]


def test_an_answer_is_priced_as_the_ledger_prices_its_calls(tmp_path):
    path = tmp_path / "calls.sqlite"

    def decode(text):
        parsed = parse_json_answer(text)
        return parsed and parsed.get("c")

    with ScriptedServer() as s:
        ep = Endpoint(s.base_url, "scripted", price=(1.0, 2.0))
        s.then({"text": "red, I think"}, {"text": '{"c": "red"}'})
        live = Usage()
        first = run_sync(ask(ep, request(0), decode, "JSON only.", store=ResponseStore(path), usage=live))
    replay = Usage()
    again = run_sync(ask(ep, request(0), decode, "JSON only.", store=ResponseStore(path, "replay"), usage=replay))
    assert first.outcome == again.outcome == "retry_ok"
    assert replay.cost > 0 and replay.replayed == 2
    assert first.cost(ep) == pytest.approx(live.cost) and again.cost(ep) == pytest.approx(replay.cost)


def test_a_replay_sets_the_negotiated_dialect_from_the_recording(tmp_path):
    from llm_mesa.llm import dialects, negotiated_dialect

    path = tmp_path / "calls.sqlite"
    schema = {"type": "object", "properties": {"c": {"type": "string"}}}
    schema_request = LLMRequest(messages=[{"role": "user", "content": "Pick a colour as JSON."}], schema=schema,
                                sample_key="g=1|agent=0|round=0|try=0")
    dialects.forget_negotiations()
    try:
        with ScriptedServer(reject_json_schema=True) as s:
            ep = Endpoint(s.base_url, "scripted")
            live = run_sync(complete(ep, schema_request, store=ResponseStore(path)))
            assert live.ok and live.dialect == "json_object"
        assert ResponseStore(path).rows()[0]["response"]["dialect"] == "json_object"  # the row says which
        dialects.forget_negotiations()  # a new process replays the game
        replayed = run_sync(complete(ep, schema_request, store=ResponseStore(path, "replay")))
        assert replayed.replayed and replayed.dialect == "json_object"
        assert negotiated_dialect(ep) == "json_object" and endpoint_manifest(ep)["negotiated_dialect"] == "json_object"
    finally:
        dialects.forget_negotiations()
