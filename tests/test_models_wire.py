"""The OpenAI requests the model layer sends through ``client.post`` are byte-for-byte what
``client.chat.completions.create`` would send: the same JSON body, the same headers, the same
reply type and the same SDK exceptions (real SDK against the loopback server)."""

from __future__ import annotations

import anthropic
import httpx2
import openai
import pytest
from openai.types.chat import ChatCompletion

from harness.models.formats import to_openai_messages, to_openai_tools
from harness.models.openai_provider import (
    chat_completion_from,
    chat_completion_sender,
    make_client,
)
from harness.models.types import Message, ToolCall, ToolSpec
from harness.testing.replies import Reply

LOOKUP = ToolSpec(
    name="lookup",
    description="Look an order up.",
    parameters={
        "type": "object",
        "properties": {"order_id": {"type": "string", "format": "uuid"},
                       "when": {"type": "string", "format": "date-time"},
                       "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
        "required": ["order_id"],
        "$defs": {"Item": {"type": "object", "properties": {"sku": {"type": "string"}}}},
    },
)
HISTORY = [
    Message(role="system", content="Be brief."),
    Message(role="user", content="Where is order A-1? «ünïcode»"),
    Message(role="assistant", content="", tool_calls=(
        ToolCall(id="c1", name="lookup", arguments={"order_id": "A-1"}),
        ToolCall(id="c2", name="lookup", raw_arguments="{not json"),
    )),
    Message(role="tool", tool_call_id="c1", name="lookup", content='{"status": "shipped"}'),
    Message(role="tool", tool_call_id="c2", name="lookup", content="bad arguments",
            is_error=True),
    Message(role="assistant", content="It shipped."),
    Message(role="user", content="Thanks."),
]
REQUESTS = {
    "chat with tools": {
        "model": "m", "messages": to_openai_messages(HISTORY), "max_tokens": 64,
        "temperature": 0.3, "top_p": 0.9, "seed": 7, "stop": ["END"],
        "tools": to_openai_tools([LOOKUP]), "tool_choice": "auto",
    },
    "forced function (instructor tools mode, with a re-ask turn)": {
        "model": "m", "max_completion_tokens": 32,
        "messages": [*to_openai_messages(HISTORY[:2]),
                     {"role": "assistant", "content": None, "tool_calls": [
                         {"id": "t1", "type": "function",
                          "function": {"name": "Verdict", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": "t1", "name": "Verdict",
                      "content": "Validation Error found: score missing"}],
        "tools": [{"type": "function", "function": {
            "name": "Verdict", "description": "A verdict.",
            "parameters": {"type": "object", "properties": {"score": {"type": "integer"}},
                           "required": ["score"]}}}],
        "tool_choice": {"type": "function", "function": {"name": "Verdict"}},
    },
    "response_format json_schema": {
        "model": "m", "max_tokens": 16, "messages": to_openai_messages(HISTORY[:2]),
        "response_format": {"type": "json_schema", "json_schema": {
            "name": "Verdict", "schema": {"type": "object",
                                          "properties": {"score": {"type": "integer"}}}}},
    },
}


@pytest.fixture
async def client(loopback):
    http = httpx2.AsyncClient()
    sdk = make_client("sk-test-wire-0123456789", loopback.openai_base_url, http, 5.0)
    yield sdk
    await http.aclose()


@pytest.mark.parametrize("name", REQUESTS)
async def test_post_sends_what_create_sends(name, client, loopback):
    request = REQUESTS[name]
    loopback.enqueue(Reply.text_reply("one"), Reply.text_reply("two"))
    via_create = await client.chat.completions.create(**request)
    via_post = await chat_completion_sender(client)(**request)

    sent_create, sent_post = loopback.requests
    assert sent_post.path == sent_create.path == "/v1/chat/completions"
    assert sent_post.body == sent_create.body
    assert "stream" not in sent_post.body
    assert sent_post.headers == sent_create.headers
    assert sent_post.headers["authorization"] == "<redacted>"  # the key was sent
    assert type(via_post) is type(via_create) is ChatCompletion
    assert via_post.choices[0].message.content == "two"
    # the same reply parses to the same object both ways
    loopback.enqueue(Reply.tool_call("lookup", {"order_id": "A-1"}),
                     Reply.tool_call("lookup", {"order_id": "A-1"}))
    via_create = await client.chat.completions.create(**request)
    via_post = await chat_completion_sender(client)(**request)
    def same_parts(reply: ChatCompletion) -> dict:
        dump = reply.model_dump(exclude={"id", "created"})
        for call in dump["choices"][0]["message"]["tool_calls"]:
            call["id"] = None  # the server numbers its calls
        return dump

    assert same_parts(via_post) == same_parts(via_create)
    assert type(via_post.choices[0].message.tool_calls[0]) is \
        type(via_create.choices[0].message.tool_calls[0])


def test_a_reply_missing_fields_is_built_as_leniently_as_the_sdk_builds_it():
    from openai._models import construct_type  # the SDK's own lenient parser, for reference

    sparse = {"id": "x", "choices": [{"index": 0, "message": {
        "role": "assistant", "content": None, "tool_calls": [
            {"id": "t", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}}]}
    ours = chat_completion_from(sparse)
    sdk = construct_type(type_=ChatCompletion, value=sparse)
    assert type(ours) is ChatCompletion and ours.model_dump() == sdk.model_dump()
    assert ours.choices[0].message.tool_calls[0].function.name == "f"
    assert chat_completion_from("<html>busy</html>") == "<html>busy</html>"


@pytest.mark.parametrize(("reply", "error"), [
    (Reply.not_found(), openai.NotFoundError),
    (Reply.rate_limited(2.0), openai.RateLimitError),
    (Reply.server_error(503), openai.InternalServerError),
    (Reply.unauthorized(), openai.AuthenticationError),
])
async def test_post_raises_the_sdk_errors_create_raises(reply, error, client, loopback):
    request = REQUESTS["chat with tools"]
    loopback.enqueue(reply, reply)
    with pytest.raises(error) as from_create:
        await client.chat.completions.create(**request)
    with pytest.raises(error) as from_post:
        await chat_completion_sender(client)(**request)
    assert from_post.value.status_code == from_create.value.status_code
    assert from_post.value.response.headers.get("retry-after") == \
        from_create.value.response.headers.get("retry-after")


# --- Anthropic: client.post vs client.messages.create ----------------------------------------

ANTHROPIC_REQUEST = {
    "model": "claude-test", "max_tokens": 64, "system": "Be brief.",
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "Where is A-1? «ünïcode»"}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"order_id": "A-1"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": '{"status": "shipped"}', "is_error": False}]},
    ],
    "tools": [{"name": "lookup", "description": "Look an order up.",
               "input_schema": LOOKUP.parameters}],
    "tool_choice": {"type": "auto"}, "stop_sequences": ["END"],
}


@pytest.fixture
async def anthropic_client(loopback):
    from harness.models.anthropic_provider import make_client as make_anthropic_client

    http = httpx2.AsyncClient()
    sdk = make_anthropic_client("sk-ant-wire-0123456789", loopback.anthropic_base_url, http, 5.0)
    yield sdk
    await http.aclose()


async def test_anthropic_post_sends_and_parses_what_create_does(anthropic_client, loopback):
    from anthropic.types import Message as AnthropicMessage

    from harness.models.anthropic_provider import messages_sender

    loopback.enqueue(Reply.tool_call("lookup", {"order_id": "A-2"}),
                     Reply.tool_call("lookup", {"order_id": "A-2"}))
    via_create = await anthropic_client.messages.create(**ANTHROPIC_REQUEST)
    via_post = await messages_sender(anthropic_client)(**ANTHROPIC_REQUEST)

    sent_create, sent_post = loopback.requests
    assert sent_post.path == sent_create.path == "/v1/messages"
    assert sent_post.body == sent_create.body
    assert sent_post.headers == sent_create.headers
    assert sent_post.headers["authorization"] == "<redacted>"  # the key was sent
    assert type(via_post) is type(via_create) is AnthropicMessage

    def same_parts(reply: AnthropicMessage) -> dict:
        dump = reply.model_dump(exclude={"id"})
        for block in dump["content"]:
            block.pop("id", None)  # the server numbers its tool calls
        return dump

    assert same_parts(via_post) == same_parts(via_create)


@pytest.mark.parametrize(("reply", "error"), [
    (Reply.not_found(), anthropic.NotFoundError),
    (Reply.rate_limited(2.0), anthropic.RateLimitError),
    (Reply.server_error(503), anthropic.InternalServerError),
    (Reply.unauthorized(), anthropic.AuthenticationError),
])
async def test_anthropic_post_raises_the_sdk_errors_create_raises(
        reply, error, anthropic_client, loopback):
    from harness.models.anthropic_provider import messages_sender

    loopback.enqueue(reply, reply)
    with pytest.raises(error) as from_create:
        await anthropic_client.messages.create(**ANTHROPIC_REQUEST)
    with pytest.raises(error) as from_post:
        await messages_sender(anthropic_client)(**ANTHROPIC_REQUEST)
    assert from_post.value.status_code == from_create.value.status_code


def test_an_anthropic_reply_missing_fields_is_built_leniently():
    from anthropic._models import construct_type
    from anthropic.types import Message as AnthropicMessage

    from harness.models.anthropic_provider import message_from

    sparse = {"id": "m", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}
    ours = message_from(sparse)
    sdk = construct_type(type_=AnthropicMessage, value=sparse)
    assert type(ours) is AnthropicMessage and ours.model_dump() == sdk.model_dump()
    assert ours.content[0].name == "f"
    assert message_from("<html>overloaded</html>") == "<html>overloaded</html>"
