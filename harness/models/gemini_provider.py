"""Gemini, through the official ``google-genai`` SDK (``google.genai.Client``): the Gemini API
(an API key) or Vertex AI (a project and location with Google's application default
credentials, or an express-mode key).

Requests go through the SDK's public async API, ``client.aio.models.generate_content``, with
plain JSON contents and config built here (:mod:`.formats`); the SDK does the wire format,
the ``x-goog-api-key`` header (or the Vertex bearer token) and the error mapping to
``google.genai.errors.APIError``, which :mod:`.retry` classifies as it does the other SDKs'
errors. The SDK's own retries are off (one attempt), so ours apply, and its HTTP client is
the same aiohttp-backed pool the other providers use (:mod:`.endpoint`).

Structured output uses Gemini's own JSON mode, ``response_mime_type="application/json"``
with ``response_json_schema`` (the response model's JSON Schema as it is), validated here
with pydantic and re-asked with the validation errors, as instructor does for the other
providers. Not instructor's GenAI modes: they hand the pydantic class to the SDK's
``response_schema``, Gemini's OpenAPI subset, which refuses some of the unions the judges'
models use, and they re-ask in a model turn rather than a user one.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2
import openai
from google import genai
from google.genai import types
from pydantic import ValidationError

from harness.errors import StructuredOutputError
from harness.models.base import ModelSpec
from harness.models.endpoint import NO_KEY_NEEDED, ClientFactory, Endpoint
from harness.models.formats import gemini_parts_to_message, to_gemini_contents, to_gemini_tools
from harness.models.remote import ModelServices, RemoteChatModel
from harness.models.request import PromptCache
from harness.models.retry import TransientFailure
from harness.models.types import GenerationParams, Message, T, ToolChoice, ToolSpec, Usage
from harness.redact import redact

OFFICIAL_BASE_URL = "https://generativelanguage.googleapis.com"

# The aiohttp-backed httpx2 client the openai SDK ships (openai is a core dependency): the
# same transport, and so the same connection errors, as the other providers (see
# harness.models.endpoint for why aiohttp).
HTTP_CLIENT = openai.DefaultAioHttpClient

FINISH_REASONS = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
}


def vertex_base_url(location: str) -> str:
    """Vertex AI's endpoint for ``location`` (``global`` has no regional prefix)."""
    if location == "global":
        return "https://aiplatform.googleapis.com"
    return f"https://{location}-aiplatform.googleapis.com"


@dataclass(frozen=True)
class GeminiTarget:
    """Which Gemini service a client talks to: the Gemini API (``vertexai`` false), or Vertex
    AI in ``project`` and ``location`` (no project: express mode, with an API key)."""

    vertexai: bool = False
    project: str | None = None
    location: str | None = None


def make_client(api_key: str | None, base_url: str, http_client: httpx2.AsyncClient,
                timeout_s: float, target: GeminiTarget = GeminiTarget()) -> genai.Client:
    """An SDK client on the shared pool, with the SDK's own retries off (ours apply).

    The target is passed explicitly (``vertexai`` always, so ``GOOGLE_GENAI_USE_VERTEXAI`` in
    the environment cannot switch a client the config built for the other service)."""
    http_options = types.HttpOptions(
        base_url=base_url,
        timeout=max(1, int(timeout_s * 1000)),  # milliseconds
        retry_options=types.HttpRetryOptions(attempts=1),
        httpx_async_client=http_client,
    )
    if target.vertexai and target.project:
        return genai.Client(vertexai=True, project=target.project,
                            location=target.location or "global", http_options=http_options)
    return genai.Client(vertexai=target.vertexai, api_key=api_key, http_options=http_options)


def client_factory(target: GeminiTarget) -> ClientFactory:
    """The endpoint's client factory for ``target`` (the key placeholder of keyless
    endpoints is dropped: Vertex AI authenticates with credentials)."""

    def make(api_key: str, base_url: str, http_client: httpx2.AsyncClient,
             timeout_s: float) -> genai.Client:
        key = None if api_key == NO_KEY_NEEDED else api_key
        return make_client(key, base_url, http_client, timeout_s, target)

    return make


