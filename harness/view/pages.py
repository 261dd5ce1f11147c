"""How the server's pages are drawn: the report's jinja2 environment (the same escaping,
filters and plot macros) with this package's templates in front, the report's stylesheet and
script, and this package's own stylesheet and script (``assets/view.css``, ``view.js``).

Every served page runs the report's script and ours (:data:`VIEW_SCRIPTS`, joined into one).
A view template may extend a report template (``run_live.html.j2`` extends ``run.html.j2``),
so a served run reads exactly as its ``report.html``. The page's security policy is sent as a
header (:func:`page_policy`): it allows the two scripts by their SHA-256, and requests to the
server itself only for a page that polls it.
"""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from importlib.resources import files
from typing import Any

import jinja2
from aiohttp import web
from markupsafe import Markup

from harness.report.html.page import environment


def _asset(package: str, name: str) -> str:
    return files(package).joinpath("assets", name).read_text(encoding="utf-8")


def _digest(script: str) -> str:
    raw = hashlib.sha256(script.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(raw).decode('ascii')}'"


@cache
def view_environment() -> jinja2.Environment:
    """The report's environment, reading this package's templates first."""
    report = environment()
    assert report.loader is not None
    loader = jinja2.ChoiceLoader([jinja2.PackageLoader("harness.view", "templates"),
                                  report.loader])
    return report.overlay(loader=loader)


# This package's scripts (in ``assets/``), run on every served page in this order after the
# report's: each acts only on the elements it finds. A page's new behaviour is a script
# added here (its hash joins the policy by itself).
VIEW_SCRIPTS: tuple[str, ...] = ("view.js", "label.js")
VIEW_STYLES: tuple[str, ...] = ("view.css", "label.css")  # after the report's stylesheet


@cache
def _assets() -> tuple[str, str, str, str]:
    """The stylesheet (the report's, then ours), the report's script, ours (one script: the
    files of :data:`VIEW_SCRIPTS` joined), and the ``script-src`` sources that allow those
    two only."""
    css = "\n".join([_asset("harness.report.html", "report.css"),
                     *(_asset("harness.view", name) for name in VIEW_STYLES)])
    report_js = _asset("harness.report.html", "report.js")
    view_js = "\n".join(_asset("harness.view", name) for name in VIEW_SCRIPTS)
    return css, report_js, view_js, f"{_digest(report_js)} {_digest(view_js)}"


def page_policy(*, connects: bool = False) -> str:
    """The Content-Security-Policy of a page: nothing loads from anywhere (styles and images
    are inline), only our two scripts run, nothing frames the page, forms post only here;
    ``connects``: the page's script talks to this server (and nothing else): polls it,
    or sends it what the reviewer entered."""
    connect = "'self'" if connects else "'none'"
    return ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
            f"script-src {_assets()[3]}; connect-src {connect}; base-uri 'none'; "
            "form-action 'self'; frame-ancestors 'none'")


def render(template: str, *, title: str, **context: Any) -> str:
    """The page ``template`` with ``context``: the report's and our stylesheet and scripts
    inlined (outside text is escaped by the environment, as in the report)."""
    css, report_js, view_js, script_src = _assets()
    return view_environment().get_template(template).render(
        title=title, css=Markup(css), script=Markup(report_js),  # safe: our own assets
        view_script=Markup(view_js), script_hash=script_src, **context)


def html_response(template: str, *, title: str, status: int = 200, connects: bool = False,
                  **context: Any) -> web.Response:
    """The page ``template`` (see :func:`render`) as a response carrying its policy
    (:func:`page_policy`)."""
    response = web.Response(text=render(template, title=title, **context), status=status,
                            content_type="text/html", charset="utf-8")
    response.headers["Content-Security-Policy"] = page_policy(connects=connects)
    return response


def error_page(status: int, heading: str, message: str) -> web.Response:
    """A page saying what went wrong in one line (outside text escaped as anywhere)."""
    return html_response("error.html.j2", title=heading, status=status, heading=heading,
                         message=message)


def run_not_found(request: web.Request) -> web.Response:
    """404 for a run id that names no run under the served folder: JSON for the API, a page
    for a person."""
    why = "no run with this id under the served folder"
    if request.path.startswith("/api/"):
        return web.json_response({"error": why}, status=404)
    return error_page(404, "No such run.", why + ".")
