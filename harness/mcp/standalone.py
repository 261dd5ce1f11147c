"""One scenario's mocked tools served by themselves (``harness serve-tools``), for an agent
developed or tested outside a run: over streamable HTTP at ``http://127.0.0.1:PORT/mcp``,
where each MCP session gets a fresh toolbox (its own state, sequences and call limit), or over
stdio, one session for the life of the process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from harness.errors import InputError
from harness.mcp.server import HOST, LOOPBACK_ONLY, bind_loopback, serving_asgi
from harness.mcp.tools import OnCall, mock_tools_server
from harness.scenarios.schema import Scenario
from harness.tools.toolbox import Toolbox

PATH = "/mcp"


def server_name(scenario: Scenario) -> str:
    return f"harness-mock-tools:{scenario.id}"


async def serve_stdio(scenario: Scenario, *, on_call: OnCall) -> None:
    """Serve the scenario's tools over this process's stdin/stdout (one session, one toolbox)
    until the client closes stdin."""
    toolbox = Toolbox.for_scenario(scenario)
    server = mock_tools_server(server_name(scenario), toolbox.specs, lambda ctx: toolbox,
                               on_call=on_call)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


class _Sessions:
    """A fresh toolbox per MCP session. Requests without a session (the 2026-07-28 protocol
    revision has none: each request stands alone) share one toolbox, so a state update is
    still seen by the calls after it."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.toolboxes: dict[str | None, Toolbox] = {}

    def __call__(self, ctx: ServerRequestContext[Any, Any]) -> Toolbox:
        headers = getattr(ctx.request, "headers", None)
        session = headers.get(MCP_SESSION_ID_HEADER) if headers is not None else None
        toolbox = self.toolboxes.get(session)
        if toolbox is None:
            toolbox = self.toolboxes[session] = Toolbox.for_scenario(self.scenario)
        return toolbox


async def serve_http(scenario: Scenario, *, port: int, on_call: OnCall,
                     on_ready: Callable[[str], None]) -> None:
    """Serve the scenario's tools over streamable HTTP on 127.0.0.1:``port`` (0: a free port)
    until cancelled; ``on_ready(url)`` is called once it listens. Raises :class:`InputError`
    when the port cannot be bound."""
    try:
        sock = bind_loopback(port)
    except OSError as err:
        raise InputError("command line", "--port", f"cannot listen on {HOST}:{port} "
                         f"({err.strerror or err}); pick another port (0: any free one)"
                         ) from None
    sessions = _Sessions(scenario)
    specs = Toolbox.for_scenario(scenario).specs
    manager = StreamableHTTPSessionManager(
        app=mock_tools_server(server_name(scenario), specs, sessions, on_call=on_call),
        json_response=True, security_settings=LOOPBACK_ONLY)

    async def route(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["path"] != PATH:
            await PlainTextResponse(f"the MCP endpoint is {PATH}", status_code=404)(
                scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)

    async with manager.run(), serving_asgi(route, sock):
        on_ready(f"http://{HOST}:{sock.getsockname()[1]}{PATH}")
        await asyncio.Event().wait()  # until cancelled (Ctrl-C, SIGTERM)
