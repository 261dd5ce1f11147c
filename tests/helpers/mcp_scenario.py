"""A scenario whose mocked tools use every way of answering (fixed, injected error, sequence,
state read and written, a Python handler), written to a directory with its Python module,
for the tests of the tools served over MCP; and Python agents that call those tools with the
official MCP client."""

from __future__ import annotations

import textwrap
import uuid
from pathlib import Path
from typing import Any

import yaml

from harness.scenarios.loading import load_scenarios
from harness.scenarios.schema import Scenario

TOOLS: list[dict[str, Any]] = [
    {"name": "get_weather", "description": "Current weather for a city.",
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                    "required": ["city"], "additionalProperties": False},
     "returns": {"city": "${args.city}", "temperature_c": 18}},
    {"name": "flaky", "description": "A service that is down.",
     "parameters": {"type": "object", "properties": {}},
     "error": "service unavailable"},
    {"name": "next_ticket", "description": "Hands out tickets in turn.",
     "parameters": {"type": "object", "properties": {}},
     "sequence": [{"returns": "A1"}, {"returns": "A2"}], "after_sequence": "error"},
    {"name": "add_item", "description": "Adds an item to the cart.",
     "parameters": {"type": "object", "properties": {"item": {"type": "string"}},
                    "required": ["item"]},
     "returns": {"added": "${args.item}"}, "append_state": {"cart": "${args.item}"}},
    {"name": "view_cart", "description": "The items in the cart.",
     "parameters": {"type": "object", "properties": {}},
     "returns": {"items": "${state.cart}"}},
]

# The module beside the scenario: a tool handler, and agents that reach the tools over MCP.
MODULE = '''
import asyncio

from mcp import Client


def shout(state, args):
    return {"word": args["word"].upper()}


async def use_tools(mcp_url):
    async with Client(mcp_url) as client:
        weather = await client.call_tool("get_weather", {"city": "Paris"})
        await client.call_tool("add_item", {"item": "tea"})
        return "It is " + weather.content[0].text


async def agent(messages, toolbox, *, mcp_url):
    return await use_tools(mcp_url)


def sync_agent(messages, toolbox, mcp_url=None):
    return asyncio.run(use_tools(mcp_url))


async def slow_agent(messages, toolbox, *, mcp_url):
    await asyncio.sleep(0.3)
    return await use_tools(mcp_url)
'''


def write_scenario(directory: Path, *, agent: str = "agent", max_tool_calls: int = 8,
                   scenario_id: str = "mcp-tools", extra: list[dict[str, Any]] | None = None
                   ) -> Path:
    """Write the scenario (plus ``extra`` scenarios in the same file) and its module into
    ``directory``; returns the scenario file. ``agent`` names the module's agent function.
    The module's name is unique, so tests in one process never share an imported module."""
    module = f"mcp_tools_{uuid.uuid4().hex[:12]}"
    (directory / f"{module}.py").write_text(textwrap.dedent(MODULE), encoding="utf-8")
    handler_tool = {
        "name": "shout", "description": "Upper-cases a word.",
        "parameters": {"type": "object", "properties": {"word": {"type": "string"}},
                       "required": ["word"]},
        "handler": f"{module}:shout",
    }
    scenario = {
        "id": scenario_id,
        "user": {"persona": "Checks the tools.", "goal": "Use the tools.",
                 "script": ["What is the weather in Paris? Add tea to my cart."]},
        "agent": {"callable": f"{module}:{agent}"},
        "tools": [*TOOLS, handler_tool],
        "state": {"cart": []},
        "limits": {"max_tool_calls": max_tool_calls},
        "expectations": {
            "tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}},
                           {"name": "add_item", "args": {"item": "tea"}}],
            "final_state": {"cart": ["tea"]},
        },
    }
    path = directory / "mcp_tools.yaml"
    path.write_text(yaml.safe_dump([scenario, *(extra or [])], sort_keys=False),
                    encoding="utf-8")
    return path


def load(path: Path) -> Scenario:
    """The first scenario of the file."""
    return load_scenarios([path])[0]
