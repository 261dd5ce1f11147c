"""Stopping a command from outside: Ctrl-C (SIGINT) and SIGTERM (what `kill`, a CI runner's
timeout or a container stop send) end a command the same way. The running coroutine is
cancelled, so it can record the stop and keep what finished (a run writes its summary), then
the command prints how to continue and exits 130 (Ctrl-C) or 143 (SIGTERM), the shell's
128 + signal number.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

EXIT_INTERRUPTED = 128 + signal.SIGINT
EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived. A KeyboardInterrupt, so every command that handles Ctrl-C handles it
    alike; :func:`exit_code` tells them apart."""


def exit_code(stop: KeyboardInterrupt) -> int:
    """The exit code for a command stopped by ``stop``: 143 for SIGTERM, 130 for Ctrl-C."""
    return EXIT_TERMINATED if isinstance(stop, Terminated) else EXIT_INTERRUPTED


def signal_name(stop: KeyboardInterrupt) -> str:
    """How the user asked to stop, for the message: "terminated" or "interrupted"."""
    return "terminated" if isinstance(stop, Terminated) else "interrupted"


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)``, with SIGTERM handled as asyncio handles Ctrl-C: the task is
    cancelled (with the message :data:`~harness.runs.api.TERMINATED`, so a run records that it
    was terminated), then :class:`Terminated` is raised. Ctrl-C raises KeyboardInterrupt as
    ``asyncio.run`` does. Outside the main thread, or where the event loop cannot take signal
    handlers, SIGTERM keeps its default action."""
    import asyncio  # here, not at the top: the CLI starts without the event loop machinery

    from harness.runs.api import TERMINATED

    async def main() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        terminated = False

        def on_sigterm() -> None:
            nonlocal terminated
            terminated = True
            task.cancel(TERMINATED)

        handled = False
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signal.SIGTERM, on_sigterm)
            handled = True
        try:
            return await coro
        except asyncio.CancelledError:
            if terminated:
                raise Terminated from None
            raise
        finally:
            if handled:
                loop.remove_signal_handler(signal.SIGTERM)

    from harness.runs.event_loop import run

    try:
        return run(main())
    finally:
        coro.close()  # unstarted if no loop could be chosen; else done by now, a no-op
