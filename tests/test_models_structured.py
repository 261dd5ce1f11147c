"""Structured output through instructor, real SDKs against the loopback server."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from harness.errors import ModelConfigError, ModelUnavailableError, StructuredOutputError
from harness.models.request import ModelRequest
from harness.models.types import Message
from harness.testing.replies import Reply


class Verdict(BaseModel):
    reasoning: str
    score: int = Field(ge=1, le=5)


ASK = [Message(role="system", content="Judge fairly."), Message(role="user", content="Rate it.")]
# Each provider and each OpenAI structured mode: (model name, hub overrides).
SETUPS = {
    "openai-tools": ("openai:judge", {"openai_structured_mode": "tools"}),
    "openai-json_schema": ("openai:judge", {"openai_structured_mode": "json_schema"}),
    "anthropic-tools": ("anthropic:judge", {}),
}


@pytest.mark.parametrize("setup", SETUPS)
async def test_valid_after_one_reask(setup, loopback, make_hub):
    name, overrides = SETUPS[setup]
    hub = make_hub(prices={name: {"input_per_mtok": 1.0, "output_per_mtok": 1.0}}, **overrides)
    loopback.enqueue(
        Reply.json({"reasoning": "too generous", "score": 9}, usage=(100, 10)),
        Reply.json({"reasoning": "fair", "score": 4}, usage=(150, 12)),
    )
    result = await hub.get(name).structured(ModelRequest(ASK, role="judge"), Verdict)

    assert result.value == Verdict(reasoning="fair", score=4)
    assert result.attempts == 2
    # Usage and cost count both requests, the re-ask included.
    assert (result.usage.input_tokens, result.usage.output_tokens) == (250, 22)
    assert result.cost_usd == pytest.approx(272 / 1e6)
    stats = hub.ledger.get("judge", name)
    assert (stats.calls, stats.requests, stats.input_tokens) == (1, 2, 250)

    first, second = loopback.requests
    if setup == "openai-tools":
        assert first.body["tool_choice"] == {"type": "function", "function": {"name": "Verdict"}}
        assert second.body["messages"][-1]["role"] == "tool"
    elif setup == "openai-json_schema":
        assert first.body["response_format"]["type"] == "json_schema"
        assert "tools" not in first.body
    else:
        assert first.body["tool_choice"]["type"] == "tool"
        assert first.body["system"] == [{"type": "text", "text": "Judge fairly.",
                                         "cache_control": {"type": "ephemeral"}}]
        last = second.body["messages"][-1]
        assert last["content"][0]["type"] == "tool_result"
        assert last["content"][0]["is_error"] is True
    # The re-ask shows the model its own answer and the validation error.
    assert len(second.body["messages"]) == len(first.body["messages"]) + 2
    assert "less than or equal to 5" in str(second.body["messages"][-1])


@pytest.mark.parametrize("setup", SETUPS)
async def test_still_invalid_after_reasks_is_a_typed_error(setup, loopback, make_hub):
    name, overrides = SETUPS[setup]
    hub = make_hub(**overrides)
    loopback.enqueue(Reply.json({"reasoning": "x", "score": 0}), times=3)
    with pytest.raises(StructuredOutputError, match=r"Verdict after 3 attempts \(2 re-asks\)"):
        await hub.get(name).structured(ModelRequest(ASK, role="judge", max_reasks=2), Verdict)
    assert loopback.request_count == 3
    stats = hub.ledger.get("judge", name)
    assert (stats.calls, stats.errors, stats.requests) == (1, 1, 3)


async def test_answer_that_is_not_json_is_reasked(loopback, make_hub):
    loopback.enqueue(Reply.json("{this is not json"), Reply.json({"reasoning": "r", "score": 2}))
    result = await make_hub().get("openai:j").structured(ModelRequest(ASK, role="judge"), Verdict)
    assert result.value.score == 2
    assert result.attempts == 2


async def test_zero_reasks_fails_on_the_first_invalid_answer(loopback, make_hub):
    loopback.enqueue(Reply.json({"score": 3}))  # reasoning missing
    with pytest.raises(StructuredOutputError, match="1 attempt"):
        await make_hub().get("anthropic:j").structured(ModelRequest(ASK, role="judge",
                                                                    max_reasks=0), Verdict)
    assert loopback.request_count == 1


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_429_during_a_reask_retries_that_request_only(provider, loopback, make_hub):
    hub = make_hub()
    loopback.enqueue(
        Reply.json({"reasoning": "x", "score": 7}),  # invalid: re-ask
        Reply.rate_limited(retry_after=0.05),  # the re-ask request is rate limited ...
        Reply.json({"reasoning": "ok", "score": 5}),  # ... and retried on its own
    )
    result = await hub.get(f"{provider}:j").structured(ModelRequest(ASK, role="judge"), Verdict)
    assert result.value.score == 5
    assert result.attempts == 2  # two answers; the 429 was a transport retry
    requests = loopback.requests
    assert len(requests) == 3
    # The retried request is the re-ask itself, not a restart from the first question.
    assert requests[2].body["messages"] == requests[1].body["messages"]
    assert len(requests[1].body["messages"]) > len(requests[0].body["messages"])
    assert hub.ledger.get("judge", f"{provider}:j").requests == 3


async def test_transport_failure_in_structured_call_is_not_a_validation_error(loopback,
                                                                               make_hub):
    loopback.enqueue(Reply.server_error(), times=3)
    with pytest.raises(ModelUnavailableError, match="gave up after 3 attempts"):
        await make_hub().get("openai:j").structured(ModelRequest(ASK, role="judge"), Verdict)


async def test_refused_key_in_structured_call(loopback, make_hub):
    loopback.enqueue(Reply.unauthorized())
    with pytest.raises(ModelConfigError, match="was refused"):
        await make_hub().get("anthropic:j").structured(ModelRequest(ASK, role="judge"), Verdict)
    assert loopback.request_count == 1


async def test_truncated_answer_says_raise_max_tokens(loopback, make_hub):
    loopback.enqueue(Reply("json", data={"reasoning": "r", "score": 1},
                           finish_reason="max_tokens"))
    with pytest.raises(StructuredOutputError, match="max_tokens"):
        await make_hub().get("anthropic:j").structured(ModelRequest(ASK, role="judge"), Verdict)
