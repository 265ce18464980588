"""Opening a response store's SQLite file: for writing (after a writability check), or read-only.

Kept apart from the store's logic so that each reads in one sitting. Errors are one
line: a folder that cannot be written is named as such (a read-only folder was once
reported as a damaged store), a file that is not an SQLite store as damaged.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
from pathlib import Path

from llm_mesa.errors import LlmMesaError


class StoreError(LlmMesaError):
    """Bad store path or mode; the message names the fix."""


def unreadable(path: Path, exc: Exception) -> StoreError:
    return StoreError(f"{path} is not a readable response store ({exc}); it may be damaged: record again "
                      "into a new file (or restore a copy)")


def not_writable(path: Path, reason: str) -> StoreError:
    return StoreError(f"cannot record to {path}: its folder is not writable ({reason}); record elsewhere "
                      "with --record FILE (or --no-record)")


def check_writable(path: Path) -> None:
    """Refuse, before any call, a store that could not be created where asked."""
    folder = next((p for p in (path.parent, *path.parent.parents) if p.exists()), None)
    if folder is None or not folder.is_dir():
        raise StoreError(f"cannot record to {path}: {folder} is not a folder; choose another path (--record FILE)")
    try:
        probe = tempfile.mkdtemp(prefix=".llm-mesa-probe-", dir=folder)
        os.rmdir(probe)
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
            conn.execute("SELECT COUNT(*) FROM calls").fetchone()
            return conn
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                raise unreadable(path, exc) from None
            error = exc
        except sqlite3.DatabaseError as exc:
            raise unreadable(path, exc) from None
    raise StoreError(f"cannot read response store {path}: {error}") from None