def generate_content_sender(client: genai.Client) -> Callable[..., Any]:
    """``create(**request) -> GenerateContentResponse`` on ``client``'s async API."""
    generate = client.aio.models.generate_content

    async def create(**request: Any) -> Any:
        return await generate(**request)

    return create


def gemini_tool_config(tool_choice: ToolChoice) -> dict[str, Any]:
    """Neutral tool choice to Gemini's function calling mode (``required`` is ``ANY``; one
    tool by name is ``ANY`` limited to it)."""
    if tool_choice in ("auto", "none"):
        return {"function_calling_config": {"mode": tool_choice.upper()}}
    if tool_choice == "required":
        return {"function_calling_config": {"mode": "ANY"}}
    return {"function_calling_config": {"mode": "ANY", "allowed_function_names": [tool_choice]}}


def usage_tokens(raw: Any) -> Usage:
    """The tokens of a reply's ``usage_metadata``: the prompt as input (cached tokens and
    tool-use prompt tokens included, all billed as input; the cached ones, which the implicit
    cache served, also as cache reads) and the candidates plus the thinking tokens (billed as
    output)."""
    usage = getattr(raw, "usage_metadata", None)
    if usage is None:
        return Usage()
    prompt = (usage.prompt_token_count or 0) + (usage.tool_use_prompt_token_count or 0)
    output = (usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)
    return Usage(input_tokens=int(prompt), output_tokens=int(output),
                 cache_read_tokens=int(usage.cached_content_token_count or 0))


# Thought signatures kept per model, by tool call id: enough for every conversation in
# flight (a signature is a few hundred bytes to a few kilobytes).
_SIGNATURES_KEPT = 4096


