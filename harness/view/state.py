"""What every handler reaches through ``request.app``: the served folder's runs and the
access rules; and how a handler does blocking work (reading a store, drawing a page)
without holding up the server's other requests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from aiohttp import web

from harness.view.catalog import Catalog
from harness.view.security import Guard

T = TypeVar("T")

CATALOG = web.AppKey("catalog", Catalog)
GUARD = web.AppKey("guard", Guard)


def catalog(request: web.Request) -> Catalog:
    return request.app[CATALOG]


async def in_thread(work: Callable[[], T]) -> T:
    """``work()`` in a worker thread (SQLite reads and page rendering block)."""
    return await asyncio.to_thread(work)
