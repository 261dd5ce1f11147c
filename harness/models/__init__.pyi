# The names this package exports, read by type checkers and, at run time, by
# lazy_loader.attach_stub (see __init__.py): each is imported on first use.
from .base import ChatModel, MockBehaviour, ModelSpec
from .cache import ResponseCache
from .config import (
    BudgetConfig,
    CacheConfig,
    GeminiProviderConfig,
    ModelsConfig,
    ProviderConfig,
    RetryConfig,
)
from .hub import ModelHub
from .mock import register_mock
from .prices import Price, PriceTable
from .request import ModelRequest
from .usage import UsageLedger, UsageStats
