"""What every run command shares once its run is under way: the progress bar, running to
the end (Ctrl-C and SIGTERM keep what finished), the gate applied and written, the HTML
report, the problems of a finished run with the exit code each sets, and the summary
printed. ``harness run``, ``harness merge`` and the simulator panel use it."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console, RenderableType
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Column
from rich.text import Text

from harness.choices import RunGateBasis
from harness.cli.app import (
    EXIT_BUDGET_STOP,
    EXIT_GATE_FAILED,
    EXIT_INPUT_ERROR,
    EXIT_NOTHING_SCORED,
    EXIT_WORKER_LOST,
)
from harness.cli.interrupts import exit_code, run_async, signal_name
from harness.errors import HarnessError
from harness.safe_text import terminal_console, terminal_text
from harness.wording import plural

if TYPE_CHECKING:
    from harness.runs.api import RunResult
    from harness.runs.engine import Runner
    from harness.runs.sample import SampleRecord
    from harness.runs.summary_model import RunSummary
    from harness.stats.corrected import CorrectedFigures

ERR = terminal_console(stderr=True, soft_wrap=True)  # one line per message


class _PlannedProgress(Progress):
    """A progress display whose tasks' total is ``planned()`` (when set and not 0), read at
    every refresh."""

    planned: Callable[[], int] | None = None

    def get_renderables(self) -> Iterable[RenderableType]:
        total = self.planned() if self.planned is not None else 0
        if total:
            for task_id in self.task_ids:
                self.update(task_id, total=total)
        yield from super().get_renderables()


class _StatsColumn(ProgressColumn):
    """The task's ``stats`` on one line, cut with an ellipsis where the terminal ends: the
    only column that gives up room, so the bar, the count and the time always show."""

    def render(self, task: Task) -> Text:
        return Text(str(task.fields.get("stats", "")), no_wrap=True, overflow="ellipsis")


class RunProgress:
    """A rich progress bar fed by the runner: samples done of the samples planned (read from
    the runner at every refresh, so the total shows from the start rather than ``0/?``),
    then errors, model calls, cost and tokens so far (read from the usage ledger, so it
    costs nothing per model call). The figures come last and are cut at the terminal's
    width, so the count and the time always show, at 80 columns too."""

    def __init__(self, console: Console) -> None:
        self.progress = _PlannedProgress(
            TextColumn("[bold]{task.description}", table_column=Column(no_wrap=True)),
            BarColumn(bar_width=20, table_column=Column(no_wrap=True)),
            MofNCompleteColumn(table_column=Column(no_wrap=True)),
            TimeElapsedColumn(table_column=Column(no_wrap=True)), _StatsColumn(),
            console=console, refresh_per_second=4, disable=not console.is_terminal,
        )
        self.task = self.progress.add_task("episodes", total=None, stats="")
        self.runner: Runner | None = None
        self.errors = 0

    def start(self, runner: Runner) -> None:
        self.runner = runner
        # The runner counts its plan just after this call: each refresh reads it.
        self.progress.planned = lambda: runner.state.planned
        self.progress.start()

    def sample(self, record: SampleRecord) -> None:
        assert self.runner is not None
        self.errors += record.status == "errored"
        total = self.runner.ledger_total()
        stats = (f"{plural(self.errors, 'error')}, {plural(total.calls, 'call')} "
                 f"({total.cached_calls} cached), ${total.cost_usd:.4f}, "
                 f"{total.input_tokens + total.output_tokens:,} tokens")
        self.progress.update(self.task, advance=1, total=self.runner.state.planned, stats=stats)

    def stop(self) -> None:
        self.progress.stop()


def _corrected(run_dir: Path, summary: RunSummary, labels: Path | None
               ) -> CorrectedFigures | None:
    """The run's figures corrected by its labels (``labels``' file, else the stored ones)."""
    from harness.runs.corrected_figures import gate_corrected_figures

    return gate_corrected_figures(run_dir, summary.config.design, labels)


def finish_run(run_dir: Path, summary: RunSummary, *, as_json: bool,
               min_pass_rate: float | None, min_score: float | None,
               gate_on: RunGateBasis, labels: Path | None = None) -> None:
    """After a run (or a merge) wrote ``summary``: apply the gate (rewriting summary.json
    with it), write the HTML report, print the summary, one line per problem, and exit with
    the most telling code (:func:`_problems`). ``labels`` (a contract-10 file) replaces the
    run's stored labels for the gate on the corrected lower bound."""
    from harness.report.terminal import render_run

    summary = apply_gate(run_dir, summary, min_pass_rate=min_pass_rate,
                         min_score=min_score, gate_on=gate_on, labels=labels)
    html = write_html_report(run_dir)
    if as_json:
        print_summary_json(summary)
    else:
        render_run(summary, terminal_console(), run_dir=str(run_dir))
        also = ", samples.jsonl and report.html" if html else " and samples.jsonl"
        ERR.print(f"[dim]wrote {terminal_text(run_dir)}/summary.json{also}[/]")
    exit_with(run_problems(summary, run_dir))


def apply_gate(run_dir: Path, summary: RunSummary, *, min_pass_rate: float | None,
               min_score: float | None, gate_on: RunGateBasis,
               labels: Path | None = None) -> RunSummary:
    """``summary`` with the gate's result, rewritten to summary.json when a gate was asked
    for (``summary`` as it is otherwise)."""
    from harness.runs.gate import evaluate_gate

    corrected = None
    if gate_on == "corrected-lower-bound" and (min_pass_rate is not None
                                               or min_score is not None):
        corrected = _corrected(run_dir, summary, labels)
    gate = evaluate_gate(summary.score, min_pass_rate=min_pass_rate,
                         min_score=min_score, gate_on=gate_on, corrected=corrected)
    if gate is None:
        return summary
    summary = summary.model_copy(update={"gate": gate})
    from harness.runs.summary import write_summary

    write_summary(run_dir, summary)
    return summary


