"""The random queue's progress towards corrected figures in ``harness view``
(harness/view/label_progress.py): what it says before 10 random labels (no made-up count),
the count it plans from the run's own judge and labels after (the same numbers as the
corrected figures' labels-needed), chosen labels left out, its update after every saved
label, a half-width asked for in the address (checked), the run's page, and the labelling
page in Chromium updating without a reload."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.runs.corrected_figures import run_corrected_figures
from harness.runs.labels import random_queue
from harness.runs.store import RunStore
from harness.stats.corrected import MIN_LABELS, corrected_figure
from harness.view.label_progress import (
    check_half_width,
    figure_progress,
    labels_progress,
    progress_of,
)
from tests.helpers.browser import OpenedPage
from tests.helpers.labelled_runs import label, offline_run
from tests.helpers.view_server import Served, served

_numbers = itertools.count()


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("view-labels-progress") / "runs"
    folder.mkdir()
    return folder


@pytest.fixture(scope="module")
def server(root: Path) -> Iterator[Served]:
    with served(root) as s:
        yield s


@pytest.fixture
def run_id(root: Path) -> str:
    name = f"run-{next(_numbers)}"
    offline_run(root / name, epochs=4)  # 6 scenarios x 4 epochs
    return name


def _label_queue(run_dir: Path, count: int, *, random: bool = True, flip_every: int = 4,
                 start: int = 0) -> None:
    """Labels of ``count`` samples of the random queue: the judge's verdict (every
    ``flip_every``-th one turned over) and a score a little under the judge's."""
    with RunStore.open(run_dir) as store:
        queue = random_queue(store)
        rows = {(sid, epoch): (score, ok) for sid, epoch, _, score, ok in store.score_rows()}
        labels = []
        for i, (sid, epoch) in enumerate(queue[start:start + count], start=start):
            score, ok = rows[(sid, epoch)]
            labels += [label(sid, epoch, target="passed", random=random,
                             value=bool(ok) != (i % flip_every == 0)),
                       label(sid, epoch, target="score", random=random,
                             value=round(0.9 * (score or 0.0), 3))]
        store.add_labels(labels)


def _by_figure(progress: Any) -> dict[str, Any]:
    return {f.figure: f for f in progress.figures}


# ---- the wording, from the corrected estimate ----

def _estimate(n_labelled: int, *, spread: float = 0.3, half_width: float = 0.05) -> Any:
    """A corrected pass rate of 40 scenarios x 5 epochs with ``n_labelled`` random labels
    in many scenarios (the judge right on 80% of them)."""
    rng = np.random.default_rng(1)
    truth = np.clip(rng.normal(0.6, spread, 40), 0, 1)
    judge = (rng.random((40, 5)) < truth[:, None]).astype(float).ravel()
    labelled = rng.choice(200, n_labelled, replace=False)
    human = np.where(rng.random(n_labelled) < 0.8, judge[labelled], 1 - judge[labelled])
    return corrected_figure(judge, np.arange(0, 201, 5), labelled, human,
                            target="pass_rate", half_width=half_width)


def test_below_the_minimum_it_counts_towards_it_and_plans_nothing() -> None:
    none_yet = figure_progress("pass rate", None, 0.05)
    assert (none_yet.stage, none_yet.labelled, none_yet.goal) == ("withheld", 0, MIN_LABELS)
    assert none_yet.text == (f"0 of the {MIN_LABELS} random labels before a corrected pass "
                             f"rate is given (withheld below {MIN_LABELS})")
    few = figure_progress("pass rate", _estimate(4), 0.05)
    assert (few.stage, few.labelled, few.goal) == ("withheld", 4, MIN_LABELS)
    assert "about" not in few.text  # no count needed is made up from 4 labels


def test_from_the_minimum_on_it_plans_with_the_labels_needed_count() -> None:
    est = _estimate(20, half_width=0.1)
    need = est.labels_needed
    assert need is not None and need.corrected is not None and need.corrected > 20
    shown = figure_progress("pass rate", est, 0.1)
    assert (shown.stage, shown.labelled, shown.goal) == ("planned", 20, need.corrected)
    now = (est.ci_high - est.ci_low) / 2
    assert shown.text.startswith(
        f"20 of about {need.corrected} random labels for a pass-rate interval of ±0.1 "
        f"(now ±{now:.3g}; about {need.humans_alone} from humans alone)")


