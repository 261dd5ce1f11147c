"""Chat with tools through the real SDKs against the loopback server, in both wire formats."""

from __future__ import annotations

import json

import pytest

from harness.errors import ModelConfigError
from harness.models.request import ModelRequest
from harness.models.types import GenerationParams, Message, ToolSpec
from harness.testing.replies import Reply

WEATHER = ToolSpec(
    name="get_weather",
    description="Weather for a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"enum": ["C", "F"]}},
        "required": ["city"],
    },
)
TIME = ToolSpec(name="get_time", parameters={"type": "object", "properties": {}})


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_tool_call_round_trip(provider, loopback, make_hub):
    hub = make_hub()
    model = hub.get(f"{provider}:test-model")
    loopback.enqueue(
        Reply.tool_call("get_weather", {"city": "Oslo", "unit": "C"}, text="Let me check."),
        Reply.text_reply("It is 3 degrees in Oslo."),
    )
    history = [
        Message(role="system", content="You are a weather bot."),
        Message(role="user", content="Weather in Oslo?"),
    ]
    first = await model.chat(ModelRequest(history, role="agent", tools=[WEATHER, TIME]))

    assert first.finish_reason == "tool_calls"
    assert first.message.content == "Let me check."
    [call] = first.message.tool_calls
    assert (call.name, call.arguments) == ("get_weather", {"city": "Oslo", "unit": "C"})

    history += [
        first.message,
        Message(role="tool", tool_call_id=call.id, name="get_weather", content='{"temp": 3}'),
    ]
    second = await model.chat(ModelRequest(history, role="agent", tools=[WEATHER, TIME]))
    assert second.message.content == "It is 3 degrees in Oslo."
    assert second.finish_reason == "stop"

    sent_first, sent_second = loopback.requests
    if provider == "openai":
        assert sent_first.path == "/v1/chat/completions"
        assert [t["function"]["name"] for t in sent_first.body["tools"]] == ["get_weather",
                                                                             "get_time"]
        assert sent_first.body["tools"][0]["function"]["parameters"] == WEATHER.parameters
        assert sent_first.body["tool_choice"] == "auto"
        assert sent_first.body["messages"][0] == {"role": "system",
                                                  "content": "You are a weather bot."}
        assistant, tool = sent_second.body["messages"][-2:]
        assert assistant["tool_calls"][0]["id"] == call.id
        assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == call.arguments
        assert tool == {"role": "tool", "tool_call_id": call.id, "content": '{"temp": 3}'}
    else:
        assert sent_first.path == "/v1/messages"
        # the system prompt (and the tools before it) marked for Anthropic's prompt cache
        assert sent_first.body["system"] == [{"type": "text", "text": "You are a weather bot.",
                                              "cache_control": {"type": "ephemeral"}}]
        assert sent_first.body["tools"][0] == {"name": "get_weather",
                                               "description": "Weather for a city",
                                               "input_schema": WEATHER.parameters}
        assert sent_first.body["tool_choice"] == {"type": "auto"}
        assistant, user = sent_second.body["messages"][-2:]
        assert assistant["role"] == "assistant"
        assert {"type": "tool_use", "id": call.id, "name": "get_weather",
                "input": call.arguments} in assistant["content"]
        assert user["role"] == "user"
        assert user["content"] == [{"type": "tool_result", "tool_use_id": call.id,
                                    "content": '{"temp": 3}'}]


@pytest.mark.parametrize(
    ("provider", "choice", "expected"),
    [
        ("openai", "required", "required"),
        ("openai", "none", "none"),
        ("openai", "get_time", {"type": "function", "function": {"name": "get_time"}}),
        ("anthropic", "required", {"type": "any"}),
        ("anthropic", "none", {"type": "none"}),
        ("anthropic", "get_time", {"type": "tool", "name": "get_time"}),
    ],
)
async def test_tool_choice_mapping(provider, choice, expected, loopback, make_hub):
    model = make_hub().get(f"{provider}:m")
    await model.chat(ModelRequest([Message(role="user", content="hi")], role="agent",
                                  tools=[WEATHER, TIME], tool_choice=choice))
    assert loopback.requests[0].body["tool_choice"] == expected


