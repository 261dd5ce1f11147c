"""Labelling a run's samples in the browser: the page of one sample and the API that stores
what a reviewer says about it.

``GET /label/<run id>`` draws one sample to label: ``?queue=random&at=N`` is the N-th sample
of the run's seeded random order (:func:`~harness.runs.labels.random_queue`; its labels are
recorded ``random: true``), ``?scenario=S&epoch=E`` a sample the reviewer chose (``random:
false``; the run page links every sample here). The page holds the sample (the report's
drill-down data), what can be labelled on it (:func:`~harness.runs.labels.label_targets`,
the judge's verdicts included: the page's script keeps them hidden until the reviewer has
labelled the sample, blind by default) and the labels so far (:func:`label_state`).

``POST /api/label/<run id>`` stores a reviewer's labels of one sample, in one transaction
(:meth:`~harness.runs.store.RunStore.add_labels`): every label is checked against the run
first (:class:`~harness.runs.label_files.RunLabelChecker`) and a bad one refuses the request
with one line naming the field (400). ``GET /api/label/<run id>?scenario=S&epoch=E`` gives
the sample's labels, their history and the reviewers' agreement. Writes pass the server's
token and origin checks (:mod:`harness.view.security`) like every other request.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from aiohttp import web
from pydantic import ValidationError

from harness.calibration.reviewers import reviewer_agreement
from harness.errors import HarnessError
from harness.report.html.page import embedded_data
from harness.report.html.run_page import run_name, sample_view
from harness.runs.label_files import RunLabelChecker
from harness.runs.labels import QUEUE_SEED_KEY, Label, LabelTarget, random_queue
from harness.runs.store import RunStore, StoreError
from harness.scenarios.schema import Scenario
from harness.view.catalog import ROOT_ID, run_url
from harness.view.label_progress import (
    DEFAULT_HALF_WIDTH,
    check_half_width,
    labels_progress,
    progress_json,
)
from harness.view.pages import error_page, html_response, run_not_found
from harness.view.state import in_thread, requested_run

routes = web.RouteTableDef()

# Agreement is recomputed on every label saved: fewer resamples than a calibration report
# keep that quick, and the interval it draws is still stable to about a hundredth.
AGREEMENT_RESAMPLES = 1000
# The score is a number from 0 to 1: the page offers these as its levels (keys 1 to 5).
SCORE_LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)


class LabelRequestError(ValueError):
    """A label request that does not fit the run: the one line the page shows."""


def label_url(run_id: str, **query: Any) -> str:
    """The labelling page of run ``run_id`` with ``query`` (``queue``, ``at``, ``scenario``,
    ``epoch``)."""
    path = "/label/" + ("" if run_id == ROOT_ID else quote(run_id))
    return path + ("?" + urlencode(query) if query else "")


def api_url(run_id: str, what: str) -> str:
    """The API address ``what`` (``label`` or ``scenario``) of run ``run_id``."""
    return f"/api/{what}/" + ("" if run_id == ROOT_ID else quote(run_id))


def queue_order(run_dir: Path) -> list[tuple[str, int]]:
    """The run's random queue. Its seed is recorded once, the first time anyone asks (the
    store is opened for writing only then)."""
    with RunStore.open(run_dir, read_only=True) as store:
        if store.meta_value(QUEUE_SEED_KEY) is not None:
            return random_queue(store)
    with RunStore.open(run_dir) as store:
        return random_queue(store)


def _agreement_json(labels: Sequence[Label]) -> dict[str, Any]:
    """Per target, the reviewers' agreement over the run, once some sample has two."""
    out = {}
    for target, found in reviewer_agreement(labels, n_resamples=AGREEMENT_RESAMPLES).items():
        if found.n_samples == 0:
            continue
        a = found.alpha
        out[target] = {"alpha": a.value, "ci_low": a.ci_low, "ci_high": a.ci_high,
                       "undefined": a.undefined, "level": found.level,
                       "n_samples": found.n_samples, "reviewers": found.reviewers}
    return out


