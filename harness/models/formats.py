"""Conversions between the neutral :class:`Message` type and the OpenAI Chat Completions,
Anthropic Messages and Gemini ``generateContent`` wire formats (plain JSON-like dicts, which
the SDKs accept and return).

Used for requests, for parsing replies, and for importing existing conversations.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.errors import InputError
from harness.json_values import load_json
from harness.models.types import Message, ToolCall, ToolSpec


def parse_tool_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Return ``(arguments, raw_if_invalid)``. Arguments that are not a JSON object come back
    as ``({}, raw_text)`` so the call can be recorded and scored as non-matching."""
    if isinstance(raw, dict):
        return raw, None
    if raw is None or raw == "":
        return {}, None
    text = raw if isinstance(raw, str) else json.dumps(raw)
    try:
        value = load_json(text, "tool arguments")
    except (TypeError, ValueError, InputError):
        return {}, text
    if isinstance(value, dict):
        return value, None
    return {}, text


def _content_text(content: Any) -> str:
    """Flatten OpenAI/Anthropic content (a string or a list of parts) to its text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text"):
            parts.append(str(part.get("text", "")))
    return "".join(parts)


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


# --- OpenAI Chat Completions -------------------------------------------------------------


def to_openai_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content})
        elif m.role == "assistant" and m.tool_calls:
            out.append(
                {
                    "role": "assistant",
                    "content": m.content or None,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {
                                "name": c.name,
                                "arguments": c.raw_arguments
                                if c.raw_arguments is not None
                                else json.dumps(c.arguments, ensure_ascii=False),
                            },
                        }
                        for c in m.tool_calls
                    ],
                }
            )
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def openai_tool_calls(raw_calls: Iterable[Any]) -> tuple[ToolCall, ...]:
    """Parse OpenAI ``tool_calls`` (dicts or SDK objects) into :class:`ToolCall`."""
    calls: list[ToolCall] = []
    for i, raw in enumerate(raw_calls):
        data = raw if isinstance(raw, dict) else raw.model_dump()
        fn = data.get("function") or {}
        arguments, invalid = parse_tool_arguments(fn.get("arguments"))
        calls.append(
            ToolCall(
                id=str(data.get("id") or f"call_{i}"),
                name=str(fn.get("name", "")),
                arguments=arguments,
                raw_arguments=invalid,
            )
        )
    return tuple(calls)


def from_openai_messages(messages: Iterable[dict[str, Any]]) -> list[Message]:
    """Convert an OpenAI chat-format message list (tool calls and tool results included).

    Raises ``ValueError`` naming the index of a message whose role is unknown.
    """
    out: list[Message] = []
    names_by_id: dict[str, str] = {}
    for i, m in enumerate(messages):
        role = m.get("role")
        if role in ("system", "developer"):
            out.append(Message(role="system", content=_content_text(m.get("content"))))
        elif role == "user":
            out.append(Message(role="user", content=_content_text(m.get("content"))))
        elif role == "assistant":
            calls = openai_tool_calls(m.get("tool_calls") or [])
            if not calls and m.get("function_call"):  # the legacy single-function form
                fc = m["function_call"]
                arguments, invalid = parse_tool_arguments(fc.get("arguments"))
                calls = (ToolCall(id=f"call_{i}", name=fc.get("name", ""), arguments=arguments,
                                  raw_arguments=invalid),)
            names_by_id.update({c.id: c.name for c in calls})
            out.append(
                Message(role="assistant", content=_content_text(m.get("content")), tool_calls=calls)
            )
        elif role in ("tool", "function"):
            call_id = str(m.get("tool_call_id") or "")
            out.append(
                Message(
                    role="tool",
                    tool_call_id=call_id,
                    name=m.get("name") or names_by_id.get(call_id),
                    content=_content_text(m.get("content")),
                )
            )
        else:
            raise ValueError(f"message {i}: unknown role {role!r}")
    return out


# --- Anthropic Messages ------------------------------------------------------------------


def to_anthropic_messages(messages: Iterable[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """Return ``(system, messages)``: Anthropic takes the system prompt apart, puts tool results
    in user turns as ``tool_result`` blocks, and wants roles to alternate, so consecutive
    same-role blocks are merged into one message."""
    system_parts: list[str] = []
    out: list[dict[str, Any]] = []

    def append(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in messages:
        if m.role == "system":
            system_parts.append(m.content)
        elif m.role == "user":
            append("user", [{"type": "text", "text": m.content}])
        elif m.role == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": m.tool_call_id or "",
                "content": m.content,
            }
            if m.is_error:
                block["is_error"] = True
            append("user", [block])
        else:
            blocks: list[dict[str, Any]] = []
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            blocks.extend(
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in m.tool_calls
            )
            append("assistant", blocks or [{"type": "text", "text": ""}])
    return ("\n\n".join(system_parts) if system_parts else None), out


def to_anthropic_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]


def anthropic_content_to_message(content: Iterable[Any]) -> Message:
    """Parse the content blocks of an Anthropic assistant reply (dicts or SDK objects)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for raw in content:
        block = raw if isinstance(raw, dict) else raw.model_dump()
        if block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            arguments, invalid = parse_tool_arguments(block.get("input"))
            calls.append(
                ToolCall(id=str(block.get("id", "")), name=str(block.get("name", "")),
                         arguments=arguments, raw_arguments=invalid)
            )
    return Message(role="assistant", content="".join(texts), tool_calls=tuple(calls))


