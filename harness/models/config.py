"""Settings for the model layer: keys and base URLs per provider, concurrency, timeouts,
retries, the response cache, budgets and extra prices.

Everything has a working default, so ``ModelsConfig()`` is a valid configuration; keys and
base URLs not set here come from ``OPENAI_API_KEY``/``OPENAI_BASE_URL``,
``ANTHROPIC_API_KEY``/``ANTHROPIC_BASE_URL`` and ``GOOGLE_API_KEY`` or
``GEMINI_API_KEY``/``GOOGLE_GEMINI_BASE_URL`` (Vertex AI: ``GOOGLE_GENAI_USE_VERTEXAI``,
``GOOGLE_CLOUD_PROJECT``, ``GOOGLE_CLOUD_LOCATION``). Loadable from YAML with
:meth:`ModelsConfig.from_yaml`::

    openai: {base_url: http://localhost:8000/v1, concurrency: 32}
    anthropic: {concurrency: 8, requests_per_minute: 50, tokens_per_minute: 40000}
    gemini: {vertexai: true, project: my-project, location: europe-west4}
    timeout_s: 60
    retry: {max_attempts: 5, backoff_initial_s: 1}
    cache: {path: .harness/cache.sqlite, mode: read-write}
    budget: {max_cost_usd: 10}
    batch: {poll_interval_s: 30, max_wait_s: 60}
    prices:
      "openai:llama3.1": {input_per_mtok: 0, output_per_mtok: 0}
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from harness.choices import CacheMode
from harness.errors import InputError, ModelConfigError
from harness.files import read_text
from harness.json_values import load_yaml
from harness.models.base import ModelSpec
from harness.models.prices import Price

"""``read-write``: answer from the cache, store misses. ``refresh``: always call, overwrite.
``off``: no cache. ``replay``: answer only from the cache; a miss is
:class:`~harness.errors.CacheMissError` (fully offline re-runs)."""

StructuredMode = Literal["tools", "json_schema"]
"""How OpenAI-format structured output is requested: a forced tool call, or
``response_format`` json_schema. Anthropic always uses a forced tool."""


class _Config(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProviderConfig(_Config):
    """One provider's key, base URL, concurrency bound and rate limits.

    ``concurrency`` bounds requests in flight per provider and base URL (one HTTP connection
    pool of that size each); after a 429 the bound in force is halved, and it climbs back by
    one per window of successful requests (:mod:`harness.models.rate_limit`).
    ``requests_per_minute`` and ``tokens_per_minute`` are the provider's limits for this
    endpoint, held before sending (requests paced evenly, tokens estimated before and
    corrected from the usage after); ``None`` paces by the limits the provider's response
    headers state, when it sends them (OpenAI's and Anthropic's do). ``harness run
    --rate-limit`` overrides them.
    """

    api_key: SecretStr | None = None
    base_url: str | None = None
    concurrency: int = Field(default=16, ge=1, le=4096)
    requests_per_minute: int | None = Field(default=None, ge=1)
    tokens_per_minute: int | None = Field(default=None, ge=1)


class GeminiProviderConfig(ProviderConfig):
    """The ``gemini`` provider: a :class:`ProviderConfig`, plus Vertex AI.

    ``vertexai`` true sends requests to Vertex AI rather than the Gemini API (``None``: as
    ``GOOGLE_GENAI_USE_VERTEXAI`` says, else the Gemini API). On Vertex, ``project`` and
    ``location`` (else ``GOOGLE_CLOUD_PROJECT``/``GOOGLE_CLOUD_LOCATION``; the location
    defaults to ``global``) pick the endpoint, and the credentials are Google's application
    default credentials; with no project, an ``api_key`` is Vertex AI express mode's key.
    """

    vertexai: bool | None = None
    project: str | None = None
    location: str | None = None


class RateLimits(_Config):
    """One provider's per-minute limits as ``harness run --rate-limit`` gives them (and a run
    stores them): each one given replaces the models YAML's, one not given keeps it."""

    requests_per_minute: int | None = Field(default=None, ge=1)
    tokens_per_minute: int | None = Field(default=None, ge=1)


RateLimitProvider = Literal["openai", "anthropic", "gemini"]


