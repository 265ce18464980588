"""Record and replay of LLM calls: every request and answer in one SQLite file.

Why: online serving is not reproducible even with a seed, and calls cost money.
Recording every call (failures included) lets a game be replayed exactly with
zero calls, and lets a crashed sweep resume in ``replay-fill`` mode paying only
for the calls it had not yet made. A busy timeout lets the processes of a sweep
share one file (WAL journal).

Writes leave the event loop: ``put`` only hands the call to one writer thread per
store, which packs each row (``compact``: JSON, shared texts, compression: ~0.1 ms
a call that zlib spends with the interpreter lock released, off the loop that runs
the round) and inserts rows in batches, committing each batch (up to
``BATCH_ROWS`` rows, or what arrived within ``BATCH_WINDOW_S`` of the first).
An SQLite commit costs about 0.3 ms, which on the loop thread delayed the other
calls of a round. Durability, honestly: a row is on disk once its batch is
committed, so a crash of the process (kill -9, power loss) loses at most the
rows of the batch being formed, i.e. the answers of the last ~50 ms, which a
``replay-fill`` rerun simply pays for again. Nothing is lost on an orderly end:
``flush()`` waits until every row handed over is committed, ``close()`` flushes,
an interpreter exit flushes every open store, and opening another store on the
same file in this process flushes this process's writers to it first (record,
then replay, works without ``close``). ``get`` sees rows not yet written (it
looks in the pending rows first); ``len`` and ``rows`` flush first.

Reads leave the event loop too: ``get`` may wait on the file (a busy disk, a
lock held by another process of a sweep, a forked child opening its own
connection), so the client calls it in a worker thread
(``asyncio.to_thread``), never on the loop, where it would stall every other
call of the round. Two locks keep that thread from blocking the loop in turn:
``_lock`` guards only the in-memory state (pending rows, the writer's queue),
held for dictionary operations, and ``_conn_lock`` guards the reading
connection, held across SQL; ``put``, the one store method the loop itself
runs, takes only ``_lock`` and opens nothing.

The key of a call (``llm_mesa.llm.store_keys``) is a SHA-256 over what determines its
answer, API keys never among it.

Compact rows (``ROW_FORMAT`` 2): a request's long parts that repeat from call to
call (a rules message, the answer schema) are stored once in the ``texts`` table,
keyed by their SHA-256, and the row holds a reference (``{"$text": hash}``); the
request and the answer (fields left at their defaults dropped) are stored
compressed (BLOBs; the columns keep their names), and the key as its 32 bytes
(a BLOB) instead of 64 hex digits. The demo's game (36 agents, local messages,
10 rounds) takes 0.3 KB a call on disk (568 bytes before the latest rows became
the dictionary, ~4.2 KB with JSON text in every row). Older stores, with JSON text
in every row or hex keys, read as before, and rows of every kind can share a file;
``get``, ``rows`` and replays see the same decoded values either way (the format:
``llm_mesa.llm.compact``).
"""

from __future__ import annotations

import atexit
import json
import os
import queue
import sqlite3
import threading
import time
import weakref
import zlib
from pathlib import Path
from typing import Any

from llm_mesa.boundary import check_tree
from llm_mesa.llm.compact import DICT_PREFIX, Packer
from llm_mesa.llm.store_file import StoreError, check_store_path, open_for_writing, open_read_only, unreadable
from llm_mesa.llm.store_keys import key_text, stored_key
from llm_mesa.llm.types import LLMResult, checked_record

MODES = ("record", "replay", "replay-fill", "off")


class ReplayMiss(StoreError):
    """Strict replay met a call that was never recorded."""


#: a writer commits after this many rows, or ...
BATCH_ROWS = 50
#: ... once this long has passed since the first row of the batch arrived
BATCH_WINDOW_S = 0.05

_Row = tuple[str, dict, dict, float]  # key, request identity, answer record, created (packed by the writer)
_STOP = None  # the writer's end-of-queue marker
_FLUSH = ("", {}, {}, 0.0)  # commit what is batched now (compared by identity)


#: every open store of this process, so a new store on the same file (or the
#: interpreter's exit) can flush their writers first
_open_stores: weakref.WeakSet[ResponseStore] = weakref.WeakSet()
_open_stores_lock = threading.Lock()


