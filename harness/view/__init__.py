"""``harness view``: a local web application over every run directory under a folder: the
runs index, each run's page (live while it runs), comparisons and per-scenario trends.

Layers: it reads runs (``harness.runs``) and draws with the HTML report's templates and
escaping (``harness.report.html``); only the commands (``harness.cli``) import it. Its
modules: :mod:`~harness.view.security` (who may ask what), :mod:`~harness.view.catalog`
(the runs found, read read-only, cached), :mod:`~harness.view.status` (finished, stopped,
running), :mod:`~harness.view.pages` (drawing a page), :mod:`~harness.view.app` (the
routes; how a page is added), :mod:`~harness.view.server` (listening), and one module per
group of pages (:mod:`~harness.view.runs_pages`, :mod:`~harness.view.trends`).
"""

from harness.view.app import make_app
from harness.view.server import DEFAULT_PORT, serve

__all__ = ["DEFAULT_PORT", "make_app", "serve"]
