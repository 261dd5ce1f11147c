"""What `harness run` says about how a run ended (issue 11): the exit code of a run that
measured nothing or stopped on a budget, the counts of an early stop, `--resume` keeping the
stored concurrency, and the help text.

The commands run in-process (typer's runner); tests/test_run_signals.py sends real signals
to a real process.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from harness.cli import app
from harness.cli.app import EXIT_BUDGET_STOP, EXIT_NOTHING_SCORED

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


# -- exit codes: a run that measured nothing, or only part of its plan ---------------------

FAILING_AGENT = "def answer(messages, toolbox):\n    raise RuntimeError('agent crashed')\n"


def _suite(tmp_path: Path, module: str, source: str, n_scenarios: int) -> Path:
    """A folder with a Python agent module and n scenarios that use it."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / f"{module}.py").write_text(source)
    (suite / "s.yaml").write_text(json.dumps([
        {"id": f"s{i}", "user": {"goal": "g", "script": ["hi"]},
         "agent": {"callable": f"{module}:answer"},
         "expectations": {"required_phrases": ["DONE"]}} for i in range(n_scenarios)]))
    return suite


@pytest.mark.parametrize("policy", [[], ["--errors-as-failures"]])
def test_a_run_whose_every_sample_errored_exits_4_and_says_so(tmp_path: Path,
                                                               policy: list[str]) -> None:
    suite = _suite(tmp_path, "outcomes_failing_agent", FAILING_AGENT, 2)
    out = tmp_path / "run"
    done = harness("run", str(suite), "--epochs", "2", "--cache-mode", "off", "--out",
                   str(out), "--json", *policy)
    assert done.exit_code == EXIT_NOTHING_SCORED == 4, done.output
    summary = json.loads(done.stdout)  # the summary is still printed and written
    assert summary["counts"]["errored"] == 4 and summary["counts"]["scored"] == 0
    assert (out / "summary.json").exists()
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: no sample was scored (4 errored, 0 unscored)")
    assert "exit 4" in line


def test_a_budget_stop_exits_3_and_the_counts_say_what_was_loaded(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = harness("run", str(ROOT / "scenarios"), "--offline", "--epochs", "5",
                   "--max-calls", "0", "--cache-mode", "off", "--out", str(out))
    assert done.exit_code == EXIT_BUDGET_STOP == 3, done.output
    # One line for the one problem (no second line for "nothing scored": it says why).
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("error: the run stopped on its budget before any sample finished "
                           "(0 of 55 planned)")
    assert f"harness run --resume {out}" in line
    assert sum(x.startswith("error:") for x in done.stderr.splitlines()) == 1
    counts = json.loads((out / "summary.json").read_text())["counts"]
    assert counts["scenarios_loaded"] == 11 and counts["samples_planned"] == 55
    assert counts["scenarios"] == counts["samples"] == 0
    shown = " ".join(harness("report", str(out)).stdout.split())
    assert "11 scenarios loaded (0 with samples), 0 of 55 planned samples" in shown
    # A larger budget completes the run: the code goes back to 0.
    again = harness("run", "--resume", str(out), "--max-calls", "100000", "--json")
    assert again.exit_code == 0, again.output
    counts = json.loads(again.stdout)["counts"]
    assert counts["samples"] == counts["samples_planned"] == 55
    assert counts["scenarios"] == counts["scenarios_loaded"] == 11


def test_a_wrong_agent_base_url_stops_the_run_at_once_naming_it(tmp_path: Path) -> None:
    # Nothing listens on port 9: the first agent call cannot connect, so the run stops there
    # (one line naming role, model and address), instead of retrying every sample in turn.
    out = tmp_path / "run"
    done = harness("run", f"{WEATHER}:weather-current-paris", "--agent", "openai:gpt-4o",
                   "--agent-base-url", "http://127.0.0.1:9/v1", "--simulator", "mock:simulator",
                   "--judge", "mock:judge", "--epochs", "3", "--cache-mode", "off",
                   "--out", str(out))
    assert done.exit_code == 2, done.output
    [line] = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    assert "openai:gpt-4o: the agent model cannot reach http://127.0.0.1:9/v1" in line
    stop = json.loads((out / "summary.json").read_text())["stopped"]
    assert stop["reason"] == "model_configuration"
    assert "Model usage" not in done.stdout  # no empty table after a run that never started