def share_of(bound: int, share: tuple[int, int]) -> int:
    """Process ``index``'s part of a bound split over ``count`` processes, ``share = (index,
    count)``: the parts add up to ``bound`` (each at least 1, so a bound below ``count`` is
    exceeded by at most ``count - 1``). Used to keep a concurrency bound global across the
    worker processes of a run."""
    index, count = share
    return max(1, bound // count + (index < bound % count))


class RetryConfig(_Config):
    """Retries of transient failures (429, 5xx, timeouts, dropped connections).

    ``max_attempts`` counts every request, the first included. Waits grow exponentially from
    ``backoff_initial_s`` up to ``backoff_max_s``, plus up to ``backoff_jitter_s`` of random
    jitter. A 429's ``Retry-After`` is honoured, capped at ``retry_after_cap_s``.
    """

    max_attempts: int = Field(default=5, ge=1, le=100)
    backoff_initial_s: float = Field(default=1.0, ge=0)
    backoff_max_s: float = Field(default=30.0, ge=0)
    backoff_jitter_s: float = Field(default=1.0, ge=0)
    retry_after_cap_s: float = Field(default=60.0, ge=0)


class CacheConfig(_Config):
    """The SQLite response cache. No ``path`` means no cache."""

    path: Path | None = None
    mode: CacheMode = "read-write"


class BudgetConfig(_Config):
    """Stop before a call once spending reaches ``max_cost_usd`` or the model calls made
    (cached calls not counted) reach ``max_calls``."""

    max_cost_usd: float | None = Field(default=None, ge=0)
    max_calls: int | None = Field(default=None, ge=0)


class BatchConfig(_Config):
    """Judge requests sent through the providers' batch APIs (``--judge-batch``).

    Requests are collected and sent as one batch per endpoint and model once the first of
    them has waited ``max_wait_s`` (or the run has no more episodes to play, or a batch is
    full: ``max_requests``, default the provider's limit). Open batches are asked for their
    state every ``poll_interval_s``. A request the provider failed, or that a batch's expiry
    left undone, is sent again in a later batch up to ``resubmits`` times, then is an error
    of its sample.
    """

    poll_interval_s: float = Field(default=30.0, gt=0)
    max_wait_s: float = Field(default=60.0, ge=0)
    max_requests: int | None = Field(default=None, ge=1)
    resubmits: int = Field(default=2, ge=0, le=20)


class ModelsConfig(_Config):
    """All model-layer settings; see the module docstring for the YAML form."""

    openai: ProviderConfig = ProviderConfig(concurrency=32)
    anthropic: ProviderConfig = ProviderConfig(concurrency=16)
    gemini: GeminiProviderConfig = GeminiProviderConfig(concurrency=16)
    timeout_s: float = Field(default=120.0, gt=0)
    retry: RetryConfig = RetryConfig()
    cache: CacheConfig = CacheConfig()
    budget: BudgetConfig = BudgetConfig()
    batch: BatchConfig = BatchConfig()
    openai_structured_mode: StructuredMode = "tools"
    prices: dict[str, Price] = Field(default_factory=dict)

    @field_validator("prices")
    @classmethod
    def _price_keys_are_model_names(cls, prices: dict[str, Price]) -> dict[str, Price]:
        for name in prices:
            try:
                ModelSpec.parse(name)
            except ModelConfigError as err:
                raise ValueError(str(err)) from None
        return prices

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *,
                     source: str | Path = "<config>") -> ModelsConfig:
        """Validate a mapping (e.g. parsed YAML). Raises :class:`InputError` naming
        ``source``, the field path and what was expected."""
        try:
            return cls.model_validate(dict(data))
        except ValidationError as err:
            first = err.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or None
            more = err.error_count() - 1
            if more:
                expected = f"{first['msg']} (and {more} more problem{'s' * (more > 1)})"
            else:
                expected = first["msg"]
            raise InputError(source, field, expected) from None

    @classmethod
    def from_yaml(cls, path: str | Path) -> ModelsConfig:
        """Load a YAML file. Raises :class:`InputError` for a file that cannot be read as
        UTF-8 text (see :func:`harness.files.read_text`), bad YAML (with its line) or invalid
        settings."""
        path = Path(path)
        text = read_text(path, "a models YAML file")
        try:
            data = load_yaml(text, path)[1]
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            raise InputError(path, None, f"not valid YAML: {getattr(err, 'problem', err)}",
                             location=line) from None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise InputError(path, None, "expected a mapping of settings at the top level")
        return cls.from_mapping(data, source=path)


def with_rate_limits(config: ModelsConfig, limits: Mapping[Any, RateLimits]) -> ModelsConfig:
    """``config`` with each provider's rate limits replaced by those in ``limits`` (per key: a
    limit ``limits`` leaves out keeps the config's)."""
    update: dict[str, ProviderConfig] = {}
    for provider, given in limits.items():
        fields = given.model_dump(exclude_none=True)
        if fields:
            update[provider] = getattr(config, provider).model_copy(update=fields)
    return config.model_copy(update=update) if update else config


def split_rate_limits(settings: ProviderConfig, share: tuple[int, int]) -> dict[str, int]:
    """A provider's concurrency bound and rate limits cut to one process's part of them
    (``share = (index, count)``, :func:`share_of`), so they hold over all the processes."""
    parts = {"concurrency": share_of(settings.concurrency, share)}
    for key in ("requests_per_minute", "tokens_per_minute"):
        value = getattr(settings, key)
        if value is not None:
            parts[key] = share_of(value, share)
    return parts


def merge_rate_limits(base: Mapping[Any, RateLimits],
                      update: Mapping[str, RateLimits | Mapping[str, int]]
                      ) -> dict[str, RateLimits]:
    """``base`` with ``update``'s limits put over it, provider by provider and key by key
    (``--rate-limit`` on ``--resume``: a limit given replaces the stored one)."""
    merged = dict(base)
    for provider, given in update.items():
        fields = (given.model_dump(exclude_none=True) if isinstance(given, RateLimits)
                  else {k: v for k, v in given.items() if v is not None})
        old = merged.get(provider, RateLimits())
        merged[provider] = old.model_copy(update=fields)
    return merged
