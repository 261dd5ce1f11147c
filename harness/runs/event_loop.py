"""The event loop a run's processes use: uvloop's where it is installed (it is a dependency on
Linux and macOS), else asyncio's own.

uvloop is a drop-in asyncio loop written on libuv; with the aiohttp transport under both SDKs
it takes about a tenth off the CPU per model call (``benchmarks/run_throughput.py``), which is
what bounds a run's throughput. ``HARNESS_EVENT_LOOP=asyncio`` in the environment chooses
asyncio's loop instead (to rule uvloop out when something behaves oddly).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

ENV_VAR = "HARNESS_EVENT_LOOP"


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's ``new_event_loop`` unless it is missing or asyncio's loop was asked for;
    ``None`` means asyncio's default."""
    if os.environ.get(ENV_VAR, "").strip().lower() == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)`` on the loop :func:`loop_factory` chooses (Ctrl-C handled as
    ``asyncio.run`` handles it)."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(coro)