def label_state(store: RunStore, scenario_id: str, epoch: int,
                queue: Sequence[tuple[str, int]],
                half_width: float = DEFAULT_HALF_WIDTH) -> dict[str, Any]:
    """What the page shows of the labels: the sample's labels that count (every reviewer),
    their history (oldest first), the agreement per target over the run, the random
    queue's progress per reviewer (samples of the queue they labelled through it), and the
    run's progress towards corrected figures of ``half_width``
    (:func:`~harness.view.label_progress.labels_progress`)."""
    every = store.labels()
    history = [lb.to_json() for lb in store.labels(history=True)
               if (lb.scenario_id, lb.epoch) == (scenario_id, epoch)]
    in_queue = set(queue)
    done: dict[str, set[tuple[str, int]]] = {}
    for lb in every:
        if lb.random and (lb.scenario_id, lb.epoch) in in_queue:
            done.setdefault(lb.annotator, set()).add((lb.scenario_id, lb.epoch))
    return {
        "labels": [lb.to_json() for lb in every
                   if (lb.scenario_id, lb.epoch) == (scenario_id, epoch)],
        "history": history,
        "agreement": _agreement_json(every),
        "progress": {"total": len(queue), "done": {k: len(v) for k, v in done.items()}},
        "corrected": progress_json(labels_progress(store, half_width=half_width,
                                                   labels=every)),
    }


def _target_json(target: LabelTarget) -> dict[str, Any]:
    data = target.model_dump(mode="json")
    if target.kind == "unit":  # offered as levels, any number from 0 to 1 accepted
        data["values"] = [{"value": v, "label": f"{v:g}", "meaning": ""} for v in SCORE_LEVELS]
    return data


def _scenario_context(scenario: Scenario | None) -> dict[str, Any] | None:
    """What the reviewer reads of the scenario: its goal and its reference."""
    if scenario is None:
        return None
    expect = scenario.expectations
    return {"id": scenario.id, "description": scenario.description,
            "goal": scenario.user.goal, "persona": scenario.user.persona,
            "reference_answer": expect.reference_answer,
            "reference_calls": [f"{c.name}({json.dumps(c.args, ensure_ascii=False)})"
                                for c in expect.tool_calls or []]}


def _pick(request: web.Request, queue: list[tuple[str, int]]) -> dict[str, Any]:
    """Which sample the page shows, and where the previous and next ones are."""
    query = request.query
    if query.get("scenario") is not None:
        try:
            epoch = int(query.get("epoch", "0"))
        except ValueError:
            raise LabelRequestError("epoch: expected a whole number from 0") from None
        return {"kind": "chosen", "key": (query["scenario"], epoch)}
    try:
        at = int(query.get("at", "0"))
    except ValueError:
        raise LabelRequestError("at: expected a place in the queue, a whole number") from None
    if not queue:
        raise LabelRequestError("this run has no scored sample to label yet")
    at = min(max(at, 0), len(queue) - 1)
    return {"kind": "random", "key": queue[at], "at": at}


