"""Model hubs pointed at the loopback server (:mod:`harness.testing.server`), for tests of
agents that must not reach a real model service: every provider at the server, test keys
and retries fast enough for tests. The pytest plugin's ``harness_hub`` fixture and this
project's own tests build their hubs here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.choices import CacheMode
from harness.models.config import (
    BatchConfig,
    BudgetConfig,
    CacheConfig,
    GeminiProviderConfig,
    ModelsConfig,
    ProviderConfig,
    RetryConfig,
)
from harness.testing.server import LoopbackServer

# Shaped like real keys (so redaction is exercised) but accepted by nothing but the server.
TEST_KEYS = {
    "openai": "sk-test-openai-0123456789abcdef",
    "anthropic": "sk-ant-test-0123456789abcdef",
    "gemini": "AIzaSy-test-gemini-0123456789abcdef",
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
    batch: BatchConfig | None = None,
) -> ModelsConfig:
    """A models config with every provider at ``server``, test keys (unless
    ``keys=False``), no cache unless ``cache_path``, retries fast enough for tests, and
    ``batch`` settings (default: batches sent and looked at every 20 ms)."""
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
        "gemini": GeminiProviderConfig(
            api_key=TEST_KEYS["gemini"] if keys else None,
            base_url=server.gemini_base_url,
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
        "batch": batch or BatchConfig(poll_interval_s=0.02, max_wait_s=0.02),
    })


def loopback_environ(server: LoopbackServer) -> dict[str, str]:
    """The environment variables that point ``harness run`` (and :func:`evaluate`) at
    ``server``: every provider's base URL and test key."""
    return {
        "OPENAI_BASE_URL": server.openai_base_url,
        "ANTHROPIC_BASE_URL": server.anthropic_base_url,
        "GOOGLE_GEMINI_BASE_URL": server.gemini_base_url,
        "OPENAI_API_KEY": TEST_KEYS["openai"],
        "ANTHROPIC_API_KEY": TEST_KEYS["anthropic"],
        # the variable google-genai reads first, so a real GEMINI_API_KEY set too is not used
        "GOOGLE_API_KEY": TEST_KEYS["gemini"],
        # the Gemini API's route of the server, even where Vertex AI is set up for real
        "GOOGLE_GENAI_USE_VERTEXAI": "false",
    }
