"""Lines of a transcripts file (``harness score-transcripts``; harness/formats/transcript_file.py)
written by hand: a small valid line, with any field replaced or, given ``None``, left out."""

from __future__ import annotations

from typing import Any


def transcript_line(**overrides: Any) -> dict[str, Any]:
    """One line's fields: id ``x``, a user turn and a reply, no expected tool calls; each
    keyword replaces a field (or adds one), and ``None`` removes it."""
    base: dict[str, Any] = {
        "id": "x",
        "messages": [{"role": "user", "content": "hi"},
                     {"role": "assistant", "content": "hello"}],
        "expected_tool_calls": [],
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}
