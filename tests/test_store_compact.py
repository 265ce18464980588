"""The compact record store: shared texts once, rows compressed, old stores still replay.

Measured on a recorded loopback consensus game (36 agents, local messages): the
file's size over its calls must stay at or under 0.5 KB a call (it was ~4.2 KB with
the rules text in every row).
"""

import hashlib
import json
import sqlite3
import zlib

import pandas as pd
import pytest

from llm_mesa.cli import main
from llm_mesa.llm import compact
from llm_mesa.llm.store import ResponseStore
from llm_mesa.llm.types import LLMResult
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


def demo_game(server, *extra):
    """The demo's LLM game (scripts/demo.sh): 36 agents, BA, local messages, 10 rounds."""
    return ["consensus", "--policy", "llm", "--base-url", server.base_url, "--model", "rule:majority-inertia",
            "--n", "36", "--topology", "ba", "--max-rounds", "10", "--comm", "local", "--seed", "1", "--json", *extra]


def test_the_demo_game_takes_at_most_half_a_kilobyte_a_call_on_disk_as_it_is_left(server, tmp_path, capsys):
    """As the command leaves the file (no VACUUM): 568 bytes a call when rows were compressed against
    the first row alone (no history block in it), 0.3 KB against the latest rows."""
    record = tmp_path / "calls.sqlite"
    assert main(demo_game(server, "--record", str(record))) == 0
    calls = json.loads(capsys.readouterr().out)["calls"]
    size = sum(f.stat().st_size for f in tmp_path.iterdir() if f.name.startswith("calls.sqlite"))
    assert size / calls <= 512, f"{size / calls:.0f} bytes a call"
    conn = sqlite3.connect(record)
    keys = [k for (k,) in conn.execute("SELECT key FROM calls")]
    dictionaries = conn.execute("SELECT COUNT(*) FROM texts WHERE hash LIKE 'zdict:%'").fetchone()[0]
    conn.close()
    assert all(isinstance(k, bytes) and len(k) == 32 for k in keys)  # the key's bytes, not 64 hex digits
    assert dictionaries == 2  # the first row's, then the first 64 rows'


def _previous_format_copy(source, target):
    """The same calls as the previous compact format wrote them: hex keys, zlib streams against the first row."""
    rows = ResponseStore(source, "replay").rows()
    conn = sqlite3.connect(target)
    conn.execute("CREATE TABLE calls (key TEXT PRIMARY KEY, request TEXT NOT NULL, response TEXT NOT NULL, "
                 "created REAL NOT NULL) WITHOUT ROWID")
    conn.execute("CREATE TABLE texts (hash TEXT PRIMARY KEY, body BLOB NOT NULL) WITHOUT ROWID")
    texts: dict[str, bytes] = {}
    requests = [compact._json(compact._shared_request(r["request"], texts)).encode() for r in rows]
    responses = [compact._json(r["response"]).encode() for r in rows]
    zdict = requests[0] + responses[0]
    dict_id = hashlib.sha256(zdict).digest()[:8]
    texts[compact.DICT_PREFIX + dict_id.hex()] = zlib.compress(zdict, 9)

    def packed(data):
        packer = zlib.compressobj(9, zdict=zdict)
        return b"D" + dict_id + packer.compress(data) + packer.flush()

    conn.executemany("INSERT INTO texts VALUES (?, ?)", texts.items())
    conn.executemany("INSERT INTO calls VALUES (?, ?, ?, ?)", [
        (r["key"], packed(q), packed(a), r["created"]) for r, q, a in zip(rows, requests, responses)])
    conn.commit()
    conn.close()
    return rows


def test_a_store_of_the_previous_format_replays_and_a_rerun_replaces_its_rows(server, tmp_path, capsys):
    record = tmp_path / "calls.sqlite"
    assert main(demo_game(server, "--max-rounds", "3", "--record", str(record), "--out", str(tmp_path / "live"))) == 0
    recorded = json.loads(capsys.readouterr().out)
    old = tmp_path / "previous.sqlite"
    rows = _previous_format_copy(record, old)
    served = server.stats()["answered"]
    assert main(demo_game(server, "--max-rounds", "3", "--replay", str(old), "--out", str(tmp_path / "again"))) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert server.stats()["answered"] == served and replayed["replayed_calls"] == recorded["calls"]
    for table in ("rounds", "transcript"):
        pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "again" / f"{table}.parquet"),
                                      pd.read_parquet(tmp_path / "live" / f"{table}.parquet"), obj=table)
    # an answer recorded again over a hex-keyed row replaces it: one row per call, the new one
    store = ResponseStore(old, "replay-fill")
    first = rows[0]
    store.put(first["key"], first["request"], LLMResult("again", "stop", 1, 1, 0.1))
    store.close()
    again = ResponseStore(old, "replay")
    assert len(again) == len(rows)
    assert again.get(first["key"]).text == "again"
    assert sorted(r["key"] for r in again.rows()) == sorted(r["key"] for r in rows)
    again.close()
