"""Provider-neutral types for model calls: messages, tools, tool calls, responses, usage.

Every provider converts to and from these; nothing outside ``harness.models`` sees an SDK type.
"""

from __future__ import annotations

import re
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

Role = Literal["agent", "simulator", "judge"]
"""Who a model call was made for; usage and cost are attributed to it."""

ROLES: tuple[Role, ...] = ("agent", "simulator", "judge")

ToolChoice = Literal["auto", "none", "required"] | str
"""``auto``/``none``/``required``, or the name of one tool the model must call."""


# A Python str holds a character beyond U+FFFF as one code point, so every surrogate code
# point in one is a lone half: text that cannot be encoded as UTF-8 (JSON's "\ud800" escape,
# a Python agent or tool returning it). Left in, it breaks every write of the sample later.
_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(value: Any) -> Any:
    """``value`` with every lone UTF-16 surrogate in its strings (dict keys and values, list
    and tuple items, nested) replaced by U+FFFD, the replacement character; other values are
    returned as they are (the same object when nothing changes)."""
    return _replaced(value) if _has_lone_surrogate(value) else value


def _replaced(value: Any) -> Any:
    # Only reached when something holds a lone surrogate: rebuilt without looking again.
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_replaced(k): _replaced(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_replaced(v) for v in value)
    return value


def _has_lone_surrogate(value: Any) -> bool:
    # Looked for before anything is copied: almost no text has one, and every model built
    # from outside text passes through here.
    if isinstance(value, str):
        return not value.isascii() and _SURROGATE.search(value) is not None
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_has_lone_surrogate(v) for v in value)
    return False


SCRUBBED: dict[str, Any] = {"scrubbed": True}
"""The validation context for records this harness wrote itself (a sample read back from a
run's store, or sent back by one of its worker processes): their text was scrubbed when they
were first built, and looking through it again costs more than the rest of the parsing."""


class OutsideText(BaseModel):
    """A model whose fields may hold text from outside (a model, a tool, a Python agent): lone
    surrogates become U+FFFD on the way in, so the text can always be written as UTF-8
    (unless validated with the :data:`SCRUBBED` context)."""

    @model_validator(mode="before")
    @classmethod
    def _scrub(cls, data: Any, info: ValidationInfo) -> Any:
        if info.context is SCRUBBED:
            return data
        return without_lone_surrogates(data)


class _Frozen(OutsideText):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolCall(_Frozen):
    """One tool call requested by a model.

    ``arguments`` is the parsed JSON object. When the model sent arguments that are not a JSON
    object, ``arguments`` is empty and ``raw_arguments`` keeps the text as sent, so scoring can
    count the call as non-matching instead of crashing.
    """

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str | None = None

    @property
    def arguments_valid(self) -> bool:
        return self.raw_arguments is None


class Message(_Frozen):
    """One chat message.

    - ``system``/``user``: ``content`` only.
    - ``assistant``: ``content`` (may be empty) and any ``tool_calls``.
    - ``tool``: the result of one tool call: ``tool_call_id``, ``name`` (the tool),
      ``content`` (the result as text, usually JSON) and ``is_error``.
    """

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False


class ToolSpec(_Frozen):
    """A tool the model may call: name, description and JSON Schema of its arguments."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


class GenerationParams(_Frozen):
    """Sampling settings. ``None`` means the provider's default."""

    temperature: float | None = None
    max_tokens: int = 1024
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None


class Usage(_Frozen):
    """Tokens of one request or call. ``input_tokens`` counts every input token, those the
    provider's prompt cache served (``cache_read_tokens``) or stored (``cache_write_tokens``)
    included, so it means the same for every provider (Anthropic reports the three apart,
    OpenAI and Gemini the cached part of the total)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


class ChatResponse(_Frozen):
    """What a chat call returns: the assistant message plus accounting.

    ``cost_usd`` is ``None`` when the model has no entry in the price table;
    ``prompt_cache_saved_usd`` is what the provider's prompt cache took off it.
    ``cached`` is true when the answer came from the response cache (no request was made).
    """

    message: Message
    finish_reason: str | None = None
    usage: Usage = Usage()
    model: str
    latency_s: float = 0.0
    cost_usd: float | None = None
    prompt_cache_saved_usd: float = 0.0
    cached: bool = False


T = TypeVar("T", bound=BaseModel)


class StructuredResponse(BaseModel, Generic[T]):
    """What a structured call returns: the validated object plus accounting.

    ``attempts`` counts requests made (1 = valid on the first try; more = re-asked);
    ``batched_requests`` how many of them went through a provider's batch API, and
    ``batch_saved_usd`` what its discount took off the cost; the rest as for
    :class:`ChatResponse`.
    """

    value: T
    usage: Usage = Usage()
    model: str
    latency_s: float = 0.0
    cost_usd: float | None = None
    prompt_cache_saved_usd: float = 0.0
    cached: bool = False
    attempts: int = 1
    batched_requests: int = 0
    batch_saved_usd: float = 0.0
