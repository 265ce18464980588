"""The compact record store: shared texts once, rows compressed, old stores still replay.

Measured on a recorded loopback consensus game (36 agents, local messages): the
file's size over its calls must stay at or under 0.5 KB a call (it was ~4.2 KB with
the rules text in every row).
"""

import json
import sqlite3

import pandas as pd
import pytest

from llm_mesa.cli import main
from llm_mesa.llm.store import ResponseStore
from llm_mesa.loopback.server import LoopbackServer


@pytest.fixture(scope="module")
def server():
    with LoopbackServer(seed=2) as s:
        yield s


def game(server, *extra):
    return ["consensus", "--policy", "llm", "--base-url", server.base_url, "--model", "rule:majority-inertia",
            "--n", "36", "--topology", "ws", "--max-rounds", "4", "--comm", "local", "--seed", "5", "--json", *extra]


def _old_format_copy(source, target):
    """The same calls in the former layout: one rowid table, JSON text in every row, no texts table."""
    store = ResponseStore(source, "replay")
    try:
        rows = store.rows()
    finally:
        store.close()
    conn = sqlite3.connect(target)
    conn.execute("CREATE TABLE calls (key TEXT PRIMARY KEY, request TEXT NOT NULL, response TEXT NOT NULL, "
                 "created REAL NOT NULL)")
    conn.executemany("INSERT INTO calls VALUES (?, ?, ?, ?)", [
        (r["key"], json.dumps(r["request"], ensure_ascii=False, sort_keys=True),
         json.dumps(r["response"], ensure_ascii=False), r["created"]) for r in rows])
    conn.commit()
    conn.close()
    return rows


def test_a_consensus_game_takes_at_most_half_a_kilobyte_a_call_and_old_stores_replay(server, tmp_path):
    record = tmp_path / "calls.sqlite"
    assert main(game(server, "--record", str(record), "--out", str(tmp_path / "live"))) == 0
    summary = json.loads((tmp_path / "live" / "summary.json").read_text())
    calls = summary["calls"]
    conn = sqlite3.connect(record)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("VACUUM")
    shared = conn.execute("SELECT COUNT(*) FROM texts").fetchone()[0]
    conn.close()
    per_call = record.stat().st_size / calls
    print(f"\ncompact store: {record.stat().st_size} bytes for {calls} calls = {per_call:.0f} B a call; "
          f"{shared} shared texts")
    assert per_call <= 512
    assert shared < calls / 10  # the rules and schema, not one per call

    # rows decode to what was asked and answered
    rows = _old_format_copy(record, tmp_path / "old.sqlite")
    assert len(rows) == calls
    assert all(isinstance(r["request"]["messages"][0]["content"], str) for r in rows)
    forms = {tuple(tuple(form["required"]) for form in r["request"]["schema"]["anyOf"]) for r in rows}
    assert forms == {(("colour", "reason", "diary"), ("message", "diary"))}  # a move or a message
    old_size = (tmp_path / "old.sqlite").stat().st_size
    assert old_size > 4 * record.stat().st_size

    transcript = pd.read_parquet(tmp_path / "live" / "transcript.parquet")
    for name, path in (("compact", record), ("old", tmp_path / "old.sqlite")):
        served = server.stats()["answered"]
        out = tmp_path / f"replay-{name}"
        assert main(game(server, "--replay", str(path), "--out", str(out))) == 0, name
        assert server.stats()["answered"] == served
        replayed = json.loads((out / "summary.json").read_text())
        assert replayed["replayed_calls"] == calls
        pd.testing.assert_frame_equal(pd.read_parquet(out / "transcript.parquet"), transcript, obj=name)