async def test_tool_choice_must_name_an_offered_tool(loopback, make_hub):
    model = make_hub().get("openai:m")
    with pytest.raises(ModelConfigError, match="not among the tools offered"):
        await model.chat(ModelRequest([Message(role="user", content="hi")], role="agent",
                                      tools=[WEATHER], tool_choice="get_time"))
    assert loopback.request_count == 0


async def test_no_tools_sends_no_tool_fields(loopback, make_hub):
    model = make_hub().get("openai:m")
    await model.chat(ModelRequest([Message(role="user", content="hi")], role="agent"))
    assert "tools" not in loopback.requests[0].body
    assert "tool_choice" not in loopback.requests[0].body


async def test_invalid_tool_arguments_are_kept_raw(loopback, make_hub):
    model = make_hub().get("openai:m")
    loopback.enqueue(Reply.tool_call("get_weather", "{not json"))
    reply = await model.chat(ModelRequest([Message(role="user", content="hi")], role="agent",
                                          tools=[WEATHER]))
    [call] = reply.message.tool_calls
    assert call.arguments == {}
    assert call.raw_arguments == "{not json"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_generation_params_are_sent(provider, loopback, make_hub):
    model = make_hub().get(f"{provider}:m")
    params = GenerationParams(temperature=0.3, max_tokens=77, top_p=0.9, seed=5, stop=("END",))
    await model.chat(ModelRequest([Message(role="user", content="hi")], role="agent",
                                  params=params))
    body = loopback.requests[0].body
    assert body["temperature"] == 0.3
    assert body["top_p"] == 0.9
    if provider == "openai":
        # A custom base URL means an OpenAI-compatible server: plain max_tokens.
        assert body["max_tokens"] == 77
        assert body["seed"] == 5
        assert body["stop"] == ["END"]
    else:
        assert body["max_tokens"] == 77
        assert body["stop_sequences"] == ["END"]
        assert "seed" not in body


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_usage_and_cost_come_back(provider, loopback, make_hub):
    hub = make_hub(prices={f"{provider}:priced": {"input_per_mtok": 2.0,
                                                  "output_per_mtok": 10.0}})
    loopback.enqueue(Reply.text_reply("hello", usage=(1000, 200)))
    reply = await hub.get(f"{provider}:priced").chat(ModelRequest([Message(role="user",
                                                                  content="hi")], role="simulator"))
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (1000, 200)
    assert reply.cost_usd == pytest.approx((1000 * 2.0 + 200 * 10.0) / 1e6)
    assert reply.model == f"{provider}:priced"
    assert reply.latency_s > 0
    stats = hub.ledger.get("simulator", f"{provider}:priced")
    assert (stats.calls, stats.requests, stats.input_tokens, stats.output_tokens) == (1, 1, 1000,
                                                                                     200)
    assert stats.cost_usd == pytest.approx(reply.cost_usd)


async def test_unpriced_model_has_no_cost(loopback, make_hub):
    hub = make_hub()
    reply = await hub.get("openai:some-local-model").chat(ModelRequest([Message(role="user",
                                                                       content="x")], role="agent"))
    assert reply.cost_usd is None
    assert hub.ledger.total.unpriced_requests == 1


async def test_length_finish_reason_is_neutral(loopback, make_hub):
    loopback.enqueue(Reply.text_reply("cut", finish_reason="max_tokens"))
    reply = await make_hub().get("anthropic:m").chat(ModelRequest([Message(role="user",
                                                                  content="x")], role="agent"))
    assert reply.finish_reason == "length"


async def test_models_are_shared_per_name(make_hub):
    hub = make_hub()
    assert hub.get("openai:a") is hub.get("openai:a")
    assert hub.get("openai:a") is not hub.get("openai:b")
    assert hub.get("openai:a").spec.base_url == hub.get("openai:b").spec.base_url
    # One endpoint (pool + semaphore) per provider and base URL.
    assert hub.endpoint("openai") is hub.endpoint("openai")
