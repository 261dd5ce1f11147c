"""The loopback model server on its own: wire formats (OpenAI, Anthropic, Gemini), scripting,
faults, load, subprocess."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import anthropic
import httpx2
import jsonschema
import openai
import pytest

from harness.testing.replies import Reply
from harness.testing.server import FaultInjection, LoopbackServer

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "minLength": 2},
                   "days": {"type": "integer", "minimum": 1, "maximum": 7}},
    "required": ["city", "days"],
}
OPENAI_TOOL = {"type": "function", "function": {"name": "forecast", "parameters": SCHEMA}}
ANTHROPIC_TOOL = {"name": "forecast", "input_schema": SCHEMA}
USER = [{"role": "user", "content": "weather please"}]


def _openai(server: LoopbackServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="sk-x", base_url=server.openai_base_url, max_retries=0)


def _anthropic(server: LoopbackServer) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(api_key="sk-x", base_url=server.anthropic_base_url,
                                    max_retries=0)


async def test_auto_openai(loopback):
    async with _openai(loopback) as client:
        # Tools offered, last message from the user: a call to the first tool, valid arguments.
        reply = await client.chat.completions.create(model="m", messages=USER, tools=[OPENAI_TOOL])
        [call] = reply.choices[0].message.tool_calls
        assert call.function.name == "forecast"
        jsonschema.validate(json.loads(call.function.arguments), SCHEMA)
        assert reply.choices[0].finish_reason == "tool_calls"
        # After a tool result: text.
        history = [*USER, {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
                   {"role": "tool", "tool_call_id": call.id, "content": "sunny"}]
        reply = await client.chat.completions.create(model="m", messages=history,
                                                     tools=[OPENAI_TOOL])
        assert reply.choices[0].message.content.startswith("auto reply to: weather please")
        # json_schema response format: a schema-valid JSON object as the content.
        reply = await client.chat.completions.create(
            model="m", messages=USER,
            response_format={"type": "json_schema", "json_schema": {"name": "f", "schema": SCHEMA}})
        jsonschema.validate(json.loads(reply.choices[0].message.content), SCHEMA)
        assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0


async def test_auto_anthropic(loopback):
    async with _anthropic(loopback) as client:
        reply = await client.messages.create(model="m", max_tokens=50, messages=USER,
                                             tools=[ANTHROPIC_TOOL],
                                             tool_choice={"type": "tool", "name": "forecast"})
        [block] = reply.content
        assert block.type == "tool_use" and block.name == "forecast"
        jsonschema.validate(block.input, SCHEMA)
        history = [*USER, {"role": "assistant", "content": [block.model_dump()]},
                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": block.id,
                                                 "content": "sunny"}]}]
        reply = await client.messages.create(model="m", max_tokens=50, messages=history,
                                             tools=[ANTHROPIC_TOOL])
        assert reply.content[0].type == "text"
        assert reply.stop_reason == "end_turn"


def _gemini(server: LoopbackServer):
    from google import genai
    from google.genai import types

    # over httpx2, as the harness sends (harness.models.gemini_provider)
    return genai.Client(api_key="AIza-x", vertexai=False, http_options=types.HttpOptions(
        base_url=server.gemini_base_url, retry_options=types.HttpRetryOptions(attempts=1),
        httpx_async_client=httpx2.AsyncClient()))


async def test_auto_gemini(loopback):
    from google.genai import errors, types

    models = _gemini(loopback).aio.models
    tool = types.Tool(function_declarations=[types.FunctionDeclaration(
        name="forecast", parameters_json_schema=SCHEMA)])
    user = [{"role": "user", "parts": [{"text": "weather please"}]}]
    # Tools offered, last turn the user's: a call to the first tool, valid arguments.
    reply = await models.generate_content(model="gemini-x", contents=user,
                                          config={"tools": [tool]})
    [part] = reply.candidates[0].content.parts
    assert part.function_call.name == "forecast"
    jsonschema.validate(part.function_call.args, SCHEMA)
    # After the function's response: text.
    history = [*user, reply.candidates[0].content.model_dump(exclude_none=True),
               {"role": "user", "parts": [{"function_response": {
                   "name": "forecast", "response": {"output": "sunny"}}}]}]
    reply = await models.generate_content(model="gemini-x", contents=history,
                                          config={"tools": [tool]})
    assert reply.text.startswith("auto reply to: weather please")
    assert reply.candidates[0].finish_reason == types.FinishReason.STOP
    # JSON mode with a schema: a schema-valid object as the text, usage counted.
    reply = await models.generate_content(model="gemini-x", contents=user, config={
        "response_mime_type": "application/json", "response_json_schema": SCHEMA})
    jsonschema.validate(json.loads(reply.text), SCHEMA)
    usage = reply.usage_metadata
    assert usage.prompt_token_count > 0 and usage.candidates_token_count > 0
    assert reply.model_version == "gemini-x"
    # Google's error bodies: the status name, and a 429's wait as RetryInfo, not a header.
    loopback.enqueue(Reply.rate_limited(retry_after=2.5), Reply.unauthorized())
    with pytest.raises(errors.ClientError) as limited:
        await models.generate_content(model="gemini-x", contents=user)
    assert (limited.value.code, limited.value.status) == (429, "RESOURCE_EXHAUSTED")
    assert limited.value.details["error"]["details"][0]["retryDelay"] == "2.5s"
    assert "retry-after" not in limited.value.response.headers
    with pytest.raises(errors.ClientError) as refused:
        await models.generate_content(model="gemini-x", contents=user)
    assert (refused.value.code, refused.value.status) == (401, "UNAUTHENTICATED")
    assert loopback.requests[0].headers["x-goog-api-key"] == "<redacted>"


async def test_queue_then_responder_then_auto(loopback):
    async with _openai(loopback) as client:
        loopback.enqueue(Reply.text_reply("queued"))
        loopback.set_responder(lambda req: Reply.text_reply(f"saw {len(req.messages)}")
                               if req.body.get("model") == "scripted" else None)
        first = await client.chat.completions.create(model="scripted", messages=USER)
        second = await client.chat.completions.create(model="scripted", messages=USER)
        third = await client.chat.completions.create(model="other", messages=USER)
        assert [r.choices[0].message.content for r in (first, second)] == ["queued", "saw 1"]
        assert third.choices[0].message.content.startswith("auto reply")


async def test_faults_on_request(loopback):
    async with _anthropic(loopback) as client:
        loopback.enqueue(Reply.rate_limited(retry_after=7), Reply.server_error(),
                         Reply.unauthorized(), Reply.error(404))
        expected = [(anthropic.RateLimitError, 429), (anthropic.InternalServerError, 500),
                    (anthropic.AuthenticationError, 401), (anthropic.NotFoundError, 404)]
        for error_type, status in expected:
            with pytest.raises(error_type) as caught:
                await client.messages.create(model="m", max_tokens=5, messages=USER)
            assert caught.value.status_code == status
            if status == 429:
                assert caught.value.response.headers["retry-after"] == "7"


async def test_slow_reply_outlasts_a_client_timeout(loopback):
    loopback.enqueue(Reply.slow(1.0, then=Reply.text_reply("late")))
    async with openai.AsyncOpenAI(api_key="x", base_url=loopback.openai_base_url,
                                  max_retries=0, timeout=0.2) as client:
        with pytest.raises(openai.APITimeoutError):
            await client.chat.completions.create(model="m", messages=USER)


async def test_malformed_body(loopback):
    loopback.enqueue(Reply.malformed())
    async with httpx2.AsyncClient() as http:
        response = await http.post(f"{loopback.openai_base_url}/chat/completions",
                                   json={"model": "m", "messages": USER})
    assert response.status_code == 200
    with pytest.raises(ValueError):
        json.loads(response.text)


async def test_request_that_is_not_json_is_refused(loopback):
    async with httpx2.AsyncClient() as http:
        response = await http.post(f"{loopback.url}/v1/messages", content=b"{nope")
    assert response.status_code == 400


async def test_records_requests_without_auth_values(loopback):
    async with _openai(loopback) as client:
        await client.chat.completions.create(model="m", messages=USER)
    [recorded] = loopback.requests
    assert recorded.api == "openai" and recorded.path == "/v1/chat/completions"
    assert recorded.body["messages"] == USER
    assert recorded.headers["authorization"] == "<redacted>"
    assert "sk-x" not in json.dumps(recorded.headers)


def _statuses_with_faults(server: LoopbackServer, seed: int, n: int) -> list[int]:
    server.reset()
    server.set_faults(FaultInjection(rate_429=0.2, rate_500=0.2, seed=seed))

    async def run() -> list[int]:
        async with httpx2.AsyncClient() as http:
            statuses = []
            for _ in range(n):  # sequential: arrival order is the draw order
                r = await http.post(f"{server.openai_base_url}/chat/completions",
                                    json={"model": "m", "messages": USER})
                statuses.append(r.status_code)
            return statuses

    return asyncio.run(run())


def test_random_faults_are_seeded(_harness_loopback_server):
    server = _harness_loopback_server
    try:
        first = _statuses_with_faults(server, seed=7, n=200)
        again = _statuses_with_faults(server, seed=7, n=200)
        other = _statuses_with_faults(server, seed=8, n=200)
    finally:
        server.reset()
    assert first == again
    assert first != other
    assert set(first) == {200, 429, 500}
    # 20% each; binomial sd at n=200 is ~5.7 calls.
    assert 20 <= first.count(429) <= 60
    assert 20 <= first.count(500) <= 60


def test_fault_rates_are_checked():
    with pytest.raises(ValueError):
        FaultInjection(rate_429=0.7, rate_500=0.5)


async def test_hundreds_of_concurrent_requests(loopback):
    loopback.latency = 0.3
    limits = httpx2.Limits(max_connections=400, max_keepalive_connections=400)
    async with httpx2.AsyncClient(limits=limits, timeout=30) as http:
        responses = await asyncio.gather(*(
            http.post(f"{loopback.openai_base_url}/chat/completions",
                      json={"model": "m", "messages": USER})
            for _ in range(300)
        ))
    assert all(r.status_code == 200 for r in responses)
    assert loopback.request_count == 300
    # They really overlapped instead of queueing behind each other (counted by the server,
    # not timed: wall-clock bounds belong in benchmarks/, and fail on a loaded machine).
    assert loopback.max_in_flight >= 250
    assert loopback.in_flight == 0


async def test_latency_holds_the_server_s_own_work_instead_of_adding_to_it(loopback):
    # An answer takes `latency` from the moment its request was read: a responder's (or the
    # rendering's) time is inside it, as a model server's work is inside its latency. Here
    # 1 s in all, not 1 + 1 (margins of 0.6 and 0.4 s: far wider than a busy machine's
    # timer overshoot).
    def busy(request: object) -> None:
        time.sleep(1.0)  # holds the server's loop, as heavy work would
        return None

    loopback.set_responder(busy)
    loopback.latency = 1.0
    async with httpx2.AsyncClient(timeout=30) as http:
        started = time.perf_counter()
        response = await http.post(f"{loopback.openai_base_url}/chat/completions",
                                   json={"model": "m", "messages": USER})
        elapsed = time.perf_counter() - started
    assert response.status_code == 200
    assert 1.0 <= elapsed < 1.6


async def test_a_client_that_hangs_up_leaves_nothing_in_the_callers_logs(
        loopback, caplog: pytest.LogCaptureFixture):
    # A request cancelled mid-send (a run that stops cancels its calls in flight): the body
    # never arrives and the server's read fails. A test server's complaint about that is not
    # the caller's business (it once counted in another test's log file).
    _, writer = await asyncio.open_connection("127.0.0.1", loopback.port)
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 b"Content-Type: application/json\r\nContent-Length: 500\r\n\r\n{")
    await writer.drain()
    for _ in range(100):  # until the server has the request
        if loopback.in_flight or loopback.request_count:
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    writer.close()
    await asyncio.sleep(0.3)  # the server finds the connection gone
    assert [r for r in caplog.records if r.name.startswith("aiohttp")] == []


def test_reset_forgets_everything(loopback):
    loopback.enqueue(Reply.text_reply("x"))
    loopback.set_responder(lambda req: None)
    loopback.latency = 1
    loopback.reset()
    assert loopback.queued == 0 and loopback.latency == 0 and loopback.requests == []


def test_runs_as_a_subprocess_printing_its_port():
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.testing.server", "--latency", "0.01"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline())
        response = httpx2.post(f"http://127.0.0.1:{port}/v1/messages",
                               json={"model": "m", "max_tokens": 5, "messages": USER})
        assert response.status_code == 200
        assert response.json()["type"] == "message"
    finally:
        assert process.stdin is not None
        process.stdin.close()  # closing stdin stops it
        assert process.wait(timeout=10) == 0
        assert process.stdout is not None
        process.stdout.close()


def test_a_port_asked_for_is_the_port_served_and_a_taken_one_is_refused():
    # The server binds its socket itself and reads its port from it: the port asked for,
    # or a free one for 0; a port already taken stops start() with the reason.
    with LoopbackServer() as first:
        free = first.port
        assert free > 0
        with pytest.raises(RuntimeError, match="did not start"):
            LoopbackServer(port=free).start()
    with LoopbackServer(port=free) as again:  # free again, and bound at once
        assert again.port == free
        response = httpx2.post(f"{again.anthropic_base_url}/v1/messages",
                               json={"model": "m", "max_tokens": 5, "messages": USER})
        assert response.status_code == 200


def test_both_event_loops_serve_from_the_socket_bound_here(monkeypatch):
    # uvloop and asyncio's loop each take the socket bound by the server (no private names).
    for loop in ("asyncio", "uvloop"):
        monkeypatch.setenv("HARNESS_EVENT_LOOP", loop)
        with LoopbackServer() as server:
            response = httpx2.post(f"{server.openai_base_url}/chat/completions",
                                   json={"model": "m", "messages": USER})
            assert response.status_code == 200, loop
