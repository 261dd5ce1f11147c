"""The one async interface every model offers, and how models are named.

A model is named ``provider:model``: ``anthropic:claude-sonnet-4-5``, ``openai:gpt-4o``,
``openai:llama3.1`` with a base URL for any OpenAI-compatible server, or ``mock:<behaviour>``
for offline runs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from harness.errors import ModelConfigError
from harness.models.types import (
    ChatResponse,
    GenerationParams,
    Message,
    Role,
    StructuredResponse,
    T,
    ToolChoice,
    ToolSpec,
)

Provider = Literal["anthropic", "openai", "mock"]
PROVIDERS: tuple[Provider, ...] = ("anthropic", "openai", "mock")


class ModelSpec(BaseModel):
    """A parsed model name. ``base_url`` is only meaningful for ``openai`` (and ``anthropic``
    when pointed at a compatible gateway or the loopback test server)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: Provider
    name: str
    base_url: str | None = None

    @classmethod
    def parse(cls, text: str, *, base_url: str | None = None) -> ModelSpec:
        """Parse ``provider:model``. Raises :class:`ModelConfigError` naming what was wrong."""
        provider, sep, name = text.partition(":")
        if not sep or not name.strip():
            raise ModelConfigError(
                f"model {text!r} is not of the form provider:model "
                f"(providers: {', '.join(PROVIDERS)})"
            )
        if provider not in PROVIDERS:
            raise ModelConfigError(
                f"unknown provider {provider!r} in {text!r}; expected one of {', '.join(PROVIDERS)}"
            )
        return cls(provider=provider, name=name.strip(), base_url=base_url)

    def __str__(self) -> str:
        return f"{self.provider}:{self.name}"

    @property
    def is_offline(self) -> bool:
        return self.provider == "mock"


class ChatModel(ABC):
    """One model, ready to call. Implementations share retries, the concurrency bound, the
    response cache and usage accounting; they differ only in the wire format.

    ``hints`` carry structured context for offline ``mock:`` models (the scenario, the rubric);
    real providers ignore them and they are not part of the cache key.
    ``sample_index`` is part of the cache key, so repeated samples differ and the same sample
    replays.
    """

    spec: ModelSpec

    @abstractmethod
    async def chat(
        self,
        messages: Sequence[Message],
        *,
        role: Role,
        tools: Sequence[ToolSpec] = (),
        tool_choice: ToolChoice = "auto",
        params: GenerationParams | None = None,
        sample_index: int = 0,
        hints: Mapping[str, Any] | None = None,
    ) -> ChatResponse:
        """Send a conversation (and the tools the model may call); return the assistant turn.

        Raises :class:`~harness.errors.ModelConfigError` at once for problems retrying cannot
        fix (no key, refused key, bad request, unknown model),
        :class:`~harness.errors.ModelUnavailableError` when bounded retries ran out, and
        :class:`~harness.errors.CacheMissError` in replay-only mode on a miss.
        """

    @abstractmethod
    async def structured(
        self,
        messages: Sequence[Message],
        response_model: type[T],
        *,
        role: Role,
        params: GenerationParams | None = None,
        sample_index: int = 0,
        max_reasks: int = 2,
        hints: Mapping[str, Any] | None = None,
    ) -> StructuredResponse[T]:
        """Ask for an answer validated into ``response_model`` (through instructor), re-asking
        up to ``max_reasks`` times when validation fails; then raise
        :class:`~harness.errors.StructuredOutputError`. Other errors as for :meth:`chat`."""


class MockBehaviour(ABC):
    """How an offline ``mock:<name>`` model answers. The mock model layer wraps a behaviour
    with the same accounting as real providers (token estimates, zero cost) and marks every
    response as offline. Behaviours are deterministic functions of their inputs and
    ``sample_index``; they read what they need from ``hints`` (e.g. the scenario or rubric).

    ``VARIANTS`` names the suffixes a behaviour also answers to (``mock:<name>-<variant>``), so
    an error for an unknown mock model can list every name there is.
    """

    VARIANTS: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec],
        tool_choice: ToolChoice,
        params: GenerationParams,
        sample_index: int,
        hints: Mapping[str, Any],
    ) -> Message:
        """Return the assistant message (text and/or tool calls)."""

    @abstractmethod
    async def structured(
        self,
        messages: Sequence[Message],
        response_model: type[T],
        *,
        params: GenerationParams,
        sample_index: int,
        hints: Mapping[str, Any],
    ) -> T:
        """Return a validated instance of ``response_model``."""
