"""The mocked tools of episodes served over MCP (harness.mcp.ToolServer), seen through the
official MCP client: listing, calls answered and recorded by the episode's toolbox, every kind
of tool error, state kept per episode, and the path of an ended episode answering 404.

Each test runs in both protocol eras the SDK speaks: ``auto`` (the client discovers the
2026-07-28 per-request protocol) and ``legacy`` (the initialize handshake and a session, as
most agent frameworks use today)."""

from __future__ import annotations

import asyncio
import socket
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from harness.mcp import ToolServer
from harness.mcp.server import bind_loopback
from harness.tools import Toolbox
from tests.helpers.mcp_scenario import load, write_scenario

MODES = ["auto", "legacy"]


@pytest.fixture
async def server() -> AsyncIterator[ToolServer]:
    async with ToolServer() as started:
        yield started


@pytest.fixture
def toolbox(tmp_path: Path) -> Toolbox:
    return Toolbox.for_scenario(load(write_scenario(tmp_path, max_tool_calls=6)))


def text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1 and isinstance(result.content[0], types.TextContent)
    return result.content[0].text


async def calls(url: str, mode: str, *requests: tuple[str, dict[str, Any]]
                ) -> list[types.CallToolResult]:
    async with Client(url, mode=mode) as client:
        return [await client.call_tool(name, args) for name, args in requests]


