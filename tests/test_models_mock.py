"""Offline mock: models, the registry, the echo behaviour and schema-valid examples."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field

from harness.errors import ModelConfigError, ModelUnavailableError
from harness.models.hub import ModelHub
from harness.models.mock import bind_offline, register_mock, resolve_mock, unregister_mock
from harness.models.request import ModelRequest
from harness.models.schema_example import example_from_schema
from harness.models.types import Message, T, ToolSpec
from tests.helpers.bound_mocks import ContextBound

CONVERSATION = [
    Message(role="system", content="be brief"),
    Message(role="user", content="first question"),
    Message(role="assistant", content="an answer"),
    Message(role="user", content="second question"),
]


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


class Inner(BaseModel):
    label: str = Field(min_length=3)
    weight: float = Field(gt=0.5, le=2)


class Rich(BaseModel):
    name: str
    count: int = Field(ge=2)
    ratio: float = 0.25
    flag: bool
    kind: Literal["a", "b"]
    colour: Colour
    tags: list[str] = Field(min_length=2)
    inner: Inner
    maybe: Inner | None = None
    mapping: dict[str, int] = Field(default_factory=dict)


async def test_echo_replies_with_the_last_user_text():
    hub = ModelHub(environ={})
    model = hub.get("mock:echo")
    assert model.spec.is_offline
    reply = await model.chat(ModelRequest(CONVERSATION, role="simulator"))
    assert reply.message.content == "second question"
    assert reply.message.role == "assistant"
    assert reply.model == "mock:echo"
    assert reply.cost_usd == 0.0
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens == 4  # 15 chars / 4
    stats = hub.ledger.get("simulator", "mock:echo")
    assert (stats.calls, stats.requests, stats.cost_usd, stats.unpriced_requests) == (1, 1, 0, 0)


async def test_echo_calls_a_forced_tool_with_valid_arguments():
    tool = ToolSpec(name="book", parameters={
        "type": "object",
        "properties": {"date": {"type": "string", "format": "date"},
                       "seats": {"type": "integer", "minimum": 1}},
        "required": ["date", "seats"],
    })
    model = ModelHub(environ={}).get("mock:echo")
    reply = await model.chat(ModelRequest(CONVERSATION, role="agent", tools=[tool],
                                          tool_choice="book"))
    [call] = reply.message.tool_calls
    assert call.name == "book"
    jsonschema.validate(call.arguments, tool.parameters)
    assert reply.finish_reason == "tool_calls"
    # Not forced: plain echo.
    unforced = await model.chat(ModelRequest(CONVERSATION, role="agent", tools=[tool]))
    assert unforced.message.content == "second question"


async def test_echo_structured_is_valid_and_uses_defaults():
    result = await ModelHub(environ={}).get("mock:echo").structured(ModelRequest(CONVERSATION,
            role="judge"), Rich)
    value = result.value
    assert isinstance(value, Rich)
    assert value.ratio == 0.25  # the default
    assert value.count == 2 and len(value.tags) == 2 and len(value.inner.label) == 3
    assert 0.5 < value.inner.weight <= 2
    assert result.cost_usd == 0.0 and result.attempts == 1


async def test_echo_structured_reports_models_it_cannot_satisfy():
    class Odd(BaseModel):
        code: str = Field(pattern=r"^[A-Z]{3}$")

    with pytest.raises(ModelConfigError, match="cannot build a valid Odd"):
        await ModelHub(environ={}).get("mock:echo").structured(ModelRequest(CONVERSATION,
                                                                            role="judge"), Odd)


def test_unknown_mock_lists_known_names():
    with pytest.raises(ModelConfigError) as caught:
        ModelHub(environ={}).get("mock:nonesuch")
    message = str(caught.value)
    assert "unknown mock model 'nonesuch'" in message
    # Every name that resolves, variants included (issue 11: it listed 4 base names).
    listed = message.split("known mock models: ")[1].split(", ")
    assert listed == ["mock:agent", "mock:agent-flaky", "mock:drafter", "mock:echo", "mock:judge",
                      "mock:judge-first", "mock:judge-lenient", "mock:judge-strict",
                      "mock:simulator", "mock:simulator-faulty"]
    for name in listed:
        ModelHub(environ={}).get(name)  # each one listed resolves


def test_import_failure_is_a_clear_error():
    register_mock("broken", "harness.no_such_module:Thing")
    try:
        with pytest.raises(ModelConfigError) as caught:
            resolve_mock("broken")
        assert "could not be loaded from harness.no_such_module:Thing" in str(caught.value)
        assert "known mock models" in str(caught.value)
    finally:
        unregister_mock("broken")


def test_factory_must_return_a_behaviour():
    register_mock("wrong", lambda name: object())
    try:
        with pytest.raises(ModelConfigError, match="not a MockBehaviour"):
            resolve_mock("wrong")
    finally:
        unregister_mock("wrong")


def test_register_mock_rejects_bad_entries():
    with pytest.raises(ValueError):
        register_mock("a:b", "x:y")
    with pytest.raises(ValueError):
        register_mock("ok", "no-colon")


class Scripted(ContextBound):
    """A test behaviour: replies with its variant name; 'flaky' fails."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def chat(self, request: ModelRequest) -> Message:
        if self.name.endswith("flaky"):
            raise ModelUnavailableError("simulated outage", model=f"mock:{self.name}")
        return Message(role="assistant",
                       content=f"{self.name} #{request.sample_index} {self.context or ''}")

    async def structured(self, request: ModelRequest, response_model: type[T]) -> T:
        return response_model.model_validate({"label": self.name, "weight": 1.0})


