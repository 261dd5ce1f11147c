"""agent.http: the agent under test as an HTTP endpoint, against fake agents of our own
(tests/helpers/http_agents.py). Sessions, both protocols, tool modes, placeholders, retries and the
concurrency bound; the faults and secrets are in test_http_agent_faults.py."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from harness.models.config import RetryConfig
from harness.models.provenance import RoleCollector, roles_notice
from harness.models.retry import RetryPolicy
from harness.models.types import Message
from harness.scenarios.loading import parse_scenario
from harness.simulation.episode import run_episode
from harness.simulation.http_agent import HttpAgent, HttpEndpoints
from harness.tools.toolbox import Toolbox
from tests.helpers.cli import run_cli
from tests.helpers.http_agents import (
    WEATHER_TOOL,
    Seen,
    chat_reply,
    closed_port_url,
    fake_agent,
    run_args,
    samples,
    scenario,
    write_suite,
)

SCRIPT = ["first question", "second question", "third question"]


async def echo_json(seen: Seen) -> web.Response:
    return web.json_response({"output": {"text": f"echo: {seen.body['text']}"}})


def test_stateful_json_sends_one_session_id_per_episode_and_only_the_latest_message(
        tmp_path: Path) -> None:
    http = {"url": "${env:FAKE_AGENT_URL}/chat/${scenario_id}/${epoch}", "protocol": "json",
            "session": "stateful",
            "request": {"session": "${session_id}", "text": "${message}",
                        "new": "${messages}", "epoch": "${epoch}"},
            "reply_path": "output.text"}
    with fake_agent(echo_json) as agent:
        suite = write_suite(tmp_path, [scenario("mem", http, script=SCRIPT)])
        done = run_cli(*run_args(suite, tmp_path / "run", "--epochs", "2"),
                       env={"FAKE_AGENT_URL": agent.url})
    assert done.returncode == 0, done.stderr
    assert len(agent.requests) == 6
    by_epoch: dict[int, list[Seen]] = {0: [], 1: []}
    for seen in agent.requests:
        assert seen.path.startswith("/chat/mem/")
        by_epoch[int(seen.path.rsplit("/", 1)[1])].append(seen)
    sessions = []
    for epoch, seen_list in by_epoch.items():
        assert [s.body["text"] for s in seen_list] == SCRIPT
        # Only the message the agent has not seen, never the conversation again.
        assert [s.body["new"] for s in seen_list] == [[{"role": "user", "content": t}]
                                                      for t in SCRIPT]
        assert {s.body["epoch"] for s in seen_list} == {epoch}  # a JSON number, not text
        [session] = {s.body["session"] for s in seen_list}
        sessions.append(session)
    assert sessions[0] != sessions[1]
    transcript = samples(tmp_path / "run")[("mem", 0)]["transcript"]
    replies = [m["content"] for m in transcript["messages"] if m["role"] == "assistant"]
    assert replies == [f"echo: {t}" for t in SCRIPT]


def test_stateless_json_sends_the_whole_conversation_every_turn(tmp_path: Path) -> None:
    async def reply(seen: Seen) -> web.Response:
        return web.json_response({"reply": f"answer {len(seen.body['messages'])}"})

    http = {"url": "${env:FAKE_AGENT_URL}", "protocol": "json",
            "request": {"messages": "${messages}", "note": "turn of ${scenario_id}"},
            "reply_path": "reply"}
    with fake_agent(reply) as agent:
        suite = write_suite(tmp_path, [scenario("whole", http, script=SCRIPT)])
        # --agent names the model of model agents: an HTTP agent needs none, nor its key.
        done = run_cli(*run_args(suite, tmp_path / "run", "--agent", "anthropic:claude-x"),
                       env={"FAKE_AGENT_URL": agent.url, "ANTHROPIC_API_KEY": None})
    assert done.returncode == 0, done.stderr
    sent = [s.body["messages"] for s in agent.requests]
    assert sent[0] == [{"role": "user", "content": SCRIPT[0]}]
    assert sent[2] == [
        {"role": "user", "content": SCRIPT[0]}, {"role": "assistant", "content": "answer 1"},
        {"role": "user", "content": SCRIPT[1]}, {"role": "assistant", "content": "answer 3"},
        {"role": "user", "content": SCRIPT[2]},
    ]
    assert agent.requests[0].body["note"] == "turn of whole"  # a placeholder inside text


def test_openai_chat_client_tools_are_answered_by_the_mocks_and_checked(tmp_path: Path) -> None:
    async def weather_agent(seen: Seen) -> web.Response:
        last = seen.body["messages"][-1]
        if last["role"] == "user":
            return chat_reply(tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}}])
        assert last["role"] == "tool"
        return chat_reply(f"It is {json.loads(last['content'])['temp_c']} C in Paris.")

    http = {"url": "${env:FAKE_AGENT_URL}/v1/chat/completions", "protocol": "openai_chat",
            "tools": "client", "model": "weather-bot"}
    with fake_agent(weather_agent) as agent:
        suite = write_suite(tmp_path, [scenario(
            "weather", http, script=["Weather in Paris?"], tools=[WEATHER_TOOL],
            expectations={"tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}}]})])
        done = run_cli(*run_args(suite, tmp_path / "run"), env={"FAKE_AGENT_URL": agent.url})
    assert done.returncode == 0, done.stderr
    first, second = agent.requests
    assert first.body["model"] == "weather-bot"
    assert [t["function"]["name"] for t in first.body["tools"]] == ["get_weather"]
    # Stateless: the second request carries the whole turn, the tool call and its result.
    assert [m["role"] for m in second.body["messages"]] == ["user", "assistant", "tool"]
    sample = samples(tmp_path / "run")[("weather", 0)]
    assert sample["status"] == "scored" and sample["passed"], sample["checks"]
    transcript = sample["transcript"]
    [call] = transcript["tool_calls"]
    assert call["name"] == "get_weather" and call["result"] == {"city": "Paris", "temp_c": 18}
    assert transcript["messages"][-1]["content"] == "It is 18 C in Paris."
    # One step per request, for the agent, with its latency, under the url template.
    steps = [s for s in transcript["steps"] if s["role"] == "agent"]
    assert [s["step"] for s in steps] == [0, 1]
    assert all(s["latency_s"] > 0 for s in steps)
    assert {s["model"] for s in steps} == {"http:${env:FAKE_AGENT_URL}/v1/chat/completions"}
    assert transcript["models"]["agent"] == "http:${env:FAKE_AGENT_URL}/v1/chat/completions"


def test_openai_chat_without_tools_sends_the_conversation_and_no_tools(tmp_path: Path) -> None:
    async def reply(seen: Seen) -> web.Response:
        return chat_reply(f"seen {len(seen.body['messages'])}")

    http = {"url": "${env:FAKE_AGENT_URL}/v1/chat/completions", "protocol": "openai_chat"}
    with fake_agent(reply) as agent:
        suite = write_suite(tmp_path, [scenario("plain", http, script=SCRIPT[:2],
                                                tools=[WEATHER_TOOL])])
        done = run_cli(*run_args(suite, tmp_path / "run"), env={"FAKE_AGENT_URL": agent.url})
    assert done.returncode == 0, done.stderr
    first, second = agent.requests
    assert "tools" not in first.body and "model" not in first.body
    assert second.body["messages"] == [
        {"role": "user", "content": SCRIPT[0]}, {"role": "assistant", "content": "seen 1"},
        {"role": "user", "content": SCRIPT[1]}]


def test_reported_tool_calls_are_recorded_so_tool_checks_apply(tmp_path: Path) -> None:
    async def reply(seen: Seen) -> web.Response:
        return web.json_response({"answer": "Booked.", "trace": {"calls": [
            {"name": "get_weather", "arguments": {"city": "Paris"}, "result": {"temp_c": 18}},
            {"id": "c2", "type": "function",
             "function": {"name": "book", "arguments": "{\"day\": \"monday\"}"}},
        ]}})

    http = {"url": "${env:FAKE_AGENT_URL}", "protocol": "json", "session": "stateful",
            "request": {"q": "${message}", "id": "${session_id}"}, "reply_path": "answer",
            "tool_calls_path": "trace.calls"}
    book = {"name": "book", "parameters": {"type": "object"}, "returns": "ok"}
    with fake_agent(reply) as agent:
        suite = write_suite(tmp_path, [scenario(
            "reported", http, tools=[WEATHER_TOOL, book],
            expectations={"tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}},
                                         {"name": "book", "args": {"day": "monday"}}]})])
        done = run_cli(*run_args(suite, tmp_path / "run"), env={"FAKE_AGENT_URL": agent.url})
    assert done.returncode == 0, done.stderr
    sample = samples(tmp_path / "run")[("reported", 0)]
    assert sample["status"] == "scored" and sample["passed"], sample["checks"]
    calls = sample["transcript"]["tool_calls"]
    assert [(c["name"], c["arguments"], c["result"]) for c in calls] == [
        ("get_weather", {"city": "Paris"}, {"temp_c": 18}), ("book", {"day": "monday"}, None)]
    assert calls[1]["call_id"] == "c2"
    roles = [m["role"] for m in sample["transcript"]["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]


async def test_mcp_url_is_substituted_in_url_headers_and_request() -> None:
    async def reply(seen: Seen) -> web.Response:
        return web.json_response({"text": "ok"})

    spec = parse_scenario(scenario("mcp", {
        "url": "http://HOST/agent?tools=${mcp_url}", "protocol": "json", "tools": "mcp",
        "headers": {"X-Tools": "${mcp_url}"},
        "request": {"messages": "${messages}", "tools": "${mcp_url}"}, "reply_path": "text",
    })).agent.http
    assert spec is not None
    with fake_agent(reply) as server:
        spec = spec.model_copy(update={"url": spec.url.replace("http://HOST", server.url)})
        endpoints = HttpEndpoints()
        agent = HttpAgent(spec, endpoints=endpoints, scenario_id="mcp", epoch=0, max_steps=3)
        assert agent.needs_tool_server
        mcp_url = agent.mcp_url = "http://127.0.0.1:9/episodes/abc/mcp"
        turn = await agent.respond([Message(role="user", content="hi")], Toolbox([]), turn=0)
        await endpoints.aclose()
    assert turn.error is None and turn.messages[-1].content == "ok"
    # Without a served MCP endpoint the placeholder has no value: an error, never "null".
    agent.mcp_url = None
    turn = await agent.respond([Message(role="user", content="hi")], Toolbox([]), turn=1)
    assert turn.stop_reason == "agent_error" and turn.error is not None
    assert turn.error.kind == "agent_config" and "${mcp_url}" in turn.error.message
    [seen] = server.requests
    assert seen.query["tools"] == seen.headers["X-Tools"] == seen.body["tools"] == mcp_url


def test_429_and_5xx_are_retried_honouring_retry_after(tmp_path: Path) -> None:
    answers = iter([web.json_response({"error": "busy"}, status=503),
                    web.json_response({"error": "slow down"}, status=429,
                                      headers={"Retry-After": "0.4"})])
    times: list[float] = []

    async def flaky(seen: Seen) -> web.Response:
        times.append(time.monotonic())
        return next(answers, None) or web.json_response({"reply": "finally"})

    http = {"url": "${env:FAKE_AGENT_URL}", "protocol": "json",
            "request": {"m": "${messages}"}, "reply_path": "reply"}
    with fake_agent(flaky) as agent:
        suite = write_suite(tmp_path, [scenario("flaky", http)])
        done = run_cli(*run_args(suite, tmp_path / "run"), env={"FAKE_AGENT_URL": agent.url})
    assert done.returncode == 0, done.stderr
    assert len(agent.requests) == 3  # 3 attempts: the models' policy (tests/helpers/http_agents)
    # The backoff is 0.01 s; the wait before the third attempt is the server's Retry-After.
    assert times[2] - times[1] >= 0.35
    sample = samples(tmp_path / "run")[("flaky", 0)]
    assert sample["status"] == "scored"
    assert sample["transcript"]["messages"][-1]["content"] == "finally"


async def test_a_request_that_times_out_is_retried() -> None:
    async def slow_once(seen: Seen) -> web.Response:
        if len(server.requests) == 1:
            await asyncio.sleep(2)
        return web.json_response({"reply": "awake"})

    with fake_agent(slow_once) as server:
        spec = parse_scenario(scenario("slow", {
            "url": f"{server.url}/x", "protocol": "json", "request": {"m": "${messages}"},
            "reply_path": "reply", "timeout_s": 0.3})).agent.http
        assert spec is not None
        endpoints = HttpEndpoints(RetryPolicy(RetryConfig(backoff_initial_s=0,
                                                          backoff_jitter_s=0)))
        agent = HttpAgent(spec, endpoints=endpoints, scenario_id="slow", epoch=0, max_steps=1)
        turn = await agent.respond([Message(role="user", content="hi")], Toolbox([]), turn=0)
        await endpoints.aclose()
    assert turn.error is None and turn.messages[-1].content == "awake"
    assert len(server.requests) == 2
    [(step, latency)] = turn.callable_steps  # the answered attempt's time
    assert step == 0 and latency < 1


async def test_what_kept_the_answer_away_is_named_when_the_retries_run_out() -> None:
    # The pool's transport (aiohttp) reports a refused or dropped connection as a connect
    # timeout: the failure must still say which it was.
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(100)
        writer.close()

    async def slow(seen: Seen) -> web.Response:
        await asyncio.sleep(2)
        return web.json_response({"reply": "late"})

    async def failure(url: str) -> str:
        spec = parse_scenario(scenario("x", {
            "url": url, "protocol": "json", "request": {"m": "${messages}"},
            "reply_path": "reply", "timeout_s": 0.3})).agent.http
        assert spec is not None
        endpoints = HttpEndpoints(RetryPolicy(RetryConfig(max_attempts=2, backoff_initial_s=0,
                                                          backoff_jitter_s=0)))
        agent = HttpAgent(spec, endpoints=endpoints, scenario_id="x", epoch=0, max_steps=1)
        turn = await agent.respond([Message(role="user", content="hi")], Toolbox([]), turn=0)
        await endpoints.aclose()
        assert turn.error is not None
        return f"{turn.error.kind}: {turn.error.message.split('; ')[-1]}"

    hanger = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = hanger.sockets[0].getsockname()[1]
    try:
        dropped = await failure(f"http://127.0.0.1:{port}/x")
    finally:
        hanger.close()
    with fake_agent(slow) as server:
        timed_out = await failure(f"{server.url}/x")
    refused = await failure(closed_port_url())
    assert dropped == ("agent_unavailable: last failure: connection failed or dropped "
                       "(ServerDisconnectedError)")
    assert timed_out == ("agent_unavailable: last failure: no complete answer within 0.3s "
                         "(timeout_s)")
    assert refused == ("agent_unreachable: last failure: connection refused or host "
                       "unreachable")


def test_requests_in_flight_to_one_endpoint_stay_within_max_concurrency(tmp_path: Path) -> None:
    async def slow(seen: Seen) -> web.Response:
        await asyncio.sleep(0.15)
        return web.json_response({"reply": "done"})

    def http(bound: int) -> dict[str, Any]:
        return {"url": "${env:FAKE_AGENT_URL}/same", "protocol": "json",
                "request": {"m": "${messages}"}, "reply_path": "reply",
                "max_concurrency": bound}

    # Two scenarios name the same endpoint: the smaller bound holds for both.
    with fake_agent(slow) as agent:
        suite = write_suite(tmp_path, [scenario("a", http(3)), scenario("b", http(2))])
        done = run_cli(*run_args(suite, tmp_path / "run", "--epochs", "4",
                                 "--concurrency", "8"), env={"FAKE_AGENT_URL": agent.url})
    assert done.returncode == 0, done.stderr
    assert len(agent.requests) == 8
    assert agent.max_in_flight == 2


def test_an_http_agent_is_not_called_a_real_model_in_the_offline_notice() -> None:
    roles = RoleCollector()
    roles.add("agent", ["http:${env:AGENT_URL}/chat"])
    roles.add("simulator", ["mock:simulator"])
    notice = roles_notice(roles.roles())
    assert notice is not None and "REAL roles" not in notice.split(";")[1]
    assert ("HTTP agent: agent http:${env:AGENT_URL}/chat (the harness does not see the model "
            "calls") in notice


async def test_an_episode_without_a_shared_pool_uses_and_closes_its_own() -> None:
    async def reply(seen: Seen) -> web.Response:
        return web.json_response({"reply": "hi there"})

    with fake_agent(reply) as agent:
        s = parse_scenario(scenario("alone", {
            "url": f"{agent.url}/x", "protocol": "json", "request": {"m": "${messages}"},
            "reply_path": "reply"}))
        transcript = await run_episode(s, agent_model=None, simulator_model=None)
    assert transcript.stop_reason == "script_finished", transcript.error
    assert transcript.final_response == "hi there"
