"""Opening a response store's SQLite file: for writing (after a writability check), or read-only.

Kept apart from the store's logic so that each reads in one sitting. Errors are one
line: a folder that cannot be written is named as such (a read-only folder was once
reported as a damaged store), a file that is not an SQLite store as damaged.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from llm_mesa.errors import LlmMesaError
from llm_mesa.files import new_folder


class StoreError(LlmMesaError):
    """Bad store path or mode; the message names the fix."""


def unreadable(path: Path, exc: Exception) -> StoreError:
    return StoreError(f"{path} is not a readable response store ({exc}); it may be damaged: record again "
                      "into a new file (or restore a copy)")


def not_writable(path: Path, reason: str) -> StoreError:
    return StoreError(f"cannot record to {path}: its folder is not writable ({reason}); record elsewhere "
                      "with --record FILE (or --no-record)")


#: the tables of a response store and their columns, in order (``open_for_writing`` makes them)
SCHEMA = {"calls": ("key", "request", "response", "created"), "texts": ("hash", "body")}
_SQLITE_HEADER = b"SQLite format 3\x00"


def check_store_path(path: Path, mode: str) -> None:
    """Refuse, before any call and before SQLite makes a journal beside it, a path no store can be at: a
    folder, a device, pipe or socket, a file that is not SQLite; for recording, a place that cannot be written."""
    verb = "replay from" if mode == "replay" else "record to"
    if path.is_dir():
        raise StoreError(f"cannot {verb} {path}: it is a folder, not a file; name a file in it "
                         f"(--record {path / 'calls.sqlite'})")
    if path.exists() and not path.is_file():
        raise StoreError(f"cannot {verb} {path}: it is not a regular file (a device, pipe or socket); name a file "
                         "(--record FILE), or record nothing (--no-record)")
    if path.is_file():
        try:
            with open(path, "rb") as fh:
                head = fh.read(len(_SQLITE_HEADER))
        except OSError as exc:
            raise StoreError(f"cannot {verb} {path}: {exc.strerror or exc}; choose another file (--record FILE)") from None
        if head and head != _SQLITE_HEADER:
            raise unreadable(path, "not an SQLite file")
        if mode != "replay" and not os.access(path, os.W_OK):
            raise not_writable(path, "the file is read-only")
    if mode != "replay":
        check_writable(path)  # its folder: a new store is made there, an existing one writes its journal there


def check_schema(conn: sqlite3.Connection, path: Path) -> None:
    """Refuse an SQLite file whose tables are not a response store's (another program's database, another
    schema) before anything is written to it; an empty file is a new store."""
    tables = {name: tuple(row[1] for row in conn.execute(f"PRAGMA table_info({_quoted(name)})"))
              for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables:
        return
    wrong = [name for name, columns in SCHEMA.items() if tables.get(name, columns) != columns]
    if "calls" not in tables or wrong:
        found = ", ".join(f"{name}({', '.join(cols)})" for name, cols in sorted(tables.items())[:6])
        conn.close()
        raise StoreError(f"{path} is an SQLite database but not a response store of this version (its tables: "
                         f"{found}); record into a new file (--record FILE)")


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def check_writable(path: Path) -> None:
    """Refuse, before any call, a store that could not be created where asked."""
    folder = next((p for p in (path.parent, *path.parent.parents) if p.exists()), None)
    if folder is None or not folder.is_dir():
        raise StoreError(f"cannot record to {path}: {folder} is not a folder; choose another path (--record FILE)")
    try:
        os.rmdir(new_folder(folder, ".llm-mesa-probe-"))
    except OSError as exc:
        raise not_writable(path, exc.strerror or str(exc)) from None


def open_for_writing(path: Path) -> sqlite3.Connection:
    """The store's file, created with its tables if new, in WAL mode (the processes of a sweep share it)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise not_writable(path, exc.strerror or str(exc)) from None
    try:
        conn = sqlite3.connect(path, timeout=60, check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA busy_timeout=60000")
        check_schema(conn, path)  # another program's database is left as it was: no WAL, no table of ours
        # Switching a new file to WAL takes an exclusive lock that SQLite does not
        # wait for: workers opening one store together retry for a while.
        for attempt in range(200):
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                # WITHOUT ROWID: the key is stored once, not in the table and again in its index
                conn.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, request TEXT NOT NULL, "
                             "response TEXT NOT NULL, created REAL NOT NULL) WITHOUT ROWID")
                conn.execute("CREATE TABLE IF NOT EXISTS texts (hash TEXT PRIMARY KEY, body BLOB NOT NULL) WITHOUT ROWID")
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 199:
                    raise
                time.sleep(0.05)
        conn.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.OperationalError as exc:  # cannot open, read-only, locked, I/O: not damage
        if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
            raise not_writable(path, "read-only") from None
        if "readonly" in str(exc) or "unable to open" in str(exc):
            raise not_writable(path, str(exc)) from None
        raise StoreError(f"cannot open response store {path}: {exc}; choose a writable path (--record FILE)") from None
    except sqlite3.DatabaseError as exc:  # not a database: damaged, or another kind of file
        raise unreadable(path, exc) from None
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open response store {path}: {exc}; choose a writable path") from None
    return conn


def open_read_only(path: Path) -> sqlite3.Connection:
    """A strict replay only reads: a recording on a read-only disk or shared copy replays too."""
    error: Exception | None = None
    for query in ("mode=ro", "immutable=1"):  # immutable: no -wal/-shm can be made beside it
        try:
            conn = sqlite3.connect(f"{path.resolve().as_uri()}?{query}", uri=True, timeout=60,
                                   check_same_thread=False, isolation_level=None)
            check_schema(conn, path)
            conn.execute("SELECT COUNT(*) FROM calls").fetchone()
            return conn
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                raise unreadable(path, exc) from None
            error = exc
        except sqlite3.DatabaseError as exc:
            raise unreadable(path, exc) from None
    raise StoreError(f"cannot read response store {path}: {error}") from None
