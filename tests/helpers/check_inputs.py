"""Transcripts written by hand for the check tests: a tool call with its arguments, turn and
latency, and a transcript of such calls (imported, so no simulator or agent steps unless
given)."""

from __future__ import annotations

from typing import Any

from harness.transcript import ToolCallRecord, Transcript


def tool_call(name: str, turn: int = 0, latency: float = 0.0, raw: str | None = None,
              **args: Any) -> ToolCallRecord:
    """A call of ``name`` with keyword ``args`` (``raw``: the arguments as the model wrote
    them, when they did not parse)."""
    return ToolCallRecord(call_id=name, name=name, arguments=args, raw_arguments=raw, turn=turn,
                          latency_s=latency)


def transcript(calls: list[ToolCallRecord], **extra: Any) -> Transcript:
    """A transcript of scenario ``s`` with these calls and any other fields in ``extra``."""
    return Transcript(scenario_id="s", tool_calls=calls, stop_reason="imported", **extra)
