"""Helpers for tests that run `harness run` in a subprocess and signal it mid-run."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
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


# A Python agent that waits SLOW_AGENT_S seconds (from its environment) before answering:
# slow enough to signal or kill a run mid-way.
SLOW_AGENT = '''\
import asyncio, os

async def answer(messages, toolbox):
    await asyncio.sleep(float(os.environ.get("SLOW_AGENT_S", "0")))
    return "DONE"
'''


def slow_suite(tmp_path: Path, module: str) -> Path:
    """Two scripted scenarios whose agent is :data:`SLOW_AGENT`, saved as ``module``.py (a
    module name of its own per test: the agent is imported by name)."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / f"{module}.py").write_text(SLOW_AGENT)
    (suite / "s.yaml").write_text(json.dumps([
        {"id": sid, "user": {"goal": "g", "script": ["hi"]},
         "agent": {"callable": f"{module}:answer"},
         "expectations": {"required_phrases": ["DONE"]}} for sid in ("a", "b")]))
    return suite


def wait_for_a_stored_sample(process: subprocess.Popen[str], out: Path,
                             timeout_s: float = 120) -> None:
    """Wait until the run in ``process`` has stored a sample in ``out`` (it is under way);
    fail the test if the process ends first or nothing is stored in time."""
    deadline = time.monotonic() + timeout_s
    while stored_count(out) == 0:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the run never stored a sample"
        time.sleep(0.05)


def start_run(suite: Path, out: Path, *options: str,
              env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``harness run SUITE --cache-mode off --out OUT OPTIONS...`` in a subprocess with the
    default SIGINT disposition, its output captured as text; ``env`` is added to this
    process's environment (e.g. ``SLOW_AGENT_S``)."""
    return subprocess.Popen(
        [sys.executable, "-m", "harness", "run", str(suite), *options, "--cache-mode", "off",
         "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **(env or {})}, preexec_fn=default_sigint)


def ended(process: subprocess.Popen[str], timeout_s: float = 120) -> str:
    """Wait for ``process`` to end and return its stderr; killed if it has not ended in
    ``timeout_s`` (the test then fails on the exit code)."""
    try:
        _, stderr = process.communicate(timeout=timeout_s)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return stderr
