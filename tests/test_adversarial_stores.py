"""Record stores are checked before the first call, with the right diagnosis, and leave nothing beside them.

Each row names a path no store can be at (a folder, a device, a pipe, a text file, another
program's SQLite database, a store of another schema). The game's command and a sweep are
pointed at it against a server that counts every request: the refusal is one line (exit 2)
that says what the path is, no request reaches the server (not even the pre-flight's), and
no journal, WAL or temporary file appears beside the path.
"""

from __future__ import annotations

import io
import os
import sqlite3
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hostile_server import MOVE, HostileServer, answer, game_handler

from llm_mesa.cli import main


def foreign(tables: str):
    def make(folder: Path) -> Path:
        path = folder / "db.sqlite"
        with sqlite3.connect(path) as conn:
            conn.executescript(tables)
        conn.close()
        return path
    return make


def text_file(folder: Path) -> Path:
    path = folder / "notes.sqlite"
    path.write_text("a text file, not a store\n" * 20)
    return path


def fifo(folder: Path) -> Path:
    path = folder / "pipe"
    os.mkfifo(path)
    return path


def read_only(folder: Path) -> Path:
    path = foreign("")(folder)
    path.chmod(0o444)
    return path


#: (id, makes the path in a folder of its own (or names one outside), modes it is tried in, the diagnosis)
BAD_STORES = [
    ("a folder", lambda f: f, ("record", "replay"), "it is a folder, not a file"),
    ("a device", lambda f: Path(os.devnull), ("record", "replay"), "is not a regular file"),
    ("a pipe", fifo, ("record", "replay"), "is not a regular file"),
    ("a text file", text_file, ("record", "replay"), "is not a readable response store (not an SQLite file)"),
    ("another program's database", foreign("CREATE TABLE people (name TEXT); INSERT INTO people VALUES ('a');"),
     ("record", "replay"), "not a response store of this version (its tables: people(name))"),
    ("a store of another schema", foreign("CREATE TABLE calls (key TEXT PRIMARY KEY, answer TEXT);"),
     ("record", "replay"), "its tables: calls(key, answer)"),
    ("a store whose texts table is another's", foreign(
        "CREATE TABLE calls (key TEXT PRIMARY KEY, request TEXT NOT NULL, response TEXT NOT NULL, created REAL NOT NULL);"
        "CREATE TABLE texts (hash TEXT);"), ("record",), "texts(hash)"),
    ("a read-only file", read_only, ("record",), "the file is read-only"),
]
ROOT = os.geteuid() == 0  # root writes read-only files: that row says nothing there


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def run(argv) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stderr(err), redirect_stdout(io.StringIO()):
        status = main([str(a) for a in argv])
    return status, err.getvalue()


def option(mode: str, path: Path) -> list[str]:
    return ["--record", path] if mode == "record" else ["--replay", path]


@pytest.mark.parametrize("make, modes, says", [
    pytest.param(*row[1:], id=row[0], marks=[pytest.mark.skipif(ROOT, reason="root writes read-only files")]
                 if row[1] is read_only else []) for row in BAD_STORES])
def test_a_path_no_store_can_be_at_is_refused_before_any_call_and_leaves_nothing(make, modes, says, tmp_path):
    folder = tmp_path / "here"
    folder.mkdir()
    path = make(folder)
    beside = path.parent
    before = listing(beside) if beside != Path(os.devnull).parent else None
    journal = Path(str(path) + "-journal")
    with HostileServer(game_handler(answer(MOVE))) as server:
        for mode in modes:
            game = ["consensus", "--policy", "llm", "--base-url", server.base_url, "--model", "m", "--n", 8,
                    "--topology", "caveman", "--max-rounds", 1, "--baseline-permutations", 0, *option(mode, path)]
            sweep = ["sweep", "--game", "consensus", "--conditions", "cc-local", "--policies", "llm", "--base-url",
                     server.base_url, "--model", "m", "--seeds", 1, "--set", "n=8", "--set", "max_rounds=1",
                     "--set", "baseline_permutations=0", "--quiet", "--out", tmp_path / f"sweep-{mode}",
                     *option(mode, path)]
            for argv in (game, sweep):
                status, err = run(argv)
                lines = err.strip().splitlines()
                assert status == 2 and len(lines) == 1 and says in lines[0], (mode, argv[0], err)
                assert "Traceback" not in err and "disk space" not in err and "folder is not writable" not in err
        assert server.hits == []  # not a model list, not a test call, not one completion
    if before is not None:
        assert listing(beside) == before  # no -journal, -wal, -shm or temporary file beside it
    assert not journal.exists() and not Path(str(path) + "-wal").exists()
    for mode in modes:
        assert not (tmp_path / f"sweep-{mode}").exists() or not any((tmp_path / f"sweep-{mode}").rglob("*.parquet"))


def test_a_store_llm_mesa_made_is_taken_and_an_empty_sqlite_file_becomes_one(tmp_path):
    """The check refuses what is not a store, not what is: a recording replays, an empty file records."""
    with HostileServer(game_handler(answer(MOVE))) as server:
        game = ["consensus", "--policy", "llm", "--base-url", server.base_url, "--model", "m", "--n", 8,
                "--topology", "caveman", "--max-rounds", 1, "--baseline-permutations", 0]
        empty = tmp_path / "empty.sqlite"
        empty.touch()
        assert run([*game, "--record", empty]) == (0, "")
        calls = len(server.completions())
        assert calls == 8
        status, err = run([*game, "--replay", empty])
        assert status == 0 and len(server.completions()) == calls, err  # replayed: no new call
