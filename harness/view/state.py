"""What every handler reaches through ``request.app``: the served folder's runs and the
access rules; and how a handler does blocking work (reading a store, drawing a page)
without holding up the server's other requests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from aiohttp import web

from harness.view.catalog import ROOT_ID, Catalog
from harness.view.security import Guard

T = TypeVar("T")

CATALOG = web.AppKey("catalog", Catalog)
GUARD = web.AppKey("guard", Guard)


def catalog(request: web.Request) -> Catalog:
    return request.app[CATALOG]


def requested_run(request: web.Request) -> tuple[str, Path] | None:
    """The id and folder of the run the URL names (``{run_id}``, the root run when empty);
    ``None`` when no run under the served folder has that id."""
    run_id = request.match_info.get("run_id", "") or ROOT_ID
    found = catalog(request).run_dir(run_id)
    return None if found is None else (run_id, found)


async def in_thread(work: Callable[[], T]) -> T:
    """``work()`` in a worker thread (SQLite reads and page rendering block)."""
    return await asyncio.to_thread(work)
