"""The model hub: owns what models share (config, usage ledger, price table, response cache,
one HTTP pool and one set of limits per provider and base URL) and hands out :class:`ChatModel`
instances by name::

    async with ModelHub(ModelsConfig(cache=CacheConfig(path=".harness/cache.sqlite"))) as hub:
        judge = hub.get("anthropic:claude-sonnet-4-5")
        local = hub.get("openai:llama3.1", base_url="http://localhost:11434/v1")
        offline = hub.get("mock:echo")
        reply = await judge.chat(ModelRequest([Message(role="user", content="hi")], "judge"))
        print(hub.ledger.snapshot()["by_role"])

Where keys and base URLs come from, first match wins: the ``base_url`` given to :meth:`get`;
the config (``openai.base_url``, ``anthropic.api_key``, ...); the environment
(``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``,
``GOOGLE_API_KEY`` then ``GEMINI_API_KEY`` as google-genai reads them,
``GOOGLE_GEMINI_BASE_URL`` or on Vertex AI ``GOOGLE_VERTEX_BASE_URL``); the provider's
official URL. A missing key is reported when a call needs it (a cached answer needs none),
before any request. An OpenAI-compatible server at a custom base URL may need no key, and
Vertex AI with a project needs none (it uses Google's application default credentials).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from harness.errors import ModelConfigError
from harness.models.base import ChatModel, ModelSpec
from harness.models.cache import ResponseCache
from harness.models.config import ModelsConfig, ProviderConfig
from harness.models.endpoint import ClientFactory, Endpoint, HttpClientClass
from harness.models.mock import MockChatModel, resolve_mock
from harness.models.prices import PriceTable
from harness.models.rate_limit import RateLimiter
from harness.models.remote import ModelServices
from harness.models.retry import RetryPolicy
from harness.models.usage import UsageLedger

if TYPE_CHECKING:
    from harness.choices import ReaskMode
    from harness.models.batch import BatchQueue
    from harness.models.gemini_provider import GeminiTarget

_OFFICIAL = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com",
             "gemini": "https://generativelanguage.googleapis.com"}
# The environment variables a key is read from, first set wins (google-genai's own order).
_ENV_KEY = {"openai": ("OPENAI_API_KEY",), "anthropic": ("ANTHROPIC_API_KEY",),
            "gemini": ("GOOGLE_API_KEY", "GEMINI_API_KEY")}
# Each provider's module (its ``make_client``, ``HTTP_CLIENT`` and model class), imported when
# a model of the provider is first asked for; the fork server of --workers imports the ones a
# suite uses ahead.
PROVIDER_MODULES = {"openai": "harness.models.openai_provider",
                    "anthropic": "harness.models.anthropic_provider",
                    "gemini": "harness.models.gemini_provider"}
_ENV_BASE_URL = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL",
                 "gemini": "GOOGLE_GEMINI_BASE_URL"}
_TRUE = ("1", "true")


def _normalise_url(url: str) -> str:
    return url.strip().rstrip("/")


class ModelHub:
    """See the module docstring. ``environ`` defaults to ``os.environ`` (read when an
    endpoint is first needed); pass a mapping to isolate tests. ``ledger`` defaults to a new
    one with the config's budgets. ``limit_share`` is this process's part of a rate limit a
    provider states in its headers for the whole account (``1/N`` in each of N worker
    processes; configured limits are split in the config itself)."""

    def __init__(
        self,
        config: ModelsConfig | None = None,
        *,
        ledger: UsageLedger | None = None,
        environ: Mapping[str, str] | None = None,
        limit_share: float = 1.0,
    ) -> None:
        self.config = config or ModelsConfig()
        self._limit_share = limit_share
        self.ledger = ledger or UsageLedger(
            max_cost_usd=self.config.budget.max_cost_usd, max_calls=self.config.budget.max_calls
        )
        self.prices = PriceTable(self.config.prices)
        cache_cfg = self.config.cache
        self.cache: ResponseCache | None = (
            ResponseCache(cache_cfg.path, cache_cfg.mode)
            if cache_cfg.path is not None and cache_cfg.mode != "off"
            else None
        )
        if cache_cfg.mode == "replay" and self.cache is None:
            raise ModelConfigError("cache mode replay needs a cache path")
        self.services = ModelServices(
            ledger=self.ledger,
            cache=self.cache,
            prices=self.prices,
            retry=RetryPolicy(self.config.retry),
            timeout_s=self.config.timeout_s,
            openai_structured_mode=self.config.openai_structured_mode,
        )
        self._environ = environ if environ is not None else os.environ
        self._endpoints: dict[tuple[str, str], Endpoint] = {}
        self._models: dict[tuple[str, str | None], ChatModel] = {}

    # --- models ---------------------------------------------------------------------------

    def get(self, name: str, *, base_url: str | None = None) -> ChatModel:
        """The model called ``provider:model`` (one shared instance per name and base URL).

        Raises :class:`ModelConfigError` for a malformed name, an unknown provider, an unknown
        ``mock:`` name, or a ``base_url`` given for a mock model.
        """
        cache_key = (name, base_url)
        model = self._models.get(cache_key)
        if model is not None:
            return model
        spec = ModelSpec.parse(name, base_url=base_url)
        if spec.provider == "mock":
            if base_url is not None:
                raise ModelConfigError("mock models take no base URL", model=name)
            model = MockChatModel(spec, resolve_mock(spec.name), self.ledger)
        else:
            endpoint = self.endpoint(spec.provider, base_url)
            spec = ModelSpec(provider=spec.provider, name=spec.name, base_url=endpoint.base_url)
            if spec.provider == "openai":
                from harness.models.openai_provider import OpenAIChatModel

                model = OpenAIChatModel(spec, endpoint, self.services)
            elif spec.provider == "gemini":
                from harness.models.gemini_provider import GeminiChatModel

                model = GeminiChatModel(spec, endpoint, self.services)
            else:
                from harness.models.anthropic_provider import AnthropicChatModel

                model = AnthropicChatModel(spec, endpoint, self.services)
        self._models[cache_key] = model
        return model

    def endpoint(self, provider: str, base_url: str | None = None) -> Endpoint:
        """The shared endpoint (key, pool, limits) for ``provider`` at ``base_url``
        (resolved as the module docstring says)."""
        if provider not in _OFFICIAL:
            raise ModelConfigError(f"provider {provider!r} has no HTTP endpoint")
        settings: ProviderConfig = getattr(self.config, provider)
        target = self._gemini_target() if provider == "gemini" else None  # needs its SDK
        official, env_base_url = _OFFICIAL[provider], _ENV_BASE_URL[provider]
        if target is not None and target.vertexai:
            from harness.models.gemini_provider import vertex_base_url

            official = vertex_base_url(target.location or "global")
            env_base_url = "GOOGLE_VERTEX_BASE_URL"
        resolved = _normalise_url(
            base_url or settings.base_url or self._environ.get(env_base_url) or official
        )
        endpoint = self._endpoints.get((provider, resolved))
        if endpoint is not None:
            return endpoint
        custom = resolved != official
        env_vars = _ENV_KEY[provider]
        env_var = " or ".join(env_vars)
        if settings.api_key is not None:
            api_key: str | None = settings.api_key.get_secret_value() or None
            key_source = f"the {provider} api_key in the models config"
        else:
            found = next((v for v in env_vars if self._environ.get(v)), None)
            api_key = self._environ.get(found) if found else None
            key_source = found or env_var
        module = importlib.import_module(PROVIDER_MODULES[provider])
        factory: ClientFactory = module.make_client
        if target is not None:
            factory = module.client_factory(target)
        http_client_class: HttpClientClass = module.HTTP_CLIENT
        endpoint = Endpoint(
            provider=provider,
            base_url=resolved,
            base_url_is_custom=custom,
            api_key=api_key,
            key_source=key_source,
            env_var=env_var,
            # Local OpenAI-compatible servers usually need no key, nor does Vertex AI with a
            # project (credentials); hosted APIs otherwise always do.
            key_required=not ((provider == "openai" and custom)
                              or (target is not None and target.project is not None)),
            concurrency=settings.concurrency,
            limiter=RateLimiter(requests_per_minute=settings.requests_per_minute,
                                tokens_per_minute=settings.tokens_per_minute,
                                share=self._limit_share),
            timeout_s=self.config.timeout_s,
            client_factory=factory,
            http_client_class=http_client_class,
            missing_key_hint=(
                "" if target is None else
                " (or, for Vertex AI, set GOOGLE_GENAI_USE_VERTEXAI=true and "
                "GOOGLE_CLOUD_PROJECT, or gemini.vertexai and gemini.project)"),
        )
        self._endpoints[(provider, resolved)] = endpoint
        return endpoint

    def _gemini_target(self) -> GeminiTarget:
        """Gemini API or Vertex AI, from the config, else google-genai's environment
        variables. Vertex AI with no project is express mode (a key). Raises
        :class:`ModelConfigError` when google-genai is not installed."""
        try:
            from harness.models.gemini_provider import GeminiTarget
        except ImportError as err:
            if not (err.name or "").startswith("google"):
                raise
            raise ModelConfigError(
                "gemini: models need the google-genai SDK; install it with "
                "pip install 'agent-eval-harness[gemini]'") from None

        settings = self.config.gemini
        vertexai = settings.vertexai
        if vertexai is None:
            vertexai = self._environ.get("GOOGLE_GENAI_USE_VERTEXAI", "").lower() in _TRUE
        if not vertexai:
            return GeminiTarget()
        project = settings.project or self._environ.get("GOOGLE_CLOUD_PROJECT") or None
        location = settings.location or self._environ.get("GOOGLE_CLOUD_LOCATION") or "global"
        return GeminiTarget(vertexai=True, project=project, location=location)

    def enable_batches(self, journal_path: Path, *, reask: ReaskMode = "live") -> BatchQueue:
        """Send judges' structured calls through their providers' batch APIs from now on,
        journalled at ``journal_path`` (see :mod:`harness.models.batch`); the settings are
        the config's ``batch`` block. Models of providers with no batch API stay live."""
        from harness.models.batch import BatchQueue
        from harness.models.batch_journal import BatchJournal

        queue = BatchQueue(self.config.batch, BatchJournal(journal_path), self.services.retry,
                           reask=reask)
        self.services.batches = queue
        return queue

    # --- lifecycle ------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Close the batch queue (what it submitted stays journalled), connection pools and
        the cache."""
        if self.services.batches is not None:
            await self.services.batches.aclose()
            self.services.batches = None
        for endpoint in self._endpoints.values():
            await endpoint.aclose()
        self.close()

    def close(self) -> None:
        """Close the cache (pools of finished event loops need no closing)."""
        if self.cache is not None:
            self.cache.close()
            self.cache = None
            self.services.cache = None

    async def __aenter__(self) -> ModelHub:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()
