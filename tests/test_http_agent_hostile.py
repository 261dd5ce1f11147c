"""An HTTP agent that misbehaves on purpose: redirects to another host, answers a byte at a
time, sends a body too large to keep (or a gzip bomb), loops on redirects or writes a garbage
status line. The scenario's headers (secrets read from ``${env:...}``) never reach another
origin unless the scenario names it, and then not even there; ``timeout_s`` bounds the whole
request; every fault is an errored sample with a documented kind."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from harness.simulation.http_agent import FAULT_KINDS
from tests.helpers.cli import run_cli
from tests.helpers.http_agents import Seen, fake_agent, run_args, samples, scenario, write_suite

KEY = "key-5be1d0c2a9f84e37"


def json_agent(url: str, **more: Any) -> dict[str, Any]:
    return {"url": url, "protocol": "json", "request": {"m": "${messages}"},
            "reply_path": "reply", **more}


async def elsewhere(seen: Seen) -> web.StreamResponse:
    return web.json_response({"reply": "answered by another host"})


def _errors(out: Path) -> dict[str, dict[str, Any]]:
    return {sid: s for (sid, _), s in samples(out).items()}


def test_a_redirect_to_another_origin_is_refused_and_sends_it_nothing(tmp_path: Path) -> None:
    with fake_agent(elsewhere) as other:
        target = f"{other.url}/elsewhere"

        async def redirecting(seen: Seen) -> web.StreamResponse:
            if seen.path == "/same":  # same origin: followed, headers kept
                return web.json_response({}, status=307, headers={"Location": "/final"})
            if seen.path == "/final":
                return web.json_response({"reply": f"final {seen.headers.get('X-Api-Key')}"})
            return web.json_response({}, status=307, headers={"Location": target})

        headers = {"X-Api-Key": "${env:AGENT_KEY}", "X-Trace": "plain"}
        suite = write_suite(tmp_path, [
            scenario("cross", json_agent("${env:BASE}/start", headers=headers)),
            scenario("same", json_agent("${env:BASE}/same", headers=headers)),
            scenario("allowed", json_agent("${env:BASE}/start", headers=headers,
                                           redirect_origins=[other.url])),
        ])
        with fake_agent(redirecting) as agent:
            done = run_cli(*run_args(suite, tmp_path / "run"),
                           env={"BASE": agent.url, "AGENT_KEY": KEY})
        assert done.returncode == 0, done.stderr
        got = _errors(tmp_path / "run")
        cross = got["cross"]
        assert cross["status"] == "errored" and cross["score"] is None
        assert cross["transcript"]["error"]["kind"] == "agent_redirect_refused"
        message = cross["transcript"]["error"]["message"]
        assert other.url in message and "redirect_origins" in message and KEY not in message
        # the same origin: followed with the scenario's headers
        assert got["same"]["status"] == "scored"
        assert got["same"]["transcript"]["messages"][-1]["content"] == "final [redacted]"
        # allowed by name: followed, with none of the scenario's headers
        assert got["allowed"]["status"] == "scored"
        assert got["allowed"]["transcript"]["messages"][-1]["content"] == (
            "answered by another host")
        assert len(other.requests) == 1, "only the allowed scenario reached the other host"
        (seen,) = other.requests
        assert "X-Api-Key" not in seen.headers and "X-Trace" not in seen.headers
        assert KEY not in json.dumps(dict(seen.headers))


def test_a_redirect_loop_and_a_location_nowhere_are_named_faults(tmp_path: Path) -> None:
    async def looping(seen: Seen) -> web.StreamResponse:
        if seen.path == "/loop":
            return web.json_response({}, status=307, headers={"Location": "/loop"})
        return web.json_response({}, status=302)  # no Location

    suite = write_suite(tmp_path, [scenario("loop", json_agent("${env:BASE}/loop")),
                                   scenario("nowhere", json_agent("${env:BASE}/nowhere"))])
    with fake_agent(looping) as agent:
        done = run_cli(*run_args(suite, tmp_path / "run"), env={"BASE": agent.url})
    assert done.returncode == 4, done.stderr  # nothing scored
    got = _errors(tmp_path / "run")
    loop = got["loop"]["transcript"]["error"]
    assert loop["kind"] == "agent_redirect_refused" and "more than 5 redirects" in loop["message"]
    assert sum(s.path == "/loop" for s in agent.requests) == 6  # the first and 5 redirects
    nowhere = got["nowhere"]["transcript"]["error"]
    assert nowhere["kind"] == "agent_redirect_refused" and "no Location" in nowhere["message"]


def test_timeout_s_bounds_the_whole_request_not_each_byte(tmp_path: Path) -> None:
    async def dripping(seen: Seen) -> web.StreamResponse:
        assert seen.request is not None
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(seen.request)
        for _ in range(200):  # a byte every 0.1 s: 20 s in all
            await response.write(b" ")
            await asyncio.sleep(0.1)
        await response.write(b'{"reply": "late"}')
        return response

    suite = write_suite(tmp_path, [scenario("drip", json_agent("${env:BASE}/drip",
                                                               timeout_s=1))])
    with fake_agent(dripping) as agent:
        done = run_cli(*run_args(suite, tmp_path / "run"), env={"BASE": agent.url})
    error = _errors(tmp_path / "run")["drip"]["transcript"]["error"]
    assert done.returncode == 4
    assert error["kind"] == "agent_unavailable"
    assert "no complete answer within 1s (timeout_s)" in error["message"]
    assert len(agent.requests) == 3  # each attempt cut at 1 s, then retried


def test_a_body_over_the_limit_is_refused_not_stored(tmp_path: Path) -> None:
    big = json.dumps({"reply": "x" * 3_000_000}).encode()
    bomb = gzip.compress(json.dumps({"reply": "0" * 40_000_000}).encode())
    assert len(bomb) < 100_000

    async def large(seen: Seen) -> web.StreamResponse:
        if seen.path == "/big":
            return web.Response(body=big, content_type="application/json")
        if seen.path == "/bomb":
            return web.Response(body=bomb, content_type="application/json",
                                headers={"Content-Encoding": "gzip"})
        return web.json_response({"reply": "small"})

    limit = 1_000_000
    suite = write_suite(tmp_path, [
        scenario("big", json_agent("${env:BASE}/big", max_response_bytes=limit)),
        scenario("bomb", json_agent("${env:BASE}/bomb")),
        scenario("small", json_agent("${env:BASE}/small", max_response_bytes=limit)),
    ])
    with fake_agent(large) as agent:
        done = run_cli(*run_args(suite, tmp_path / "run"), env={"BASE": agent.url})
    assert done.returncode == 0, done.stderr
    got = _errors(tmp_path / "run")
    for sid, shown in (("big", "1,000,000"), ("bomb", "8,388,608")):
        error = got[sid]["transcript"]["error"]
        assert error["kind"] == "agent_response_too_large"
        assert f"more than {shown} bytes (max_response_bytes)" in error["message"]
    assert got["small"]["status"] == "scored"
    assert [s.path for s in agent.requests].count("/big") == 1  # not retried
    assert (tmp_path / "run" / "run.sqlite").stat().st_size < 1_000_000


@contextmanager
def garbage_server() -> Iterator[str]:
    """A TCP server on 127.0.0.1 that answers every request with a garbage status line."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(65536)
                    conn.sendall(b"HTTQ/9 banana\r\n\r\n")
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        server.close()


def test_a_garbage_status_line_is_a_documented_fault(tmp_path: Path) -> None:
    with garbage_server() as url:
        suite = write_suite(tmp_path, [scenario("garbage", json_agent(f"{url}/x"))])
        done = run_cli(*run_args(suite, tmp_path / "run"))
    assert done.returncode == 4, done.stderr
    error = _errors(tmp_path / "run")["garbage"]["transcript"]["error"]
    assert error["kind"] in FAULT_KINDS, error
    assert error["kind"] == "agent_bad_reply"
    assert "not HTTP" in error["message"]


@pytest.mark.parametrize("origin", ["ftp://host", "http://host/path", "host:80", "http://",
                                    "http://h:99999"])
def test_a_redirect_origin_that_is_not_one_is_a_load_time_error(tmp_path: Path,
                                                                origin: str) -> None:
    suite = write_suite(tmp_path, [scenario("x", json_agent("http://127.0.0.1:9/a",
                                                            redirect_origins=[origin]))])
    done = run_cli("validate", str(suite))
    assert done.returncode == 2
    assert "redirect_origins" in done.stderr and "Traceback" not in done.stderr
