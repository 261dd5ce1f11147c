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
from harness.wording import plural

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
    console.print(f"scenarios: {terminal_text(_shown(EXAMPLE_SCENARIOS))}; agent mock:agent-flaky, "
                  f"simulator mock:simulator, judge mock:judge; {plural(epochs, 'epoch')} each")
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
    suite = out / "suite"
    real = [f"harness run {terminal_text(_shown(EXAMPLE_SCENARIOS))} \\",
            "    --agent anthropic:claude-sonnet-4-5 \\",
            "    --simulator anthropic:claude-haiku-4-5 --judge openai:gpt-4.1"]
    steps = [
        ("every result, transcripts included, in a browser", [_link(suite / "report.html")]),
        ("the judge calibration in a browser", [_link(out / "calibration" / "report.html")]),
        ("the suite's tables again", [f"harness report {terminal_text(suite)}"]),
        ("the suite's files (summary.json, samples.jsonl, run.sqlite)", [_link(suite)]),
        ("statistics from any score file",
         [f"harness stats {terminal_text(suite / 'samples.jsonl')}"]),
        ("with real models (keys from ANTHROPIC_API_KEY / OPENAI_API_KEY)", real),
    ]
    for what, lines in steps:
        console.print(f"{what}:")
        # Each path or command on a line of its own, never broken by us (a longer one is
        # left to the terminal), so it can be clicked or copied whole.
        for line in lines:
            console.print(f"  {line}", soft_wrap=True)


def _link(path: Path) -> str:
    """``path`` as shown (relative when below the current directory), made a terminal link
    to the file (rich prints the escape where the terminal supports links)."""
    return f"[link={path.resolve().as_uri()}]{terminal_text(_shown(path))}[/link]"


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
    console.print("the whole report (every statistic, the confusion matrix, the threshold "
                  "curve, the human baseline, the policies):")
    console.print(f"  harness calibrate --judgments {terminal_text(out / 'judgments.jsonl')}",
                  soft_wrap=True)