def from_anthropic_messages(
    messages: Iterable[dict[str, Any]], *, system: str | list[Any] | None = None
) -> list[Message]:
    """Convert an Anthropic-format message list; ``tool_result`` blocks become ``tool``
    messages in order. ``system`` is the request's system prompt, a string or a list of text
    blocks (as a request marked for the prompt cache sends it). Raises ``ValueError`` naming
    the index of a message with an unknown role."""
    system = _content_text(system)
    out: list[Message] = [Message(role="system", content=system)] if system else []
    names_by_id: dict[str, str] = {}
    for i, m in enumerate(messages):
        role = m.get("role")
        content = m.get("content")
        blocks: list[Any] = (
            [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        )
        if role == "assistant":
            msg = anthropic_content_to_message(blocks)
            names_by_id.update({c.id: c.name for c in msg.tool_calls})
            out.append(msg)
        elif role == "user":
            texts: list[str] = []
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    call_id = str(block.get("tool_use_id", ""))
                    result = block.get("content")
                    out.append(
                        Message(
                            role="tool",
                            tool_call_id=call_id,
                            name=names_by_id.get(call_id),
                            content=_content_text(result)
                            if isinstance(result, list)
                            else _json_text(result if result is not None else ""),
                            is_error=bool(block.get("is_error", False)),
                        )
                    )
                else:
                    texts.append(_content_text([block]))
            if texts:
                out.append(Message(role="user", content="".join(texts)))
        elif role == "system":
            out.append(Message(role="system", content=_content_text(content)))
        else:
            raise ValueError(f"message {i}: unknown role {role!r}")
    return out


# --- Gemini generateContent --------------------------------------------------------------

# Gemini API replies usually carry no function call id; the harness names such calls
# ``gemini-call-<reply>-<n>`` and leaves these ids out when sending the calls back.
GEMINI_CALL_ID_PREFIX = "gemini-call-"


def _gemini_function_response(m: Message) -> dict[str, Any]:
    """A tool result as a ``function_response`` part. Gemini wants an object: ``output``
    holds the result (parsed when it is JSON, else the text), ``error`` a failed call's."""
    try:
        value: Any = json.loads(m.content) if m.content else ""
    except ValueError:
        value = m.content
    response = {"error": value} if m.is_error else {"output": value}
    part: dict[str, Any] = {"name": m.name or "", "response": response}
    if m.tool_call_id and not m.tool_call_id.startswith(GEMINI_CALL_ID_PREFIX):
        part["id"] = m.tool_call_id
    return {"function_response": part}



def to_gemini_contents(
    messages: Iterable[Message], signatures: Mapping[str, bytes] | None = None,
) -> tuple[str | None, list[dict[str, Any]]]:
    """Return ``(system_instruction, contents)``: Gemini takes the system prompt apart, calls
    the assistant ``model``, and takes tool results as ``function_response`` parts of a user
    turn (named by the tool, which is looked up from the call when the result has no name);
    consecutive same-role parts are merged into one turn, as for Anthropic. ``signatures``
    maps a tool call's id to the thought signature its part came with, sent back with it."""
    signatures = signatures or {}
    system_parts: list[str] = []
    contents: list[dict[str, Any]] = []
    names_by_id: dict[str, str] = {}

    def append(role: str, parts: list[dict[str, Any]]) -> None:
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})

    for m in messages:
        if m.role == "system":
            system_parts.append(m.content)
        elif m.role == "user":
            append("user", [{"text": m.content}])
        elif m.role == "tool":
            if m.name is None and m.tool_call_id in names_by_id:
                m = m.model_copy(update={"name": names_by_id[m.tool_call_id]})
            append("user", [_gemini_function_response(m)])
        else:
            parts: list[dict[str, Any]] = [{"text": m.content}] if m.content else []
            for c in m.tool_calls:
                names_by_id[c.id] = c.name
                call: dict[str, Any] = {"name": c.name, "args": c.arguments}
                if not c.id.startswith(GEMINI_CALL_ID_PREFIX):
                    call["id"] = c.id
                part: dict[str, Any] = {"function_call": call}
                if c.id in signatures:
                    part["thought_signature"] = signatures[c.id]
                parts.append(part)
            append("model", parts or [{"text": ""}])
    return ("\n\n".join(system_parts) if system_parts else None), contents


def to_gemini_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """One ``Tool`` of function declarations. The arguments' schema goes as
    ``parameters_json_schema`` (JSON Schema as it is: ``$defs``, formats, ``anyOf``) rather
    than ``parameters``, Gemini's OpenAPI subset, which refuses much of what tools declare."""
    if not tools:
        return []
    return [{"function_declarations": [
        {"name": t.name, "description": t.description, "parameters_json_schema": t.parameters}
        for t in tools
    ]}]


def gemini_parts_to_message(parts: Iterable[Any],
                            reply_id: str = "") -> tuple[Message, dict[str, bytes]]:
    """Parse the parts of a Gemini reply's content (dicts or SDK objects): text (thought
    summaries left out), and function calls, named ``gemini-call-<reply_id>-<n>`` when they
    have no id of their own. Returns the message and the thought signatures of its calls,
    by call id (Gemini 3 wants them back with the calls)."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    signatures: dict[str, bytes] = {}
    for raw in parts:
        part = raw if isinstance(raw, dict) else raw.model_dump(exclude_none=True)
        call = part.get("function_call")
        if call:
            arguments, invalid = parse_tool_arguments(call.get("args"))
            calls.append(ToolCall(
                id=str(call.get("id") or f"{GEMINI_CALL_ID_PREFIX}{reply_id}-{len(calls)}"),
                name=str(call.get("name", "")), arguments=arguments, raw_arguments=invalid))
            if isinstance(part.get("thought_signature"), bytes):
                signatures[calls[-1].id] = part["thought_signature"]
        elif part.get("text") is not None and not part.get("thought"):
            texts.append(str(part["text"]))
    message = Message(role="assistant", content="".join(texts), tool_calls=tuple(calls))
    return message, signatures
