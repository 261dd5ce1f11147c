"""``harness ARGS`` run in the test's own process, and what it printed: :func:`run_cli`."""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.cli import main


@dataclass(frozen=True)
class CliResult:
    """What ``harness ARGS`` did: its exit code and what it printed."""

    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str | Path, cwd: Path | None = None, columns: int = 80,
            env: Mapping[str, str | None] | None = None) -> CliResult:
    """``harness ARGS`` through the console entry point (:func:`harness.cli.main`, which turns
    a HarnessError into one line and exit 2), in this process: a subprocess pays for the
    imports again every time. Output goes to a ``columns``-wide console that is not a
    terminal (no colours, no progress bars). ``cwd`` defaults to a new empty directory, so a
    command's default paths (``.harness/``, ``runs/``) never land in the checkout; ``env``
    sets (or, with ``None``, removes) environment variables for the call."""
    raw = io.BytesIO()  # stdout has a binary buffer: `harness stats --json` writes bytes to it
    stdout = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    stderr = io.StringIO()
    with contextlib.ExitStack() as stack:
        patch = stack.enter_context(pytest.MonkeyPatch.context())
        patch.setattr(sys, "argv", ["harness", *map(str, args)])
        patch.setattr(logging, "lastResort", logging.lastResort)  # main() replaces it
        patch.setenv("COLUMNS", str(columns))
        for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):  # plain text only
            patch.delenv(name, raising=False)
        for name, value in (env or {}).items():
            if value is None:
                patch.delenv(name, raising=False)
            else:
                patch.setenv(name, value)
        patch.chdir(cwd or stack.enter_context(tempfile.TemporaryDirectory()))
        stack.enter_context(contextlib.redirect_stdout(stdout))
        stack.enter_context(contextlib.redirect_stderr(stderr))
        try:
            main()
            code = 0
        except SystemExit as exited:
            code = exited.code if isinstance(exited.code, int) else int(exited.code is not None)
    return CliResult(code, raw.getvalue().decode("utf-8"), stderr.getvalue())
