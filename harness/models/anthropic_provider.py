"""Anthropic Messages, through ``anthropic.AsyncAnthropic``.

Structured output uses instructor's Anthropic tools mode (a forced tool call). Finish reasons
are given in the neutral (OpenAI) vocabulary: ``stop``, ``tool_calls``, ``length``.

As for OpenAI (see :mod:`.openai_provider`), requests go through the SDK's low-level
``client.post`` with the plain JSON body built here, skipping ``messages.create``'s TypedDict
transform of every message and tool schema; headers, auth, timeout and error mapping are the
SDK's. The reply is validated into ``anthropic.types.Message`` with pydantic, falling back to
the SDK's lenient build for a body that does not validate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import anthropic
import httpx2
import instructor
from anthropic.types import Message as AnthropicMessage

from harness.models.formats import (
    anthropic_content_to_message,
    to_anthropic_messages,
    to_anthropic_tools,
)
from harness.models.remote import RemoteChatModel, reply_from
from harness.models.request import PromptCache
from harness.models.retry import TransientFailure
from harness.models.types import GenerationParams, Message, ToolChoice, ToolSpec, Usage

OFFICIAL_BASE_URL = "https://api.anthropic.com"

FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}


# The SDK's HTTP client over aiohttp (see harness.models.endpoint for why not its default).
HTTP_CLIENT = anthropic.DefaultAioHttpClient


def make_client(api_key: str, base_url: str, http_client: httpx2.AsyncClient,
                timeout_s: float) -> anthropic.AsyncAnthropic:
    """An SDK client on the shared pool, with the SDK's own retries off (ours apply)."""
    return anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, http_client=http_client,
                                    max_retries=0, timeout=timeout_s)


def messages_sender(client: anthropic.AsyncAnthropic) -> Callable[..., Any]:
    """``create(**request) -> Message`` on ``client``: what ``client.messages.create`` sends
    for a non-streaming request (same body, headers, auth and the client's timeout), without
    the SDK's body transform. ``request`` holds JSON-ready body fields only."""
    post = client.post

    async def create(**request: Any) -> Any:
        data = await post("/v1/messages", body=request, cast_to=object)
        return message_from(data)

    return create


def message_from(data: Any) -> Any:
    """The reply body as an ``anthropic.types.Message`` (see
    :func:`~harness.models.remote.reply_from`)."""
    return reply_from(AnthropicMessage, data)


EPHEMERAL = {"type": "ephemeral"}
"""Anthropic's cache breakpoint (the default five-minute cache)."""


def mark_prompt_cache(body: dict[str, Any], plan: PromptCache) -> dict[str, Any]:
    """``body`` with cache breakpoints where ``plan`` says the prompt will recur: the end of
    the system prompt (which caches the tools before it too) and, for ``conversation``, the
    end of the last message (the next turn's request, or the next judge sample, reads all of
    it from the cache). At most two of the four breakpoints a request may carry; a prefix
    shorter than the model's minimum is simply not cached. The body is copied where marked,
    never changed in place."""
    if plan == "off":
        return body
    marked = dict(body)
    system = body.get("system")
    if isinstance(system, str) and system:
        marked["system"] = [{"type": "text", "text": system, "cache_control": EPHEMERAL}]
    messages = body.get("messages") or []
    if plan == "conversation" and messages:
        last = messages[-1]
        blocks = list(last.get("content") or [])
        if blocks and not (blocks[-1].get("type") == "text" and not blocks[-1].get("text")):
            blocks[-1] = {**blocks[-1], "cache_control": EPHEMERAL}
            marked["messages"] = [*messages[:-1], {**last, "content": blocks}]
    return marked


def anthropic_tool_choice(tool_choice: ToolChoice) -> dict[str, Any]:
    """Neutral tool choice to the Messages form (``required`` is Anthropic's ``any``)."""
    if tool_choice == "auto":
        return {"type": "auto"}
    if tool_choice == "none":
        return {"type": "none"}
    if tool_choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": tool_choice}


class AnthropicChatModel(RemoteChatModel):
    """``anthropic:<model>``."""

    def _create_function(self, client: Any) -> Callable[..., Any]:
        return messages_sender(client)

    def _base_request(self, messages: Sequence[Message],
                      params: GenerationParams) -> dict[str, Any]:
        system, wire_messages = to_anthropic_messages(messages)
        request: dict[str, Any] = {
            "model": self.spec.name,
            "messages": wire_messages,
            "max_tokens": params.max_tokens,
        }
        if system is not None:
            request["system"] = system
        if params.stop:
            request["stop_sequences"] = list(params.stop)
        # anthropic 2.x dropped temperature/top_p from create()'s signature; the Messages API
        # takes them, and a model that refuses them says so (400).
        if params.temperature is not None:
            request["temperature"] = params.temperature
        if params.top_p is not None:
            request["top_p"] = params.top_p
        # `seed` has no Anthropic equivalent; it still separates cache entries.
        return request

    def _chat_request(self, messages: Sequence[Message], tools: Sequence[ToolSpec],
                      tool_choice: ToolChoice, params: GenerationParams) -> dict[str, Any]:
        request = self._base_request(messages, params)
        if tools:
            request["tools"] = to_anthropic_tools(tools)
            request["tool_choice"] = anthropic_tool_choice(tool_choice)
        return request

    def _structured_request(self, messages: Sequence[Message],
                            params: GenerationParams) -> dict[str, Any]:
        return self._base_request(messages, params)

    def _mark_prompt_cache(self, body: dict[str, Any], plan: PromptCache) -> dict[str, Any]:
        return mark_prompt_cache(body, plan)

    def _patch_for_instructor(self, send: Callable[..., Any]) -> Callable[..., Any]:
        # Anthropic tools mode. instructor 1.17 deprecates the Mode.ANTHROPIC_TOOLS spelling:
        # the provider picks the handler, so it is Mode.TOOLS with Provider.ANTHROPIC.
        return instructor.patch(create=send, mode=instructor.Mode.TOOLS,
                                provider=instructor.Provider.ANTHROPIC)

    def _reply_from_body(self, data: Any) -> Any:
        return message_from(data)

    def _usage(self, raw: Any) -> Usage:
        if not isinstance(getattr(raw, "content", None), list):
            raise TransientFailure("malformed response body (no content)")
        usage = getattr(raw, "usage", None)
        if usage is None:
            return Usage()
        # Anthropic's input_tokens leaves out what the cache served or stored: add them back,
        # so input_tokens means every input token, as for the other providers.
        read = int(getattr(usage, "cache_read_input_tokens", None) or 0)
        write = int(getattr(usage, "cache_creation_input_tokens", None) or 0)
        return Usage(input_tokens=int(usage.input_tokens or 0) + read + write,
                     output_tokens=int(usage.output_tokens or 0),
                     cache_read_tokens=read, cache_write_tokens=write)

    def _parse_chat(self, raw: Any) -> tuple[Message, str | None]:
        message = anthropic_content_to_message(raw.content)
        reason = raw.stop_reason
        return message, FINISH_REASONS.get(reason, reason) if reason else None
