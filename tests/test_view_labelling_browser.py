"""Labelling in ``harness view`` in headless Chromium: a reviewer names themselves once and
labels the random queue with the keyboard, blind (the judge's verdicts hidden until they have
labelled); two reviewers in two browser contexts label the same run at once and lose no
label; their agreement shows once both have labelled; a hostile comment and reviewer name
reach the other reviewer's page as text; "save as scenario" writes a file ``harness
validate`` accepts. Every request is counted (none leaves the server) and console errors
fail the test. Screenshots at 1366 px (light) and 420 px (dark) are kept in the test's
folder; with ``HARNESS_DOC_IMAGES=1`` they are also written to ``docs/images/`` for the
docs page."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from harness.runs.labels import random_queue
from harness.runs.store import RunStore
from tests.helpers.browser import OpenedPage
from tests.helpers.cli import run_cli
from tests.helpers.labelled_runs import offline_run
from tests.helpers.report_runs import PAYLOAD
from tests.helpers.view_server import Served, served

Opener = Callable[..., OpenedPage]
CRITERION = "criterion:final_response_quality/correctness"
DOC_IMAGES = Path(__file__).resolve().parents[1] / "docs" / "images"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("view-label-browser") / "runs"
    offline_run(folder / "weather")
    offline_run(folder / "pair")
    # each test labels a run of its own: the tests hold in any order
    offline_run(folder / "hostile")
    offline_run(folder / "chosen")
    return folder


@pytest.fixture(scope="module")
def server(root: Path) -> Iterator[Served]:
    with served(root) as s:
        yield s


def _open(server: Served, open_served: Opener, path_query: str, *, name: str | None = None,
          width: int = 1366) -> OpenedPage:
    """The labelling page ``path_query`` in a browser context of its own (a new reviewer),
    named ``name`` when given (typed into the page's form, as a person does)."""
    opened = open_served(server.url.replace("/?", path_query + ("&" if "?" in path_query
                                                                 else "?")), width=width)
    page = opened.page
    page.wait_for_selector("#label-page[data-ready=true]")
    if name is not None:
        page.fill("#reviewer-name", name)
        page.press("#reviewer-name", "Enter")
        page.wait_for_selector("#reviewer-line:not([hidden])")
    return opened


def _keep(opened: OpenedPage, folder: Path, name: str, *, full_page: bool = False) -> None:
    path = opened.screenshot(folder / name, full_page=full_page)
    if os.environ.get("HARNESS_DOC_IMAGES") == "1":
        DOC_IMAGES.mkdir(exist_ok=True)
        shutil.copy(path, DOC_IMAGES / name)


def _labels(root: Path, run: str, *, history: bool = False) -> list[dict[str, object]]:
    with RunStore.open(root / run, read_only=True) as store:
        return [lb.to_json() for lb in store.labels(history=history)]


def test_labelling_the_random_queue_with_the_keyboard_in_blind_mode(
        server: Served, root: Path, open_served: Opener, tmp_path: Path) -> None:
    opened = _open(server, open_served, "/label/weather?queue=random")
    page = opened.page
    assert page.is_visible("#reviewer-form")  # no name yet: the page asks for one
    page.fill("#reviewer-name", "ana")
    page.press("#reviewer-name", "Enter")
    assert page.text_content("#reviewer-shown") == "ana"
    # blind: nothing of the judge's shows until ana has labelled
    assert not page.is_visible("#judge-panel")
    assert page.locator(".judge-line:visible").count() == 0
    assert "you labelled 0 of 12" in page.text_content("#progress")
    _keep(opened, tmp_path, "label-blind-1366.png", full_page=True)
    # pass, score 0.75, rubric passed, correctness 4 (each key moves to the next question)
    for key in ("1", "4", "1", "4"):
        page.keyboard.press(key)
    page.keyboard.press("c")  # a comment on the question now current (completeness)
    page.keyboard.type("answers the question; could name the source")
    page.keyboard.press("Escape")
    page.keyboard.press("5")
    assert page.text_content("#save-status") == "5 unsaved"
    page.keyboard.press("s")
    page.wait_for_selector("#save-status:text('saved 5 labels')")
    assert page.is_visible("#judge-panel")  # labelled: the judge's verdicts show
    assert page.locator(".judge-line:visible").count() > 0
    assert page.is_checked("#show-judge") and page.is_disabled("#show-judge")
    with RunStore.open(root / "weather", read_only=True) as store:
        first = random_queue(store)[0]
    stored = {lb["target"]: lb for lb in _labels(root, "weather")}
    assert {(lb["scenario_id"], lb["epoch"]) for lb in stored.values()} == {first}
    assert all(lb["random"] and lb["annotator"] == "ana" for lb in stored.values())
    assert stored["passed"]["value"] is True and stored["score"]["value"] == 0.75
    assert stored[CRITERION]["value"] == 4
    completeness = stored["criterion:final_response_quality/completeness"]
    assert completeness["value"] == 5
    assert completeness["comment"] == "answers the question; could name the source"
    assert "you labelled 1 of 12" in page.text_content("#progress")
    _keep(opened, tmp_path, "label-labelled-1366.png")
    # changing a label: the last counts, the history shows both
    page.keyboard.press("k")
    page.keyboard.press("k")  # back to correctness
    page.keyboard.press("2")
    page.keyboard.press("s")
    page.wait_for_selector("#save-status:text('saved 1 label')")
    correctness = page.locator(f'fieldset[data-target="{CRITERION}"]')
    assert "history (2 versions" in correctness.text_content()
    assert [lb["value"] for lb in _labels(root, "weather", history=True)
            if lb["target"] == CRITERION] == [4, 2]
    # n: the next sample of the queue; the name is remembered; blind again there
    page.keyboard.press("n")
    page.wait_for_url("**/label/weather?queue=random&at=1")
    page.wait_for_selector("#label-page[data-ready=true]")
    assert page.text_content("#reviewer-shown") == "ana" and not page.is_visible("#judge-panel")
    page.keyboard.press("v")  # the switch shows the judge before labelling
    assert page.is_visible("#judge-panel")
    page.keyboard.press("v")
    assert not page.is_visible("#judge-panel")
    page.keyboard.press("p")
    page.wait_for_url("**/label/weather?queue=random&at=0")
    opened.assert_quiet()
    narrow = _open(server, open_served, "/label/weather?queue=random&at=0", width=420)
    narrow.page.emulate_media(color_scheme="dark")
    assert narrow.page.evaluate("document.documentElement.scrollWidth") <= 420
    _keep(narrow, tmp_path, "label-420-dark.png")
    narrow.assert_quiet()


def test_two_reviewers_label_the_same_run_at_once_and_see_their_agreement(
        server: Served, root: Path, open_served: Opener, tmp_path: Path) -> None:
    reviewers = {name: _open(server, open_served, "/label/pair?queue=random", name=name)
                 for name in ("ana", "bo")}
    # both give the first six questions of four samples a level (correctness: 5, 4, 2, 1
    # and 5, 3, 2, 1), then save at the same moment
    correctness = {"ana": "5421", "bo": "5321"}
    for at in range(4):
        for who, opened in reviewers.items():
            page = opened.page
            if at:
                page.goto(f"{server.origin}/label/pair?queue=random&at={at}")
                page.wait_for_selector("#label-page[data-ready=true]")
            for key in ["1", "3", "1", correctness[who][at], "3", "3"]:
                page.keyboard.press(key)
            if at == 0 and who == "ana":
                page.keyboard.press("c")  # on the question after the last one answered
                page.keyboard.type("kept?")
                page.keyboard.press("Escape")
                assert "a comment waits" in page.text_content("#save-status")
        for opened in reviewers.values():  # both requests sent before either answers
            opened.page.evaluate("document.getElementById('save-labels').click()")
        for opened in reviewers.values():
            opened.page.wait_for_selector("#save-status:text-matches('^saved')")
    current = _labels(root, "pair")
    assert len({(lb["annotator"], lb["scenario_id"], lb["epoch"]) for lb in current}) == 8
    assert len(current) == len(_labels(root, "pair", history=True)) == 8 * 6
    assert not any("comment" in lb for lb in current)  # no level, no label: not stored
    # once both have labelled, each sees the other's labels and the agreement per question
    page = reviewers["bo"].page
    page.goto(f"{server.origin}/label/pair?queue=random&at=1")
    page.wait_for_selector("#label-page[data-ready=true]")
    question = page.locator(f'fieldset[data-target="{CRITERION}"]')
    agreement = question.locator(".agreement").text_content()
    assert "Krippendorff's α 0." in agreement and "4 samples" in agreement, agreement
    assert "ana: 4 good" in question.text_content() and "bo: 3 acceptable" in \
        question.text_content()
    assert page.locator("#reviewer-count").text_content().startswith("2 reviewer(s)")
    question.scroll_into_view_if_needed()
    _keep(reviewers["bo"], tmp_path, "label-agreement-1366.png")
    for opened in reviewers.values():
        opened.assert_quiet()


def test_a_hostile_comment_and_reviewer_name_reach_another_reviewer_as_text(
        server: Served, open_served: Opener) -> None:
    hostile_name = "<img src=x onerror=window.__xss=5>mallory"
    mallory = _open(server, open_served, "/label/hostile?queue=random&at=5", name=hostile_name)
    page = mallory.page
    page.keyboard.press("2")  # fail
    page.keyboard.press("k")
    page.keyboard.press("c")
    page.keyboard.type(PAYLOAD)
    page.keyboard.press("Escape")
    page.keyboard.press("s")
    page.wait_for_selector("#save-status:text('saved 1 label')")
    other = _open(server, open_served, "/label/hostile?queue=random&at=5", name="dee")
    page = other.page
    page.keyboard.press("1")
    page.keyboard.press("s")
    page.wait_for_selector("#save-status:text('saved 1 label')")
    assert PAYLOAD in page.locator("q.comment-text").all_text_contents()
    assert hostile_name in page.locator(".reviewer-label .who").all_text_contents()
    assert page.evaluate("window.__xss") is None
    for opened in (mallory, other):
        opened.assert_quiet()


def test_a_sample_opened_from_the_run_page_is_labelled_as_chosen_and_saved_as_scenario(
        server: Served, root: Path, open_served: Opener, tmp_path: Path) -> None:
    opened = open_served(server.url.replace("/?", "/runs/chosen?"))
    page = opened.page
    page.click("#sample-table tbody tr:nth-child(2) a.open-sample")
    link = page.wait_for_selector("#drill a.label-link")
    assert link is not None
    link.click()
    page.wait_for_selector("#label-page[data-ready=true]")
    assert page.text_content("#queue-kind") == "chosen sample"
    scenario = page.evaluate("JSON.parse(document.getElementById('label-data').textContent)"
                             ".scenario_id")
    page.fill("#reviewer-name", "cy")
    page.press("#reviewer-name", "Enter")
    page.keyboard.press("2")
    page.keyboard.press("s")
    page.wait_for_selector("#save-status:text('saved 1 label')")
    chosen = [lb for lb in _labels(root, "chosen") if lb["annotator"] == "cy"]
    assert [(lb["scenario_id"], lb["target"], lb["value"], lb["random"]) for lb in chosen] == [
        (scenario, "passed", False, False)]
    page.click("#save-scenario summary")
    page.fill("#save-folder", "../outside")
    page.click("#save-scenario-button")
    page.wait_for_selector("#save-result.bad")
    assert page.text_content("#save-result").startswith("folder: ")
    # the browser logs the refusal (400) itself: that one line, and nothing else
    assert opened.console == ["error: Failed to load resource: the server responded with a "
                              "status of 400 (Bad Request)"]
    opened.console.clear()
    page.fill("#save-folder", "saved")
    page.click("#save-scenario-button")
    page.wait_for_selector("#saved-path")
    written = root / page.text_content("#saved-path")
    assert written.parent == root / "saved" and written.is_file()
    _keep(opened, tmp_path, "label-saved-scenario-1366.png")
    checked = run_cli("validate", written)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    opened.assert_quiet()
