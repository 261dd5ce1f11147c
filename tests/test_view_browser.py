"""``harness view`` in headless Chromium: the runs index with several runs and its search,
two runs picked and compared, a running run's progress advancing as samples are stored, and
the trends' regression break. Every request is counted (none leaves the server), console
errors fail the test, and screenshots at 1366 and 420 px are kept in the test's folder."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from harness.models.mock import register_mock, unregister_mock
from harness.runs.store import RunStore
from harness.view.security import TOKEN_COOKIE
from tests.helpers.browser import OpenedPage
from tests.helpers.report_runs import PageAgent, make_runs
from tests.helpers.view_server import Served, served

Opener = Callable[..., OpenedPage]


@pytest.fixture(scope="module")
def runs_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``runs/``: the baseline, the candidate (nested), an older copy of the baseline and a
    damaged store."""
    register_mock("pageagent", PageAgent)
    try:
        base = tmp_path_factory.mktemp("view-browser")
        baseline, candidate = make_runs(base)
    finally:
        unregister_mock("pageagent")
    root = base / "runs"
    shutil.copytree(baseline, root / "baseline")
    shutil.copytree(candidate, root / "nested" / "candidate")
    shutil.copytree(baseline, root / "older" / "baseline-copy")
    (root / "damaged").mkdir()
    (root / "damaged" / "run.sqlite").write_bytes(b"not a database at all" * 20)
    return root


@pytest.fixture(scope="module")
def server(runs_folder: Path) -> Iterator[Served]:
    with served(runs_folder) as s:
        yield s


def _visible(opened: OpenedPage, selector: str) -> list[str]:
    ids: list[str] = opened.page.eval_on_selector_all(
        selector, "rows => rows.filter(r => !r.classList.contains('hidden'))"
                  ".map(r => r.dataset.run || r.dataset.scenario)")
    return ids


def test_the_index_lists_every_run_and_the_search_narrows_them(
        server: Served, open_served: Opener, tmp_path: Path) -> None:
    opened = open_served(server.url)
    page = opened.page
    assert "token" not in page.url  # the token left the address bar ...
    cookie = {c["name"]: c for c in page.context.cookies()}[f"{TOKEN_COOKIE}_{server.port}"]
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"  # ... for a cookie
    assert page.evaluate("document.cookie") == ""  # that no script can read
    every = _visible(opened, "#run-table tbody tr")
    assert sorted(every) == ["baseline", "damaged", "nested/candidate", "older/baseline-copy"]
    assert page.text_content("#run-count") == "4 of 4 runs"
    damaged = page.locator('#run-table tr[data-run="damaged"]')
    assert "unreadable" in damaged.text_content()
    opened.screenshot(tmp_path / "index-1366.png", full_page=True)
    page.fill("#run-search", "candidate")
    assert _visible(opened, "#run-table tbody tr") == ["nested/candidate"]
    assert page.text_content("#run-count") == "1 of 4 runs"
    page.fill("#run-search", "pageagent-new finished")  # every word must match
    assert _visible(opened, "#run-table tbody tr") == ["nested/candidate"]
    page.fill("#run-search", "unreadable")
    assert _visible(opened, "#run-table tbody tr") == ["damaged"]
    page.press("#run-search", "Enter")  # the search box submits nothing
    assert page.url == server.origin + "/"
    page.fill("#run-search", "")
    assert len(_visible(opened, "#run-table tbody tr")) == 4
    opened.assert_quiet()
    narrow = open_served(server.url, width=420)
    narrow.screenshot(tmp_path / "index-420.png", full_page=True)
    width = narrow.page.evaluate("document.documentElement.scrollWidth")
    assert width <= 420, f"the index scrolls sideways at 420 px ({width} px wide)"
    narrow.assert_quiet()


def test_two_runs_picked_in_the_index_are_compared(
        server: Served, open_served: Opener, tmp_path: Path) -> None:
    opened = open_served(server.url)
    page = opened.page
    page.check('#run-table tr[data-run="baseline"] input[name="a"]')
    page.check('#run-table tr[data-run="nested/candidate"] input[name="b"]')
    page.click("#compare-button")
    page.wait_for_load_state("load")
    url = urlsplit(page.url)
    assert url.path == "/compare"
    assert dict(parse_qsl(url.query)) == {"a": "baseline", "b": "nested/candidate"}
    changes = dict(page.eval_on_selector_all(
        "#diff-table tbody tr", "rows => rows.map(r => [r.dataset.scenario, r.dataset.change])"))
    assert changes["task-0"] == "regression" and changes["task-1"] == "regression"
    assert changes["task-5"] == "improvement"
    page.locator('#diff-table tr[data-scenario="task-0"] a').first.click()
    page.locator("#side-a").wait_for(state="visible")
    assert "DONE" in page.text_content("#side-a")
    opened.screenshot(tmp_path / "compare-1366.png")
    opened.assert_quiet()
    # one side missing: said on the page, not a traceback
    page.goto(server.origin + "/compare?a=baseline")
    assert "Pick two runs." in page.text_content("main")


