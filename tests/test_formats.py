"""Round trips between the neutral message type and the two wire formats."""

from __future__ import annotations

import json

import pytest

from harness.models.formats import (
    from_anthropic_messages,
    from_openai_messages,
    to_anthropic_messages,
    to_anthropic_tools,
    to_openai_messages,
    to_openai_tools,
)
from harness.models.types import Message, ToolCall, ToolSpec
from harness.transcript import (
    ToolDefinitionError,
    Transcript,
    tool_spec_from_definition,
    tool_specs_from_definitions,
    transcript_from_anthropic,
    transcript_from_openai,
)

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


WEATHER_TOOL = ToolSpec(name="get_weather", description="Current weather.",
                        parameters={"type": "object", "properties": {"city": {"type": "string"}}})


def test_tool_definitions_read_back_from_each_wire_shape() -> None:
    # what we send to OpenAI and to Anthropic, and our own shape, all give the same ToolSpec
    shapes = [to_openai_tools([WEATHER_TOOL])[0], to_anthropic_tools([WEATHER_TOOL])[0],
              WEATHER_TOOL.model_dump()]
    assert [tool_spec_from_definition(d) for d in shapes] == [WEATHER_TOOL] * 3
    # description and schema are optional; a missing schema means "no arguments"
    bare = tool_spec_from_definition({"type": "function", "function": {"name": "ping"}})
    assert bare == ToolSpec(name="ping")


def test_bad_tool_definitions_name_the_field() -> None:
    with pytest.raises(ToolDefinitionError) as info:
        tool_spec_from_definition({"name": "a", "input_schema": {}, "strict": True})
    assert info.value.field == "strict" and "Anthropic" in info.value.expected
    with pytest.raises(ToolDefinitionError, match=r"^\[1\]\.name: a unique tool name"):
        tool_specs_from_definitions([WEATHER_TOOL.model_dump(), WEATHER_TOOL.model_dump()])


def test_imported_transcripts_carry_tools_and_a_separate_system_prompt() -> None:
    wire = to_openai_messages(CONVERSATION[1:])
    openai = transcript_from_openai("t1", wire, tools=[WEATHER_TOOL], system_prompt="Be brief.")
    assert openai.tools == [WEATHER_TOOL] and openai.system_prompt == "Be brief."
    assert Transcript.model_validate(json.loads(openai.model_dump_json())) == openai
    system, anthropic_wire = to_anthropic_messages(CONVERSATION)
    anthropic = transcript_from_anthropic("t1", anthropic_wire, system=system,
                                          tools=[WEATHER_TOOL])
    assert anthropic.tools == [WEATHER_TOOL]
    with pytest.raises(ValueError, match="system prompt is given twice"):
        transcript_from_openai("t1", to_openai_messages(CONVERSATION), system_prompt="Be brief.")
