"""Shared fixtures: a running loopback model server and model hubs pointed at it.

- ``loopback``: the server (one per test session, reset before each test: empty queue, no
  responder or faults, zero latency, no records, counters at zero); the pytest plugin's
  ``harness_loopback`` (harness/pytest_plugin.py), which users' tests get too.
- ``make_hub(**overrides)``: a :class:`ModelHub` whose ``openai`` and ``anthropic`` providers
  point at the server with test keys and fast retries; closed after the test.
- :func:`loopback_config` (harness.testing.hub) builds the same config without a fixture.
- ``open_report`` (tests/helpers/browser.py): opens an HTML report in headless Chromium;
  ``open_served``: a page of ``harness view``, served.

Only fixtures live here: pytest loads this file itself, and a test importing it again would
get a second copy. Code the tests import is in ``tests/helpers/`` (``run_cli`` in
``tests.helpers.cli``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from harness.models.hub import ModelHub
from harness.testing.hub import loopback_config
from harness.testing.server import LoopbackServer
from tests.helpers.browser import (  # noqa: F401  (the fixtures, for the HTML tests)
    open_report,
    open_served,
)


@pytest.fixture(autouse=True)
def _command_logs_in_tmp(tmp_path_factory: pytest.TempPathFactory,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands with no output directory log under ``.harness/logs`` in the current
    directory (harness.logs); in tests, under a temporary directory instead, so no test
    writes into the checkout or shares a file with another."""
    monkeypatch.setattr("harness.logs.LOG_DIR", tmp_path_factory.mktemp("command-logs"))


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
