"""What `harness run` says about how a run ended (issue 11): the exit code of a run that
measured nothing or stopped on a budget, the counts of an early stop, `--resume` keeping the
stored concurrency, and the help text.

The commands run in-process (typer's runner); tests/test_run_signals.py sends real signals
to a real process.
"""

from __future__ import annotations

from typer.testing import CliRunner

from harness.cli import app


def test_help_offers_no_judge_once_without_a_double_negative() -> None:
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "--no-judge" in result.stdout and "--no-no-judge" not in result.stdout
