"""agent.http faults and secrets: each fault is an errored sample with a clear kind and message,
the run goes on and nothing is scored from it; ``${env:...}`` values never reach the run
directory or the terminal; scenario mistakes are load-time errors naming file and field."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

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

TOKEN = "tok-9f1c3e5a7b2d4c6e8f0a"


async def faulty(seen: Seen) -> web.StreamResponse:
    """One behaviour per path."""
    path = seen.path
    if path == "/ok":
        return web.json_response({"reply": "fine"})
    if path == "/html":
        return web.Response(text="<html>Gateway login</html>", content_type="text/html")
    if path == "/wrong-shape":
        return web.json_response({"answer": "hi", "meta": {}})
    if path == "/auth":
        if seen.headers.get("Authorization") != "Bearer right-token":
            return web.json_response({"error": "bad token"}, status=401)
        return web.json_response({"reply": "fine"})
    if path == "/busy":
        return web.json_response({"error": "slow down"}, status=429,
                                 headers={"Retry-After": "0"})
    if path == "/broken":
        return web.json_response({"error": "internal"}, status=500)
    if path == "/hang":
        await asyncio.sleep(30)
    if path == "/chat":
        return chat_reply(tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}}])
    return web.json_response({"error": "no such route"}, status=404)


def json_agent(url: str, **more: Any) -> dict[str, Any]:
    return {"url": url, "protocol": "json", "request": {"m": "${messages}"},
            "reply_path": "reply", **more}


def test_every_fault_is_an_errored_sample_and_the_run_goes_on(tmp_path: Path) -> None:
    base = "${env:FAKE_AGENT_URL}"
    suite = write_suite(tmp_path, [
        scenario("healthy", json_agent(f"{base}/ok")),
        scenario("unreachable", json_agent(closed_port_url())),
        scenario("not-json", json_agent(f"{base}/html")),
        scenario("no-reply", json_agent(f"{base}/wrong-shape", reply_path="output.text")),
        scenario("refused", json_agent(f"{base}/auth",
                                       headers={"Authorization": "Bearer ${env:AGENT_TOKEN}"})),
        scenario("rate-limited", json_agent(f"{base}/busy")),
        scenario("server-error", json_agent(f"{base}/broken")),
        scenario("not-found", json_agent(f"{base}/nowhere")),
        scenario("hangs", json_agent(f"{base}/hang", timeout_s=60),
                 limits={"max_seconds": 0.5}),
        scenario("tool-calls", {"url": f"{base}/chat", "protocol": "openai_chat"},
                 tools=[WEATHER_TOOL]),
    ])
    with fake_agent(faulty) as agent:
        done = run_cli(*run_args(suite, tmp_path / "run"),
                       env={"FAKE_AGENT_URL": agent.url, "AGENT_TOKEN": TOKEN})
    assert done.returncode == 0, done.stderr  # one sample was scored: the run has a figure
    counts = json.loads(done.stdout)["counts"]
    assert counts["scored"] == 1 and counts["errored"] == 9
    got = {sid: s for (sid, _), s in samples(tmp_path / "run").items()}
    assert got["healthy"]["status"] == "scored"

    def fault(sid: str) -> tuple[str, str, str]:
        sample = got[sid]
        assert sample["status"] == "errored" and sample["score"] is None
        error = sample["transcript"]["error"]
        return sample["transcript"]["stop_reason"], error["kind"], error["message"]

    reason, kind, message = fault("unreachable")
    assert (reason, kind) == ("agent_error", "agent_unreachable")
    assert "gave up after 3 attempts; last failure: connection refused" in message
    assert fault("not-json")[1:] == (
        "agent_bad_reply", "the answer from ${env:FAKE_AGENT_URL}/html is not JSON "
        "(text/html; charset=utf-8): '<html>Gateway login</html>'")
    assert fault("no-reply")[1:] == (
        "agent_reply_missing", "reply_path 'output.text' finds nothing in the answer from "
        "${env:FAKE_AGENT_URL}/wrong-shape; its top-level keys: 'answer', 'meta'")
    reason, kind, message = fault("refused")
    assert kind == "agent_auth_refused"
    assert message == ("${env:FAKE_AGENT_URL}/auth refused the credentials in its headers, "
                       "from AGENT_TOKEN; check that variable (401)")
    reason, kind, message = fault("rate-limited")
    assert kind == "agent_unavailable" and "last failure: rate limited (429" in message
    reason, kind, message = fault("server-error")
    assert kind == "agent_unavailable" and "last failure: server error (500)" in message
    reason, kind, message = fault("not-found")
    assert kind == "agent_http_error" and "refused the request (404)" in message
    reason, kind, message = fault("hangs")
    assert (reason, kind) == ("time_limit", "EpisodeTimeout")
    assert "waiting on the agent" in message
    reason, kind, message = fault("tool-calls")
    assert kind == "agent_unexpected_tool_calls"
    assert "returned tool calls (get_weather) but tools is 'none'" in message
    # Retried faults were sent as often as the retry policy allows, the others once.
    paths = [s.path for s in agent.requests]
    assert paths.count("/busy") == paths.count("/broken") == 3
    assert paths.count("/nowhere") == paths.count("/auth") == paths.count("/html") == 1
    # The report names the agent as what it is, an HTTP agent (not a Python callable).
    report = (tmp_path / "run" / "report.html").read_text(encoding="utf-8")
    healthy = "<code>http:${env:FAKE_AGENT_URL}/ok</code>"
    assert f'{healthy} <span class="tag">HTTP agent</span>' in report
    assert 'class="tag">callable<' not in report


def test_env_values_reach_the_endpoint_and_nowhere_else(tmp_path: Path) -> None:
    async def echoing(seen: Seen) -> web.StreamResponse:
        said = seen.headers.get("Authorization", "")
        if seen.path == "/reject":  # an error body that echoes the credentials
            return web.json_response({"error": f"rejected {said}"}, status=400)
        if seen.path == "/fail":
            return web.json_response({"error": f"down for {said}"}, status=503)
        return web.json_response({"reply": f"you sent {said} and {seen.body['key']}"})

    auth = {"Authorization": "Bearer ${env:AGENT_TOKEN}"}

    def agent_at(path: str) -> dict[str, Any]:
        return json_agent(f"${{env:FAKE_AGENT_URL}}{path}?k=${{env:AGENT_TOKEN}}", headers=auth,
                          request={"m": "${messages}", "key": "${env:AGENT_TOKEN}"})

    suite = write_suite(tmp_path, [scenario("echo", agent_at("/echo")),
                                   scenario("reject", agent_at("/reject")),
                                   scenario("fail", agent_at("/fail"))])
    with fake_agent(echoing) as agent:
        done = run_cli(*run_args(suite, tmp_path / "run", "--verbose"), cwd=tmp_path,
                       env={"FAKE_AGENT_URL": agent.url, "AGENT_TOKEN": TOKEN})
    assert done.returncode == 0, done.stderr
    assert {s.headers["Authorization"] for s in agent.requests} == {f"Bearer {TOKEN}"}
    assert {s.query["k"] for s in agent.requests} == {TOKEN}
    got = samples(tmp_path / "run")
    assert got[("echo", 0)]["transcript"]["messages"][-1]["content"] == (
        "you sent Bearer [redacted] and [redacted]")
    assert "rejected" in got[("reject", 0)]["error"]["message"]
    assert got[("fail", 0)]["error"]["kind"] == "agent_unavailable"
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "suite.yaml"]
    assert any(p.name == "run.sqlite" for p in files) and any(p.suffix == ".log" for p in files)
    for path in files:
        assert TOKEN.encode() not in path.read_bytes(), path
    assert TOKEN not in done.stdout + done.stderr


def test_an_unset_env_variable_stops_the_run_before_any_request(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, [scenario("s", json_agent(
        "${env:FAKE_AGENT_URL}/ok", headers={"Authorization": "Bearer ${env:NOT_SET_TOKEN}"}))])
    with fake_agent(faulty) as agent:
        done = run_cli(*run_args(suite, tmp_path / "run"),
                       env={"FAKE_AGENT_URL": agent.url, "NOT_SET_TOKEN": None})
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"error: {suite}: agent.http.headers.Authorization: ${{env:NOT_SET_TOKEN}}: the "
        "environment variable NOT_SET_TOKEN is not set")
    assert agent.requests == [] and not (tmp_path / "run").exists()


BAD_AGENTS = [
    ({"url": "http://x/${nope}", "protocol": "openai_chat"},
     "agent.http.url: unknown placeholder ${nope}"),
    ({"url": "http://x", "protocol": "openai_chat", "headers": {"X-Id": "${session}"}},
     "agent.http.headers.X-Id: unknown placeholder ${session}"),
    ({"url": "http://x", "protocol": "openai_chat", "reply_path": "a"},
     "agent.http.reply_path: applies only to protocol: json"),
    ({"url": "http://x", "protocol": "json", "reply_path": "a"},
     "agent.http.request: required with protocol: json"),
    ({"url": "http://x", "protocol": "json", "request": {"m": "${messages}"}},
     "agent.http.reply_path: required with protocol: json"),
    ({"url": "http://x", "protocol": "json", "request": {"m": "${messages}"},
      "reply_path": "r", "tools": "client"},
     "agent.http.tools: client tools need protocol: openai_chat"),
    ({"url": "http://x", "protocol": "json", "request": {"m": "${messages}"},
      "reply_path": "r", "model": "gpt"},
     "agent.http.model: applies only to protocol: openai_chat"),
    ({"url": "http://x", "protocol": "json", "request": {"m": "${message}"}, "reply_path": "r"},
     "agent.http.request: a stateless agent is sent the whole conversation"),
    ({"url": "http://x", "protocol": "openai_chat", "session": "stateful"},
     "agent.http.session: a stateful agent tells episodes apart by ${session_id}"),
    ({"url": "http://x/${mcp_url}", "protocol": "openai_chat"},
     "agent.http.url: ${mcp_url} is the address of the MCP-served mocks: it needs tools: mcp"),
    ({"url": "http://x", "protocol": "json", "request": {"m": "${messages}", "t": "${mcp_url}"},
      "reply_path": "r", "tools": "mcp", "tool_calls_path": "calls"},
     "agent.http.tool_calls_path: calls over MCP are recorded as they arrive"),
    ({"url": "http://x/${env:${message}}", "protocol": "openai_chat"},
     "agent.http.url: a placeholder cannot hold another"),
    ({"url": "http://x", "protocol": "openai_chat", "headers": {"A": "${message"}},
     "agent.http.headers.A: unclosed '${'"),
    ({"url": "ftp://x", "protocol": "openai_chat"}, "agent.http.url: an http:// or https://"),
    ({"url": "http://x", "protocol": "json", "request": {"m": "${messages}"},
      "reply_path": "a..b"}, "agent.http.reply_path: a dotted path such as output.text"),
    ({"url": "http://x", "protocol": "graphql"}, "agent.http.protocol: Input should be"),
]


@pytest.mark.parametrize(("http", "expected"), BAD_AGENTS)
def test_a_mistake_in_agent_http_is_a_load_time_error_naming_file_and_field(
        tmp_path: Path, http: dict[str, Any], expected: str) -> None:
    suite = write_suite(tmp_path, [scenario("s", http)])
    done = run_cli("validate", str(suite))
    assert done.returncode == 2
    assert f"{suite}:1: [0].{expected}" in done.stderr, done.stderr


@pytest.mark.parametrize(("agent", "expected"), [
    ({"model": "mock:agent", "http": {"url": "http://x", "protocol": "openai_chat"}},
     "not model and http together"),
    ({"http": {"url": "http://x", "protocol": "openai_chat"}, "params": {"temperature": 0}},
     "'params' applies only to a model agent"),
    ({"http": {"url": "http://x", "protocol": "openai_chat"}, "system_prompt": "Be brief."},
     "an HTTP agent has its own system prompt"),
])
def test_an_http_agent_is_the_only_agent_given(tmp_path: Path, agent: dict[str, Any],
                                               expected: str) -> None:
    suite = write_suite(tmp_path, [{"id": "s", "user": {"goal": "g", "script": ["hi"]},
                                    "agent": agent}])
    done = run_cli("validate", str(suite))
    assert done.returncode == 2 and expected in done.stderr, done.stderr
