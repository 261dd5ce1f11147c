"""OpenAI Chat Completions, through ``openai.AsyncOpenAI``: OpenAI itself and any
OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio) at a base URL.

Structured output uses instructor in tools mode (a forced function call) or json_schema mode
(``response_format``), chosen by ``openai_structured_mode`` in the config.

Requests go through the SDK's low-level ``client.post`` (its documented way to send a body
built by the caller) rather than ``chat.completions.create``: ``create`` first runs the body
through the SDK's TypedDict transform, which recurses through every message and every tool's
JSON Schema and was a quarter of the runner's CPU per call, and which is the identity for the
plain JSON bodies built here (:mod:`.formats`). ``post`` keeps everything else the same: the
headers and auth, the timeout and the error mapping to ``openai.APIStatusError`` & co.

The reply body is read as JSON and validated into ``ChatCompletion`` with pydantic, which is
about 18 times faster than the SDK's own lenient, reflective construction (0.008 against 0.145
ms per reply). A body that does not validate (a compatible server that leaves out a field)
falls back to that lenient construction, so such servers work exactly as with the SDK.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import httpx2
import instructor
import openai
from openai.types.chat import ChatCompletion

from harness.models.formats import openai_tool_calls, to_openai_messages, to_openai_tools
from harness.models.remote import RemoteChatModel, reply_from
from harness.models.retry import TransientFailure
from harness.models.types import GenerationParams, Message, ToolChoice, ToolSpec, Usage

OFFICIAL_BASE_URL = "https://api.openai.com/v1"


# The SDK's HTTP client over aiohttp (see harness.models.endpoint for why not its default).
HTTP_CLIENT = openai.DefaultAioHttpClient


def make_client(api_key: str, base_url: str, http_client: httpx2.AsyncClient,
                timeout_s: float) -> openai.AsyncOpenAI:
    """An SDK client on the shared pool, with the SDK's own retries off (ours apply)."""
    return openai.AsyncOpenAI(api_key=api_key, base_url=base_url, http_client=http_client,
                              max_retries=0, timeout=timeout_s)


def openai_tool_choice(tool_choice: ToolChoice) -> Any:
    """Neutral tool choice to the Chat Completions form."""
    if tool_choice in ("auto", "none", "required"):
        return tool_choice
    return {"type": "function", "function": {"name": tool_choice}}


def chat_completion_sender(client: openai.AsyncOpenAI) -> Callable[..., Any]:
    """``create(**request) -> ChatCompletion`` on ``client``: what
    ``client.chat.completions.create`` sends for a non-streaming request (the same body, bearer
    auth, the client's timeout), without the SDK's body transform (see the module docstring).
    ``request`` holds JSON-ready body fields only."""
    post = client.post

    async def create(**request: Any) -> Any:
        data = await post(
            "/chat/completions",
            body=request,
            cast_to=object,  # the decoded JSON, parsed below
            # create() asks for bearer auth only; a fresh dict per request, as create() does.
            options={"security": {"bearer_auth": True}},
        )
        return chat_completion_from(data)

    return create


def chat_completion_from(data: Any) -> Any:
    """The reply body as a ``ChatCompletion`` (see :func:`~harness.models.remote.reply_from`)."""
    return reply_from(ChatCompletion, data)


class OpenAIChatModel(RemoteChatModel):
    """``openai:<model>``."""

    def _create_function(self, client: Any) -> Callable[..., Any]:
        return chat_completion_sender(client)

    def _params(self, params: GenerationParams) -> dict[str, Any]:
        out: dict[str, Any] = {}
        # OpenAI's own API wants max_completion_tokens (reasoning models refuse max_tokens);
        # compatible servers commonly know only max_tokens.
        if self.endpoint.base_url_is_custom:
            out["max_tokens"] = params.max_tokens
        else:
            out["max_completion_tokens"] = params.max_tokens
        if params.temperature is not None:
            out["temperature"] = params.temperature
        if params.top_p is not None:
            out["top_p"] = params.top_p
        if params.seed is not None:
            out["seed"] = params.seed
        if params.stop:
            out["stop"] = list(params.stop)
        return out

    def _chat_request(self, messages: Sequence[Message], tools: Sequence[ToolSpec],
                      tool_choice: ToolChoice, params: GenerationParams) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.spec.name,
            "messages": to_openai_messages(messages),
            **self._params(params),
        }
        if tools:
            request["tools"] = to_openai_tools(tools)
            request["tool_choice"] = openai_tool_choice(tool_choice)
        return request

    def _structured_request(self, messages: Sequence[Message],
                            params: GenerationParams) -> dict[str, Any]:
        return {"model": self.spec.name, "messages": to_openai_messages(messages),
                **self._params(params)}

    def _patch_for_instructor(self, send: Callable[..., Any]) -> Callable[..., Any]:
        mode = (instructor.Mode.JSON_SCHEMA if self.services.openai_structured_mode == "json_schema"
                else instructor.Mode.TOOLS)
        return instructor.patch(create=send, mode=mode, provider=instructor.Provider.OPENAI)

    def _reply_from_body(self, data: Any) -> Any:
        return chat_completion_from(data)

    def _usage(self, raw: Any) -> Usage:
        if not getattr(raw, "choices", None):
            raise TransientFailure("malformed response body (no choices)")
        usage = getattr(raw, "usage", None)
        if usage is None:  # some compatible servers send none
            return Usage()
        # The automatic prompt cache: the cached part of prompt_tokens (writes are free).
        details = getattr(usage, "prompt_tokens_details", None)
        cached = getattr(details, "cached_tokens", None) if details is not None else None
        return Usage(input_tokens=int(usage.prompt_tokens or 0),
                     output_tokens=int(usage.completion_tokens or 0),
                     cache_read_tokens=int(cached or 0))

    def _parse_chat(self, raw: Any) -> tuple[Message, str | None]:
        choice = raw.choices[0]
        message = choice.message
        calls = openai_tool_calls(message.tool_calls or ())
        text = message.content or ""
        return Message(role="assistant", content=text, tool_calls=calls), choice.finish_reason