def test_a_width_already_reached_or_out_of_reach_is_said() -> None:
    wide = _estimate(150, half_width=0.4)
    reached = figure_progress("pass rate", wide, 0.4)
    assert reached.stage == "reached" and "within ±0.4" in reached.text
    # scenarios far apart: the judge's spread over them alone is wider than ±0.01
    far = _estimate(30, spread=0.5, half_width=0.01)
    assert far.labels_needed is not None and far.labels_needed.corrected is None
    out = figure_progress("pass rate", far, 0.01)
    assert out.stage == "unreachable" and out.goal is None
    assert "no number of labels reaches ±0.01" in out.text and "more scenarios" in out.text


def test_a_run_with_nothing_scored_says_so() -> None:
    shown = progress_of(None, 0.05, 0.95)
    assert shown.figures == [] and shown.unavailable == (
        "no scored sample yet: nothing to correct")


@pytest.mark.parametrize("text", ["0", "1", "-0.1", "abc", "nan", "inf", ""])
def test_a_half_width_outside_0_to_1_is_refused_naming_the_parameter(text: str) -> None:
    with pytest.raises(ValueError, match=r"^half_width: expected a share of the score range "
                       r"between 0 and 1 \(e\.g\. 0\.05\), got '.*'$"):
        check_half_width(text)
    assert check_half_width(None) == 0.05 and check_half_width("0.1") == 0.1


# ---- from a run's store ----

def test_a_runs_progress_uses_its_random_labels_only_and_the_corrected_figures(
        root: Path, run_id: str) -> None:
    run_dir = root / run_id
    _label_queue(run_dir, 3)
    _label_queue(run_dir, 6, random=False, start=3)  # chosen by hand: left out
    with RunStore.open(run_dir, read_only=True) as store:
        shown = _by_figure(labels_progress(store))
    assert shown["pass rate"].labelled == 3 and shown["mean score"].labelled == 3
    assert shown["pass rate"].stage == "withheld"
    _label_queue(run_dir, 9, start=3)  # the same samples, now from the random queue too
    with RunStore.open(run_dir, read_only=True) as store:
        progress = labels_progress(store, half_width=0.1)
        figures = run_corrected_figures(store, error_policy="exclude", confidence=0.95,
                                        seed=0, half_width=0.1)
    assert progress.note is None
    for name, est in (("pass rate", figures.pass_rate), ("mean score", figures.mean)):
        assert est is not None and est.n_labelled == 12
        shown = _by_figure(progress)[name]
        assert shown.labelled == 12
        assert shown == figure_progress(name, est, 0.1)  # the gate's own numbers


# ---- over HTTP ----

def _post(server: Served, path: str, body: Any) -> Any:
    return server.request("POST", path, body=json.dumps(body).encode(), cookie=True,
                          headers={"Content-Type": "application/json"})


def test_every_saved_label_returns_the_new_progress(server: Served, root: Path,
                                                    run_id: str) -> None:
    with RunStore.open(root / run_id) as store:
        queue = random_queue(store)
    counts = []
    for sid, epoch in queue[:2]:
        reply = _post(server, f"/api/label/{run_id}", {
            "scenario_id": sid, "epoch": epoch, "annotator": "ana", "random": True,
            "labels": [{"target": "passed", "value": True}]})
        assert reply.status == 200, reply.text
        state = json.loads(reply.text)["state"]["corrected"]
        counts.append({f["figure"]: f["labelled"] for f in state["figures"]})
        assert state["half_width"] == 0.05 and "From 10 random labels on" in state["note"]
    assert counts == [{"pass rate": 1, "mean score": 0}, {"pass rate": 2, "mean score": 0}]
    sid, epoch = queue[0]
    got = server.request("GET", f"/api/label/{run_id}?scenario={sid}&epoch={epoch}"
                         "&half_width=0.2")
    assert json.loads(got.text)["corrected"]["half_width"] == 0.2


