"""``harness demo``: the whole pipeline offline, with no key and no network.

It runs the example scenarios with offline ``mock:`` models (a deliberately flaky agent, so
the intervals have something to measure), then a judge calibration study with an offline
judge on the small labelled example set. Every number it prints says it comes from offline
models.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from harness.cli.app import Verbose, app, logs_to
from harness.cli.help_format import examples
from harness.errors import HarnessError
from harness.files import new_output_directory
from harness.logs import LOG_FILENAME
from harness.resources import data_dir
from harness.safe_text import terminal_console, terminal_text

EXAMPLE_SCENARIOS = data_dir("scenarios")
EXAMPLE_CALIBRATION = data_dir("examples/calibration")


@app.command(epilog=examples(
    ("the tour's first step: no key, no network", "harness demo"),
    ("more samples per scenario, into a directory of your choice",
     "harness demo --epochs 10 --out runs/demo")))
def demo(
    out: Annotated[Path | None, typer.Option(
        metavar="DIR", help="where to write (default runs/demo-<time>)")] = None,
    epochs: Annotated[int, typer.Option(metavar="K", help="samples per scenario")] = 5,
    verbose: Verbose = False,
) -> None:
    """Run the example suite and a calibration study, offline.

    Every model is a mock: model, so no key and no network are needed."""
    if not EXAMPLE_SCENARIOS.is_dir():
        raise HarnessError(
            f"the example scenarios are not at {EXAMPLE_SCENARIOS}; run the demo from a "
            "checkout installed with `pip install -e .`")
    out = out or new_output_directory("runs", "demo", "a demo directory")
    with logs_to(out / LOG_FILENAME, verbose=verbose):
        _demo(out, epochs)


def _demo(out: Path, epochs: int) -> None:
    from harness.report.html.run_page import write_run_report
    from harness.report.terminal import render_run
    from harness.runs import event_loop
    from harness.runs.api import run_suite
    from harness.runs.config import RunConfig, RunDesign, RunExecution

    console = terminal_console()
    console.rule("[bold]1. The example suite, offline")
    console.print(f"scenarios: {terminal_text(EXAMPLE_SCENARIOS)}; agent mock:agent-flaky, "
                  f"simulator mock:simulator, judge mock:judge; {epochs} epochs each")
    config = RunConfig(
        design=RunDesign(scenario_paths=[str(EXAMPLE_SCENARIOS)], offline=True,
                         agent="mock:agent-flaky", epochs=epochs),
        execution=RunExecution(cache_mode="off"),
    )
    result = event_loop.run(run_suite(config, out / "suite", tune_collector=True))
    render_run(result.summary, console, run_dir=str(out / "suite"), brief=True)
    write_run_report(out / "suite")

    console.rule("[bold]2. Judge calibration, offline")
    _calibration(out / "calibration", console)

    console.rule("[bold]Next")
    suite = terminal_text(out / "suite")
    console.print(
        f"- every result, transcripts included, in a browser: {suite}/report.html\n"
        f"- the judge calibration in a browser: {terminal_text(out / 'calibration')}"
        "/report.html\n"
        f"- the suite's tables again: harness report {suite}\n"
        f"- the suite's files: {suite}/summary.json, samples.jsonl, run.sqlite\n"
        f"- statistics from any score file: harness stats {suite}/samples.jsonl\n"
        f"- with real models: harness run {terminal_text(_shown(EXAMPLE_SCENARIOS))} "
        "--agent anthropic:claude-sonnet-4-5 "
        "--simulator anthropic:claude-haiku-4-5 --judge openai:gpt-4.1 (keys from "
        "ANTHROPIC_API_KEY / OPENAI_API_KEY)"
    )


def _shown(path: Path) -> str:
    """``path`` relative to the current directory when it is below it, else absolute."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _calibration(out: Path, console: Console) -> None:
    from harness.calibration.study import run_calibration
    from harness.report.calibration_terminal import render_report
    from harness.report.html.calibration_page import write_calibration_page
    from harness.runs import event_loop

    dataset = EXAMPLE_CALIBRATION / "pointwise_items.jsonl"
    console.print(f"labelled items: {terminal_text(dataset)}; judge mock:judge, 3 samples per item")
    report = event_loop.run(run_calibration(
        dataset, ["mock:judge"], "final_response_quality", samples=3, out_dir=out,
        write_page=write_calibration_page))
    render_report(report, console, brief=True)
    console.print(f"the whole report (every statistic, the confusion matrix, the threshold "
                  f"curve, the human baseline, the policies): harness calibrate --judgments "
                  f"{terminal_text(out / 'judgments.jsonl')}")
