"""The example agent of examples/openai_agents, a real OpenAI Agents SDK agent served over
HTTP, end to end: its model is the loopback server (a responder below plays it), its tools an
MCP server (the official SDK), and its process may use nothing but 127.0.0.1
(tests/helpers/loopback_only.py records and refuses anything else)."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn
from mcp import types
from mcp.server.lowlevel import Server
from starlette.applications import Starlette
from starlette.routing import Mount

from harness.runs.store import RunStore
from harness.testing.replies import RecordedRequest, Reply
from harness.testing.server import LoopbackServer
from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "openai_agents"
LOOPBACK_ONLY = Path(__file__).parent / "helpers" / "loopback_only.py"

# --- the model: a responder that plays the agent's model on the loopback server -----------

BOOKING_ID = re.compile(r"\bB-\d{4}\b")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
ASK_FOR_ID = "I can help with that. What is your booking id?"


def _text(content: Any) -> str:
    """A Chat Completions message's text, whether a string or a list of text parts."""
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def play_booking_model(request: RecordedRequest) -> Reply:
    """The agent's model, deterministically, from the request alone (so it knows only what
    the agent sent it): ask for the booking id until the guest has given one in any turn;
    then, in this turn, look the booking up and, when the guest named a date in any turn,
    move it, each only if the request offers the tool; then answer from the last tool
    result."""
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    guest = " ".join(_text(m.get("content")) for m in messages if m.get("role") == "user")
    this_turn = messages[last_user:]
    offered = {tool["function"]["name"] for tool in request.tools}
    called = {call["function"]["name"] for m in this_turn for call in m.get("tool_calls") or []}
    results = [_text(m.get("content")) for m in this_turn if m.get("role") == "tool"]
    booking_ids, dates = BOOKING_ID.findall(guest), DATE.findall(guest)
    if not booking_ids:
        return Reply.text_reply(ASK_FOR_ID)
    booking = booking_ids[-1]
    if "get_booking" in offered and "get_booking" not in called:
        return Reply.tool_call("get_booking", {"booking_id": booking})
    if dates and "change_booking_date" in offered and "change_booking_date" not in called:
        return Reply.tool_call("change_booking_date",
                               {"booking_id": booking, "new_date": dates[-1]})
    try:
        found = json.loads(results[-1]) if results else None
    except ValueError:
        found = None  # an error as plain text
    if isinstance(found, dict) and "check_in" in found:
        return Reply.text_reply(
            f"Booking {booking} at {found.get('hotel')}: check-in {found['check_in']}, "
            f"{found.get('nights')} nights, {found.get('status')}.")
    if isinstance(found, dict) and "error" in found:  # the harness's {"error": message}
        reason = str(found["error"])
    else:
        reason = results[-1] if results else "I have no tool to look it up"
    return Reply.text_reply(f"Sorry, booking {booking} could not be changed: {reason}")


# --- the tools: an MCP server of the official SDK, one state per conversation --------------

TOOLS = [
    types.Tool(name="get_booking", description="Look up a booking by its id.",
               input_schema={"type": "object", "required": ["booking_id"],
                             "properties": {"booking_id": {"type": "string"}}}),
    types.Tool(name="change_booking_date", description="Move a booking to a new check-in date.",
               input_schema={"type": "object", "required": ["booking_id", "new_date"],
                             "properties": {"booking_id": {"type": "string"},
                                            "new_date": {"type": "string"}}}),
]


@dataclass
class Conversation:
    """One conversation's tool state (its bookings) and the calls that reached it."""

    bookings: dict[str, dict[str, Any]] = field(default_factory=lambda: {
        "B-2041": {"hotel": "Hotel Lumen", "check_in": "2025-07-05", "nights": 2,
                   "status": "confirmed"}})
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def server(self) -> Server[Any]:
        """An MCP server (the official SDK's low-level one) answering from this state."""

        async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
            return types.ListToolsResult(tools=TOOLS)

        async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
            args = dict(params.arguments or {})
            self.calls.append((params.name, args))
            booking = self.bookings.get(str(args.get("booking_id")))
            if booking is None:
                return _tool_result(f"no booking {args.get('booking_id')}", error=True)
            if params.name == "change_booking_date":
                booking["check_in"] = args["new_date"]
            return _tool_result(json.dumps(booking))

        return Server("bookings", on_list_tools=list_tools, on_call_tool=call_tool)


def _tool_result(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                is_error=error)


