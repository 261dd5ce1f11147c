"""``harness serve-tools``: a scenario's mocked tools served by themselves over stdio and
streamable HTTP (each a real subprocess, reached with the official MCP client), one log line
per call on stderr, ``--record``, Ctrl-C, and the command's input errors."""

from __future__ import annotations

import asyncio
import json
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.helpers.cli import run_cli
from tests.helpers.mcp_scenario import write_scenario

HARNESS = [sys.executable, "-m", "harness", "serve-tools"]


def text(result: types.CallToolResult) -> str:
    assert isinstance(result.content[0], types.TextContent)
    return result.content[0].text


async def test_over_stdio_one_session_keeps_its_state_and_every_call_is_logged_and_recorded(
        tmp_path: Path) -> None:
    path = write_scenario(tmp_path)
    record = tmp_path / "calls.jsonl"
    params = StdioServerParameters(command=sys.executable, cwd=tmp_path, args=[
        "-m", "harness", "serve-tools", str(path), "--transport", "stdio",
        "--record", str(record)])
    with (tmp_path / "stderr.txt").open("w+", encoding="utf-8") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            await client.call_tool("add_item", {"item": "tea\x1b[2J"})
            cart = await client.call_tool("view_cart", {})
            invalid = await client.call_tool("add_item", {})
        errlog.seek(0)
        logged = errlog.read()
    assert listed == ["get_weather", "flaky", "next_ticket", "add_item", "view_cart", "shout"]
    assert cart.structured_content == {"items": ["tea\x1b[2J"]}
    assert invalid.is_error and text(invalid) == "invalid arguments: 'item' is a required property"
    lines = logged.splitlines()
    assert lines[0] == "serving 6 mocked tools of scenario mcp-tools over MCP on stdio"
    assert lines[1].startswith('add_item {"item": "tea\\u001b[2J"} -> {"added": ')
    assert lines[3].startswith("add_item {} -> error (invalid_arguments): invalid arguments: "
                               "'item' is a required property (")
    assert "\x1b" not in logged
    records = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    assert [(r["name"], r["arguments"], r["error"], r["step"]) for r in records] == [
        ("add_item", {"item": "tea\x1b[2J"}, None, 0), ("view_cart", {}, None, 1),
        ("add_item", {}, "invalid_arguments", 2)]
    assert records[1]["result"] == {"items": ["tea\x1b[2J"]} and records[1]["latency_s"] > 0


def default_sigint() -> None:
    """A process started in the background by a non-interactive shell inherits an ignored
    SIGINT, which Python keeps: the server starts with the default, as from a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def started(process: subprocess.Popen[str], timeout: float = 60) -> str:
    """The URL the server prints once it listens."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, "serve-tools printed nothing"
    line = process.stdout.readline()
    assert " over MCP at " in line, line
    return line.rsplit(" ", 1)[1].strip()


async def test_over_http_each_session_starts_fresh_and_ctrl_c_exits_cleanly(
        tmp_path: Path) -> None:
    path = write_scenario(tmp_path)
    port = free_port()
    process = subprocess.Popen([*HARNESS, str(path), "--port", str(port)], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=default_sigint)
    try:
        url = started(process)
        assert url == f"http://127.0.0.1:{port}/mcp"
        carts = []
        for item in ("tea", "milk"):
            async with Client(url, mode="legacy") as client:
                await client.call_tool("add_item", {"item": item})
                carts.append((await client.call_tool("view_cart", {})).structured_content)
        async with Client(url) as sessionless:  # the 2026-07-28 revision: no sessions
            await sessionless.call_tool("add_item", {"item": "jam"})
            carts.append((await sessionless.call_tool("view_cart", {})).structured_content)
            flaky = await sessionless.call_tool("flaky", {})
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert carts == [{"items": ["tea"]}, {"items": ["milk"]}, {"items": ["jam"]}]
    assert flaky.is_error and text(flaky) == "service unavailable"
    assert process.returncode == 130
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert lines[-1] == "interrupted: stopped after 7 calls"
    assert lines[-2].startswith("flaky {} -> error (injected): service unavailable (")


# A tool handler that takes its time in plain blocking code, as a scenario author's may: it
# leaves a mark when it starts, then sleeps.
SLOW_HANDLER = """
import pathlib, time

def slow(state, args):
    pathlib.Path(args["mark"]).touch()
    time.sleep(args["seconds"])
    return {"slept": args["seconds"]}
"""


def _slow_scenario(tmp_path: Path) -> Path:
    (tmp_path / "slow_handler_tools.py").write_text(SLOW_HANDLER, encoding="utf-8")
    scenario = {
        "id": "slow-tools", "user": {"goal": "g", "script": ["hi"]},
        "agent": {"model": "mock:agent"},
        "tools": [{"name": "slow", "description": "Takes its time.",
                   "parameters": {"type": "object"}, "handler": "slow_handler_tools:slow"},
                  {"name": "ping", "description": "Answers at once.",
                   "parameters": {"type": "object"}, "returns": "pong"}]}
    path = tmp_path / "slow.yaml"
    path.write_text(json.dumps(scenario), encoding="utf-8")
    return path


async def test_a_slow_handler_holds_up_no_other_session(tmp_path: Path) -> None:
    port = free_port()
    process = subprocess.Popen([*HARNESS, str(_slow_scenario(tmp_path)), "--port", str(port)],
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, preexec_fn=default_sigint)
    mark = tmp_path / "slow-started"
    try:
        url = started(process)
        async with Client(url, mode="legacy") as first, Client(url, mode="legacy") as second:
            slow = asyncio.create_task(first.call_tool(
                "slow", {"mark": str(mark), "seconds": 8}))
            deadline = time.monotonic() + 60
            while not mark.exists():  # the handler is running: the first session waits on it
                assert not slow.done() and time.monotonic() < deadline
                await asyncio.sleep(0.02)
            pong = await asyncio.wait_for(second.call_tool("ping", {}), timeout=60)
            # Answered while the first session's handler still sleeps (before: only after it)
            assert not slow.done()
            assert text(pong) == "pong"
            assert (await slow).structured_content == {"slept": 8}
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=30)
        finally:
            process.kill()
            process.communicate()
    assert process.returncode == 130


def test_a_file_of_several_scenarios_needs_an_id(tmp_path: Path) -> None:
    path = write_scenario(tmp_path, extra=[{
        "id": "second", "user": {"persona": "p", "goal": "g", "script": ["hi"]},
        "agent": {"model": "mock:agent"}}])
    done = run_cli("serve-tools", path, "--port", "0")
    assert done.returncode == 2
    assert done.stderr.strip() == (f"error: {path}: holds 2 scenarios; name one as FILE:id "
                                   "(ids: mcp-tools, second)")


@pytest.mark.parametrize(("name", "content", "expected"), [
    ("missing.yaml", None, "no such file or directory"),
    ("bad.yaml", "id: x\nuser: {persona: p}\n", "user.goal"),
])
def test_a_missing_or_bad_scenario_is_one_line(tmp_path: Path, name: str, content: str | None,
                                               expected: str) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_text(content, encoding="utf-8")
    done = run_cli("serve-tools", path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"error: {path}") and expected in done.stderr


def test_an_unknown_id_lists_the_ids(tmp_path: Path) -> None:
    path = write_scenario(tmp_path)
    done = run_cli("serve-tools", f"{path}:nope")
    assert done.returncode == 2
    assert "selects nothing; ids in this file: mcp-tools" in done.stderr


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    path = write_scenario(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli("serve-tools", path, "--port", str(port))
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: command line: --port: cannot listen on "
                                  f"127.0.0.1:{port} (")
