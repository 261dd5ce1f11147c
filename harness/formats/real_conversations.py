"""Real conversations, read from a transcript JSONL file (the contract-4 format
``harness score-transcripts`` reads) to be studied rather than scored: what real users wrote.

Each line is ``{"id": str, "messages": [OpenAI chat-format messages]}``; the other keys of a
contract-4 line (``expected_tool_calls``, ``expectations``, ``tools``, ``metadata``, ...) may
be there and are validated the same way, but are not needed: a conversation of real users
rarely comes with the tool calls it should have made. Unknown keys are errors, as everywhere;
blank lines are skipped. Every conversation needs at least one user message with text: a
line of other roles only is not a user's conversation, and is an error naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from harness.errors import InputError
from harness.files import read_text
from harness.formats.transcript_file import (
    TranscriptLine,
    _check_messages,
    _json_object,
    _validation_to_input_error,
)
from harness.models.formats import from_openai_messages
from harness.models.types import Message


@dataclass(frozen=True)
class RealConversation:
    """One conversation of the file: its ``id``, the ``line`` it is on, and its messages."""

    id: str
    line: int
    messages: list[Message]


def _conversation(path: Path, line: int, text: str) -> RealConversation:
    data = _json_object(path, line, text)
    try:
        parsed = TranscriptLine.model_validate(data)
    except ValidationError as err:
        raise _validation_to_input_error(path, line, err) from None
    _check_messages(path, line, parsed.messages)
    try:
        messages = from_openai_messages(parsed.messages)
    except (ValueError, TypeError, AttributeError) as err:
        raise InputError(path, "messages", f"OpenAI chat-format messages ({err})",
                         location=line) from None
    if not any(m.role == "user" and m.content.strip() for m in messages):
        roles = ", ".join(dict.fromkeys(str(m.get("role")) for m in parsed.messages)) or "none"
        raise InputError(path, "messages", "at least one user message with text (this "
                         f"conversation's roles: {roles})", location=line)
    return RealConversation(id=parsed.id, line=line, messages=messages)


def load_real_conversations(path: str | Path) -> list[RealConversation]:
    """Every conversation of ``path``, in file order. Raises
    :class:`~harness.errors.InputError` naming the file (and the line and field) for a
    missing, unreadable or empty file, a line that is not a JSON object or not of the
    format, a conversation without a user message, or a repeated id."""
    path = Path(path)
    text = read_text(path, "a JSONL file of conversations ({id, messages})")
    conversations: list[RealConversation] = []
    first_line_of: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        conversation = _conversation(path, number, raw)
        if conversation.id in first_line_of:
            raise InputError(path, "id", f"a unique id ({conversation.id!r} is also on line "
                             f"{first_line_of[conversation.id]})", location=number)
        first_line_of[conversation.id] = number
        conversations.append(conversation)
    if not conversations:
        raise InputError(path, None, "conversations, one JSON object per line (the file has "
                         "no lines)")
    return conversations
