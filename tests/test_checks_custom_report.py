"""An errored check of one's own in the HTML report: the drill-down shows its message, as
text, with an error verdict (not "unscored")."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

from harness.report.html.run_page import REPORT_FILENAME
from tests.helpers.browser import OpenedPage
from tests.helpers.cli import run_cli

Opener = Callable[..., OpenedPage]
MESSAGE = '<img src=x onerror="document.title=1">'


def test_an_errored_check_shows_its_message_as_text(tmp_path: Path, open_report: Opener) -> None:
    module = f"report_checks_{uuid.uuid4().hex}"
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / f"{module}.py").write_text(
        "def answer(messages, toolbox):\n"
        "    return 'fine'\n"
        "def broken(transcript, expectations):\n"
        f"    raise ValueError({MESSAGE!r})\n")
    (suite / "s.yaml").write_text(
        "id: bad\nuser: {goal: g, script: [hi]}\n"
        f"agent: {{callable: '{module}:answer'}}\n"
        f"checks: [{{use: '{module}:broken'}}]\n"
        "expectations: {response_max_chars: 10}\n")
    done = run_cli("run", suite, "--epochs", "1", "--cache-mode", "off", "--out",
                   tmp_path / "run")
    assert done.returncode == 4, done.stderr  # nothing scored: every sample errored
    opened = open_report(tmp_path / "run" / REPORT_FILENAME)
    page = opened.page
    page.locator('#sample-table tr[data-scenario="bad"] a').first.click()
    drill = page.locator("#drill")
    drill.wait_for(state="visible")
    row = drill.locator('tr[data-check="broken"]')
    assert row.count() == 1
    text = row.text_content()
    assert f"check 'broken' raised ValueError: {MESSAGE}" in text and "error" in text
    assert "unscored" not in text
    assert row.locator("img").count() == 0 and page.title() != "1"
    assert drill.locator('tr[data-check="response_max_chars"]').count() == 1
    opened.assert_quiet()