@pytest.mark.parametrize("mode", MODES)
async def test_the_tools_are_listed_as_the_scenario_declares_them(
        server: ToolServer, toolbox: Toolbox, mode: str) -> None:
    async with server.episode(toolbox) as url, Client(url, mode=mode) as client:
        listed = (await client.list_tools()).tools
    assert [(t.name, t.description, t.input_schema) for t in listed] == [
        (s.name, s.description, s.parameters) for s in toolbox.specs]
    assert [t.name for t in listed] == ["get_weather", "flaky", "next_ticket", "add_item",
                                        "view_cart", "shout"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_call_is_answered_and_recorded_in_the_current_turn(
        server: ToolServer, toolbox: Toolbox, mode: str) -> None:
    toolbox.turn, toolbox.step = 2, 0  # as an agent does at the start of its turn
    async with server.episode(toolbox) as url:
        first, second = await calls(url, mode, ("get_weather", {"city": "Paris"}),
                                    ("get_weather", {"city": "Oslo"}))
    assert not first.is_error
    assert text(first) == '{"city": "Paris", "temperature_c": 18}'
    assert first.structured_content == {"city": "Paris", "temperature_c": 18}
    assert second.structured_content == {"city": "Oslo", "temperature_c": 18}
    one, two = toolbox.records
    assert (one.name, one.arguments, one.result, one.is_error, one.error) == (
        "get_weather", {"city": "Paris"}, {"city": "Paris", "temperature_c": 18}, False, None)
    assert (one.turn, one.step, two.turn, two.step) == (2, 0, 2, 1)
    assert one.latency_s > 0 and two.started_s > one.started_s


@pytest.mark.parametrize("mode", MODES)
async def test_arguments_that_fail_the_schema_are_a_tool_error_recorded_as_invalid(
        server: ToolServer, toolbox: Toolbox, mode: str) -> None:
    async with server.episode(toolbox) as url:
        missing, extra = await calls(url, mode, ("get_weather", {}),
                                     ("get_weather", {"city": "Paris", "units": "F"}))
    assert missing.is_error and extra.is_error
    assert text(missing) == "invalid arguments: 'city' is a required property"
    assert "Additional properties are not allowed ('units' was unexpected)" in text(extra)
    assert missing.structured_content is None
    assert [(r.error, r.arguments) for r in toolbox.records] == [
        ("invalid_arguments", {}), ("invalid_arguments", {"city": "Paris", "units": "F"})]


@pytest.mark.parametrize("mode", MODES)
async def test_injected_errors_sequences_handlers_and_unknown_tools(
        server: ToolServer, toolbox: Toolbox, mode: str) -> None:
    async with server.episode(toolbox) as url:
        results = await calls(url, mode, ("flaky", {}), ("next_ticket", {}),
                              ("next_ticket", {}), ("next_ticket", {}),
                              ("shout", {"word": "hey"}), ("delete_everything", {}))
    flaky, first, second, exhausted, shouted, unknown = results
    assert (flaky.is_error, text(flaky)) == (True, "service unavailable")
    assert [(r.is_error, text(r)) for r in (first, second)] == [(False, "A1"), (False, "A2")]
    assert exhausted.is_error and "no more answers" in text(exhausted)
    assert (shouted.is_error, shouted.structured_content) == (False, {"word": "HEY"})
    assert unknown.is_error and text(unknown).startswith("unknown tool 'delete_everything'")
    assert [r.error for r in toolbox.records] == [
        "injected", None, None, "sequence_exhausted", None, "unknown_tool"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_state_update_is_seen_by_a_later_call(
        server: ToolServer, toolbox: Toolbox, mode: str) -> None:
    async with server.episode(toolbox) as url:
        *_, cart = await calls(url, mode, ("add_item", {"item": "tea"}),
                               ("add_item", {"item": "milk"}), ("view_cart", {}))
    assert cart.structured_content == {"items": ["tea", "milk"]}
    assert toolbox.state == {"cart": ["tea", "milk"]}


@pytest.mark.parametrize("mode", MODES)
async def test_the_tool_call_limit_answers_with_an_error(
        server: ToolServer, tmp_path: Path, mode: str) -> None:
    toolbox = Toolbox.for_scenario(load(write_scenario(tmp_path, max_tool_calls=2)))
    async with server.episode(toolbox) as url:
        results = await calls(url, mode, *[("view_cart", {})] * 3)
    assert [r.is_error for r in results] == [False, False, True]
    assert text(results[2]) == "tool call limit reached (2 calls in this episode)"
    assert toolbox.limit_reached and toolbox.records[-1].error == "tool_call_limit"


@pytest.mark.parametrize("mode", MODES)
async def test_concurrent_episodes_of_one_scenario_never_see_each_others_state(
        server: ToolServer, tmp_path: Path, mode: str) -> None:
    scenario = load(write_scenario(tmp_path))
    first, second = Toolbox.for_scenario(scenario), Toolbox.for_scenario(scenario)
    async with (server.episode(first) as url_1, server.episode(second) as url_2,
                Client(url_1, mode=mode) as one, Client(url_2, mode=mode) as two):
        assert url_1 != url_2
        # Interleaved: each episode's cart holds only what its own agent added.
        await one.call_tool("add_item", {"item": "tea"})
        await two.call_tool("add_item", {"item": "coffee"})
        await one.call_tool("add_item", {"item": "milk"})
        carts = await asyncio.gather(one.call_tool("view_cart", {}),
                                     two.call_tool("view_cart", {}))
    assert [c.structured_content for c in carts] == [{"items": ["tea", "milk"]},
                                                     {"items": ["coffee"]}]
    assert [r.arguments for r in first.records] == [{"item": "tea"}, {"item": "milk"}, {}]
    assert [r.arguments for r in second.records] == [{"item": "coffee"}, {}]
    assert (first.state, second.state) == ({"cart": ["tea", "milk"]}, {"cart": ["coffee"]})


def post_status(url: str) -> int:
    request = urllib.request.Request(
        url, method="POST", data=b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
        headers={"Content-Type": "application/json",
                 "Accept": "application/json, text/event-stream"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return err.code


async def test_an_ended_episode_answers_404_and_its_url_is_unguessable(
        server: ToolServer, toolbox: Toolbox) -> None:
    async with server.episode(toolbox) as url:
        async with Client(url, mode="legacy") as client:
            await client.call_tool("view_cart", {})
        async with server.episode(toolbox) as other:
            token = url.split("/")[-2]
            assert url.startswith(f"http://127.0.0.1:{server.port}/episodes/")
            assert len(token) >= 32 and other.split("/")[-2] != token
    assert await asyncio.to_thread(post_status, url) == 404
    assert await asyncio.to_thread(post_status, url.replace(token, "guess")) == 404
    with pytest.raises(Exception):  # noqa: B017  (the client's own error for a 404)
        await calls(url, "legacy", ("view_cart", {}))
    assert len(toolbox.records) == 1  # nothing reached the toolbox after the end


def test_the_listening_socket_names_tcp_so_asyncio_turns_nagle_off() -> None:
    # asyncio sets TCP_NODELAY only on connections whose socket's proto is IPPROTO_TCP; with
    # Nagle on, each reply on a kept-alive connection waited ~40 ms for the client's delayed
    # ACK (benchmarks/mcp_tools.py measures the call).
    with bind_loopback() as sock:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockname()[0] == "127.0.0.1" and sock.getsockname()[1] > 0
