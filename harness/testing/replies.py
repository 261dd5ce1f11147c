"""What the loopback model server answers, and how an answer is written on the wire.

A :class:`Reply` is provider-neutral (text, tool calls, a structured JSON answer, or a fault);
:func:`render` turns it into an OpenAI Chat Completions, Anthropic Messages or Gemini
``generateContent`` body for the request it answers. :func:`auto_reply` answers any request
sensibly from the request itself, for benchmarks and load tests.
"""

from __future__ import annotations

import base64
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from harness.models.schema_example import example_from_schema
from harness.testing.prompt_cache import CacheUse

Api = Literal["openai", "anthropic", "gemini"]
ReplyKind = Literal["text", "tool_calls", "json", "status", "slow", "malformed"]


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received: which API, the path, the parsed JSON body and the
    headers (authentication values replaced by ``<redacted>``, so tests can see a key was sent
    without the recording holding it)."""

    api: Api
    path: str
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation: ``messages``, or Gemini's ``contents``."""
        if self.api == "gemini":
            return list(self.body.get("contents") or [])
        return list(self.body.get("messages") or [])

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tools offered (for Gemini, the function declarations of every tool)."""
        if self.api == "gemini":
            return [declaration for tool in self.body.get("tools") or []
                    for declaration in tool.get("functionDeclarations") or []]
        return list(self.body.get("tools") or [])

    @property
    def model(self) -> str:
        """The model asked for (in the body, or for Gemini in the path)."""
        if self.api == "gemini":
            return self.path.rsplit("/", 1)[-1].split(":", 1)[0]
        return str(self.body.get("model", "loopback"))

    @property
    def last_role(self) -> str | None:
        messages = self.messages
        if not messages:
            return None
        last = messages[-1]
        if self.api == "gemini":
            parts = last.get("parts") or []
            if any(isinstance(p, dict) and "functionResponse" in p for p in parts):
                return "tool"
            return "assistant" if last.get("role") == "model" else str(last.get("role"))
        if self.api == "anthropic" and last.get("role") == "user":
            content = last.get("content")
            # Anthropic sends tool results in a user turn; treat it as a tool turn.
            if isinstance(content, list) and any(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in content
            ):
                return "tool"
        return str(last.get("role"))


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build with the class methods; ``kind`` says which fields matter.

    - ``text``: an assistant text answer.
    - ``tool_calls``: tool calls ``(name, arguments)``; arguments are a dict, or a string sent
      verbatim (to test arguments that are not valid JSON).
    - ``json``: a structured answer. Sent as a call to the forced (or first) tool when the
      request offers tools, else as the message text (``response_format`` json_schema). A
      string is sent verbatim, so invalid JSON can be tested.
    - ``status``: an HTTP error with the provider's error body (``retry_after`` sets the
      ``Retry-After`` header).
    - ``slow``: wait ``delay`` seconds (past the client's timeout), then answer with ``then``.
    - ``malformed``: HTTP 200 with a body that is not valid JSON.
    """

    kind: ReplyKind
    text: str = ""
    tool_calls: tuple[tuple[str, dict[str, Any] | str], ...] = ()
    data: Any = None
    status: int = 200
    retry_after: float | None = None
    message: str = ""
    delay: float = 0.0
    then: Reply | None = None
    usage: tuple[int, int] | None = None
    finish_reason: str | None = None

    @classmethod
    def text_reply(cls, text: str, *, usage: tuple[int, int] | None = None,
                   finish_reason: str | None = None) -> Reply:
        return cls("text", text=text, usage=usage, finish_reason=finish_reason)

    @classmethod
    def tool_call(cls, name: str, arguments: dict[str, Any] | str | None = None, *,
                  text: str = "") -> Reply:
        return cls("tool_calls", text=text, tool_calls=((name, arguments or {}),))

    @classmethod
    def calls(cls, *calls: tuple[str, dict[str, Any] | str], text: str = "") -> Reply:
        return cls("tool_calls", text=text, tool_calls=tuple(calls))

    @classmethod
    def json(cls, data: Any, *, usage: tuple[int, int] | None = None) -> Reply:
        return cls("json", data=data, usage=usage)

    @classmethod
    def error(cls, status: int, *, retry_after: float | None = None, message: str = "") -> Reply:
        return cls("status", status=status, retry_after=retry_after, message=message)

    @classmethod
    def rate_limited(cls, retry_after: float | None = 1.0) -> Reply:
        return cls.error(429, retry_after=retry_after, message="rate limit reached")

    @classmethod
    def server_error(cls, status: int = 500) -> Reply:
        return cls.error(status, message="internal server error")

    @classmethod
    def unauthorized(cls) -> Reply:
        return cls.error(401, message="invalid x-api-key")

    @classmethod
    def not_found(cls) -> Reply:
        return cls.error(404, message="model not found")

    @classmethod
    def slow(cls, delay: float, then: Reply | None = None) -> Reply:
        return cls("slow", delay=delay, then=then)

    @classmethod
    def malformed(cls) -> Reply:
        return cls("malformed")