def label_page_context(run_id: str, run_dir: Path, pick: dict[str, Any],
                       queue: list[tuple[str, int]],
                       half_width: float = DEFAULT_HALF_WIDTH) -> dict[str, Any]:
    """Everything the labelling page draws (raises :class:`LabelRequestError` for a sample
    the run does not have). A ``half_width`` other than the default is kept in the links to
    the previous and next samples and in the address labels are saved to."""
    scenario_id, epoch = pick["key"]
    with RunStore.open(run_dir, read_only=True) as store:
        record = store.sample(scenario_id, epoch)
        if record is None:
            raise LabelRequestError(f"scenario {scenario_id!r} has no epoch {epoch} in this "
                                    "run")
        checker = RunLabelChecker(store)
        targets = checker.targets(scenario_id, epoch)
        scenario = _scenario(store, scenario_id)
        state = label_state(store, scenario_id, epoch, queue, half_width)
    keep = {} if half_width == DEFAULT_HALF_WIDTH else {"half_width": f"{half_width:g}"}
    order = queue if pick["kind"] == "random" else _all_samples(run_dir)
    at = pick.get("at", order.index((scenario_id, epoch)) if (scenario_id, epoch) in order
                  else 0)
    near: dict[str, str | None] = {"prev": None, "next": None}
    for name, step in (("prev", -1), ("next", 1)):
        if 0 <= at + step < len(order):
            other = order[at + step]
            near[name] = (label_url(run_id, queue="random", at=at + step, **keep)
                          if pick["kind"] == "random"
                          else label_url(run_id, scenario=other[0], epoch=other[1], **keep))
    data = {"run_id": run_id, "scenario_id": scenario_id, "epoch": epoch,
            "random": pick["kind"] == "random", "queue": {"kind": pick["kind"], "at": at,
                                                          "total": len(order), **near},
            "api": api_url(run_id, "label") + ("?" + urlencode(keep) if keep else ""),
            "save_api": api_url(run_id, "scenario"),
            "sample": sample_view(record), "targets": [_target_json(t) for t in targets],
            "state": state}
    return {"run_id": run_id, "run_name": run_name(run_dir), "run_url": run_url(run_id),
            "random_url": label_url(run_id, queue="random", **keep),
            "scenario_id": scenario_id, "epoch": epoch, "queue": data["queue"],
            "scenario": _scenario_context(scenario), "default_id": f"{scenario_id}-epoch-{epoch}",
            "label_data": embedded_data("label-data", data)}


def _scenario(store: RunStore, scenario_id: str) -> Scenario | None:
    """The scenario as the run played it, ``None`` when the run did not record it and its
    file no longer loads (the page then says so)."""
    try:
        return store.scenario_definitions().get(scenario_id)
    except StoreError:
        return None


def _all_samples(run_dir: Path) -> list[tuple[str, int]]:
    """Every stored sample, by scenario and epoch (the chosen queue's order)."""
    with RunStore.open(run_dir, read_only=True) as store:
        return [(sid, epoch) for sid, epoch, *_ in store.score_rows()]


@routes.get("/label/")
@routes.get("/label/{run_id:.+}")
async def label_page(request: web.Request) -> web.Response:
    found = requested_run(request)
    if found is None:
        return run_not_found(request)
    run_id, run_dir = found
    try:
        half_width = check_half_width(request.query.get("half_width"))
    except ValueError as err:
        return error_page(400, "This address asks for a width the page cannot plan for.",
                          str(err))

    def draw() -> dict[str, Any]:
        queue = queue_order(run_dir)
        return label_page_context(run_id, run_dir, _pick(request, queue), queue, half_width)

    try:
        context = await in_thread(draw)
    except LabelRequestError as err:
        return error_page(404, "Nothing to label here.", str(err))
    except (HarnessError, sqlite3.Error) as err:
        return error_page(422, "This run cannot be labelled.", str(err))
    title = f"Label {context['scenario_id']} · epoch {context['epoch']}"
    return html_response("label.html.j2", title=title, connects=True, **context)


def _validation_line(err: ValidationError) -> str:
    """A label's first validation failure as ``field: what was expected``."""
    first = err.errors()[0]
    where = str(first["loc"][0]) if first["loc"] else ""
    message = str(first["msg"]).removeprefix("Value error, ")
    if where == "value" and first["type"] != "value_error":  # a union: say it plainly
        message = (f"expected true or false (passed, rubric:) or a number (score, "
                   f"criterion:), got {first['input']!r}")
    return f"{where}: {message}" if where else message


