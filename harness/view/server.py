"""Running the application: listening on the address asked for, saying where once it
accepts requests, and stopping cleanly when the task is cancelled (Ctrl-C)."""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Callable
from pathlib import Path

from aiohttp import web

from harness.errors import HarnessError
from harness.view.app import make_app
from harness.view.security import Guard, new_token
from harness.view.state import CATALOG

DEFAULT_PORT = 8780


async def serve(root: Path, *, host: str, port: int,
                on_ready: Callable[[Guard], None]) -> None:
    """Serve the runs under ``root`` on ``host``:``port`` (0: any free port) until
    cancelled; ``on_ready(guard)`` is called once requests are accepted (``guard.url()`` is
    the address to open). Raises :class:`~harness.errors.HarnessError` when the address
    cannot be listened on (the port taken, a host not of this machine)."""
    guard = Guard(token=new_token(), host=host)
    app = make_app(root, guard)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except OSError as err:
            raise HarnessError(_listen_error(host, port, err)) from None
        guard.port = _bound_port(runner, port)
        # Every run's entry read once now, while the person opens the page: the first
        # listing of a large folder is then (mostly) served from the cache.
        warming = asyncio.ensure_future(asyncio.to_thread(app[CATALOG].entries))
        on_ready(guard)
        try:
            await asyncio.Event().wait()  # until cancelled
        finally:
            warming.cancel()
    finally:
        await runner.cleanup()


def _bound_port(runner: web.AppRunner, asked: int) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    return asked


def _listen_error(host: str, port: int, err: OSError) -> str:
    if err.errno == errno.EADDRINUSE:
        return (f"--port {port}: the port is taken on {host} (another harness view?); "
                "choose another with --port N, or --port 0 for any free port")
    if err.errno in (errno.EADDRNOTAVAIL, errno.EACCES):
        return (f"--host {host} --port {port}: cannot listen there ({err.strerror}); "
                "the host must be an address of this machine (default 127.0.0.1), and ports "
                "below 1024 need privileges")
    return f"--host {host} --port {port}: cannot listen there ({err.strerror or err})"
