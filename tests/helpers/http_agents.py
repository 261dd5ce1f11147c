"""Fake HTTP agents for the tests of ``agent.http``: aiohttp apps on 127.0.0.1 and a free port,
each served from a thread with its own event loop, so a test's own loop and ``harness run``
(which runs a loop of its own in the test's thread) can both reach them. Every request is kept
(path, headers, JSON body) and the requests in flight are counted."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from harness.runs.store import RunStore


@dataclass(frozen=True)
class Seen:
    """One request as the fake agent received it."""

    path: str
    query: dict[str, str]
    headers: Mapping[str, str]  # case-insensitive names (a client may send them lowercase)
    body: Any
    # aiohttp's own request, for a handler that streams its answer (StreamResponse.prepare)
    request: web.Request | None = field(default=None, compare=False, repr=False)


Handler = Callable[[Seen], Awaitable[web.StreamResponse]]


class FakeAgent:
    """See the module docstring. ``url`` is ``http://127.0.0.1:PORT``."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[Seen] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._serve, name="fake-http-agent", daemon=True)

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        text = await request.text()
        seen = Seen(request.path, dict(request.query), request.headers.copy(),
                    json.loads(text) if text else None, request)
        self.requests.append(seen)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self.handler(seen)
        finally:
            self.in_flight -= 1

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.2)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        self._ready.set()
        self._loop.run_forever()

    def start(self) -> FakeAgent:
        self._thread.start()
        assert self._ready.wait(10), "the fake agent did not start"
        return self

    async def _shutdown(self) -> None:
        assert self._runner is not None
        await self._runner.cleanup()
        # Handlers still waiting (an agent that never answers) end with the server.
        rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in rest:
            task.cancel()
        await asyncio.gather(*rest, return_exceptions=True)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


@contextmanager
def fake_agent(handler: Handler) -> Iterator[FakeAgent]:
    agent = FakeAgent(handler).start()
    try:
        yield agent
    finally:
        agent.stop()


def closed_port_url() -> str:
    """The URL of a port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def chat_reply(content: str | None = None, tool_calls: list[dict[str, Any]] | None = None
               ) -> web.Response:
    """An OpenAI chat completions answer."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["args"])}}
            for i, c in enumerate(tool_calls)]
    return web.json_response({"id": "x", "object": "chat.completion", "choices": [
        {"index": 0, "message": message, "finish_reason": "stop"}]})


WEATHER_TOOL = {
    "name": "get_weather", "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]},
    "returns": {"city": "Paris", "temp_c": 18},
}


def scenario(id: str, http: dict[str, Any], *, script: list[str] | None = None,
             **extra: Any) -> dict[str, Any]:
    """A scripted scenario whose agent is ``http``, scored by a check any reply passes unless
    ``expectations`` are given."""
    extra.setdefault("expectations", {"response_max_chars": 100_000})
    return {"id": id, "user": {"goal": "g", "script": script or ["hello"]},
            "agent": {"http": http}, **extra}


def write_suite(folder: Path, scenarios: list[dict[str, Any]]) -> Path:
    """The scenarios in ``folder/suite.yaml`` (JSON is YAML), and a models config with fast
    retries in ``folder/models.yaml``; returns the suite file."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "models.yaml").write_text(
        "retry: {max_attempts: 3, backoff_initial_s: 0.01, backoff_max_s: 0.02, "
        "backoff_jitter_s: 0}\n")
    path = folder / "suite.yaml"
    path.write_text(json.dumps(scenarios))
    return path


def run_args(suite: Path, out: Path, *more: str) -> list[str]:
    """``harness run`` arguments for a suite written by :func:`write_suite`."""
    return ["run", str(suite), "--epochs", "1", "--cache-mode", "off", "--no-judge",
            "--models-config", str(suite.parent / "models.yaml"), "--out", str(out), "--json",
            *more]


def samples(out: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """The run's stored samples (transcripts included, as JSON) by (scenario id, epoch)."""
    with RunStore.open(out) as store:
        return {(r.scenario_id, r.epoch): r.model_dump(mode="json")
                for r in store.iter_samples()}