def run_problems(summary: RunSummary, run_dir: Path) -> list[int]:
    """Print one line per problem of a finished run (:func:`_problems`) and return the exit
    codes they set, a missed gate's included."""
    codes = []
    for code, problem in _problems(summary, run_dir):
        ERR.print(f"[bold red]error:[/] {terminal_text(problem)}")
        codes.append(code)
    if summary.gate is not None and not summary.gate.passed:
        codes.append(EXIT_GATE_FAILED)
    return codes


def exit_with(codes: list[int]) -> None:
    """Exit with the most telling of ``codes`` (return when there is none): a configuration
    to fix, a budget stop, a lost worker, nothing scored, the gate."""
    if codes:
        order = (EXIT_INPUT_ERROR, EXIT_BUDGET_STOP, EXIT_WORKER_LOST, EXIT_NOTHING_SCORED,
                 EXIT_GATE_FAILED)
        raise typer.Exit(min(codes, key=order.index))


def write_html_report(run_dir: Path, out: Path | None = None) -> Path | None:
    """Write the run's HTML page (``RUN_DIR/report.html`` unless ``out``); on a file that
    cannot be written, say so in one line and go on (the run's results are already saved)."""
    from harness.report.html.run_page import write_run_report

    try:
        return write_run_report(run_dir, out)
    except HarnessError as err:
        ERR.print(f"[bold red]error:[/] the HTML report was not written: {terminal_text(err)}")
        return None


def print_summary_json(summary: RunSummary, more: dict[str, Any] | None = None) -> None:
    """``summary.json``'s content on stdout (with ``more`` keys after its own), every
    non-ASCII character escaped (outside text must not reach a terminal raw; the file itself
    keeps the exact text)."""
    typer.echo(json.dumps({**summary.model_dump(mode="json"), **(more or {})}, indent=2))


def _problems(summary: RunSummary, run_dir: Path) -> list[tuple[int, str]]:
    """Why a finished run cannot pass as a complete measurement, one line each with the exit
    code it sets (the gate aside)."""
    counts, stopped = summary.counts, summary.stopped
    problems = []
    if stopped and stopped.reason == "model_configuration":
        problems.append((EXIT_INPUT_ERROR, f"the run stopped: {stopped.message}; fix it and "
                         f"continue with harness run --resume {run_dir}"))
    if stopped and stopped.reason == "budget":
        planned = counts.samples_planned
        of = f" of {planned} planned" if planned is not None else ""
        kept = (f"with {counts.samples}{of} samples stored, so its figures cover only "
                "those" if counts.samples else f"before any sample finished (0{of})")
        problems.append((EXIT_BUDGET_STOP, f"the run stopped on its budget {kept} (exit "
                         f"{EXIT_BUDGET_STOP}); continue with harness run --resume {run_dir} "
                         "--max-cost USD or --max-calls N"))
    shards, planned = summary.shards, counts.samples_planned
    if shards is not None and summary.config.design.shard is None and (
            shards.missing or (planned is not None and counts.samples < planned)):
        held = f"{counts.samples} of {planned} planned" if planned else f"{counts.samples}"
        lacking = f", without shard(s) {shards.label(shards.missing)}" if shards.missing else ""
        problems.append((EXIT_BUDGET_STOP, f"the merged run holds {held} samples{lacking}, so "
                         f"its figures cover only part of the grid (exit {EXIT_BUDGET_STOP}); "
                         "merge the missing shards' run directories too, or run the missing "
                         f"samples with harness run --resume {run_dir}"))
    if stopped and stopped.reason == "worker_lost":
        problems.append((EXIT_WORKER_LOST, f"the run stopped: {stopped.message} (exit "
                         f"{EXIT_WORKER_LOST}); continue with harness run --resume {run_dir}"))
    # An early stop with no sample at all is already explained by its line; a shard that
    # holds no sample of the grid has nothing to score.
    if counts.scored == 0 and (counts.samples or not problems) and counts.samples_planned != 0:
        what = (f"{counts.errored} errored, {counts.unscored} unscored"
                if counts.samples else "no sample finished")
        problems.append((EXIT_NOTHING_SCORED, f"no sample was scored ({what}), so the run has "
                         f"no figure (exit {EXIT_NOTHING_SCORED}); why is in "
                         f"{run_dir}/summary.json"))
    return problems


def run_to_end(coro: Coroutine[Any, Any, RunResult], progress: RunProgress,
                run_dir: Path, *, resume_dir: Path | None = None) -> RunResult:
    """Run ``coro`` (a new or resumed run). Ctrl-C or SIGTERM (harness.cli.interrupts) stops
    it: what finished is kept and summarised, and the terminal says how to continue (with
    ``--resume resume_dir``, the panel a sub-run belongs to, else ``run_dir``)."""
    from harness.runs.store import STORE_FILENAME

    try:
        try:
            return run_async(coro)
        finally:
            progress.stop()
    except KeyboardInterrupt as stop:
        if (run_dir / STORE_FILENAME).exists():
            if (run_dir / "summary.json").exists():
                write_html_report(run_dir)
            ERR.print(f"[yellow]{signal_name(stop)}: finished samples are stored and "
                      "summarised; continue with harness run --resume "
                      f"{terminal_text(resume_dir or run_dir)}[/]")
        else:
            ERR.print(f"[yellow]{signal_name(stop)} before the run started: nothing was "
                      "written[/]")
        raise typer.Exit(exit_code(stop)) from None