def _flush_writers_to(path: Path) -> None:
    with _open_stores_lock:
        stores = list(_open_stores)
    for store in stores:
        if store._resolved == path:
            store.flush()


@atexit.register
def _flush_all_at_exit() -> None:
    with _open_stores_lock:
        stores = list(_open_stores)
    for store in stores:
        try:
            store.close()
        except StoreError:
            pass  # a failed write was already reported to the caller that flushed


class AlreadyRecorded(StoreError):
    """Recording would replace an answer the store already holds."""


class DamagedRow(StoreError):
    """A recorded row that cannot be decoded (a damaged file, a foreign row): replay-fill calls again."""


class ResponseStore:
    """The SQLite file every LLM call of a run is recorded in, and replayed from.

    Args:
        path: The store's file (made by its first recorded call).
        mode: ``record`` (the default: an answer the store holds is replayed, one it lacks is called
            for and recorded, and a recorded answer is never replaced), ``replay`` (strict, the file
            opened read-only: a call it lacks is an error), ``replay-fill`` (a call it lacks goes to the
            endpoint and is recorded) or ``off``.

    Raises:
        StoreError: An unknown mode, a replay of a file that does not exist, or a path that is no
            store (a folder, a device, another program's database, a read-only file to record in).
    """

    def __init__(self, path: str | os.PathLike[str], mode: str = "record") -> None:
        if mode not in MODES:
            raise StoreError(f"unknown store mode {mode!r}; choose one of: {', '.join(MODES)}")
        self.path = Path(path)
        self._resolved = self.path.resolve()
        self.mode = mode
        #: guards _pending, _queue, _writer, _write_error (never held across I/O)
        self._lock = threading.Lock()
        #: guards _conn, the reading connection (held across SQL)
        self._conn_lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._conn_pid = -1  # the process that opened _conn
        #: the process that owns the writer and the pending rows
        self._pid = os.getpid()
        #: rows handed to the writer and not yet committed, by key (what ``get`` looks at first)
        self._pending: dict[str, _Row] = {}
        self._queue: queue.Queue[_Row | None] | None = None
        self._writer: threading.Thread | None = None
        self._write_error: BaseException | None = None
        self._packer = Packer()
        if mode != "off":
            _flush_writers_to(self._resolved)  # this process's unwritten rows to that file
        if mode == "replay" and not self.path.exists():
            raise StoreError(f"replay store {self.path} does not exist; record a run first "
                             "(mode record) or use replay-fill")
        if mode != "off":
            check_store_path(self.path, mode)  # a folder, a device, not SQLite, not writable: before any call
            if self.path.exists():
                with self._conn_lock:
                    self._connection()  # a file of another schema is refused now, before any call
            with _open_stores_lock:
                _open_stores.add(self)

    def _open(self) -> sqlite3.Connection:
        return open_read_only(self.path) if self.mode == "replay" else open_for_writing(self.path)

    def _adopt_after_fork(self) -> None:
        """In a forked child, leave the parent its writer and unwritten rows (under ``_lock``)."""
        if self._pid != os.getpid():
            self._pending, self._queue, self._writer = {}, None, None
            self._pid = os.getpid()

    def _connection(self) -> sqlite3.Connection:
        """The reading connection, opened on first use in this process (under ``_conn_lock``).

        A forked child opens its own; the parent's is dropped, not closed.
        """
        if self._conn is None or self._conn_pid != os.getpid():
            self._conn, self._conn_pid = self._open(), os.getpid()
        return self._conn

    @property
    def replays(self) -> bool:
        """Whether recorded answers are played back (``replay``, ``replay-fill``)."""
        return self.mode in ("replay", "replay-fill")

    @property
    def records(self) -> bool:
        """Whether new answers are recorded (``record``, ``replay-fill``)."""
        return self.mode in ("record", "replay-fill")

    def get(self, key: str) -> LLMResult | None:
        """A recorded answer; rows handed to the writer and not yet committed are seen too.

        Args:
            key: The call's key (``llm_mesa.llm.store_keys.request_key``).

        Returns:
            The result, marked replayed, or None when the store holds none.
        """
        with self._lock:
            self._adopt_after_fork()
            pending = self._pending.get(key)
        if pending is not None:
            try:
                return LLMResult.from_record(checked_record(dict(pending[2])), replayed=True)
            except ValueError as exc:
                raise self._damaged(key, type(exc).__name__) from None
        else:
            if not self.path.exists():  # nothing recorded yet (the first put creates the file)
                return None
            # a row leaves _pending only once committed, so a key not pending a moment
            # ago is on disk by now, or was never put
            with self._conn_lock:
                try:
                    row = self._connection().execute(  # a BLOB key, or a hex one in rows recorded before
                        "SELECT response FROM calls WHERE key IN (?, ?) ORDER BY typeof(key) = 'text'",
                        (stored_key(key), key)).fetchone()
                except sqlite3.OperationalError as exc:
                    if "decode" not in str(exc):
                        raise unreadable(self.path, exc) from None
                    raise self._damaged(key, "text that is not UTF-8") from None
                except sqlite3.DatabaseError as exc:
                    raise unreadable(self.path, exc) from None
            if row is None:
                return None
            response: str | bytes = row[0]
        try:
            record = self._packer.decode_response(response, self._stored_text)
            check_tree(record)
            return LLMResult.from_record(checked_record(record), replayed=True)
        except (ValueError, TypeError, zlib.error, RecursionError) as exc:  # Malformed is a ValueError
            raise self._damaged(key, type(exc).__name__) from None

    def _damaged(self, key: str, reason: str) -> DamagedRow:
        return DamagedRow(f"the recorded answer under key {key[:12]} in {self.path} is damaged ({reason}); replay "
                          "with --replay-fill to call again for damaged answers (they are replaced), or restore a "
                          "copy of the store")

    def _stored_text(self, name: str) -> bytes | None:
        """One body of the ``texts`` table (e.g. a dictionary rows were compressed with)."""
        with self._conn_lock:
            try:
                row = self._connection().execute("SELECT body FROM texts WHERE hash = ?", (name,)).fetchone()
            except sqlite3.DatabaseError as exc:
                raise unreadable(self.path, exc) from None
        return None if row is None else row[0]

    def put(self, key: str, identity: dict[str, Any], result: LLMResult) -> None:
        """Hand one call to the writer thread, which commits it within ``BATCH_WINDOW_S``.

        Args:
            key: The call's key.
            identity: What determines the answer (``request_identity``), stored with it.
            result: The answer, or the failure, to record (an older answer to the key is replaced).
        """
        row = (key, identity, result.to_record(), time.time())
        with self._lock:
            self._adopt_after_fork()
            self._raise_write_error()
            if self._writer is None:
                self._start_writer()
            self._pending[key] = row
            assert self._queue is not None
            self._queue.put(row)

    def _start_writer(self) -> None:
        self._queue = queue.Queue()
        self._writer = threading.Thread(target=self._write_batches, args=(self._queue,),
                                        name=f"store-writer-{self.path.name}", daemon=True)
        self._writer.start()
        with _open_stores_lock:
            _open_stores.add(self)  # again, if it was closed and is used anew

    def _write_batches(self, rows: queue.Queue[_Row | None]) -> None:
        """The writer thread: batch, insert, commit, then drop the rows from ``_pending``."""
        try:
            conn = self._open()
        except StoreError as exc:  # report it, and never leave a flush waiting
            self._write_error = exc
            while rows.get() is not _STOP:
                rows.task_done()
            rows.task_done()
            return
        try:
            stopping = False
            while not stopping:
                first = rows.get()
                if first is _STOP:
                    rows.task_done()
                    break
                if first is _FLUSH:
                    rows.task_done()
                    continue
                batch = [first]
                markers = 0
                deadline = time.monotonic() + BATCH_WINDOW_S
                while len(batch) < BATCH_ROWS:
                    try:
                        row = rows.get(timeout=max(0.0, deadline - time.monotonic()))
                    except queue.Empty:
                        break
                    if row is _STOP or row is _FLUSH:
                        markers += 1
                        stopping = row is _STOP
                        break
                    batch.append(row)
                try:
                    texts: dict[str, bytes] = {}
                    packed = []
                    for key, identity, record, created in batch:
                        request, response, shared = self._packer.pack(identity, record)
                        texts.update(shared)
                        packed.append((stored_key(key), request, response, created))
                    conn.execute("BEGIN")
                    conn.executemany("INSERT OR IGNORE INTO texts VALUES (?, ?)", texts.items())
                    # a recording made before BLOB keys may hold this call under its hex key: replaced too
                    conn.executemany("DELETE FROM calls WHERE key = ?", [(row[0],) for row in batch])
                    conn.executemany("INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?)", packed)
                    conn.execute("COMMIT")
                except (sqlite3.Error, ValueError, TypeError) as exc:  # a row that cannot be packed, too
                    if conn.in_transaction:
                        conn.rollback()
                    self._write_error = exc  # reported by the next put, flush or close
                with self._lock:
                    for row in batch:
                        if self._pending.get(row[0]) is row:
                            del self._pending[row[0]]
                for _ in range(len(batch) + markers):
                    rows.task_done()
        finally:
            conn.close()

    def _raise_write_error(self) -> None:
        error, self._write_error = self._write_error, None
        if error is not None:
            raise StoreError(f"could not write calls to response store {self.path}: {error}; "
                             "check free disk space and that the file is writable") from None

    def flush(self) -> None:
        """Wait until every call handed to ``put`` is committed."""
        with self._lock:
            self._adopt_after_fork()
            rows = self._queue
            if rows is not None:
                rows.put(_FLUSH)  # no waiting out the batch window
        if rows is not None:
            rows.join()
        self._raise_write_error()

    def already_recorded(self, sample_key: str) -> AlreadyRecorded:
        """The error for a call this store answers already, to raise: recording it again would replace it.

        Args:
            sample_key: The call's place in the game (agent, round, try).

        Returns:
            The error, one line that names the fix.
        """
        return AlreadyRecorded(
            f"{self.path} already holds an answer to this call ({sample_key}); recording again would replace it and "
            f"a later replay would play another game: replay it (--replay {self.path}, with --replay-fill to call "
            "for what is missing), or record to a new file")

    def miss(self, key: str, sample_key: str) -> ReplayMiss:
        """The error for a call a strict replay lacks, to raise.

        Args:
            key: The call's key.
            sample_key: The call's place in the game (agent, round, try).

        Returns:
            The error, one line that names the fix (replay-fill).
        """
        return ReplayMiss(f"no recorded answer in {self.path} for sample key {sample_key!r} (key {key[:12]}); "
                          "the prompt, template or sampling changed since recording: rerun with "
                          "store mode replay-fill to call the endpoint for missing answers")

    def __len__(self) -> int:
        self.flush()
        if not self.path.exists():
            return 0
        with self._conn_lock:
            return self._connection().execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def rows(self) -> list[dict[str, Any]]:
        """Every stored call, oldest first (pending rows committed first).

        Returns:
            One dict a call: ``key``, ``request`` and ``response`` (decoded), ``created`` (a Unix time).
        """
        self.flush()
        if not self.path.exists():
            return []
        with self._conn_lock:
            conn = self._connection()
            rows = conn.execute("SELECT key, request, response, created FROM calls ORDER BY created").fetchall()
            bodies: dict[str, bytes] = {}
            if any(isinstance(q, bytes) for _, q, _, _ in rows):
                bodies = dict(conn.execute("SELECT hash, body FROM texts").fetchall())
        texts = {h: json.loads(zlib.decompress(b)) for h, b in bodies.items() if not h.startswith(DICT_PREFIX)}
        decode = self._packer
        return [{"key": key_text(k), "request": decode.decode_request(q, texts.__getitem__, bodies.get),
                 "response": decode.decode_response(r, bodies.get), "created": c} for k, q, r, c in rows]

    def close(self) -> None:
        """Commit every pending call, stop the writer, close the file (safe to call twice)."""
        with _open_stores_lock:
            _open_stores.discard(self)
        with self._lock:
            self._adopt_after_fork()
            writer, rows = self._writer, self._queue
            self._writer = self._queue = None
        if writer is not None and rows is not None:
            rows.put(_STOP)
            writer.join()
        with self._conn_lock:
            if self._conn is not None and self._conn_pid == os.getpid():
                self._conn.close()
            self._conn = None
        self._raise_write_error()

    def manifest(self) -> dict[str, Any]:
        """What a run's manifest says of the store.

        Returns:
            Its ``path`` and ``mode``.
        """
        return {"path": str(self.path), "mode": self.mode}

    def __repr__(self) -> str:
        return f"ResponseStore({str(self.path)!r}, mode={self.mode!r})"
