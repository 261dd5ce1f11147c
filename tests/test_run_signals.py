"""A run stopped from outside (issue 11): SIGTERM, what `kill`, a CI timeout or a container
stop send, ends a run as Ctrl-C does. The stop is recorded as an event, summary.json is
written (so `harness report` works), the terminal says how to continue, the exit code is the
shell's 128 + signal number, and `--resume` completes the run.

Signals need a real process: the run is a subprocess whose Python agent sleeps, so the
signal lands while samples are in flight.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app
from tests.helpers.run_processes import ended, slow_suite, start_run, wait_for_a_stored_sample

EPOCHS = 30


@pytest.mark.parametrize(("signum", "code", "word"), [
    (signal.SIGTERM, 143, "terminated"),
    (signal.SIGINT, 130, "interrupted"),
])
def test_a_signal_stops_the_run_with_a_summary_a_hint_and_a_resumable_store(
        tmp_path: Path, signum: int, code: int, word: str) -> None:
    module = f"slow_agent_{word}"
    suite, out = slow_suite(tmp_path, module), tmp_path / "run"
    # started with the default SIGINT disposition: a job started in the background by a
    # non-interactive shell (as a CI script may start the tests) would ignore it
    process = start_run(suite, out, "--epochs", str(EPOCHS), "--concurrency", "2",
                        env={"SLOW_AGENT_S": "0.5", "COLUMNS": "250"})
    try:
        wait_for_a_stored_sample(process, out)
        process.send_signal(signum)
    finally:
        stderr = ended(process)
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr
    assert f"{word}: finished samples are stored" in stderr
    assert f"harness run --resume {out}" in stderr

    summary = json.loads((out / "summary.json").read_text())
    kept = summary["counts"]["samples"]
    assert 0 < kept < 2 * EPOCHS
    page = (out / "report.html").read_text()  # the HTML report of what was kept
    assert page.count('<tr id="row-') == kept and f"Stopped early ({word})" in page
    assert summary["stopped"]["reason"] == word
    assert summary["events"][-1]["kind"] == word
    assert summary["events"][-1]["finished_this_session"] == kept
    report = CliRunner().invoke(app, ["report", str(out)], env={"COLUMNS": "250"})
    assert report.exit_code == 0, report.output
    assert f"stopped early ({word})" in report.stdout
    assert f"{kept} of {2 * EPOCHS} planned samples" in report.stdout

    resumed = CliRunner().invoke(app, ["run", "--resume", str(out), "--json"])
    assert resumed.exit_code == 0, resumed.output
    done = json.loads(resumed.stdout)
    assert done["stopped"] is None
    assert done["counts"]["samples"] == done["counts"]["scored"] == 2 * EPOCHS
    assert [e["kind"] for e in done["events"]] == [word, "resumed"]
    page = (out / "report.html").read_text()  # written again after the resume
    assert page.count('<tr id="row-') == 2 * EPOCHS and "Stopped early" not in page
