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


def test_a_games_command_run_twice_replays_the_first_runs_answers_as_a_sweeps_rerun_does(server, tmp_path, capsys,
                                                                                         monkeypatch):
    """The same command again: every call replayed from the file, none sent, none replaced, the same game."""
    store = tmp_path / "calls.sqlite"
    assert main(game(server, "--record", str(store))) == 0
    first = json.loads(capsys.readouterr().out)
    rows_before = len(ResponseStore(store, "replay"))
    server.reset()
    assert main(game(server, "--record", str(store))) == 0
    again = json.loads(capsys.readouterr().out)
    assert server.stats()["requests"] == 0  # not one call: the file held them all
    assert len(ResponseStore(store, "replay")) == rows_before
    assert again.pop("replayed_calls") == first["calls"] > 0
    for summary in (first, again):
        summary.pop("replayed_calls", None), summary.pop("wall_s", None)  # the clock's, not the game's
    assert again == first
    monkeypatch.chdir(tmp_path)  # the default file too: the command run twice with no recording option
    for _ in range(2):
        server.reset()
        assert main(game(server)) == 0
    capsys.readouterr()
    assert server.stats()["requests"] == 0 and (tmp_path / "llm-mesa-calls.sqlite").exists()
    from llm_mesa.llm.endpoint import Endpoint
    from llm_mesa.models.consensus import ConsensusModel
    from llm_mesa.models.consensus.llm_policy import LLMConsensusPolicy

    def script(path):  # a script's store in record mode still refuses to replace an answer
        policy = LLMConsensusPolicy(Endpoint(base_url=server.base_url, model="rule:majority-inertia"),
                                    store=ResponseStore(path, "record"))
        return ConsensusModel(8, "caveman", policy=policy, max_rounds=2, rng=0, baseline_permutations=0).run()

    script(tmp_path / "script.sqlite")
    with pytest.raises(AlreadyRecorded, match="already holds an answer to this call"):
        script(tmp_path / "script.sqlite")
    assert issubclass(AlreadyRecorded, StoreError)


@pytest.mark.parametrize("redirect, status, fragment", [(">/dev/full", 2, "cannot write the output"), (">&-", 0, "")])
def test_a_full_or_closed_stdout_is_answered_without_a_traceback(redirect, status, fragment):
    import subprocess
    import sys

    command = f'"{sys.executable}" -m llm_mesa.cli consensus --n 12 --topology ws --max-rounds 2 {redirect}'
    proc = subprocess.run(command, shell=True, capture_output=False, stderr=subprocess.PIPE, text=True)
    assert proc.returncode == status and "Traceback" not in proc.stderr
    assert fragment in proc.stderr
