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
    """USD per million tokens. ``cache_read_per_mtok`` is the price of an input token the
    provider's prompt cache served, ``cache_write_per_mtok`` of one it stored (Anthropic
    charges more than the input price for a write); ``None`` prices them as ordinary input
    (no discount is assumed where none is known, so a cost is never understated)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cache_read_per_mtok: float | None = Field(default=None, ge=0)
    cache_write_per_mtok: float | None = Field(default=None, ge=0)

    def cost(self, input_tokens: int, output_tokens: int, cache_read_tokens: int = 0,
             cache_write_tokens: int = 0) -> float:
        """USD for these tokens; the cache counts are parts of ``input_tokens``."""
        plain = max(0, input_tokens - cache_read_tokens - cache_write_tokens)
        read = self.input_per_mtok if self.cache_read_per_mtok is None else self.cache_read_per_mtok
        write = (self.input_per_mtok if self.cache_write_per_mtok is None
                 else self.cache_write_per_mtok)
        return (plain * self.input_per_mtok + cache_read_tokens * read
                + cache_write_tokens * write + output_tokens * self.output_per_mtok) / 1e6

    def cache_saving(self, cache_read_tokens: int, cache_write_tokens: int) -> float:
        """What the prompt cache saved against paying every input token at the input price
        (negative when writes cost more than the reads saved)."""
        full = self.cost(cache_read_tokens + cache_write_tokens, 0)
        return full - self.cost(cache_read_tokens + cache_write_tokens, 0, cache_read_tokens,
                                cache_write_tokens)


def _p(input_per_mtok: float, output_per_mtok: float, cache_read: float | None = None,
       cache_write: float | None = None) -> Price:
    return Price(input_per_mtok=input_per_mtok, output_per_mtok=output_per_mtok,
                 cache_read_per_mtok=cache_read, cache_write_per_mtok=cache_write)


def _anthropic(input_per_mtok: float, output_per_mtok: float) -> Price:
    # Prompt caching: a read costs a tenth of the input price, a write (five-minute cache)
    # a quarter more than it.
    return _p(input_per_mtok, output_per_mtok, round(input_per_mtok * 0.1, 6),
              round(input_per_mtok * 1.25, 6))


# List prices (standard tier, no batch discount) as published by the providers, with their
# prompt-cache prices: OpenAI's cached input (automatic, no charge to write) is half the input
# price for GPT-4o, a quarter for GPT-4.1, o3 and o4-mini, a tenth for GPT-5; Gemini 2.5's
# implicit cache a tenth.
DEFAULT_PRICES: dict[str, Price] = {
    "anthropic:claude-opus-4-5": _anthropic(5.0, 25.0),
    "anthropic:claude-opus-4-1": _anthropic(15.0, 75.0),
    "anthropic:claude-opus-4-0": _anthropic(15.0, 75.0),
    "anthropic:claude-opus-4": _anthropic(15.0, 75.0),
    "anthropic:claude-sonnet-4-5": _anthropic(3.0, 15.0),
    "anthropic:claude-sonnet-4-0": _anthropic(3.0, 15.0),
    "anthropic:claude-sonnet-4": _anthropic(3.0, 15.0),
    "anthropic:claude-3-7-sonnet": _anthropic(3.0, 15.0),
    "anthropic:claude-haiku-4-5": _anthropic(1.0, 5.0),
    "anthropic:claude-3-5-haiku": _anthropic(0.8, 4.0),
    "openai:gpt-5": _p(1.25, 10.0, 0.125),
    "openai:gpt-5-mini": _p(0.25, 2.0, 0.025),
    "openai:gpt-5-nano": _p(0.05, 0.40, 0.005),
    "openai:gpt-4.1": _p(2.0, 8.0, 0.50),
    "openai:gpt-4.1-mini": _p(0.40, 1.60, 0.10),
    "openai:gpt-4.1-nano": _p(0.10, 0.40, 0.025),
    "openai:gpt-4o": _p(2.50, 10.0, 1.25),
    "openai:gpt-4o-mini": _p(0.15, 0.60, 0.075),
    "openai:o3": _p(2.0, 8.0, 0.50),
    "openai:o4-mini": _p(1.10, 4.40, 0.275),
    # Gemini API paid tier as listed at ai.google.dev/gemini-api/docs/pricing in 2025 (text
    # input; Vertex AI lists the same): 2.5 Pro's price is for prompts up to 200k tokens (it
    # is 2.50/15.0 above); thinking tokens are billed as output, and are counted as output.
    "gemini:gemini-2.5-pro": _p(1.25, 10.0, 0.125),
    "gemini:gemini-2.5-flash": _p(0.30, 2.50, 0.03),
    "gemini:gemini-2.5-flash-lite": _p(0.10, 0.40, 0.01),
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
