"""The web application: every page's routes behind the access rules.

A page (or an API) is a handler on a :class:`aiohttp.web.RouteTableDef` in its own module
(``runs_pages.routes``, ``trends.routes``); :data:`ROUTE_TABLES` lists them, and
:func:`make_app` adds each behind :func:`~harness.view.security.guard_middleware`. To add a
page: write its handler in a module of this package (blocking work through
:func:`~harness.view.state.in_thread`, the page through
:func:`~harness.view.pages.html_response`, a run's folder only through
:meth:`~harness.view.catalog.Catalog.run_dir`), then add the module's table here.
"""

from __future__ import annotations

from pathlib import Path

from aiohttp import web

from harness.view import labelling, runs_pages, save_scenario, trends
from harness.view.catalog import Catalog
from harness.view.security import Guard, guard_middleware
from harness.view.state import CATALOG, GUARD

ROUTE_TABLES: list[web.RouteTableDef] = [runs_pages.routes, trends.routes, labelling.routes,
                                          save_scenario.routes]

# A request body is a label or a choice, never a file: anything larger is refused (413).
MAX_REQUEST_BYTES = 1024 * 1024


def make_app(root: Path, guard: Guard) -> web.Application:
    """The application serving the runs under ``root`` under ``guard``'s rules."""
    app = web.Application(middlewares=[guard_middleware(guard)],
                          client_max_size=MAX_REQUEST_BYTES)
    app[CATALOG] = Catalog(root)
    app[GUARD] = guard
    for table in ROUTE_TABLES:
        app.add_routes(table)
    return app
