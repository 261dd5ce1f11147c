"""The record of what was sent through a provider's batch API, kept in a SQLite file beside a
run's store, so that nothing submitted is lost or paid for twice.

A batch is written here the moment the provider accepts it, with the id of every request in
it. Each result is written when it is collected. A process that stops between the two (Ctrl-C,
a crash, a closed laptop) leaves batches that are submitted and not collected; the next
process that asks for the same request (``harness run --resume``, which replays its episodes
from the response cache, so its judge requests are the same) finds the request's id here and
waits for the batch it is already in, instead of sending it again.

A request's id (the batch APIs' ``custom_id``) is derived from the call's response-cache key
and its attempt number, so the same call of the same sample always has the same id.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from harness.errors import HarnessError

RequestState = Literal["submitted", "succeeded", "failed"]
"""``submitted``: in a batch whose result is not collected; ``succeeded``: its reply body is
kept; ``failed``: the provider gave an error (or the batch expired) for it."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    base_url TEXT NOT NULL,
    model TEXT NOT NULL,
    state TEXT NOT NULL,
    requests INTEGER NOT NULL,
    submitted_at REAL NOT NULL,
    ended_at REAL,
    detail TEXT
);
CREATE TABLE IF NOT EXISTS batch_requests (
    custom_id TEXT PRIMARY KEY,
    batch_id TEXT NOT NULL,
    state TEXT NOT NULL,
    result TEXT,
    error TEXT
);
"""


def journal_beside(cache: Any) -> Path:
    """Where the batch journal of a command with no run directory lives (``harness pairwise``,
    ``harness calibrate``): beside its response cache (a
    :class:`~harness.models.cache.ResponseCache`), so the same command run again finds it.
    Raises :class:`~harness.errors.HarnessError` when there is no cache: without one a second
    run could not ask for the requests it sent."""
    if cache is None:
        raise HarnessError("--judge-batch needs the response cache: run again with it on "
                           "(drop --cache-mode off)")
    path = Path(cache.path)
    return path.with_name(path.name + ".batches.sqlite")


@dataclass(frozen=True)
class JournalBatch:
    """One submitted batch as the journal has it."""

    batch_id: str
    provider: str
    base_url: str
    model: str
    state: str
    requests: int
    submitted_at: float
    ended_at: float | None
    detail: str | None
    succeeded: int
    failed: int
    waiting: int


@dataclass(frozen=True)
class JournalRequest:
    """One request: the batch it was last sent in, its state, and its result or error."""

    custom_id: str
    batch_id: str
    state: RequestState
    result: dict[str, Any] | None
    error: str | None


class BatchJournal:
    """The journal at ``path`` (created when missing). Safe to use from the threads of one
    process; every write is committed at once."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- writes ---------------------------------------------------------------------------

    def record_batch(self, batch_id: str, *, provider: str, base_url: str, model: str,
                     custom_ids: Iterable[str]) -> None:
        """A batch the provider accepted, with the ids of its requests (one transaction: a
        request is never recorded without its batch)."""
        ids = list(custom_ids)
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.execute(
                    "INSERT OR REPLACE INTO batches VALUES (?, ?, ?, ?, 'submitted', ?, ?, "
                    "NULL, NULL)", (batch_id, provider, base_url, model, len(ids), time.time()))
                self._db.executemany(
                    "INSERT OR REPLACE INTO batch_requests VALUES (?, ?, 'submitted', NULL, NULL)",
                    [(custom_id, batch_id) for custom_id in ids])
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def record_result(self, custom_id: str, result: dict[str, Any]) -> None:
        self._set(custom_id, "succeeded", json.dumps(result), None)

    def record_failure(self, custom_id: str, error: str) -> None:
        self._set(custom_id, "failed", None, error)

    def _set(self, custom_id: str, state: RequestState, result: str | None,
             error: str | None) -> None:
        with self._lock:
            self._db.execute(
                "UPDATE batch_requests SET state = ?, result = ?, error = ? WHERE custom_id = ?",
                (state, result, error, custom_id))

    def record_batch_end(self, batch_id: str, state: str, detail: str | None = None) -> None:
        """The batch's final state as the provider gave it (``ended``, ``completed``,
        ``expired``, ``failed``, ``cancelled``)."""
        with self._lock:
            self._db.execute(
                "UPDATE batches SET state = ?, ended_at = ?, detail = ? WHERE batch_id = ?",
                (state, time.time(), detail, batch_id))

    # --- reads ----------------------------------------------------------------------------

    def request(self, custom_id: str) -> JournalRequest | None:
        with self._lock:
            row = self._db.execute(
                "SELECT custom_id, batch_id, state, result, error FROM batch_requests "
                "WHERE custom_id = ?", (custom_id,)).fetchone()
        if row is None:
            return None
        return JournalRequest(custom_id=row[0], batch_id=row[1], state=row[2],
                              result=None if row[3] is None else json.loads(row[3]),
                              error=row[4])

    def batch(self, batch_id: str) -> JournalBatch | None:
        return next((b for b in self.batches() if b.batch_id == batch_id), None)

    def batches(self) -> list[JournalBatch]:
        """Every batch, oldest first, with how many of its requests have a result, failed, or
        are waiting."""
        with self._lock:
            rows = self._db.execute(
                "SELECT b.batch_id, b.provider, b.base_url, b.model, b.state, b.requests, "
                "b.submitted_at, b.ended_at, b.detail, "
                "SUM(r.state = 'succeeded'), SUM(r.state = 'failed'), "
                "SUM(r.state = 'submitted') "
                "FROM batches b LEFT JOIN batch_requests r ON r.batch_id = b.batch_id "
                "GROUP BY b.batch_id ORDER BY b.submitted_at, b.batch_id").fetchall()
        return [JournalBatch(row[0], row[1], row[2], row[3], row[4], int(row[5]), float(row[6]),
                             row[7], row[8], succeeded=int(row[9] or 0),
                             failed=int(row[10] or 0), waiting=int(row[11] or 0))
                for row in rows]

    def open_batches(self) -> list[JournalBatch]:
        """Batches with requests whose result is not collected yet."""
        return [b for b in self.batches() if b.waiting]