async def test_registered_factory_gets_the_full_name_and_variants_share_it():
    seen: list[str] = []

    def factory(name: str) -> Scripted:
        seen.append(name)
        return Scripted(name)

    register_mock("scripted", factory)
    try:
        hub = ModelHub(environ={})
        bound = bind_offline(hub.get("mock:scripted"), "s1")
        plain = await bound.chat(ModelRequest(CONVERSATION, role="agent", sample_index=3))
        assert plain.message.content == "scripted #3 s1"
        with pytest.raises(ModelUnavailableError, match="simulated outage"):
            await hub.get("mock:scripted-flaky").chat(ModelRequest(CONVERSATION, role="agent"))
        assert seen == ["scripted", "scripted-flaky"]
        assert hub.ledger.get("agent", "mock:scripted-flaky").errors == 1
        structured = await hub.get("mock:scripted").structured(ModelRequest(CONVERSATION,
                                                                            role="judge"), Inner)
        assert structured.value == Inner(label="scripted", weight=1.0)
    finally:
        unregister_mock("scripted")


def test_mock_models_take_no_base_url():
    with pytest.raises(ModelConfigError, match="no base URL"):
        ModelHub(environ={}).get("mock:echo", base_url="http://x")


async def test_mock_calls_bypass_the_cache(tmp_path):
    from harness.models.config import CacheConfig, ModelsConfig

    hub = ModelHub(ModelsConfig(cache=CacheConfig(path=tmp_path / "c.sqlite", mode="replay")),
                   environ={})
    reply = await hub.get("mock:echo").chat(ModelRequest(CONVERSATION, role="agent"))
    assert not reply.cached
    assert hub.cache is not None and len(hub.cache) == 0
    hub.close()


@pytest.mark.parametrize(
    "schema",
    [
        Rich.model_json_schema(),
        {"type": "object", "properties": {"n": {"type": "integer", "exclusiveMinimum": 3}},
         "required": ["n"]},
        {"type": "object", "properties": {"n": {"type": "number", "maximum": -2}},
         "required": ["n"]},
        {"type": "object", "properties": {"x": {"anyOf": [{"type": "null"},
                                                          {"type": "string", "minLength": 2}]}},
         "required": ["x"]},
        {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 3},
        {"type": "object", "properties": {"c": {"const": "fixed"}}, "required": ["c"]},
        {"type": ["string", "null"], "format": "email"},
    ],
)
def test_examples_validate_against_their_schema(schema):
    value = example_from_schema(schema)
    jsonschema.validate(value, schema)


def test_fill_optional_adds_every_property():
    value = example_from_schema(Rich.model_json_schema(), fill_optional=True)
    assert set(value) == set(Rich.model_fields)
    Rich.model_validate(value)
