"""A scenario's mocked tools as an MCP server (the official SDK's low-level ``Server``): the
tools listed with the scenario's names, descriptions and JSON Schemas, every call answered by
:meth:`Toolbox.call <harness.tools.toolbox.Toolbox.call>` and so validated, answered and
recorded exactly as for a model agent. The transport (streamable HTTP, stdio) is the caller's.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server, ServerRequestContext

from harness.models.types import ToolSpec
from harness.tools.toolbox import Toolbox
from harness.transcript import ToolCallRecord

ToolboxFor = Callable[[ServerRequestContext[Any, Any]], Toolbox]
"""Which toolbox answers a request: one per episode, or one per MCP session."""
OnCall = Callable[[ToolCallRecord], None]


def mock_tools_server(
    name: str, specs: Sequence[ToolSpec], toolbox_for: ToolboxFor, *, on_call: OnCall | None = None
) -> Server[Any]:
    """An MCP server listing ``specs`` and answering each ``tools/call`` with the toolbox
    ``toolbox_for(ctx)`` gives for that request; ``on_call`` sees each call's record.

    The SDK does not check arguments against the input schema here (the low-level server never
    does; its header check is switched off with ``get_tool_input_schema``), so every call
    reaches the toolbox: one whose arguments fail the schema, an unknown tool, an injected
    error or the tool-call limit comes back as a tool result with ``isError: true`` and the
    toolbox's message as text, and is recorded with its kind. A result is its JSON text
    (a string as it is), plus structured content when it is a JSON object.

    A toolbox with Python handlers answers in a worker thread, so a slow handler holds up
    only its own toolbox's calls, never the event loop (other sessions, other episodes);
    each toolbox answers one call at a time, in the order they came, as on the loop.
    """
    listing = types.ListToolsResult(tools=[
        types.Tool(name=s.name, description=s.description or None, input_schema=s.parameters)
        for s in specs
    ])

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listing

    # One lock per toolbox, gone with it (serve-tools keeps one toolbox per session).
    locks: weakref.WeakKeyDictionary[Toolbox, anyio.Lock] = weakref.WeakKeyDictionary()

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        toolbox = toolbox_for(ctx)
        arguments = params.arguments or {}
        lock = locks.setdefault(toolbox, anyio.Lock())
        async with lock:
            if toolbox.has_handlers:
                result = await anyio.to_thread.run_sync(toolbox.call, params.name, arguments)
            else:  # answered from the scenario alone: quicker here than a thread's round trip
                result = toolbox.call(params.name, arguments)
            record = toolbox.records[-1]
        if on_call is not None:
            on_call(record)
        if result.is_error:  # the message alone: isError already says it failed
            return types.CallToolResult(
                content=[types.TextContent(text=result.error_message or result.content)],
                is_error=True)
        return types.CallToolResult(
            content=[types.TextContent(text=result.content)],
            structured_content=result.value if isinstance(result.value, dict) else None)

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool,
                  get_tool_input_schema=_no_header_schema)


def _no_header_schema(name: str) -> None:
    """Nothing for the SDK to check before a call: the toolbox validates arguments (and
    without this the SDK would run ``tools/list`` on every call to look for header
    declarations)."""
    return None