def _labels_from(body: Any) -> list[Label]:
    """The labels a request body asks to store: ``{scenario_id, epoch, annotator, random,
    labels: [{target, value, comment?}]}``. The server sets ``labelled_at`` (a reviewer's
    clock does not decide which version is the last)."""
    if not isinstance(body, dict):
        raise LabelRequestError("expected a JSON object with scenario_id, epoch, annotator, "
                                "random and labels")
    given = body.get("labels")
    if not isinstance(given, list) or not given:
        raise LabelRequestError("labels: expected a non-empty list of {target, value, "
                                "comment}")
    out = []
    for item in given:
        if not isinstance(item, dict):
            raise LabelRequestError("labels: each is an object {target, value, comment}")
        fields = {k: body.get(k) for k in ("scenario_id", "epoch", "annotator", "random")}
        fields.update({k: v for k, v in item.items() if k != "labelled_at"})
        if fields.get("comment") in ("", None):
            fields.pop("comment", None)
        try:
            out.append(Label.model_validate(fields))
        except ValidationError as err:
            raise LabelRequestError(_validation_line(err)) from None
    return out


def store_labels(run_dir: Path, labels: list[Label], queue: Sequence[tuple[str, int]],
                 half_width: float = DEFAULT_HALF_WIDTH) -> dict[str, Any]:
    """Check ``labels`` against the run, store them in one transaction and return the
    sample's label state. Raises :class:`LabelRequestError` naming the field of the first
    label that does not fit (nothing is stored)."""
    with RunStore.open(run_dir) as store:
        checker = RunLabelChecker(store)
        for label in labels:
            problem = checker.problem(label)
            if problem is not None:
                raise LabelRequestError(f"{problem[0]}: {problem[1]}")
        if any(lb.random and (lb.scenario_id, lb.epoch) not in set(queue) for lb in labels):
            raise LabelRequestError("random: this sample is not in the run's random queue; "
                                    "expected false for a sample the reviewer chose")
        store.add_labels(labels)
        first = labels[0]
        return label_state(store, first.scenario_id, first.epoch, queue, half_width)


def _half_width(request: web.Request) -> float:
    """The ``half_width`` the address asks progress to be planned for (the default
    without one)."""
    try:
        return check_half_width(request.query.get("half_width"))
    except ValueError as err:
        raise LabelRequestError(str(err)) from None


async def _json_body(request: web.Request) -> Any:
    try:
        return await request.json()
    except (ValueError, UnicodeDecodeError):
        raise LabelRequestError("the request body is not JSON") from None


@routes.post("/api/label/")
@routes.post("/api/label/{run_id:.+}")
async def api_store_labels(request: web.Request) -> web.Response:
    found = requested_run(request)
    if found is None:
        return run_not_found(request)
    _, run_dir = found
    try:
        half_width = _half_width(request)
        labels = _labels_from(await _json_body(request))
        if len({(lb.scenario_id, lb.epoch) for lb in labels}) != 1:
            raise LabelRequestError("labels: one request labels one sample")
        state = await in_thread(lambda: store_labels(run_dir, labels, queue_order(run_dir),
                                                     half_width))
    except LabelRequestError as err:
        return web.json_response({"error": str(err)}, status=400)
    except (HarnessError, sqlite3.Error) as err:
        return web.json_response({"error": str(err)}, status=422)
    return web.json_response({"stored": len(labels), "state": state})


@routes.get("/api/label/")
@routes.get("/api/label/{run_id:.+}")
async def api_label_state(request: web.Request) -> web.Response:
    found = requested_run(request)
    if found is None:
        return run_not_found(request)
    _, run_dir = found
    try:
        scenario_id = request.query["scenario"]
        epoch = int(request.query.get("epoch", "0"))
    except (KeyError, ValueError):
        return web.json_response({"error": "scenario and epoch: expected ?scenario=ID&epoch=N"},
                                 status=400)
    try:
        half_width = _half_width(request)
    except LabelRequestError as err:
        return web.json_response({"error": str(err)}, status=400)

    def read() -> dict[str, Any]:
        queue = queue_order(run_dir)
        with RunStore.open(run_dir, read_only=True) as store:
            return label_state(store, scenario_id, epoch, queue, half_width)

    try:
        return web.json_response(await in_thread(read))
    except (HarnessError, sqlite3.Error) as err:
        return web.json_response({"error": str(err)}, status=422)
