"""Round trips between the neutral message type and the two wire formats."""

from __future__ import annotations

import json

import pytest

from harness.models.formats import (
    from_anthropic_messages,
    from_openai_messages,
    to_anthropic_messages,
    to_openai_messages,
)
from harness.models.types import Message, ToolCall
from harness.transcript import Transcript, transcript_from_anthropic, transcript_from_openai

CONVERSATION = [
    Message(role="system", content="You are a weather bot."),
    Message(role="user", content="Weather in Paris?"),
    Message(
        role="assistant",
        tool_calls=(ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"}),),
    ),
    Message(role="tool", tool_call_id="c1", name="get_weather", content='{"temp_c": 18}'),
    Message(role="assistant", content="It is 18 °C in Paris."),
]


def test_openai_round_trip_keeps_tool_calls_and_results() -> None:
    assert from_openai_messages(to_openai_messages(CONVERSATION)) == CONVERSATION


def test_anthropic_round_trip_keeps_tool_calls_and_results() -> None:
    system, wire = to_anthropic_messages(CONVERSATION)
    assert system == "You are a weather bot."
    assert [m["role"] for m in wire] == ["user", "assistant", "user", "assistant"]
    assert wire[2]["content"][0]["type"] == "tool_result"
    assert from_anthropic_messages(wire, system=system) == CONVERSATION


def test_malformed_openai_arguments_are_kept_raw_not_crashing() -> None:
    msgs = from_openai_messages(
        [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "x", "type": "function",
                     "function": {"name": "f", "arguments": "{not json"}}
                ],
            },
        ]
    )
    call = msgs[1].tool_calls[0]
    assert call.arguments == {} and call.raw_arguments == "{not json"
    assert not call.arguments_valid


def test_unknown_role_is_named() -> None:
    with pytest.raises(ValueError, match="message 1: unknown role 'robot'"):
        from_openai_messages([{"role": "user", "content": "a"}, {"role": "robot"}])


def test_imported_transcripts_pair_calls_with_results_and_round_trip_json() -> None:
    openai = transcript_from_openai("t1", to_openai_messages(CONVERSATION))
    system, wire = to_anthropic_messages(CONVERSATION)
    anthropic = transcript_from_anthropic("t1", wire, system=system)
    for t in (openai, anthropic):
        assert t.stop_reason == "imported"
        assert t.system_prompt == "You are a weather bot."
        assert [(c.name, c.arguments, c.result, c.turn) for c in t.tool_calls] == [
            ("get_weather", {"city": "Paris"}, {"temp_c": 18}, 0)
        ]
        assert t.final_response == "It is 18 °C in Paris."
        assert Transcript.model_validate(json.loads(t.model_dump_json())) == t
