"""The one async interface every model offers, and how models are named.

A model is named ``provider:model``: ``anthropic:claude-sonnet-4-5``, ``openai:gpt-4o``,
``gemini:gemini-2.5-flash`` (the Gemini API or Vertex AI), ``openai:llama3.1`` with a base URL
for any OpenAI-compatible server, or ``mock:<behaviour>`` for offline runs.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from harness.errors import ModelConfigError
from harness.models.request import ModelRequest
from harness.models.types import ChatResponse, Message, StructuredResponse, T

Provider = Literal["anthropic", "openai", "gemini", "mock"]
PROVIDERS: tuple[Provider, ...] = ("anthropic", "openai", "gemini", "mock")


class ModelSpec(BaseModel):
    """A parsed model name. ``base_url`` is only meaningful for ``openai`` (and ``anthropic``
    or ``gemini`` when pointed at a compatible gateway or the loopback test server)."""

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

    Every call takes one :class:`~harness.models.request.ModelRequest`; its ``sample_index``
    is part of the cache key, so repeated samples differ and the same sample replays.
    """

    spec: ModelSpec

    @property
    def batched(self) -> bool:
        """Whether this model's judge calls go through a provider batch API (they are then
        sent together: an order meant for live calls, such as a first sample sent alone to
        warm a prompt cache, would only hold them up)."""
        return False

    @abstractmethod
    async def chat(self, request: ModelRequest) -> ChatResponse:
        """Send a conversation (and the tools the model may call); return the assistant turn.

        Raises :class:`~harness.errors.ModelConfigError` at once for problems retrying cannot
        fix (no key, refused key, bad request, unknown model),
        :class:`~harness.errors.ModelUnavailableError` when bounded retries ran out, and
        :class:`~harness.errors.CacheMissError` in replay-only mode on a miss.
        """

    @abstractmethod
    async def structured(
        self, request: ModelRequest, response_model: type[T]
    ) -> StructuredResponse[T]:
        """Ask for an answer validated into ``response_model`` (through instructor), re-asking
        up to ``request.max_reasks`` times when validation fails; then raise
        :class:`~harness.errors.StructuredOutputError`. Other errors as for :meth:`chat`.
        ``request.tools`` and ``tool_choice`` are not used."""


class MockBehaviour(ABC):
    """How an offline ``mock:<name>`` model answers. The mock model layer wraps a behaviour
    with the same accounting as real providers (token estimates, zero cost) and marks every
    response as offline. Behaviours are deterministic functions of the request (its messages,
    tools, parameters and ``sample_index``) and of what they were bound to.

    Context that is not in the messages (the scenario a mock agent plays, the rubric and
    transcript a mock judge scores) reaches a behaviour only through :meth:`bind`, which the
    harness calls for ``mock:`` models alone (:func:`harness.models.mock.bind_offline`); a
    real model's request never carries it.

    ``VARIANTS`` names the suffixes a behaviour also answers to (``mock:<name>-<variant>``), so
    an error for an unknown mock model can list every name there is.
    """

    VARIANTS: ClassVar[tuple[str, ...]] = ()

    def bind(self, context: object) -> MockBehaviour:
        """This behaviour for calls about ``context`` (a scenario, a rubric judgment, a pair
        to compare: whatever the calling layer passes). The default ignores it."""
        return self

    @abstractmethod
    async def chat(self, request: ModelRequest) -> Message:
        """Return the assistant message (text and/or tool calls)."""

    @abstractmethod
    async def structured(self, request: ModelRequest, response_model: type[T]) -> T:
        """Return a validated instance of ``response_model``."""
