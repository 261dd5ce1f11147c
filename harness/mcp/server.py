"""The mocked tools of many episodes at once, over MCP streamable HTTP on 127.0.0.1: one
uvicorn server in the current event loop, one path per episode
(``/episodes/<token>/mcp``) with its own MCP server and session manager answering from that
episode's toolbox. The token is unguessable, so an episode's agent reaches only its own tools
and state; a path whose episode has ended answers 404.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import uvicorn
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from harness.errors import HarnessError
from harness.mcp.tools import mock_tools_server
from harness.tools.toolbox import Toolbox

HOST = "127.0.0.1"

# Requests must name a loopback host (the SDK's protection against DNS rebinding).
LOOPBACK_ONLY = TransportSecuritySettings(
    enable_dns_rebinding_protection=True,
    allowed_hosts=[f"{HOST}:*", "localhost:*"],
    allowed_origins=[f"http://{HOST}:*", "http://localhost:*"],
)


class _Uvicorn(uvicorn.Server):
    """uvicorn without its signal handlers: Ctrl-C and SIGTERM stay the harness's (the run
    records the stop and keeps what finished)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def bind_loopback(port: int = 0) -> socket.socket:
    """A TCP socket bound to 127.0.0.1:``port`` (0: a free port the system picks). Raises
    :class:`OSError` when the port is taken."""
    # The protocol named, or asyncio leaves Nagle's algorithm on for the connections it
    # accepts (it sets TCP_NODELAY only on sockets whose proto is IPPROTO_TCP), and each
    # response on a kept-alive connection waits ~40 ms for the client's delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((HOST, port))
    except OSError:
        sock.close()
        raise
    return sock


@contextlib.asynccontextmanager
async def serving_asgi(app: Any, sock: socket.socket) -> AsyncIterator[None]:
    """Serve the ASGI ``app`` on the bound ``sock`` with uvicorn in the current event loop
    until the block ends (errors and cancellation included). Raises :class:`HarnessError`
    when the server does not start."""
    config = uvicorn.Config(app, interface="asgi3", lifespan="off", log_config=None,
                            access_log=False, timeout_graceful_shutdown=1)
    server = _Uvicorn(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()  # its own error, if it has one
                raise HarnessError(f"the MCP tool server did not start on {HOST}")
            await asyncio.sleep(0.005)
        yield
    finally:
        server.should_exit = True
        # Shielded: a cancelled episode or run still closes the socket and its connections.
        await asyncio.shield(task)


class ToolServer:
    """Serves the mocked tools of many episodes at once over MCP streamable HTTP, on
    127.0.0.1 and a free port, inside the current event loop (uvicorn).

    ``async with ToolServer() as server:`` starts it; each ``async with
    server.episode(toolbox) as url:`` serves one episode's tools at its own URL."""

    def __init__(self) -> None:
        self._episodes: dict[str, StreamableHTTPSessionManager] = {}
        self._running: set[asyncio.Task[None]] = set()
        self._serving: contextlib.AbstractAsyncContextManager[None] | None = None
        self.port = 0

    async def __aenter__(self) -> ToolServer:
        sock = bind_loopback()
        self.port = sock.getsockname()[1]
        self._serving = serving_asgi(self._route, sock)
        await self._serving.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._episodes.clear()
        # Episodes left behind (a cancelled run) stop with the server.
        for task in self._running:
            task.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)
        if self._serving is not None:
            await self._serving.__aexit__(None, None, None)
            self._serving = None

    @contextlib.asynccontextmanager
    async def episode(self, toolbox: Toolbox) -> AsyncIterator[str]:
        """Serve this episode's toolbox; yields its URL
        (http://127.0.0.1:PORT/episodes/<unguessable token>/mcp). Calls that arrive are
        answered by toolbox.execute(...) and so recorded in toolbox.records with turn =
        toolbox.turn and step = toolbox.step (then step += 1). Leaving the block stops
        serving that episode (later calls get 404)."""
        if self._serving is None:
            raise HarnessError("ToolServer.episode() needs a started server (async with)")
        manager = StreamableHTTPSessionManager(
            app=mock_tools_server("harness-mock-tools", toolbox.specs, lambda ctx: toolbox),
            json_response=True, security_settings=LOOPBACK_ONLY)
        ready, stop = asyncio.Event(), asyncio.Event()

        async def run() -> None:
            # The manager's task group lives in a task of its own, not the episode's, so
            # cancelling an episode (its time limit) never tears it down half-way.
            async with manager.run():
                ready.set()
                await stop.wait()

        task = asyncio.create_task(run())
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        waiting = asyncio.create_task(ready.wait())
        await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if task.done():
            task.result()
            raise HarnessError("the MCP session manager of an episode stopped at once")
        token = secrets.token_urlsafe(24)
        self._episodes[token] = manager
        try:
            yield f"http://{HOST}:{self.port}/episodes/{token}/mcp"
        finally:
            self._episodes.pop(token, None)
            stop.set()
            await asyncio.shield(task)

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        parts = scope["path"].split("/")
        manager = (self._episodes.get(parts[2])
                   if len(parts) == 4 and parts[1] == "episodes" and parts[3] == "mcp" else None)
        if manager is None:
            await PlainTextResponse("no such episode: it has ended, or never existed",
                                    status_code=404)(scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)
