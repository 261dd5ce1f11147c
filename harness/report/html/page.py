"""One self-contained HTML page: the jinja2 environment every report page renders with, the
way outside data is embedded, and the atomic write.

A page loads nothing: its stylesheet and its one script are inlined from ``assets/``, plots
are inline SVG, and a Content-Security-Policy ``<meta>`` forbids every request (``default-src
'none'``) and every script but ours (``script-src`` holds the SHA-256 of our script, so an
injected ``<script>`` or ``onerror=`` handler would not run even if escaping failed).

Outside text (model replies, tool results, scenario fields, dataset items) reaches the page
in two ways only: through jinja2 with autoescaping on, and as data for the script, inside a
``<script type="application/json">`` block (never executed) where ``<``, ``>`` and ``&`` are
written as JSON escapes, so no ``</script>`` in the data can close the block. The script
builds the drill-down with ``textContent`` only, never ``innerHTML``. Large data is gzipped
and base64-encoded (the script inflates it with the browser's ``DecompressionStream``).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from harness.files import write_text_atomic
from harness.report.formatting import fmt_ci, fmt_num, fmt_p, fmt_seconds, prompt_cache_share
from harness.safe_text import BIDI_CONTROLS, visible_bidi
from harness.version import __version__
from harness.wording import plural

# Above this many bytes of JSON, embedded data is gzipped (a 1,000-episode run's transcripts
# are ~20 MB of JSON and ~2 MB gzipped); below it, it stays readable in the page source.
COMPRESS_ABOVE_BYTES = 256 * 1024

_JSON_ESCAPES = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                               "\u2028": "\\u2028", "\u2029": "\\u2029",
                               # a bidirectional control parses as its visible escape
                               **{c: f"\\\\u{ord(c):04x}" for c in BIDI_CONTROLS}})


def _asset(name: str) -> str:
    return files("harness.report.html").joinpath("assets", name).read_text(encoding="utf-8")


@cache
def _assets() -> tuple[str, str, str]:
    """The stylesheet, the script, and the CSP source that allows that script only."""
    script = _asset("report.js")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return _asset("report.css"), script, f"'sha256-{digest}'"


def fmt_pct(value: float | None, digits: int = 0) -> str:
    """A share as a percentage, or a dash."""
    return "—" if value is None else f"{100 * value:.{digits}f}%"


def fmt_usd(value: float | None) -> str:
    """A cost in US dollars (4 places below a dollar)."""
    if value is None:
        return "—"
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


@cache
def environment() -> jinja2.Environment:
    """The environment of every report page: templates from ``templates/``, autoescaped,
    undefined names an error (a typo is a failing test, not an empty cell)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("harness.report.html", "templates"),
        autoescape=True,
        finalize=_visible_bidi,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(num=fmt_num, pct=fmt_pct, p=fmt_p, seconds=fmt_seconds, usd=fmt_usd)
    env.globals.update(ci=fmt_ci, plural=plural, harness_version=__version__,
                       prompt_cache_share=prompt_cache_share)
    return env


def _visible_bidi(value: Any) -> Any:
    """Every value a template prints, before it is escaped: outside text shows its
    bidirectional controls as escapes (our own markup is left as it is)."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible_bidi(value)
    return value


def json_for_script(data: Any) -> Markup:
    """``data`` as JSON safe inside ``<script type="application/json">``: the characters
    that could end the block or start markup are JSON escapes (the parsed value is the
    same)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return Markup(text.translate(_JSON_ESCAPES))  # safe: escaped just above


def embedded_data(element_id: str, data: Any) -> Markup:
    """A ``<script type="application/json">`` block holding ``data`` for the page's script,
    gzipped and base64-encoded when large (``data-encoding="gzip-base64"``)."""
    text = json_for_script(data)
    if len(text.encode("utf-8")) <= COMPRESS_ABOVE_BYTES:
        return Markup('<script type="application/json" id="{}">{}</script>').format(
            element_id, text)
    packed = base64.b64encode(gzip.compress(text.encode("utf-8"), mtime=0)).decode("ascii")
    return Markup('<script type="application/json" id="{}" data-encoding="gzip-base64">'
                  '"{}"</script>').format(element_id, Markup(packed))  # safe: base64


def render_page(template: str, *, title: str, **context: Any) -> str:
    """The page ``template`` (in ``templates/``) with ``context``, its stylesheet, script
    and security policy inlined."""
    css, script, script_hash = _assets()
    return environment().get_template(template).render(
        title=title, css=Markup(css), script=Markup(script),  # safe: our own assets
        script_hash=script_hash, **context,
    )


def write_page(path: Path, html: str) -> Path:
    """Write the page in one step (a failure leaves no half-written file). Raises
    :class:`~harness.errors.InputError` naming the file when it cannot be written."""
    write_text_atomic(path, html)
    return path