def test_a_bad_half_width_in_an_address_is_refused_in_one_line(server: Served,
                                                               run_id: str) -> None:
    for path in (f"/label/{run_id}?queue=random&half_width=2",
                 f"/runs/{run_id}?half_width=abc"):
        reply = server.request("GET", path)
        assert reply.status == 400 and "half_width: expected a share of the score range" \
            in reply.text, reply.text
    body = {"scenario_id": "x", "epoch": 0, "annotator": "ana", "random": True,
            "labels": [{"target": "passed", "value": True}]}
    reply = _post(server, f"/api/label/{run_id}?half_width=0", body)
    assert reply.status == 400 and json.loads(reply.text)["error"].startswith("half_width: ")
    reply = server.request("GET", f"/api/label/{run_id}?scenario=x&epoch=0&half_width=-1")
    assert reply.status == 400


def test_a_half_width_asked_for_is_kept_by_the_page(server: Served, run_id: str) -> None:
    page = server.request("GET", f"/label/{run_id}?queue=random&half_width=0.1").text
    assert f"/label/{run_id}?queue=random&amp;at=1&amp;half_width=0.1" in page  # next
    assert "half_width=0.1" in page.split('id="label-data"')[1]  # where labels are saved


def test_the_runs_page_shows_the_progress(server: Served, root: Path, run_id: str) -> None:
    _label_queue(root / run_id, 12)
    page = server.request("GET", f"/runs/{run_id}?half_width=0.1").text
    block = page.split('id="labels-progress"')[1].split("</div>")[0]
    assert "planned for an interval of ±0.1 at 95%" in block
    with RunStore.open(root / run_id, read_only=True) as store:
        expected = labels_progress(store, half_width=0.1)
    for shown in expected.figures:
        assert shown.text.replace("'", "&#39;") in block
    assert 'data-figure="pass rate" data-labelled="12"' in block


def test_the_runs_page_shows_its_labels_section_as_the_report_does(
        server: Served, root: Path, run_id: str) -> None:
    """The judge's agreement with the reviewers and the corrected figures, as `harness report
    --html` draws them; drawn again when a label is added, not on every visit."""
    from harness.calibration.run_agreement import run_labels_report

    _label_queue(root / run_id, 12)
    page = server.request("GET", f"/runs/{run_id}").text
    section = page.split('<section id="labels">')[1].split("</section>")[0]
    report = run_labels_report(root / run_id)
    assert report is not None
    passed = next(t for t in report.agreement.targets if t.target == "passed")
    assert passed.accuracy is not None and passed.accuracy.value is not None
    assert f"{passed.accuracy.value:.3f}" in section and "corrected with 12 human labels" in (
        section)
    _label_queue(root / run_id, 2, start=12)
    again = server.request("GET", f"/runs/{run_id}").text
    assert "corrected with 14 human labels" in again.split('<section id="labels">')[1]


# ---- in the browser ----

def test_the_labelling_page_updates_its_progress_after_each_save(
        server: Served, root: Path, run_id: str,
        open_served: Callable[..., OpenedPage], tmp_path: Path) -> None:
    _label_queue(root / run_id, 9, start=1)  # 9 labelled: the 10th makes the figures
    opened = open_served(server.url.replace("/?", f"/label/{run_id}?queue=random&"))
    page = opened.page
    page.wait_for_selector("#label-page[data-ready=true]")
    page.fill("#reviewer-name", "ana")
    page.press("#reviewer-name", "Enter")
    progress = page.locator('#cp-figures li[data-figure="pass rate"]')
    assert progress.get_attribute("data-labelled") == "9"
    assert "9 of the 10 random labels" in progress.text_content()
    assert "From 10 random labels on" in page.text_content("#corrected-progress")
    page.keyboard.press("1")  # passed
    page.keyboard.press("5")  # score 1
    page.keyboard.press("s")
    page.wait_for_selector('#cp-figures li[data-figure="pass rate"][data-labelled="10"]')
    text = progress.text_content()
    assert "withheld" not in text and "10" in text
    assert "From 10 random labels on" not in page.text_content("#corrected-progress")
    opened.screenshot(tmp_path / "progress-1366.png")
    opened.assert_quiet()
