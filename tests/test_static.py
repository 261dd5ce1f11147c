"""The code stays lint-clean (ruff) and type-clean (mypy --strict on the package)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_ruff_finds_nothing() -> None:
    done = _run("ruff", "check", ".")
    assert done.returncode == 0, done.stdout[-4000:]


def test_mypy_strict_finds_nothing_in_the_package() -> None:
    done = _run("mypy", "harness")
    assert done.returncode == 0, done.stdout[-4000:]
