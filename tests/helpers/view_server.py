"""``harness view`` served from a thread of the test's process, and raw HTTP requests to it
with any ``Host``, ``Origin``, cookie or method (what a browser would refuse to send is what
the server must refuse to answer)."""

from __future__ import annotations

import asyncio
import http.client
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from harness.view import serve
from harness.view.security import TOKEN_COOKIE, Guard


@dataclass(frozen=True)
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")


@dataclass(frozen=True)
class Served:
    """A running server: the URL it printed (with the token), its port and its token."""

    url: str
    port: int
    token: str
    host: str = "127.0.0.1"

    @property
    def origin(self) -> str:
        return f"http://{self.host}:{self.port}"

    def request(self, method: str, path: str, *, host: str | None = None,
                headers: dict[str, str] | None = None, body: bytes | None = None,
                cookie: bool = False) -> Reply:
        """One request; ``host`` replaces the ``Host`` header, ``cookie`` sends the token as
        the page's cookie would."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            connection.putheader("Host", host if host is not None
                                 else f"{self.host}:{self.port}")
            if cookie:
                connection.putheader("Cookie", f"{TOKEN_COOKIE}_{self.port}={self.token}")
            for name, value in (headers or {}).items():
                connection.putheader(name, value)
            connection.putheader("Content-Length", str(len(body or b"")))
            connection.endheaders(body or b"")
            response = connection.getresponse()
            return Reply(response.status, response.headers, response.read())
        finally:
            connection.close()


@contextmanager
def served(root: Path, *, host: str = "127.0.0.1") -> Iterator[Served]:
    """Serve ``root`` on ``host`` and any free port until the block ends."""
    ready = threading.Event()
    started: dict[str, object] = {}
    loop = asyncio.new_event_loop()

    def on_ready(guard: Guard) -> None:
        started["guard"] = guard
        ready.set()

    async def main() -> None:
        started["task"] = asyncio.current_task()
        await serve(root, host=host, port=0, on_ready=on_ready)

    def run() -> None:
        try:
            loop.run_until_complete(main())
        except (asyncio.CancelledError, Exception) as err:  # handed to the test
            started["error"] = err
            ready.set()
        finally:
            loop.close()

    thread = threading.Thread(target=run, name="harness-view-test", daemon=True)
    thread.start()
    assert ready.wait(30), "the server never started"
    if "guard" not in started:
        raise AssertionError(f"the server did not start: {started.get('error')!r}")
    guard = started["guard"]
    assert isinstance(guard, Guard)
    url = guard.url()
    try:
        yield Served(url=url, port=guard.port, token=guard.token,
                     host=urlsplit(url).hostname or host)
    finally:
        task = started["task"]
        assert isinstance(task, asyncio.Task)
        loop.call_soon_threadsafe(task.cancel)
        thread.join(30)