@dataclass
class Rendered:
    """An HTTP answer ready to send."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


_ids = itertools.count(1)
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def estimate_tokens(value: Any) -> int:
    """About four characters a token, at least one: close enough for accounting tests."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return max(1, len(text) // 4)


def _forced_tool(request: RecordedRequest) -> str | None:
    """The tool the request forces, ``""`` when any tool is forced, else ``None``."""
    if request.api == "gemini":
        config = (request.body.get("toolConfig") or {}).get("functionCallingConfig") or {}
        if config.get("mode") == "ANY":
            return str((config.get("allowedFunctionNames") or [""])[0])
        return None
    choice = request.body.get("tool_choice")
    if isinstance(choice, dict):
        if choice.get("type") == "tool":  # anthropic
            return str(choice.get("name", ""))
        if choice.get("type") == "function":  # openai
            return str((choice.get("function") or {}).get("name", ""))
        if choice.get("type") == "any":
            return ""
    if choice == "required":
        return ""
    return None


def _tool_name(tool: dict[str, Any]) -> str:
    return str(tool.get("name") or (tool.get("function") or {}).get("name", ""))


def _tool_schema(tool: dict[str, Any]) -> dict[str, Any]:
    if "input_schema" in tool:
        return dict(tool["input_schema"])
    # gemini (the SDK sends the JSON Schema field under its Python name)
    for key in ("parametersJsonSchema", "parameters_json_schema", "parameters"):
        if key in tool:
            return dict(tool[key] or {})
    return dict((tool.get("function") or {}).get("parameters") or {})


def _find_tool(request: RecordedRequest, name: str | None) -> dict[str, Any] | None:
    tools = request.tools
    if not tools:
        return None
    if name:
        for tool in tools:
            if _tool_name(tool) == name:
                return tool
    return tools[0]


def _response_format_schema(request: RecordedRequest) -> dict[str, Any] | None:
    generation = request.body.get("generationConfig") or {}  # gemini
    if generation.get("responseMimeType") == "application/json":
        return dict(generation.get("responseJsonSchema") or generation.get("responseSchema")
                    or {"type": "object"})
    fmt = request.body.get("response_format")
    if isinstance(fmt, dict):
        if fmt.get("type") == "json_schema":
            return dict((fmt.get("json_schema") or {}).get("schema") or {})
        if fmt.get("type") == "json_object":
            return {"type": "object"}
    output_format = request.body.get("output_format")  # anthropic structured outputs
    if isinstance(output_format, dict) and output_format.get("type") == "json_schema":
        return dict(output_format.get("schema") or {})
    return None


def _last_user_text(request: RecordedRequest) -> str:
    for message in reversed(request.messages):
        if message.get("role") != "user":
            continue
        content = message.get("content", message.get("parts"))
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            texts = [b.get("text", "") for b in content
                     if isinstance(b, dict) and (b.get("type") == "text" or "type" not in b)
                     and "text" in b]
            if texts:
                return "".join(texts)
    return ""


def auto_reply(request: RecordedRequest) -> Reply:
    """Answer any request sensibly from the request itself: a schema-valid JSON object when
    the request asks for a json_schema or forces a tool; a call to the first tool with
    schema-valid arguments when tools are offered and the last message is from the user;
    otherwise text."""
    schema = _response_format_schema(request)
    if schema is not None:
        return Reply.json(example_from_schema(schema))
    forced = _forced_tool(request)
    if forced is not None:
        tool = _find_tool(request, forced)
        if tool is not None:
            return Reply.json(example_from_schema(_tool_schema(tool)))
    if request.tools and request.last_role == "user":
        tool = request.tools[0]
        return Reply.tool_call(_tool_name(tool), example_from_schema(_tool_schema(tool)))
    return Reply.text_reply(f"auto reply to: {_last_user_text(request)[:80]}")


def render(reply: Reply, request: RecordedRequest, cache: CacheUse | None = None) -> Rendered:
    """Write ``reply`` as the body ``request``'s API expects. ``slow`` replies are rendered
    by the server (it waits first), so they are not accepted here. With ``cache`` (the
    server plays the providers' prompt caches), the input is counted over the whole prompt
    and the usage says what the cache read and wrote, in each API's own fields."""
    if reply.kind == "status":
        return _render_error(reply, request.api)
    if reply.kind == "malformed":
        return Rendered(200, b'{"id": "broken", "choices": [{"message": ',
                        {"Content-Type": "application/json"})
    if reply.kind == "slow":
        raise ValueError("render the reply a slow reply wraps, after waiting")

    text = reply.text
    calls: list[tuple[str, dict[str, Any] | str]] = list(reply.tool_calls)
    if reply.kind == "json":
        payload = reply.data if isinstance(reply.data, str) else json.dumps(reply.data)
        if _response_format_schema(request) is None and request.tools:
            tool = _find_tool(request, _forced_tool(request))
            calls = [(_tool_name(tool or {}), reply.data)]
        else:
            text = payload
    in_tokens, out_tokens = reply.usage or (
        cache.input_tokens if cache is not None else estimate_tokens(request.messages),
        estimate_tokens(text) + sum(estimate_tokens(args) for _, args in calls),
    )
    if request.api == "openai":
        body = _openai_body(request, text, calls, in_tokens, out_tokens, reply.finish_reason)
    elif request.api == "gemini":
        body = _gemini_body(request, text, calls, in_tokens, out_tokens, reply.finish_reason)
    else:
        body = _anthropic_body(request, text, calls, in_tokens, out_tokens, reply.finish_reason)
    if cache is not None and reply.usage is None:
        _count_cache(body, request.api, cache)
    return Rendered(200, json.dumps(body).encode(), {"Content-Type": "application/json"})


