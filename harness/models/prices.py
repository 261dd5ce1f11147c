"""Prices of model tokens, in USD per million input and output tokens.

The built-in table covers common hosted models at their published list prices; users add or
override entries from config (``prices:`` in the models YAML, keyed ``provider:model``). A model
with no entry has an unknown cost (``None``), never a silent zero: add an entry with zeros for
a local model you want counted as free.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field


class Price(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input_per_mtok + output_tokens * self.output_per_mtok) / 1e6


def _p(input_per_mtok: float, output_per_mtok: float) -> Price:
    return Price(input_per_mtok=input_per_mtok, output_per_mtok=output_per_mtok)


# List prices (standard tier, no batch or cache discounts) as published by the providers.
DEFAULT_PRICES: dict[str, Price] = {
    "anthropic:claude-opus-4-5": _p(5.0, 25.0),
    "anthropic:claude-opus-4-1": _p(15.0, 75.0),
    "anthropic:claude-opus-4-0": _p(15.0, 75.0),
    "anthropic:claude-opus-4": _p(15.0, 75.0),
    "anthropic:claude-sonnet-4-5": _p(3.0, 15.0),
    "anthropic:claude-sonnet-4-0": _p(3.0, 15.0),
    "anthropic:claude-sonnet-4": _p(3.0, 15.0),
    "anthropic:claude-3-7-sonnet": _p(3.0, 15.0),
    "anthropic:claude-haiku-4-5": _p(1.0, 5.0),
    "anthropic:claude-3-5-haiku": _p(0.8, 4.0),
    "openai:gpt-5": _p(1.25, 10.0),
    "openai:gpt-5-mini": _p(0.25, 2.0),
    "openai:gpt-5-nano": _p(0.05, 0.40),
    "openai:gpt-4.1": _p(2.0, 8.0),
    "openai:gpt-4.1-mini": _p(0.40, 1.60),
    "openai:gpt-4.1-nano": _p(0.10, 0.40),
    "openai:gpt-4o": _p(2.50, 10.0),
    "openai:gpt-4o-mini": _p(0.15, 0.60),
    "openai:o3": _p(2.0, 8.0),
    "openai:o4-mini": _p(1.10, 4.40),
    # Gemini API paid tier as listed at ai.google.dev/gemini-api/docs/pricing in 2025 (text
    # input; Vertex AI lists the same): 2.5 Pro's price is for prompts up to 200k tokens (it
    # is 2.50/15.0 above); thinking tokens are billed as output, and are counted as output.
    "gemini:gemini-2.5-pro": _p(1.25, 10.0),
    "gemini:gemini-2.5-flash": _p(0.30, 2.50),
    "gemini:gemini-2.5-flash-lite": _p(0.10, 0.40),
}

# Dated snapshots and aliases of a listed model share its price: claude-sonnet-4-5-20250929,
# gpt-4o-2024-08-06, claude-3-5-haiku-latest. Any other suffix (gpt-4o-audio-preview) is a
# different model and stays unpriced rather than borrowing a wrong price.
_SNAPSHOT_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


class PriceTable:
    """Look up the price of ``provider:model``; built-in entries plus ``extra`` ones (which
    win on a clash)."""

    def __init__(self, extra: Mapping[str, Price] | None = None) -> None:
        self._prices: dict[str, Price] = {**DEFAULT_PRICES, **(extra or {})}
        self._memo: dict[str, Price | None] = {}

    def add(self, model: str, price: Price) -> None:
        """Add or replace the entry for ``provider:model``."""
        self._prices[model] = price
        self._memo.clear()

    def lookup(self, model: str) -> Price | None:
        """The price of ``provider:model`` (exact name, or a dated snapshot of a listed
        model), or ``None`` when unknown."""
        if model in self._memo:
            return self._memo[model]
        price = self._prices.get(model)
        if price is None:
            base = _SNAPSHOT_SUFFIX.sub("", model)
            price = self._prices.get(base) if base != model else None
        self._memo[model] = price
        return price

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float | None:
        """USD for these tokens, or ``None`` when the model has no price."""
        price = self.lookup(model)
        return None if price is None else price.cost(input_tokens, output_tokens)

    def entries(self) -> dict[str, Price]:
        return dict(self._prices)
