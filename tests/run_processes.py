"""Helpers for tests that run `harness run` in a subprocess and signal it mid-run."""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path


def default_sigint() -> None:
    """Started from a non-interactive shell's background job, a process inherits an ignored
    SIGINT: the run starts with the default disposition, as from a terminal (``preexec_fn``)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stored_count(run_dir: Path) -> int:
    """Samples in the run's store so far, read without locking it (0 before it exists)."""
    try:
        with sqlite3.connect(f"file:{run_dir / 'run.sqlite'}?mode=ro", uri=True) as db:
            return int(db.execute("SELECT COUNT(*) FROM samples").fetchone()[0])
    except sqlite3.Error:  # not created yet
        return 0
