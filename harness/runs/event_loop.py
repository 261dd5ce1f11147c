"""The event loop a run's processes use: uvloop's where it is installed (it is a dependency on
Linux and macOS), else asyncio's own.

uvloop is a drop-in asyncio loop written on libuv; with the aiohttp transport under both SDKs
it takes about a tenth off the CPU per model call (``benchmarks/run_throughput.py``), which is
what bounds a run's throughput. ``HARNESS_EVENT_LOOP=asyncio`` in the environment chooses
asyncio's loop instead (to rule uvloop out when something behaves oddly); ``uvloop`` insists
on uvloop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from harness.errors import InputError

T = TypeVar("T")

ENV_VAR = "HARNESS_EVENT_LOOP"


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's ``new_event_loop`` unless it is missing or asyncio's loop was asked for;
    ``None`` means asyncio's default. Raises :class:`InputError` for a value of
    ``HARNESS_EVENT_LOOP`` other than ``asyncio`` or ``uvloop``, or ``uvloop`` asked for
    where it is not installed."""
    wanted = os.environ.get(ENV_VAR, "").strip().lower()
    if wanted == "asyncio":
        return None
    if wanted not in ("", "uvloop"):
        raise InputError(f"the environment variable {ENV_VAR}", None,
                         f"expected asyncio or uvloop, got {os.environ[ENV_VAR]!r}")
    try:
        import uvloop
    except ImportError:
        if wanted == "uvloop":
            raise InputError(f"the environment variable {ENV_VAR}", None,
                             "uvloop is not installed (pip install uvloop; there is "
                             "none for Windows)") from None
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new event loop of the kind :func:`loop_factory` chooses, for a thread that runs one
    itself (the loopback server's, a Ray actor's)."""
    return (loop_factory() or asyncio.new_event_loop)()


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)`` on the loop :func:`loop_factory` chooses (Ctrl-C handled as
    ``asyncio.run`` handles it, for the call's duration). The thread's current event loop is
    left as it was (``asyncio.run`` would set it to ``None``: library calls such as
    ``harness.evaluate`` and the pytest plugin run here). When no loop can be chosen,
    ``coro`` is closed unstarted and the error raised."""
    try:
        factory = loop_factory() or asyncio.new_event_loop
    except BaseException:
        coro.close()
        raise
    # Given a factory, the runner neither sets its loop as the thread's nor unsets it after.
    with asyncio.Runner(loop_factory=factory) as runner:
        return runner.run(coro)