class GeminiChatModel(RemoteChatModel):
    """``gemini:<model>``.

    Gemini 3 models that think sign their function calls (``thought_signature``) and refuse
    a conversation that sends a call of the current turn back without its signature. The
    neutral :class:`Message` has no place for one, so the model keeps the signatures of the
    calls it answered, by call id, and puts them back on those calls in later requests. (A
    reply replayed from the response cache has none: its next request is most likely
    replayed too.)"""

    def __init__(self, spec: ModelSpec, endpoint: Endpoint, services: ModelServices) -> None:
        super().__init__(spec, endpoint, services)
        self._signatures: OrderedDict[str, bytes] = OrderedDict()

    def _keep_signatures(self, signatures: dict[str, bytes]) -> None:
        self._signatures.update(signatures)
        while len(self._signatures) > _SIGNATURES_KEPT:
            self._signatures.popitem(last=False)

    def _create_function(self, client: Any) -> Callable[..., Any]:
        return generate_content_sender(client)

    def _config(self, system: str | None, params: GenerationParams) -> dict[str, Any]:
        config: dict[str, Any] = {
            "max_output_tokens": params.max_tokens,
            # Tools are declarations only: the SDK must never try to call them itself.
            "automatic_function_calling": {"disable": True},
        }
        if system is not None:
            config["system_instruction"] = system
        if params.temperature is not None:
            config["temperature"] = params.temperature
        if params.top_p is not None:
            config["top_p"] = params.top_p
        if params.seed is not None:
            config["seed"] = params.seed
        if params.stop:
            config["stop_sequences"] = list(params.stop)
        return config

    def _chat_request(self, messages: Sequence[Message], tools: Sequence[ToolSpec],
                      tool_choice: ToolChoice, params: GenerationParams) -> dict[str, Any]:
        system, contents = to_gemini_contents(messages, self._signatures)
        config = self._config(system, params)
        if tools:
            config["tools"] = to_gemini_tools(tools)
            config["tool_config"] = gemini_tool_config(tool_choice)
        return {"model": self.spec.name, "contents": contents, "config": config}

    def _structured_request(self, messages: Sequence[Message],
                            params: GenerationParams) -> dict[str, Any]:
        system, contents = to_gemini_contents(messages)
        return {"model": self.spec.name, "contents": contents,
                "config": self._config(system, params)}


    def _usage(self, raw: Any) -> Usage:
        if not isinstance(raw, types.GenerateContentResponse):
            raise TransientFailure("malformed response body")
        if not raw.candidates and raw.prompt_feedback is None:
            raise TransientFailure("malformed response body (no candidates)")
        return usage_tokens(raw)

    def _parse_chat(self, raw: Any) -> tuple[Message, str | None]:
        if not raw.candidates:  # the prompt itself was blocked (prompt_feedback says why)
            return Message(role="assistant"), "content_filter"
        candidate = raw.candidates[0]
        parts = candidate.content.parts if candidate.content is not None else None
        message, signatures = gemini_parts_to_message(
            parts or (), raw.response_id or uuid.uuid4().hex[:12])
        self._keep_signatures(signatures)
        reason = candidate.finish_reason.value if candidate.finish_reason else None
        if message.tool_calls and reason in (None, "STOP"):
            return message, "tool_calls"
        return message, FINISH_REASONS.get(reason, reason.lower()) if reason else None

    async def _structured_value(self, messages: Sequence[Message], response_model: type[T],
                                params: GenerationParams, max_reasks: int,
                                prompt_cache: PromptCache) -> T:
        """Gemini's JSON mode with the response model's schema; an answer that does not
        validate is re-asked (the errors in a user turn) up to ``max_reasks`` times, then a
        :class:`StructuredOutputError` worded as for the other providers. ``prompt_cache``
        needs nothing here: Gemini's implicit cache finds a repeated prefix itself."""
        request = self._structured_request(messages, params)
        request["config"].update(response_mime_type="application/json",
                                 response_json_schema=response_model.model_json_schema())
        contents: list[Any] = request["contents"]
        name = getattr(response_model, "__name__", "the response model")
        attempts = max(0, max_reasks) + 1
        for attempt in range(1, attempts + 1):
            raw = await self._send_in_call(**request)
            text, reason = _reply_text(raw)
            try:
                return response_model.model_validate_json(text or "", strict=False)
            except ValidationError as err:
                if reason == "MAX_TOKENS":
                    raise StructuredOutputError(
                        f"the answer for {name} was cut off at max_tokens={params.max_tokens}; "
                        "raise max_tokens",
                        model=self.label,
                    ) from None
                if attempt == attempts:
                    raise self._invalid(err, name, attempts, max_reasks) from None
                contents = [*contents,
                            {"role": "model", "parts": [{"text": text or ""}]},
                            {"role": "user", "parts": [{"text": _reask_text(err)}]}]
                request = {**request, "contents": contents}
        raise AssertionError("unreachable")  # the loop returns or raises

    def _invalid(self, err: ValidationError, name: str, attempts: int,
                 max_reasks: int) -> StructuredOutputError:
        detail = redact(str(err), self.endpoint.secrets).strip().splitlines()
        summary = "; ".join(line.strip() for line in detail[:4])
        return StructuredOutputError(
            f"the answer failed validation against {name} after {attempts} attempt"
            f"{'s' * (attempts != 1)} ({max_reasks} re-ask{'s' * (max_reasks != 1)}): "
            f"{summary}",
            model=self.label,
        )


def _reply_text(raw: Any) -> tuple[str | None, str | None]:
    """The answer's text (thoughts left out) and its raw finish reason."""
    if not raw.candidates:
        return None, None
    candidate = raw.candidates[0]
    parts = candidate.content.parts if candidate.content is not None else None
    text = "".join(p.text for p in parts or () if p.text is not None and not p.thought)
    return text, candidate.finish_reason.value if candidate.finish_reason else None


def _reask_text(err: ValidationError) -> str:
    """What a re-ask tells the model, in instructor's words for the other providers."""
    return (f"Validation Error found:\n{err}\nRecall the function correctly, fix the errors "
            "and answer again with JSON that follows the schema.")

