"""The model layer: one async interface over Anthropic, OpenAI(-compatible) and offline
``mock:`` models, with retries, bounded concurrency, a response cache and usage accounting.

Start with :class:`~harness.models.hub.ModelHub`; the neutral types are in
:mod:`harness.models.types`. Names here are imported lazily so that importing the neutral types
stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ModelHub": "harness.models.hub",
    "ModelsConfig": "harness.models.config",
    "ProviderConfig": "harness.models.config",
    "RetryConfig": "harness.models.config",
    "CacheConfig": "harness.models.config",
    "BudgetConfig": "harness.models.config",
    "UsageLedger": "harness.models.usage",
    "UsageStats": "harness.models.usage",
    "Price": "harness.models.prices",
    "PriceTable": "harness.models.prices",
    "ResponseCache": "harness.models.cache",
    "register_mock": "harness.models.mock",
    "ChatModel": "harness.models.base",
    "MockBehaviour": "harness.models.base",
    "ModelSpec": "harness.models.base",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness.models' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
