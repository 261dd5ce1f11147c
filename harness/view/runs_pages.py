"""The runs index, a run's page (live while it runs) and the comparison of two runs.

``GET /`` and ``GET /api/runs`` list every run under the served folder (contract 11);
``GET /runs/<id>`` draws a run as its ``report.html`` does, from its store, with a progress
panel that polls ``GET /api/runs/<id>/progress`` while the run is going; ``GET /compare?a=
<id>&b=<id>`` is the page of ``harness compare A B --html``.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import fields
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from aiohttp import web

from harness.calibration.run_agreement import (
    RunLabels,
    store_labels_report,
    with_compared_agreement,
)
from harness.errors import HarnessError
from harness.files import connect_read_only
from harness.report.html.compare_page import compare_page_context
from harness.report.html.run_page import run_page_context
from harness.runs.comparison import compare_run_dirs
from harness.runs.store import STORE_FILENAME, RunStore
from harness.runs.summary import read_summary, summary_so_far
from harness.runs.summary_model import RunSummary
from harness.view.catalog import ROOT_ID, RunEntry, read_entry, run_url
from harness.view.label_progress import (
    DEFAULT_HALF_WIDTH,
    check_half_width,
    labels_progress,
    progress_json,
)
from harness.view.pages import error_page, html_response, run_not_found
from harness.view.state import catalog, in_thread, requested_run

routes = web.RouteTableDef()

POLL_EVERY_MS = 2000
INDEX_POLL_EVERY_MS = 4000  # the index, while a run it lists is running
NEW_SAMPLES_SHOWN = 100  # per poll; the page keeps the newest first
# the colour of each status's tag (harness/view/assets/view.js has the same map)
TONES = {"finished": "good", "running": "", "stopped by budget": "warn", "stopped": "warn",
         "interrupted": "bad", "unknown": "warn", "unreadable": "bad"}


def _date(at: float) -> str:
    return datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M") if at else "—"


def _index_rows(entries: list[RunEntry]) -> list[dict[str, Any]]:
    return [{**{f.name: getattr(e, f.name) for f in fields(e)}, "url": run_url(e.id),
             "date": _date(e.created_at), "tone": TONES.get(e.status.status, "")}
            for e in entries]


@routes.get("/")
async def index(request: web.Request) -> web.Response:
    entries = await in_thread(catalog(request).entries)
    levels = {e.confidence for e in entries if e.confidence is not None}
    polling = any(e.status.running for e in entries)
    return html_response("index.html.j2", title="Runs", runs=_index_rows(entries),
                         root=str(catalog(request).root), connects=polling,
                         polling=polling, every_ms=INDEX_POLL_EVERY_MS,
                         unreadable=sum(e.error is not None for e in entries),
                         level=f"{100 * levels.pop():g}%" if len(levels) == 1 else "")


@routes.get("/api/runs")
async def api_runs(request: web.Request) -> web.Response:
    entries = await in_thread(catalog(request).entries)
    return web.json_response({"root": str(catalog(request).root),
                              "runs": [e.as_json() for e in entries]})


# The labels section of a run's page, per run: computed again only when the run's labels,
# its samples or the half-width asked for changed (each labelled target's agreement costs a
# bootstrap of about half a second).
_LABELS_CACHE: dict[str, tuple[tuple[object, ...], RunLabels | None]] = {}


def _labels_report(store: RunStore, run_dir: Path, summary: RunSummary,
                   half_width: float) -> RunLabels | None:
    labels = store.labels()
    if not labels:
        return None
    key = (len(labels), max(lb.labelled_at for lb in labels), summary.counts.samples,
           half_width)
    cached = _LABELS_CACHE.get(str(run_dir))
    if cached is not None and cached[0] == key:
        return cached[1]
    report = store_labels_report(store, run_dir, summary.config.design,
                                 half_width=half_width)
    _LABELS_CACHE[str(run_dir)] = (key, report)
    return report


def _run_page(root: Path, run_dir: Path, half_width: float = DEFAULT_HALF_WIDTH
              ) -> dict[str, Any]:
    entry = read_entry(root, run_dir)
    if entry.error is not None:
        raise HarnessError(entry.error)
    since = _latest_sample_at(run_dir)
    with RunStore.open(run_dir, read_only=True) as store:
        summary = (read_summary(run_dir) if _summary_is_current(run_dir, entry, since)
                   else summary_so_far(store))
        context = run_page_context(run_dir, summary, store,
                                   _labels_report(store, run_dir, summary, half_width))
        progress = labels_progress(store, half_width=half_width)
    context["live"] = {
        "running": entry.status.running, "status": entry.status.status,
        "detail": entry.status.detail, "samples": entry.samples,
        "planned": entry.planned, "since": since, "every_ms": POLL_EVERY_MS,
        "progress_url": f"/api/runs/{quote(entry.id)}/progress" if entry.id != ROOT_ID
        else "/api/run/progress",
    }
    context["labels_progress"] = progress_json(progress)
    return context


def _summary_is_current(run_dir: Path, entry: RunEntry, latest_sample_at: float) -> bool:
    """Whether ``summary.json`` summarises every stored sample: the run is not running and
    the file was written after its last sample (a run killed after a resume keeps the
    summary of the session before)."""
    try:
        written = (run_dir / "summary.json").stat().st_mtime
    except OSError:
        return False
    return not entry.status.running and written >= latest_sample_at


def _latest_sample_at(run_dir: Path) -> float:
    """When the newest stored sample finished (0 with none): the page polls for those after."""
    db = connect_read_only(run_dir / STORE_FILENAME)
    try:
        row = db.execute("SELECT MAX(finished_at) FROM samples").fetchone()
    finally:
        db.close()
    return float(row[0] or 0.0)


@routes.get("/runs/")
@routes.get("/runs/{run_id:.+}")
async def run_page(request: web.Request) -> web.Response:
    found = requested_run(request)
    if found is None:
        return run_not_found(request)
    run_dir = found[1]
    root = catalog(request).root
    try:
        half_width = check_half_width(request.query.get("half_width"))
    except ValueError as err:
        return error_page(400, "This address asks for a width the page cannot plan for.",
                          str(err))
    try:
        context = await in_thread(lambda: _run_page(root, run_dir, half_width))
    except HarnessError as err:
        return error_page(422, "This run cannot be shown.", str(err))
    except sqlite3.Error as err:  # damaged since it was listed
        return error_page(422, "This run cannot be shown.", f"{STORE_FILENAME}: {err}")
    title = context.pop("title")
    return html_response("run_live.html.j2", title=title,
                         connects=context["live"]["running"], **context)


def progress(run_dir: Path, root: Path, since: float) -> dict[str, Any]:
    """A run's status, samples done and planned, and the samples stored after ``since``
    (seconds since the epoch), oldest first."""
    entry = read_entry(root, run_dir)
    rows = [] if entry.error is not None else _samples_after(run_dir, since)
    return {"id": entry.id, "status": entry.status.status, "detail": entry.status.detail,
            "error": entry.error, "samples": entry.samples,
            "samples_planned": entry.planned, "checked_at": time.time(),
            "new_samples": [{"scenario_id": sid, "epoch": epoch, "score": score,
                             "outcome": status if status != "scored"
                             else "passed" if passed else "failed",
                             "finished_at": at}
                            for sid, epoch, status, score, passed, at in rows]}


def _samples_after(run_dir: Path, since: float) -> list[tuple[Any, ...]]:
    db = connect_read_only(run_dir / STORE_FILENAME)
    try:
        return db.execute(
            "SELECT scenario_id, epoch, status, score, passed, finished_at FROM samples "
            "WHERE finished_at > ? ORDER BY finished_at LIMIT ?",
            (since, NEW_SAMPLES_SHOWN)).fetchall()
    except sqlite3.Error:  # damaged since it was read a moment ago: nothing new to show
        return []
    finally:
        db.close()


@routes.get("/api/run/progress")
@routes.get("/api/runs/{run_id:.+}/progress")
async def api_progress(request: web.Request) -> web.Response:
    found = requested_run(request)
    if found is None:
        return run_not_found(request)
    run_dir = found[1]
    try:
        since = float(request.query.get("since", "0"))
    except ValueError:
        raise web.HTTPBadRequest(text="since: expected seconds since the epoch") from None
    root = catalog(request).root
    return web.json_response(await in_thread(lambda: progress(run_dir, root, since)))


@routes.get("/compare")
async def compare(request: web.Request) -> web.Response:
    ids = [request.query.get(k, "") for k in ("a", "b")]
    if not all(ids):
        return error_page(400, "Pick two runs.", "Choose a baseline (A) and a candidate (B) "
                          "in the runs table, then Compare.")
    dirs = [catalog(request).run_dir(i) for i in ids]
    if dirs[0] is None or dirs[1] is None:
        return run_not_found(request)
    baseline, candidate = dirs[0], dirs[1]

    def draw() -> dict[str, Any]:
        comparison = with_compared_agreement(compare_run_dirs(baseline, candidate),
                                             baseline, candidate)
        return compare_page_context(comparison, baseline, candidate)

    try:
        context = await in_thread(draw)
    except HarnessError as err:
        return error_page(422, "These two runs cannot be compared.", str(err))
    title = context.pop("title")
    return html_response("compare_live.html.j2", title=title, **context)
