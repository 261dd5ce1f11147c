"""What `harness run` says about how a run ended (issue 11): the exit code of a run that
measured nothing or stopped on a budget, the counts of an early stop, `--resume` keeping the
stored concurrency, and the help text.

The commands run in-process (typer's runner); tests/test_run_signals.py sends real signals
to a real process.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import Result
from typer.testing import CliRunner

from harness.cli import app

ROOT = Path(__file__).resolve().parents[1]
WEATHER = ROOT / "scenarios" / "weather.yaml"


def harness(*args: str) -> Result:
    """``harness ARGS`` in-process; an exception other than an exit is re-raised."""
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def test_help_offers_no_judge_once_without_a_double_negative() -> None:
    result = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "--no-judge" in result.stdout and "--no-no-judge" not in result.stdout


def test_resume_keeps_the_stored_concurrency_unless_given(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = harness("run", str(WEATHER), "--offline", "--epochs", "1", "--concurrency", "3",
                    "--cache-mode", "off", "--out", str(out), "--json")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["config"]["concurrency"] == 3
    kept = harness("run", "--resume", str(out), "--json")
    assert kept.exit_code == 0, kept.output
    assert json.loads(kept.stdout)["config"]["concurrency"] == 3  # not the default 8
    changed = harness("run", "--resume", str(out), "--concurrency", "2", "--json")
    assert changed.exit_code == 0, changed.output
    summary = json.loads(changed.stdout)
    assert summary["config"]["concurrency"] == 2
    resumed = [e for e in summary["events"] if e["kind"] == "resumed"]
    assert [e["overrides"] for e in resumed] == [{}, {"concurrency": 2}]
