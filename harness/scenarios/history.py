"""A scenario's pre-filled history (``user.history``): the conversation before the first live
turn, written in our transcript form, as an OpenAI chat message list or as an Anthropic
message list, read into our :class:`~harness.models.types.Message` list.

The form is told from the messages themselves: marks only one form has (OpenAI's
``tool_calls[].function``, Anthropic's ``tool_use``/``tool_result`` blocks, our
``tool_calls[].name`` and ``is_error``) decide it; plain text messages read the same in all
three, so a history of only those needs no decision. A list whose marks disagree is an error
naming both places. Every problem is a :class:`HistoryError` carrying the path below
``history`` (``(3, "tool_call_id")``) so the loader can name the file, the line and the field.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.models.formats import from_anthropic_messages, from_openai_messages
from harness.models.types import Message

HistoryFormat = Literal["transcript", "openai", "anthropic"]
FORMATS: tuple[HistoryFormat, ...] = ("transcript", "openai", "anthropic")
_FORM_NAMES = {"transcript": "our transcript", "openai": "OpenAI", "anthropic": "Anthropic"}

HistoryPath = tuple[str | int, ...]


class HistoryError(ValueError):
    """One problem in a history: ``path`` below ``history`` and what was expected there."""

    def __init__(self, path: HistoryPath, expected: str) -> None:
        super().__init__(f"{_format(path)}: {expected}" if path else expected)
        self.path = path
        self.expected = expected


def _format(path: HistoryPath) -> str:
    out = "history"
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


# --- the shapes of the two wire forms (ours is Message itself) ----------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _TextPart(_Strict):
    type: Literal["text"]
    text: str


class _OpenAIFunction(_Strict):
    name: str = Field(min_length=1)
    arguments: str | dict[str, Any] = "{}"


class _OpenAIToolCall(_Strict):
    id: str = Field(min_length=1)
    type: Literal["function"] = "function"
    function: _OpenAIFunction


class _OpenAIMessage(_Strict):
    role: Literal["user", "assistant", "tool"]
    content: str | list[_TextPart] | None = None
    name: str | None = None
    tool_calls: list[_OpenAIToolCall] | None = None
    tool_call_id: str | None = None


class _AnthropicText(_Strict):
    type: Literal["text"]
    text: str
    cache_control: dict[str, Any] | None = None


class _AnthropicToolUse(_Strict):
    type: Literal["tool_use"]
    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    input: dict[str, Any] = Field(default_factory=dict)
    cache_control: dict[str, Any] | None = None


class _AnthropicToolResult(_Strict):
    type: Literal["tool_result"]
    tool_use_id: str = Field(min_length=1)
    content: str | list[_TextPart] = ""
    is_error: bool = False
    cache_control: dict[str, Any] | None = None


_AnthropicBlock = Annotated[
    _AnthropicText | _AnthropicToolUse | _AnthropicToolResult, Field(discriminator="type")
]


class _AnthropicMessage(_Strict):
    role: Literal["user", "assistant"]
    content: str | list[_AnthropicBlock]


_SHAPES: dict[HistoryFormat, type[BaseModel]] = {
    "transcript": Message, "openai": _OpenAIMessage, "anthropic": _AnthropicMessage,
}


# --- telling the form ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Mark:
    """A field that only some forms have."""

    path: HistoryPath
    forms: frozenset[HistoryFormat]
    what: str


def _marks(i: int, message: dict[str, Any]) -> Iterator[_Mark]:
    content = message.get("content")
    if isinstance(content, list):
        kinds = [b.get("type") for b in content if isinstance(b, dict)]
        for j, kind in enumerate(kinds):
            if kind in ("tool_use", "tool_result"):
                yield _Mark((i, "content", j, "type"), frozenset({"anthropic"}),
                            f"a {kind} block")
                break
        else:
            yield _Mark((i, "content"), frozenset({"openai", "anthropic"}),
                        "content as a list of parts")
    elif content is None and "content" in message:
        yield _Mark((i, "content"), frozenset({"openai"}), "content: null")
    if message.get("role") == "tool":
        yield _Mark((i, "role"), frozenset({"transcript", "openai"}), "role tool")
    if "is_error" in message:
        yield _Mark((i, "is_error"), frozenset({"transcript"}), "is_error on a message")
    for j, call in enumerate(message.get("tool_calls") or []):
        if isinstance(call, dict) and "function" in call:
            yield _Mark((i, "tool_calls", j, "function"), frozenset({"openai"}),
                        "a tool call with 'function'")
        elif isinstance(call, dict) and "name" in call:
            yield _Mark((i, "tool_calls", j, "name"), frozenset({"transcript"}),
                        "a tool call with 'name' and 'arguments'")


def detect_format(raw: list[dict[str, Any]]) -> HistoryFormat:
    """The one form every message of ``raw`` fits (our transcript form when plain text
    messages fit all three). Raises :class:`HistoryError` when two messages' marks disagree,
    naming both."""
    forms: frozenset[HistoryFormat] = frozenset(FORMATS)
    decided_by: _Mark | None = None
    for i, message in enumerate(raw):
        for mark in _marks(i, message):
            narrowed = forms & mark.forms
            if not narrowed:
                assert decided_by is not None  # the full set meets every mark
                raise HistoryError(
                    mark.path,
                    f"{mark.what} is {_names(mark.forms)} form, but {_format(decided_by.path)} "
                    f"({decided_by.what}) is {_names(decided_by.forms)} form; write the whole "
                    "history in one form",
                )
            if narrowed != forms:
                forms, decided_by = narrowed, mark
    return next(f for f in FORMATS if f in forms)


def _names(forms: frozenset[HistoryFormat]) -> str:
    return " or ".join(_FORM_NAMES[f] for f in FORMATS if f in forms)


# --- reading ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Placed:
    """A normalised message and where its parts came from in the raw list."""

    message: Message
    path: HistoryPath  # the message (or, for an Anthropic tool result, its block)
    call_paths: tuple[HistoryPath, ...] = ()  # where each tool call's id is written
    result_path: HistoryPath = ()  # where a tool result's call id is written


def _validated(i: int, message: dict[str, Any], form: HistoryFormat) -> BaseModel:
    try:
        return _SHAPES[form].model_validate(message)
    except ValidationError as err:
        # A union reports one error per member; the one reaching deepest into what was
        # written is the one about the member the user meant.
        located = [(_locate(message, tuple(e["loc"])), e) for e in err.errors()]
        (path, _), first = max(located, key=lambda pair: pair[0][1])
        text = str(first["msg"]).removeprefix("Value error, ")
        if first["type"] == "missing":
            text = "required field is missing"
        elif first["type"] == "extra_forbidden":
            text = f"unknown key {path[-1]!r} in {_FORM_NAMES[form]} messages"
            if len(path) == 1:
                text += f" (a message has {', '.join(_SHAPES[form].model_fields)})"
        raise HistoryError((i, *path), text) from None


def _locate(raw: Any, loc: tuple[Any, ...]) -> tuple[HistoryPath, int]:
    """A pydantic error location as a path in the data written, without the names pydantic
    gives union members (``str``, ``list[...]``, a block's ``type``), and how many of its
    steps exist in the data."""
    path: list[str | int] = []
    found, current, tag_skipped = 0, raw, False
    for part in loc:
        if isinstance(current, dict) and not tag_skipped and part == current.get("type"):
            tag_skipped = True  # a discriminated union's tag, not a key
            continue
        present = (isinstance(current, dict) and part in current) or (
            isinstance(current, list) and isinstance(part, int) and part < len(current))
        if present:
            current, tag_skipped = current[part], False
            found += 1
        elif isinstance(part, str) and (part in ("str", "none", "int") or "[" in part):
            continue  # a union member's name
        else:
            current = None
        path.append(part)
    return tuple(path), found


def _read(i: int, raw: dict[str, Any], form: HistoryFormat) -> list[_Placed]:
    """One raw message as normalised messages (an Anthropic user turn may hold several tool
    results and text)."""
    role = raw.get("role")
    if role in ("system", "developer"):
        raise HistoryError((i, "role"), "a system message does not belong in the history; "
                           "put it in agent.system_prompt")
    roles = ("user", "assistant") if form == "anthropic" else ("user", "assistant", "tool")
    if role not in roles:
        raise HistoryError((i, "role"), f"unknown role {role!r}; expected {' / '.join(roles)}")
    shape = _validated(i, raw, form)
    if form == "transcript":
        assert isinstance(shape, Message)
        calls = tuple((i, "tool_calls", j, "id") for j in range(len(shape.tool_calls)))
        return [_Placed(shape, (i,), calls, (i, "tool_call_id"))]
    if form == "openai":
        assert isinstance(shape, _OpenAIMessage)
        [message] = from_openai_messages([shape.model_dump(exclude_none=True)])
        calls = tuple((i, "tool_calls", j, "id") for j in range(len(message.tool_calls)))
        return [_Placed(message, (i,), calls, (i, "tool_call_id"))]
    assert isinstance(shape, _AnthropicMessage)
    blocks = shape.content if isinstance(shape.content, list) else []
    messages = from_anthropic_messages([shape.model_dump(exclude_none=True)])
    if not messages:
        raise HistoryError((i, "content"), "an empty message")
    if role == "assistant":
        calls = tuple((i, "content", j, "id") for j, b in enumerate(blocks)
                      if isinstance(b, _AnthropicToolUse))
        return [_Placed(messages[0], (i,), calls)]
    result_blocks = [j for j, b in enumerate(blocks) if isinstance(b, _AnthropicToolResult)]
    placed = [_Placed(m, (i, "content", j), (), (i, "content", j, "tool_use_id"))
              for m, j in zip(messages, result_blocks, strict=False)]
    placed += [_Placed(m, (i,)) for m in messages[len(result_blocks):]]
    return placed


def _check_sequence(placed: list[_Placed]) -> list[Message]:
    """Tool calls and results pair up as the providers require: every call id is unique,
    every result answers an earlier call once, and a call's result comes right after the
    message that made it (before the next user or assistant message). Names each result's
    tool from its call."""
    call_names: dict[str, str] = {}
    call_at: dict[str, HistoryPath] = {}
    open_calls: dict[str, HistoryPath] = {}
    answered: set[str] = set()
    out: list[Message] = []
    for p in placed:
        m = p.message
        if m.role == "tool":
            call_id = m.tool_call_id or ""
            if call_id not in call_at:
                raise HistoryError(p.result_path, f"a tool result for call {call_id!r}, but no "
                                   "earlier assistant message makes that call")
            if call_id in answered:
                raise HistoryError(p.result_path, f"call {call_id!r} already has a result")
            if call_id not in open_calls:
                raise HistoryError(p.result_path, f"the result of call {call_id!r} must come "
                                   "right after the message that made it")
            answered.add(call_id)
            del open_calls[call_id]
            out.append(m.model_copy(update={"name": m.name or call_names[call_id]}))
            continue
        if open_calls:
            call_id, where = next(iter(open_calls.items()))
            raise HistoryError(where, f"tool call {call_id!r} has no result before "
                               f"{_format(p.path)}; give each call its result right after it")
        if m.role == "assistant" and not m.content.strip() and not m.tool_calls:
            raise HistoryError(p.path, "an assistant message needs text or tool calls")
        if m.role == "user" and not m.content.strip():
            raise HistoryError(p.path, "an empty user message")
        for call, where in zip(m.tool_calls, p.call_paths, strict=True):
            if call.id in call_at:
                raise HistoryError(where, f"tool call id {call.id!r} is used twice (first at "
                                   f"{_format(call_at[call.id])})")
            call_at[call.id], call_names[call.id] = where, call.name
            open_calls[call.id] = where
        out.append(m)
    if open_calls:
        call_id, where = next(iter(open_calls.items()))
        raise HistoryError(where, f"tool call {call_id!r} has no result; the history must "
                           "give each call its result")
    return out


def parse_history(raw: Any) -> list[Message]:
    """Read a scenario's ``user.history`` (see the module docstring for the forms) into our
    messages, in order, Anthropic tool results as ``tool`` messages named by their call.

    Raises :class:`HistoryError` (path below ``history``, what was expected) for an empty or
    non-list history, forms mixed in one list, an unknown role or key, a system
    message (it belongs in ``agent.system_prompt``), an empty message, a tool call id used
    twice, a result without its call, and a call without its result.
    """
    if not isinstance(raw, list):
        raise HistoryError((), f"expected a list of messages, got {type(raw).__name__}")
    if not raw:
        raise HistoryError((), "an empty history; give at least one message or leave it out")
    for i, message in enumerate(raw):
        if not isinstance(message, dict):
            raise HistoryError((i,), "expected a message (a mapping), got "
                               f"{type(message).__name__}")
    form = detect_format(raw)
    placed = [p for i, message in enumerate(raw) for p in _read(i, message, form)]
    return _check_sequence(placed)


def split_opening(messages: list[Message]) -> tuple[list[Message], str | None]:
    """``(given, opening)``: a history that ends with a user message hands that message to
    the live conversation as its first user turn (the agent answers it as turn 0); the rest
    stays given history."""
    if messages and messages[-1].role == "user":
        return messages[:-1], messages[-1].content
    return messages, None
