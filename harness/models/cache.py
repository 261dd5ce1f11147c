"""The content-addressed response cache (SQLite).

The key is the SHA-256 of the canonical JSON (sorted keys, no whitespace) of everything that
changes the answer: provider, model, base URL, messages, tools, tool choice, generation
parameters, the response schema of a structured call, and the sample index (so sample 3 is not
a copy of sample 1, and the same sample replays): the fields of a
:class:`~harness.models.request.ModelRequest` but its role and ``max_reasks``. API keys are
never part of it, and rows hold only the answer and its usage.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from harness.choices import CacheMode
from harness.errors import InputError
from harness.files import check_output_file, connect_read_only, sqlite_damage
from harness.json_values import STORED_DEPTH, load_json
from harness.models.types import GenerationParams, Message, ToolChoice, ToolSpec

log = logging.getLogger("harness.models.cache")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    model TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""
# Bumped when what a key covers changes, so old rows stop matching instead of being misread.
KEY_VERSION = 1
# Answers are written together (see ResponseCache): this long after the first of a batch on
# the running event loop, or at once when this many are waiting.
WRITE_DELAY_S = 0.1
WRITE_BATCH = 256


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal values give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@lru_cache(maxsize=256)
def response_schema(response_model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of a response model (memoised: building it is slow)."""
    return response_model.model_json_schema()


def cache_key(
    *,
    kind: str,
    provider: str,
    model: str,
    base_url: str | None,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec] = (),
    tool_choice: ToolChoice = "auto",
    params: GenerationParams,
    sample_index: int,
    response_model: type[BaseModel] | None = None,
) -> str:
    """The hex SHA-256 key of one call. Defaults are left out of each message and of the
    parameters, so adding an optional field to those types later keeps old keys valid."""
    document = {
        "v": KEY_VERSION,
        "kind": kind,
        "provider": provider,
        "model": model,
        "base_url": base_url.rstrip("/") if base_url else None,
        "messages": [m.model_dump(mode="json", exclude_defaults=True) for m in messages],
        "tools": [t.model_dump(mode="json") for t in tools],
        "tool_choice": tool_choice if tools else None,
        "params": params.model_dump(mode="json", exclude_defaults=True),
        "response_schema": response_schema(response_model) if response_model else None,
        "sample_index": sample_index,
    }
    return hashlib.sha256(canonical_json(document).encode()).hexdigest()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class ResponseCache:
    """One SQLite file of answers keyed by :func:`cache_key`, in WAL mode so several
    processes can share it. Reads are single indexed statements, done inline (a thread hop
    would cost more than the lookup). Writes are gathered: an answer is held in memory (where
    this cache's reads find it at once) and written with the others of the same moment in
    one transaction, :data:`WRITE_DELAY_S` after the first of them on the running event
    loop, at once when :data:`WRITE_BATCH` are waiting or no event loop runs, and by
    :meth:`flush` and :meth:`close`. One transaction per answer, two worker processes
    taking turns for the file's lock, was about 7% of a worker's CPU a call at 200 in
    flight. Answers of a process killed between two writes are missing from the file
    (they are asked again next time; samples are stored elsewhere and lose nothing); a write
    that fails (a full disk) is logged as a warning, and the run goes on without those rows.

    Opening an existing cache file checks it with ``PRAGMA quick_check`` (one read of the
    file) before anything is written: a damaged cache is an :class:`InputError` naming the
    file, never a run whose every call fails on it. A directory, a parent that is a file, a
    path that cannot be written or a file that is not SQLite is an :class:`InputError` too."""

    def __init__(self, path: str | Path, mode: CacheMode = "read-write") -> None:
        self.path = Path(path)
        self.mode: CacheMode = mode
        # Rows not yet written, by key: (key, kind, model, payload JSON, created_at).
        self._pending: dict[str, tuple[str, str, str, str, float]] = {}
        self._write_due: asyncio.TimerHandle | None = None
        self._write_loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        check_output_file(self.path, "the response cache (an SQLite file)")
        if self.path.is_file() and self.path.stat().st_size > 0:
            self._check_intact()
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as err:
            raise InputError(self.path, None, f"cannot open the response cache ({err})") from None

    def _check_intact(self) -> None:
        """Refuse a damaged cache file, reading it only (nothing is written to it)."""
        try:
            probe = connect_read_only(self.path)
        except sqlite3.Error as err:
            raise InputError(self.path, None, f"cannot open the response cache ({err})") from None
        try:
            damage = sqlite_damage(probe)
        finally:
            probe.close()
        if damage:
            raise InputError(self.path, None, f"the response cache is damaged (SQLite "
                             f"quick_check: {damage}); delete it (its answers are then asked "
                             "again) or give another cache path")

    @property
    def reads(self) -> bool:
        return self.mode in ("read-write", "replay")

    @property
    def writes(self) -> bool:
        return self.mode in ("read-write", "refresh")

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored payload for ``key``, or ``None``. An unreadable row is logged and
        treated as a miss."""
        pending = self._pending.get(key)
        row = ((pending[3],) if pending is not None else
               self._db.execute("SELECT payload FROM responses WHERE key = ?", (key,)).fetchone())
        if row is None:
            return None
        try:
            payload = load_json(row[0], self.path, location=key[:12], max_depth=STORED_DEPTH)
        except (ValueError, InputError):
            log.warning("cache row %s… in %s is not valid JSON; ignoring it", key[:12], self.path)
            return None
        return payload if isinstance(payload, dict) else None

    def put(self, key: str, *, kind: str, model: str, payload: dict[str, Any]) -> None:
        """Store (or overwrite) the payload for ``key`` (written with the next batch: see the
        class docstring)."""
        row = (key, kind, model, json.dumps(payload, ensure_ascii=False), time.time())
        with self._lock:
            self._pending[key] = row
            loop = _running_loop()
            if loop is not None and len(self._pending) < WRITE_BATCH:
                if self._write_loop is not loop:  # else the write already due takes it too
                    self._write_due = loop.call_later(WRITE_DELAY_S, self.flush)
                    self._write_loop = loop
                return
        self.flush()

    def flush(self) -> None:
        """Write the answers held in memory, in one transaction."""
        with self._lock:
            if self._write_due is not None:
                self._write_due.cancel()
                self._write_due = self._write_loop = None
            rows, self._pending = list(self._pending.values()), {}
            if not rows:
                return
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany(
                        "INSERT OR REPLACE INTO responses (key, kind, model, payload, "
                        "created_at) VALUES (?, ?, ?, ?, ?)", rows)
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as err:
                log.warning("cannot write %d answer(s) to the response cache %s (%s); they "
                            "are not cached", len(rows), self.path, err)

    def __len__(self) -> int:
        self.flush()
        return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self.flush()
        self._db.close()
