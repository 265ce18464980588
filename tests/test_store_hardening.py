"""The record store: damaged files are one line, a read-only recording replays, a recorded answer is never replaced."""

import json
import os
import sqlite3
import stat

import pytest

from llm_mesa.cli import main
from llm_mesa.llm.store import AlreadyRecorded, ResponseStore, StoreError
from llm_mesa.loopback.server import LoopbackServer


@pytest.fixture(scope="module")
def server():
    with LoopbackServer(seed=4) as s:
        yield s


def game(server, *extra):
    return ["consensus", "--policy", "llm", "--base-url", server.base_url, "--model", "rule:majority-inertia",
            "--n", "8", "--topology", "caveman", "--max-rounds", "2", "--json", *extra]


def test_a_damaged_store_is_one_line_naming_it(tmp_path, capsys):
    damaged = tmp_path / "calls.sqlite"
    damaged.write_bytes(b"SQLite format 3\x00" + os.urandom(4096))
    for mode in ("record", "replay", "replay-fill"):
        with pytest.raises(StoreError, match="is not a readable response store"):
            ResponseStore(damaged, mode)
    assert main(["consensus", "--policy", "llm", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                 "--replay", str(damaged)]) == 2
    err = capsys.readouterr().err.strip()
    assert "is not a readable response store" in err and len(err.splitlines()) == 1


def test_a_read_only_recording_replays_with_zero_calls(server, tmp_path, capsys):
    store = tmp_path / "rec" / "calls.sqlite"
    assert main(game(server, "--record", str(store))) == 0
    recorded = capsys.readouterr().out
    folder = store.parent
    for path in folder.iterdir():
        path.chmod(stat.S_IRUSR)
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        server.reset()
        assert main(game(server, "--replay", str(store), "--base-url", "http://127.0.0.1:9/v1")) == 0
        replayed = capsys.readouterr().out
        assert server.stats()["requests"] == 0
    finally:
        folder.chmod(stat.S_IRWXU)
    replay = ResponseStore(store, "replay")  # a strict replay holds a read-only connection, so it needs no write access
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        replay._connection().execute("CREATE TABLE probe (a)")
    replay.close()
    recorded, replayed = json.loads(recorded), json.loads(replayed)
    assert replayed.pop("replayed_calls") == recorded["calls"] > 0
    for summary in (recorded, replayed):
        summary.pop("policy"), summary.pop("replayed_calls", None)  # the policy names the server's URL
        summary.pop("wall_s", None)  # the clock's, not the game's
    assert replayed == recorded


def test_recording_a_game_twice_into_one_file_is_refused(server, tmp_path, capsys):
    store = tmp_path / "calls.sqlite"
    assert main(game(server, "--record", str(store))) == 0
    capsys.readouterr()
    before = store.read_bytes() if not store.with_name(store.name + "-wal").exists() else None
    rows_before = len(ResponseStore(store, "replay"))
    server.reset()
    assert main(game(server, "--record", str(store))) == 2
    err = capsys.readouterr().err.strip()
    assert "already holds an answer to this call" in err and len(err.splitlines()) == 1
    assert len(ResponseStore(store, "replay")) == rows_before
    if before is not None:
        assert store.read_bytes() == before
    assert main(game(server, "--replay", str(store), "--replay-fill")) == 0  # what the message offers works
    assert issubclass(AlreadyRecorded, StoreError)


@pytest.mark.parametrize("redirect, status, fragment", [(">/dev/full", 2, "cannot write the output"), (">&-", 0, "")])
def test_a_full_or_closed_stdout_is_answered_without_a_traceback(redirect, status, fragment):
    import subprocess
    import sys

    command = f'"{sys.executable}" -m llm_mesa.cli consensus --n 12 --topology ws --max-rounds 2 {redirect}'
    proc = subprocess.run(command, shell=True, capture_output=False, stderr=subprocess.PIPE, text=True)
    assert proc.returncode == status and "Traceback" not in proc.stderr
    assert fragment in proc.stderr
