"""Record and replay of LLM calls: every request and answer in one SQLite file.

Why: online serving is not reproducible even with a seed, and calls cost money.
Recording every call (failures included) lets a game be replayed exactly with
zero calls, and lets a crashed sweep resume in ``replay-fill`` mode paying only
for the calls it had not yet made. One row per call, committed as each answer
arrives (WAL journal), so a crash loses nothing already answered; a busy timeout
lets the processes of a sweep share one file.

The key is a SHA-256 over canonical JSON of what determines an answer: model,
sampling parameters, requested dialect, prompt mode, prompt template hash,
messages or prompt, and the sample key (agent, round, try), so identical prompts
of different agents still get their own samples and an edited template never
replays stale answers. API keys are never part of a request here.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llm_mesa.llm.client import LLMRequest, LLMResult
    from llm_mesa.llm.endpoint import Endpoint

MODES = ("record", "replay", "replay-fill", "off")


class StoreError(ValueError):
    """Bad store path or mode; the message names the fix."""


class ReplayMiss(StoreError):
    """Strict replay met a call that was never recorded."""


def request_identity(endpoint: "Endpoint", request: "LLMRequest") -> dict[str, Any]:
    """What determines an answer (and nothing secret): the hashed part of a request."""
    return {
        "model": endpoint.model,
        "sampling": endpoint.sampling_params(),
        "dialect": endpoint.dialect if request.schema is not None else "text",
        "prompt_mode": endpoint.prompt_mode,
        "template_hash": request.template_hash,
        "messages": request.messages,
        "prompt": request.prompt,
        "schema": request.schema,
        "sample_key": request.sample_key,
    }


def request_key(identity: dict[str, Any]) -> str:
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class ResponseStore:
    """SQLite store of calls; ``mode`` is record (default), replay, replay-fill or off."""

    def __init__(self, path: str | os.PathLike[str], mode: str = "record") -> None:
        if mode not in MODES:
            raise StoreError(f"unknown store mode {mode!r}; choose one of: {', '.join(MODES)}")
        self.path = Path(path)
        self.mode = mode
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1
        if mode == "replay" and not self.path.exists():
            raise StoreError(f"replay store {self.path} does not exist; record a run first "
                             "(mode record) or use replay-fill")
        if mode != "off":
            self._connection()

    def _connection(self) -> sqlite3.Connection:
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=60, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA busy_timeout=60000")
            # Switching a new file to WAL takes an exclusive lock that SQLite does not
            # wait for: workers opening one store together retry for a while.
            for attempt in range(200):
                try:
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, request TEXT NOT NULL, "
                                 "response TEXT NOT NULL, created REAL NOT NULL)")
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or attempt == 199:
                        raise
                    time.sleep(0.05)
            conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open response store {self.path}: {exc}; "
                             "choose a writable path with --store") from None
        self._conn, self._pid = conn, os.getpid()
        return conn

    @property
    def replays(self) -> bool:
        return self.mode in ("replay", "replay-fill")

    @property
    def records(self) -> bool:
        return self.mode in ("record", "replay-fill")

    def get(self, key: str) -> "LLMResult | None":
        """The recorded result for ``key`` (marked replayed), or None."""
        from llm_mesa.llm.client import LLMResult
        with self._lock:
            row = self._connection().execute("SELECT response FROM calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return LLMResult.from_record(json.loads(row[0]), replayed=True)

    def put(self, key: str, identity: dict[str, Any], result: "LLMResult") -> None:
        """Store one call now (autocommit), replacing an older answer to the same key."""
        response = json.dumps(result.to_record(), ensure_ascii=False)
        request = json.dumps(identity, ensure_ascii=False, sort_keys=True)
        with self._lock:
            self._connection().execute("INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?)",
                                       (key, request, response, time.time()))

    def miss(self, key: str, sample_key: str) -> ReplayMiss:
        return ReplayMiss(f"no recorded answer in {self.path} for sample key {sample_key!r} (key {key[:12]}); "
                          "the prompt, template or sampling changed since recording: rerun with "
                          "store mode replay-fill to call the endpoint for missing answers")

    def __len__(self) -> int:
        with self._lock:
            return self._connection().execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def rows(self) -> list[dict[str, Any]]:
        """Every stored call as a dict (request and response decoded), oldest first."""
        with self._lock:
            rows = self._connection().execute(
                "SELECT key, request, response, created FROM calls ORDER BY created").fetchall()
        return [{"key": k, "request": json.loads(q), "response": json.loads(r), "created": c} for k, q, r, c in rows]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def manifest(self) -> dict[str, Any]:
        return {"path": str(self.path), "mode": self.mode}

    def __repr__(self) -> str:
        return f"ResponseStore({str(self.path)!r}, mode={self.mode!r})"