@dataclass
class BookingTools:
    """The MCP server's address and its conversations, by name."""

    port: int
    conversations: dict[str, Conversation]

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}/mcp"


@contextlib.contextmanager
def serve_booking_tools(*names: str) -> Iterator[BookingTools]:
    """An MCP server (streamable HTTP) on 127.0.0.1 and a free port, in a thread of its own,
    serving each named conversation its own state at ``/<name>/mcp``."""
    conversations = {name: Conversation() for name in names}
    servers = {name: c.server() for name, c in conversations.items()}
    apps = {name: s.streamable_http_app() for name, s in servers.items()}

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        async with contextlib.AsyncExitStack() as stack:
            for server in servers.values():
                await stack.enter_async_context(server.session_manager.run())
            yield

    app = Starlette(routes=[Mount(f"/{name}", app=a) for name, a in apps.items()],
                    lifespan=lifespan)
    with _serving(app) as port:
        yield BookingTools(port, conversations)


@contextlib.contextmanager
def _serving(app: Starlette) -> Iterator[int]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the MCP server did not start"
        time.sleep(0.02)
    try:
        yield int(sock.getsockname()[1])
    finally:
        server.should_exit = True
        thread.join(timeout=10)


# --- the agent: agent_server.py in a process of its own, on loopback only ------------------


@dataclass
class AgentProcess:
    """The running example agent: its URL, and what its process connected to."""

    process: subprocess.Popen[str]
    url: str
    network_log: Path

    @property
    def port(self) -> int:
        return int(self.url.split(":")[2].split("/")[0])

    def stop(self) -> list[dict[str, Any]]:
        """Stop it as Ctrl-C would (so its exit handlers run too) and return every address
        it resolved or connected to."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                pytest.fail("the agent server did not stop on SIGINT")
        lines = self.network_log.read_text().splitlines() if self.network_log.exists() else []
        return [json.loads(line) for line in lines]


@contextlib.contextmanager
def agent_server(loopback: LoopbackServer, tmp_path: Path, *args: str) -> Iterator[AgentProcess]:
    """Start examples/openai_agents/agent_server.py on a free port, its model the loopback
    server, tracing off, no key or proxy from this environment; stopped on leaving."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "AGENT_")) and not k.lower().endswith("_proxy")}
    env.update(OPENAI_BASE_URL=loopback.openai_base_url, OPENAI_API_KEY="sk-loopback-test",
               AGENT_MODEL="loopback-model", OPENAI_AGENTS_DISABLE_TRACING="1")
    network_log = tmp_path / "agent-network.jsonl"
    stderr = (tmp_path / "agent-stderr.txt").open("w")
    process = subprocess.Popen(
        [sys.executable, str(LOOPBACK_ONLY), str(network_log), str(EXAMPLE / "agent_server.py"),
         "--port", "0", *args],
        stdout=subprocess.PIPE, stderr=stderr, text=True, env=env, cwd=tmp_path)
    agent: AgentProcess | None = None
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 60)
        line = process.stdout.readline() if ready else ""
        found = re.search(r"http://127\.0\.0\.1:\d+/chat", line)
        if found is None:
            process.kill()
            process.wait()
            pytest.fail(f"the agent server did not start: {line!r} "
                        f"{(tmp_path / 'agent-stderr.txt').read_text()[-2000:]}")
        agent = AgentProcess(process, found.group(0), network_log)
        yield agent
    finally:
        if agent is not None:
            agent.stop()
        elif process.poll() is None:
            process.kill()
            process.wait()
        stderr.close()


def chat(agent: AgentProcess, session_id: str, message: str, mcp_url: str | None,
         *, expect: int = 200) -> dict[str, Any]:
    response = httpx2.post(agent.url, json={"session_id": session_id, "message": message,
                                            "mcp_url": mcp_url}, timeout=60)
    assert response.status_code == expect, response.text
    body: dict[str, Any] = response.json()
    return body


def _requests_with(loopback: LoopbackServer, text: str) -> list[RecordedRequest]:
    return [r for r in loopback.requests
            if any(text in _text(m.get("content")) for m in r.messages)]


# --- (a) the agent itself ------------------------------------------------------------------


