"""Shared fixtures: a running loopback model server and model hubs pointed at it.

- ``loopback``: the server (one per test session, reset before each test: empty queue, no
  responder or faults, zero latency, no records, counters at zero).
- ``make_hub(**overrides)``: a :class:`ModelHub` whose ``openai`` and ``anthropic`` providers
  point at the server with test keys and fast retries; closed after the test.
- :func:`loopback_config` builds the same config without a fixture.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.models.config import (
    BudgetConfig,
    CacheConfig,
    CacheMode,
    ModelsConfig,
    ProviderConfig,
    RetryConfig,
)
from harness.models.hub import ModelHub
from harness.testing.server import LoopbackServer

TEST_KEYS = {
    "openai": "sk-test-openai-0123456789abcdef",
    "anthropic": "sk-ant-test-0123456789abcdef",
}


def loopback_config(
    server: LoopbackServer,
    *,
    keys: bool = True,
    concurrency: int = 8,
    timeout_s: float = 5.0,
    max_attempts: int = 3,
    backoff_s: float = 0.01,
    retry_after_cap_s: float = 5.0,
    cache_path: Path | None = None,
    cache_mode: CacheMode = "read-write",
    openai_structured_mode: str = "tools",
    max_cost_usd: float | None = None,
    max_calls: int | None = None,
    prices: dict[str, Any] | None = None,
) -> ModelsConfig:
    """A config with both providers at ``server``, test keys (unless ``keys=False``) and
    retries fast enough for tests."""
    return ModelsConfig.model_validate({
        "openai": ProviderConfig(
            api_key=TEST_KEYS["openai"] if keys else None,
            base_url=server.openai_base_url,
            concurrency=concurrency,
        ),
        "anthropic": ProviderConfig(
            api_key=TEST_KEYS["anthropic"] if keys else None,
            base_url=server.anthropic_base_url,
            concurrency=concurrency,
        ),
        "timeout_s": timeout_s,
        "retry": RetryConfig(max_attempts=max_attempts, backoff_initial_s=backoff_s,
                             backoff_max_s=backoff_s, backoff_jitter_s=0.0,
                             retry_after_cap_s=retry_after_cap_s),
        "cache": CacheConfig(path=cache_path, mode=cache_mode),
        "budget": BudgetConfig(max_cost_usd=max_cost_usd, max_calls=max_calls),
        "openai_structured_mode": openai_structured_mode,
        "prices": prices or {},
    })


@pytest.fixture(autouse=True)
def _command_logs_in_tmp(tmp_path_factory: pytest.TempPathFactory,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands with no output directory log under ``.harness/logs`` in the current
    directory (harness.logs); in tests, under a temporary directory instead, so no test
    writes into the checkout or shares a file with another."""
    monkeypatch.setattr("harness.logs.LOG_DIR", tmp_path_factory.mktemp("command-logs"))


@pytest.fixture(scope="session")
def _loopback_session() -> Iterator[LoopbackServer]:
    with LoopbackServer() as server:
        yield server


@pytest.fixture
def loopback(_loopback_session: LoopbackServer) -> Iterator[LoopbackServer]:
    """The running loopback server, reset for this test."""
    _loopback_session.reset()
    yield _loopback_session
    _loopback_session.reset()


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