def _count_cache(body: dict[str, Any], api: Api, cache: CacheUse) -> None:
    """Put what the prompt cache read and wrote into ``body``'s usage, as ``api`` reports it:
    Anthropic's ``input_tokens`` leaves both out, OpenAI and Gemini count the cached part
    inside the prompt."""
    if api == "anthropic":
        usage = body["usage"]
        usage["input_tokens"] = max(0, usage["input_tokens"] - cache.read - cache.written)
        usage["cache_read_input_tokens"] = cache.read
        usage["cache_creation_input_tokens"] = cache.written
    elif api == "openai":
        body["usage"]["prompt_tokens_details"] = {"cached_tokens": cache.read}
    else:
        body["usageMetadata"]["cachedContentTokenCount"] = cache.read


def _openai_body(request: RecordedRequest, text: str,
                 calls: list[tuple[str, dict[str, Any] | str]],
                 in_tokens: int, out_tokens: int, finish_reason: str | None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{next(_ids)}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for name, args in calls
        ]
    return {
        "id": f"chatcmpl-{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if calls else "stop"),
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": in_tokens,
            "completion_tokens": out_tokens,
            "total_tokens": in_tokens + out_tokens,
        },
    }


def _anthropic_body(request: RecordedRequest, text: str,
                    calls: list[tuple[str, dict[str, Any] | str]],
                    in_tokens: int, out_tokens: int, finish_reason: str | None) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "text", "text": text})
    content.extend(
        {"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": name, "input": args}
        for name, args in calls
    )
    return {
        "id": f"msg_{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "model": request.model,
        "content": content,
        "stop_reason": finish_reason or ("tool_use" if calls else "end_turn"),
        "stop_sequence": None,
        "usage": {"input_tokens": in_tokens, "output_tokens": out_tokens},
    }


def _gemini_body(request: RecordedRequest, text: str,
                 calls: list[tuple[str, dict[str, Any] | str]],
                 in_tokens: int, out_tokens: int, finish_reason: str | None) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    for i, (name, args) in enumerate(calls):
        if isinstance(args, str):  # Gemini's arguments are always an object
            try:
                args = json.loads(args)
            except ValueError:
                args = {}
        part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
        if i == 0:  # Gemini 3 signs the first call of a step
            signature = f"loopback-signature-{next(_ids)}".encode()
            part["thoughtSignature"] = base64.b64encode(signature).decode()
        parts.append(part)
    return {
        "candidates": [{
            "content": {"role": "model", "parts": parts},
            "finishReason": finish_reason or "STOP",
            "index": 0,
        }],
        "usageMetadata": {
            "promptTokenCount": in_tokens,
            "candidatesTokenCount": out_tokens,
            "totalTokenCount": in_tokens + out_tokens,
        },
        "modelVersion": request.model,
        "responseId": f"resp-{next(_ids)}",
    }


# google.rpc status names of Gemini's error bodies.
_GOOGLE_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def _render_gemini_error(reply: Reply, message: str) -> Rendered:
    """Google's error body; a 429's wait goes in a ``google.rpc.RetryInfo`` detail (its
    ``retryDelay``), as Google APIs send it, not in a ``Retry-After`` header."""
    error: dict[str, Any] = {"code": reply.status, "message": message,
                             "status": _GOOGLE_STATUS.get(reply.status, "UNKNOWN")}
    if reply.retry_after is not None:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                             "retryDelay": f"{reply.retry_after:g}s"}]
    return Rendered(reply.status, json.dumps({"error": error}).encode(),
                    {"Content-Type": "application/json"})


def _render_error(reply: Reply, api: Api) -> Rendered:
    kind = _ERROR_TYPES.get(reply.status, "api_error")
    message = reply.message or f"error {reply.status}"
    if api == "gemini":
        return _render_gemini_error(reply, message)
    if api == "openai":
        body: dict[str, Any] = {"error": {"message": message, "type": kind, "code": None}}
    else:
        body = {"type": "error", "error": {"type": kind, "message": message}}
    headers = {"Content-Type": "application/json"}
    if reply.retry_after is not None:
        headers["Retry-After"] = f"{reply.retry_after:g}"
    return Rendered(reply.status, json.dumps(body).encode(), headers)