def test_the_agent_calls_its_tools_over_mcp_remembers_its_session_and_stays_on_loopback(
        loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.set_responder(play_booking_model)
    with serve_booking_tools("alice", "bob") as tools, agent_server(loopback, tmp_path) as agent:
        first = chat(agent, "alice", "Hi, I need to move my stay to 2025-07-12.",
                     tools.url("alice"))
        other = chat(agent, "bob", "Hello, what is booking B-2041?", tools.url("bob"))
        second = chat(agent, "alice", "It's B-2041.", tools.url("alice"))
        destinations = agent.stop()

    assert first == {"reply": ASK_FOR_ID, "tool_calls": []}
    # The date came in alice's first turn only: the SDK session carried it to the second.
    moved = [{"name": "get_booking", "arguments": {"booking_id": "B-2041"}},
             {"name": "change_booking_date",
              "arguments": {"booking_id": "B-2041", "new_date": "2025-07-12"}}]
    assert second == {"tool_calls": moved, "reply": "Booking B-2041 at Hotel Lumen: check-in "
                                                    "2025-07-12, 2 nights, confirmed."}
    assert other["tool_calls"] == [moved[0]] and "2025-07-05" in other["reply"]

    # The calls arrived over MCP, each at its own conversation's state.
    alice, bob = tools.conversations["alice"], tools.conversations["bob"]
    assert alice.calls == [(c["name"], c["arguments"]) for c in moved]
    assert bob.calls == [("get_booking", {"booking_id": "B-2041"})]
    assert alice.bookings["B-2041"]["check_in"] == "2025-07-12"
    assert bob.bookings["B-2041"]["check_in"] == "2025-07-05"

    # The model saw alice's first turn and its own question again in her second, and the
    # tools' results; bob's requests never held alice's words.
    final = _requests_with(loopback, "It's B-2041.")[-1]
    said = [(m["role"], _text(m.get("content"))) for m in final.messages]
    assert ("user", "Hi, I need to move my stay to 2025-07-12.") in said
    assert ("assistant", ASK_FOR_ID) in said
    tool_results = [json.loads(text) for role, text in said if role == "tool"]
    assert [r["check_in"] for r in tool_results] == ["2025-07-05", "2025-07-12"]
    bob_requests = _requests_with(loopback, "what is booking B-2041?")
    assert bob_requests and all("2025-07-12" not in json.dumps(r.messages) for r in bob_requests)
    assert {t["function"]["name"] for t in final.tools} == {"get_booking", "change_booking_date"}

    # Nothing but 127.0.0.1, and the record did see the model server and the tool server.
    assert destinations and {d["host"] for d in destinations} == {"127.0.0.1"}
    connected = {d["port"] for d in destinations if d["event"] == "socket.connect"}
    assert {loopback.port, tools.port} <= connected


def test_the_agent_answers_failures_with_a_short_json_error_and_keeps_serving(
        loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.set_responder(play_booking_model)
    with serve_booking_tools("carol") as tools, agent_server(loopback, tmp_path) as agent:
        bad = httpx2.post(agent.url, content=b"not json", timeout=30)
        missing = chat(agent, "", "hello", None, expect=400)
        no_tools = chat(agent, "carol", "What is booking B-2041?",
                        f"{loopback.url}/no-mcp-here", expect=502)
        loopback.enqueue(Reply.unauthorized())  # the openai client does not retry a 401
        refused = chat(agent, "carol", "What is booking B-2041?", tools.url("carol"),
                       expect=502)
        after = chat(agent, "carol", "What is booking B-2041?", tools.url("carol"))

    assert bad.status_code == 400 and bad.json() == {"error": "body is not JSON"}
    assert missing == {"error": "session_id: expected a non-empty string"}
    assert list(no_tools) == ["error"] and no_tools["error"].startswith("tool server: ")
    assert "/no-mcp-here" in no_tools["error"]
    assert list(refused) == ["error"] and refused["error"].startswith("model endpoint: ")
    assert "invalid x-api-key" in refused["error"]
    for body in (no_tools, refused):
        assert "\n" not in body["error"] and len(body["error"]) <= 300
    assert after["tool_calls"] == [{"name": "get_booking", "arguments": {"booking_id": "B-2041"}}]


def test_a_model_that_never_answers_is_a_504_within_the_time_limit(
        loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.enqueue(Reply.slow(5, then=Reply.text_reply("too late")))
    with agent_server(loopback, tmp_path, "--timeout", "1") as agent:
        started = time.monotonic()
        late = chat(agent, "dave", "Hello?", None, expect=504)
        elapsed = time.monotonic() - started
    assert late == {"error": "the agent did not answer within 1 s"}
    assert elapsed < 4
    # Let the slow reply finish, so the shared loopback server has nothing left pending.
    deadline = time.monotonic() + 10
    while loopback.in_flight and time.monotonic() < deadline:
        time.sleep(0.05)


def test_importing_the_agent_server_turns_the_sdks_tracing_off(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The SDK exports traces to OpenAI's servers by default; the example must switch that off
    # itself, whatever its environment says.
    import agents
    from agents.tracing.traces import NoOpTrace

    agents.set_tracing_disabled(False)
    try:
        assert not isinstance(agents.trace("probe"), NoOpTrace)  # the check can fail
        spec = importlib.util.spec_from_file_location("example_agent_server",
                                                      EXAMPLE / "agent_server.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, spec.name, module)
        spec.loader.exec_module(module)
        assert isinstance(agents.trace("probe"), NoOpTrace)
    finally:
        agents.set_tracing_disabled(True)


# --- (b) the harness runs it: agent.http (json, stateful), tools served over MCP -----------

SCENARIO = EXAMPLE / "scenario.yaml"


def test_the_example_scenario_validates() -> None:
    result = run_cli("validate", SCENARIO, env={"AGENT_PORT": "8000"})
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("ok: 2 scenarios")


def test_harness_runs_the_example_agent_over_http_with_its_tools_over_mcp(
        loopback: LoopbackServer, tmp_path: Path) -> None:
    loopback.set_responder(play_booking_model)
    out = tmp_path / "run"
    with agent_server(loopback, tmp_path) as agent:
        result = run_cli("run", SCENARIO, "--offline", "--epochs", "2", "--out", out,
                         env={"AGENT_PORT": str(agent.port)})
        destinations = agent.stop()
    assert result.returncode == 0, result.stdout + result.stderr
    assert {d["host"] for d in destinations} == {"127.0.0.1"}

    with RunStore.open(out) as store:
        samples = list(store.iter_samples())
    assert sorted((s.scenario_id, s.epoch) for s in samples) == [
        ("booking-move-stay", 0), ("booking-move-stay", 1),
        ("booking-move-stay-full", 0), ("booking-move-stay-full", 1)]
    for sample in samples:
        transcript = sample.transcript
        assert sample.status == "scored", sample.error
        assert transcript.stop_reason == "goal_met"
        # Recorded from the calls that reached the harness's MCP server, in the guest's
        # second turn (the first only asked for the booking id).
        calls = [(c.name, c.arguments, c.turn, c.is_error) for c in transcript.tool_calls]
        booking_id = "B-2041" if sample.scenario_id == "booking-move-stay" else "B-3310"
        new_date = "2025-07-12" if booking_id == "B-2041" else "2025-08-01"
        assert calls == [
            ("get_booking", {"booking_id": booking_id}, 1, False),
            ("change_booking_date", {"booking_id": booking_id, "new_date": new_date}, 1,
             booking_id == "B-3310"),
        ]
        for check in ("trajectory_exact_match", "forbidden_tools_avoided", "final_state_match",
                      "required_phrases"):
            assert sample.metrics[check] == 1.0, (sample.scenario_id, check)
        judged = {j["rubric_id"]: j for j in sample.judgments}
        assert {"task_completion", "confirms_the_change"} <= set(judged)
        assert all(j["status"] == "scored" for j in judged.values())
        assert "rubric:confirms_the_change" in sample.metrics
        # one agent step per request; the MCP calls ran inside the request's time
        agent_steps = [s for s in transcript.steps if s.role == "agent"]
        assert [s.turn for s in agent_steps] == [0, 1, 2][:len(agent_steps)]
        assert all(s.includes_tool_time and s.latency_s > 0 for s in agent_steps)
        assert transcript.turn_latencies()[1] == pytest.approx(agent_steps[1].latency_s)

    moved = next(s.transcript for s in samples if s.scenario_id == "booking-move-stay")
    assert moved.final_state is not None
    assert moved.final_state["bookings"]["B-2041"]["check_in"] == "2025-07-12"
    assert moved.final_state["changes"] == [{"booking_id": "B-2041", "check_in": "2025-07-12"}]
    assert "2025-07-12" in moved.final_response
    full = next(s.transcript for s in samples if s.scenario_id == "booking-move-stay-full")
    assert full.final_state is not None
    assert full.final_state["bookings"]["B-3310"]["check_in"] == "2025-07-20"
    assert full.final_state["changes"] == []
    assert "no rooms free on 2025-08-01" in full.final_response
