"""Shared fixtures: a running loopback model server and model hubs pointed at it.

- ``loopback``: the server (one per test session, reset before each test: empty queue, no
  responder or faults, zero latency, no records, counters at zero); the pytest plugin's
  ``harness_loopback`` (harness/pytest_plugin.py), which users' tests get too.
- ``make_hub(**overrides)``: a :class:`ModelHub` whose ``openai`` and ``anthropic`` providers
  point at the server with test keys and fast retries; closed after the test.
- :func:`loopback_config` (harness.testing.hub) builds the same config without a fixture.
- :func:`run_cli` runs ``harness ARGS`` in this process and returns its exit code and output.
- :func:`gate_figures` gives suite figures with a chosen mean and pass rate, for the gate.
"""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from harness.models.hub import ModelHub
from harness.stats.summary import SuiteFigures
from harness.testing.hub import TEST_KEYS, loopback_config
from harness.testing.server import LoopbackServer

__all__ = ["TEST_KEYS"]  # some tests import it from here


@pytest.fixture(autouse=True)
def _command_logs_in_tmp(tmp_path_factory: pytest.TempPathFactory,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands with no output directory log under ``.harness/logs`` in the current
    directory (harness.logs); in tests, under a temporary directory instead, so no test
    writes into the checkout or shares a file with another."""
    monkeypatch.setattr("harness.logs.LOG_DIR", tmp_path_factory.mktemp("command-logs"))


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


def gate_figures(*, mean: float, ci_low: float | None, ci_high: float | None,
                 pass_rate: float, pass_rate_ci: tuple[float | None, float] | None = None,
                 ci_clipped: bool = False) -> SuiteFigures:
    """The figures of a small real suite with the mean, its interval and the pass rate (with
    ``pass_rate_ci``, default the mean's interval) set to what a gate test needs."""
    from harness.stats.suite import suite_stats
    from harness.stats.summary import summary_head

    figures = summary_head(suite_stats({"a": [1.0, 0.0], "b": [1.0, 1.0]},
                                       bootstrap_resamples=0))
    low, high = pass_rate_ci or (ci_low, ci_high)
    return figures.model_copy(update={
        "mean": mean, "ci_low": ci_low, "ci_high": ci_high, "ci_clipped": ci_clipped,
        "pass_rate": figures.pass_rate.model_copy(
            update={"value": pass_rate, "ci_low": low, "ci_high": high, "clipped": False}),
    })


@pytest.fixture
def loopback(harness_loopback: LoopbackServer) -> LoopbackServer:
    """The running loopback server, reset for this test (the plugin's fixture, which users'
    tests get too)."""
    return harness_loopback


@pytest.fixture
async def make_hub(loopback: LoopbackServer) -> AsyncIterator[Callable[..., ModelHub]]:
    """Build hubs pointed at the loopback server; ``environ`` defaults to empty so real keys
    in the environment never reach a test. Their pools and caches are closed afterwards."""
    hubs: list[ModelHub] = []

    def make(*, environ: dict[str, str] | None = None, **overrides: Any) -> ModelHub:
        hub = ModelHub(loopback_config(loopback, **overrides),
                       environ={} if environ is None else environ)
        hubs.append(hub)
        return hub

    yield make
    for hub in hubs:
        await hub.aclose()


# Browser fixtures (open_report) for the HTML report tests; see tests/browser.py.
from browser import open_report  # noqa: E402, F401
