"""One conversation (a question, a tool call and its result, an answer) written in each of the
three forms a scenario's ``user.history`` may take: the harness's own, OpenAI's and
Anthropic's. Each reads into the same messages (tests/test_history_schema.py)."""

from __future__ import annotations

from typing import Any

OURS: list[dict[str, Any]] = [
    {"role": "user", "content": "Is order A-1 shipped?"},
    {"role": "assistant", "content": "Let me look.",
     "tool_calls": [{"id": "h1", "name": "get_order", "arguments": {"order_id": "A-1"}}]},
    {"role": "tool", "tool_call_id": "h1", "name": "get_order",
     "content": '{"status": "pending"}'},
    {"role": "assistant", "content": "Order A-1 is still pending."},
]
OPENAI: list[dict[str, Any]] = [
    {"role": "user", "content": "Is order A-1 shipped?"},
    {"role": "assistant", "content": "Let me look.",
     "tool_calls": [{"id": "h1", "type": "function",
                     "function": {"name": "get_order", "arguments": '{"order_id": "A-1"}'}}]},
    {"role": "tool", "tool_call_id": "h1", "content": '{"status": "pending"}'},
    {"role": "assistant", "content": [{"type": "text", "text": "Order A-1 is still pending."}]},
]
ANTHROPIC: list[dict[str, Any]] = [
    {"role": "user", "content": "Is order A-1 shipped?"},
    {"role": "assistant", "content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "h1", "name": "get_order", "input": {"order_id": "A-1"}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "h1", "content": '{"status": "pending"}'}]},
    {"role": "assistant", "content": "Order A-1 is still pending."},
]