def test_a_running_runs_page_shows_samples_as_they_are_stored(
        runs_folder: Path, tmp_path: Path, open_served: Opener) -> None:
    source = runs_folder / "baseline"
    with RunStore.open(source, read_only=True) as store:
        records = list(store.iter_samples())
        config = store.config
    root = tmp_path / "runs"
    writer = RunStore.create(root / "live", config)
    writer.record_session_start(len(records))  # this process runs it: it is alive
    try:
        for record in records[:2]:
            writer.write_sample(record.model_copy(update={"finished_at": time.time()}))
        with served(root) as server:
            from playwright.sync_api import expect

            opened = open_served(server.url.replace("/?", "/runs/live?"))
            page = opened.page
            assert page.url == server.origin + "/runs/live"
            assert page.text_content("#live-status") == "running"
            assert page.text_content("#live-done") == "2"
            assert page.text_content("#live-planned") == str(len(records))
            for record in records[2:5]:
                writer.write_sample(record.model_copy(update={"finished_at": time.time()}))
            expect(page.locator("#live-done")).to_have_text("5", timeout=15000)
            assert page.locator("#live-samples li").count() == 3
            shown = page.locator("#live-samples li").first.text_content()
            assert f"{records[4].scenario_id}#{records[4].epoch}" in shown
            opened.screenshot(tmp_path / "live-1366.png")
            writer.record_session_end()
            shutil.copy(source / "summary.json", root / "live" / "summary.json")
            page.locator("#live-ended").wait_for(state="visible", timeout=15000)
            assert page.text_content("#live-status") == "finished"
            opened.assert_quiet()
    finally:
        writer.close()


def test_the_trends_break_where_a_scenario_regressed(
        server: Served, open_served: Opener, tmp_path: Path) -> None:
    opened = open_served(server.url.replace("/?", "/trends?"))
    page = opened.page
    regressed = page.locator('#trend-table tr[data-scenario="task-0"]')
    assert regressed.locator("line.break").count() == 1
    assert page.locator('#trend-table tr[data-scenario="task-3"] line.break').count() == 0
    # regressions first
    assert _visible(opened, "#trend-table tbody tr")[:2] == ["task-0", "task-1"]
    page.fill("#trend-search", "task-5")
    assert _visible(opened, "#trend-table tbody tr") == ["task-5"]
    opened.screenshot(tmp_path / "trends-1366.png")
    page.fill("#trend-search", "")
    regressed.locator("a").last.click()  # the point of the run that regressed opens it
    page.wait_for_url(server.origin + "/runs/nested/candidate")
    opened.assert_quiet()
    narrow = open_served(server.url.replace("/?", "/trends?"), width=420)
    narrow.screenshot(tmp_path / "trends-420.png", full_page=True)
    assert narrow.page.evaluate("document.documentElement.scrollWidth") <= 420
    narrow.assert_quiet()


def test_a_served_run_reads_as_its_report(server: Served, open_served: Opener,
                                          runs_folder: Path, tmp_path: Path) -> None:
    import json

    opened = open_served(server.url.replace("/?", "/runs/baseline?"))
    page = opened.page
    summary = json.loads((runs_folder / "baseline" / "summary.json").read_text())
    assert page.text_content('[data-figure="mean"]') == f"{summary['score']['mean']:.3f}"
    assert page.text_content("#live-status") == "finished"
    page.locator("#sample-table tbody tr a").first.click()
    page.locator("#drill").wait_for(state="visible")
    opened.screenshot(tmp_path / "run-1366.png")
    opened.assert_quiet()
    narrow = open_served(server.url.replace("/?", "/runs/baseline?"), width=420)
    narrow.screenshot(tmp_path / "run-420.png")
    narrow.assert_quiet()


def test_the_index_follows_a_running_run_until_it_ends(
        runs_folder: Path, tmp_path: Path, open_served: Opener) -> None:
    from playwright.sync_api import expect

    source = runs_folder / "baseline"
    with RunStore.open(source, read_only=True) as store:
        records = list(store.iter_samples())
        config = store.config
    root = tmp_path / "runs"
    shutil.copytree(source, root / "done")
    writer = RunStore.create(root / "live", config)
    writer.record_session_start(len(records))
    try:
        for record in records[:2]:
            writer.write_sample(record.model_copy(update={"finished_at": time.time()}))
        with served(root) as server:
            opened = open_served(server.url)
            page = opened.page
            row = page.locator('#run-table tr[data-run="live"]')
            assert row.locator('[data-cell="status"]').text_content() == "running"
            samples = row.locator('[data-cell="samples"]')
            assert samples.text_content() == f"2 / {len(records)}"
            for record in records[2:5]:
                writer.write_sample(record.model_copy(update={"finished_at": time.time()}))
            expect(samples).to_have_text(f"5 / {len(records)}", timeout=20000)
            assert page.locator("#runs-changed").is_hidden()
            writer.record_session_end()
            shutil.copy(source / "summary.json", root / "live" / "summary.json")
            expect(row.locator('[data-cell="status"]')).to_have_text("finished",
                                                                      timeout=20000)
            assert page.locator("#runs-changed").is_visible()
            assert "good" in row.locator('[data-cell="status"]').get_attribute("class")
            assert page.locator("#runs-polling").is_hidden()
            opened.screenshot(tmp_path / "index-live-1366.png")
            opened.assert_quiet()
            # with no run running, the index asks the server for nothing
            assert "connect-src 'none'" in server.request("GET", "/").headers[
                "Content-Security-Policy"]
    finally:
        writer.close()
