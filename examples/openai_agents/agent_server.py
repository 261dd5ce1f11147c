"""A hotel-booking agent built on the OpenAI Agents SDK, served over HTTP.

This is the kind of agent a team ships: a framework's agent behind an HTTP endpoint, reaching
its tools over the Model Context Protocol. The harness tests it as it runs, with a simulated
guest, the scenario's mocked tools served over MCP, checks and judges (see README.md here).

``POST /chat`` with ``{"session_id": str, "message": str, "mcp_url": str | null}`` runs the
agent on the message, with the tools of the MCP server at ``mcp_url`` (streamable HTTP) and
the conversation memory of ``session_id`` (one SDK session each, kept in memory for the
life of the process). It answers ``{"reply": str, "tool_calls": [{"name", "arguments"}]}``.
A bad request is a 400; a failure of the model endpoint or the tool server a 502, an answer
slower than ``--timeout`` a 504, any other failure of the agent a 500; each with
``{"error": "<one short line>"}``.

The model is any OpenAI-compatible Chat Completions endpoint: ``OPENAI_BASE_URL`` (default
OpenAI's), ``OPENAI_API_KEY`` and ``AGENT_MODEL`` (default ``gpt-4.1-mini``). The SDK's
tracing is switched off: it would send every run to OpenAI's servers.

    python agent_server.py --port 8000     # prints its URL once it accepts requests
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import socket
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    RunResult,
    SQLiteSession,
    ToolCallItem,
    set_tracing_disabled,
)
from agents.mcp import MCPServer, MCPServerStreamableHttp
from openai import APIError, AsyncOpenAI, OpenAIError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

# Before anything runs: the SDK exports a trace of every run to OpenAI unless told not to.
set_tracing_disabled(True)

log = logging.getLogger("agent_server")

INSTRUCTIONS = """\
You are the booking assistant of a small hotel group. Ask for the booking id (like B-2041)
if the guest has not given it. Look the booking up with get_booking before changing it.
When the guest asks to move a stay, call change_booking_date with the new check-in date
(YYYY-MM-DD), then confirm the booking id and the new date. If the change is refused, say
why and suggest the guest picks another date. Never cancel a booking: cancellations go
through the front desk."""

MAX_ERROR_CHARS = 300


class BadRequest(ValueError):
    """The request body is not what ``POST /chat`` takes (answered with a 400)."""


class ToolServerError(RuntimeError):
    """The MCP server at ``mcp_url`` could not be reached or refused the session."""


@dataclass
class BookingAgent:
    """The agent and the memory of its sessions.

    ``answer`` runs one turn; the per-session lock keeps two requests of one session from
    interleaving their turns in its memory.
    """

    model: OpenAIChatCompletionsModel
    timeout_s: float
    max_turns: int = 10
    _sessions: dict[str, SQLiteSession] = field(default_factory=dict)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    async def answer(self, session_id: str, message: str, mcp_url: str | None) -> dict[str, Any]:
        """Run the agent on ``message`` in session ``session_id`` with the tools at
        ``mcp_url`` (none when ``None``); returns the reply and the tool calls made. Raises
        ``TimeoutError`` past ``timeout_s``, :class:`ToolServerError` when the MCP server
        cannot be used, ``openai.APIError`` when the model endpoint fails, and the SDK's
        ``AgentsException`` for anything else the run refuses."""
        if session_id not in self._sessions:
            self._sessions[session_id] = SQLiteSession(session_id)
            self._locks[session_id] = asyncio.Lock()
        async with (self._locks[session_id], asyncio.timeout(self.timeout_s),
                    contextlib.AsyncExitStack() as stack):
            servers: list[MCPServer] = []
            if mcp_url is not None:
                # One MCP connection per request, not per session: the SDK's connection
                # lives in the task that opened it, and each request is its own task. The
                # tools' state is the server's (one URL per conversation), so reconnecting
                # loses nothing.
                server = MCPServerStreamableHttp(
                    {"url": mcp_url, "timeout": self.timeout_s,
                     "sse_read_timeout": self.timeout_s},
                    name="tools", cache_tools_list=True,
                    client_session_timeout_seconds=self.timeout_s)
                try:
                    servers.append(await stack.enter_async_context(server))
                except Exception as err:
                    raise ToolServerError(f"{mcp_url}: {innermost(err)}") from err
            agent = Agent(name="booking assistant", instructions=INSTRUCTIONS,
                          model=self.model, mcp_servers=servers)
            result = await Runner.run(agent, message, session=self._sessions[session_id],
                                      max_turns=self.max_turns)
        return {"reply": str(result.final_output), "tool_calls": tool_calls_of(result)}


def tool_calls_of(result: RunResult) -> list[dict[str, Any]]:
    """The function calls a run made, in order, as ``{"name", "arguments"}`` (arguments
    parsed when they are JSON, else the raw text the model wrote)."""
    calls: list[dict[str, Any]] = []
    for item in result.new_items:
        if not isinstance(item, ToolCallItem):
            continue
        name = getattr(item.raw_item, "name", None)
        raw = getattr(item.raw_item, "arguments", None)
        if name is None:
            continue  # hosted tools (web search...) have no function call to report
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            arguments = raw
        calls.append({"name": name, "arguments": arguments})
    return calls


def innermost(err: BaseException) -> BaseException:
    """The first exception an exception group (the MCP client's task groups) wraps."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return err


def _parse_chat(body: Any) -> tuple[str, str, str | None]:
    """``(session_id, message, mcp_url)`` from a request body; raises :class:`BadRequest`."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    session_id, message, mcp_url = body.get("session_id"), body.get("message"), body.get("mcp_url")
    if not isinstance(session_id, str) or not session_id:
        raise BadRequest("session_id: expected a non-empty string")
    if not isinstance(message, str):
        raise BadRequest("message: expected a string")
    if mcp_url is not None and not (
            isinstance(mcp_url, str) and mcp_url.startswith(("http://", "https://"))):
        raise BadRequest("mcp_url: expected an http(s) URL or null")
    unknown = sorted(set(body) - {"session_id", "message", "mcp_url"})
    if unknown:
        raise BadRequest(f"unknown fields: {', '.join(unknown)}")
    return session_id, message, mcp_url


def _error(status: int, message: str) -> JSONResponse:
    line = " ".join(message.split())  # one line, whatever the exception's text held
    if len(line) > MAX_ERROR_CHARS:
        line = line[: MAX_ERROR_CHARS - 1] + "…"
    return JSONResponse({"error": line}, status_code=status)


def build_app(agent: BookingAgent) -> Starlette:
    """The ASGI app: ``POST /chat`` answered by ``agent``."""

    async def chat(request: Request) -> JSONResponse:
        try:
            session_id, message, mcp_url = _parse_chat(await request.json())
        except ValueError as err:  # BadRequest, or a body that is not JSON
            return _error(400, str(err) if isinstance(err, BadRequest) else "body is not JSON")
        try:
            return JSONResponse(await agent.answer(session_id, message, mcp_url))
        except Exception as raised:
            return _failure(innermost(raised), agent.timeout_s)

    return Starlette(routes=[Route("/chat", chat, methods=["POST"])])


def _failure(err: BaseException, timeout_s: float) -> JSONResponse:
    """The answer to a request whose run raised ``err``."""
    if isinstance(err, TimeoutError):
        return _error(504, f"the agent did not answer within {timeout_s:g} s")
    if isinstance(err, ToolServerError):
        return _error(502, f"tool server: {err}")
    if isinstance(err, APIError):
        return _error(502, f"model endpoint: {err}")
    log.error("the agent failed", exc_info=err)
    return _error(500, f"agent: {type(err).__name__}: {err}")


async def serve(app: Starlette, host: str, port: int) -> None:
    """Serve ``app`` on ``host:port`` (0: a free port); print the URL once it accepts."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            return await task  # startup failed; uvicorn has said why
        await asyncio.sleep(0.02)
    print(f"agent server ready on http://{host}:{bound}/chat", flush=True)
    await task


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the command line, build the model client from the environment, serve."""
    parser = argparse.ArgumentParser(
        description="A hotel-booking agent (OpenAI Agents SDK) served over HTTP: POST /chat.")
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8000,
                        help="port (0: a free one; default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds one /chat request may take (default: %(default)s)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    try:
        client = AsyncOpenAI(timeout=args.timeout)  # OPENAI_BASE_URL, OPENAI_API_KEY
    except OpenAIError as err:
        sys.exit(f"agent_server: {err}")
    model = OpenAIChatCompletionsModel(os.environ.get("AGENT_MODEL", "gpt-4.1-mini"), client)
    app = build_app(BookingAgent(model=model, timeout_s=args.timeout))
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(app, args.host, args.port))


if __name__ == "__main__":
    main()
