"""``harness stats FILE [--json]``: suite statistics from a JSONL of sample scores
(contract 2). No model calls; results from any tool can be analysed."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from harness.cli.app import app, check_target_mdd
from harness.cli.help_format import OUTPUT_PANEL, examples
from harness.errors import InputError
from harness.report.terminal import (
    render_notes,
    render_notice,
    render_scenarios,
    render_suite,
    render_variance,
)
from harness.safe_text import terminal_console

if TYPE_CHECKING:
    from harness.calibration.run_agreement import RunAgreement
    from harness.runs.label_model import Label
    from harness.stats.corrected import CorrectedFigures
    from harness.stats.jsonl import SampleTable
    from harness.stats.sampling import ScenarioStats
    from harness.stats.summary import StatsReport

TABLE_ROWS = 50  # scenarios shown in the table; the JSON output has them all


def _print_tables(out: StatsReport, scenarios: list[ScenarioStats], console: Console, *,
                  all_k: bool) -> None:
    render_notice(out.notice, console)
    render_suite(out, console, all_k=all_k)
    agreement = getattr(out, "agreement", None)  # with --labels
    if agreement is not None:
        from harness.report.run_labels import render_agreement

        render_agreement(agreement, console)
    if out.corrected is not None:
        from harness.report.corrected import render_corrected

        render_corrected(out.mean_estimate, out.pass_rate, out.corrected, console)
    render_scenarios(out, scenarios, console)
    render_variance(out, console)
    render_notes(out.notes, console)


def _score_range(text: str) -> tuple[float, float]:
    from harness.stats.jsonl import check_score_range

    low, sep, high = text.partition(":")
    try:
        if not sep:
            raise ValueError
        bounds = (float(low), float(high))
    except ValueError:
        raise InputError("command line", "--score-range",
                         f"expected LOW:HIGH (two numbers), got {text!r}") from None
    check_score_range(bounds)
    return bounds


def _sample_labels(path: Path, table: SampleTable) -> list[tuple[int, Label]]:
    """The labels of ``path`` (contract 10) that count (a later label of the same sample,
    reviewer and target replaces the earlier one), each with the index of its sample in
    ``table``: one error naming the file, the line and the field at the first label of a
    sample the file does not have."""
    from harness.files import read_text
    from harness.runs.label_files import parse_label_lines

    parsed = parse_label_lines(path, read_text(path, "a JSONL file of labels (contract 10)"))
    if not parsed:
        raise InputError(path, None, "holds no labels; expected one JSON object a line with "
                         "scenario_id, epoch, annotator, target, value and random")
    columns = table.columns
    index = {(sid, int(epoch)): int(a) + i
             for sid, a, b in zip(columns.ids, columns.offsets[:-1], columns.offsets[1:],
                                  strict=True)
             for i, epoch in enumerate(table.epoch_values[a:b].tolist())}
    known = set(columns.ids)
    latest: dict[tuple[str, int, str, str], tuple[int, Label]] = {}
    for number, label in parsed:
        key = (label.scenario_id, label.epoch)
        if key not in index:
            field, what = (("epoch", f"scenario {label.scenario_id!r} has no scored sample "
                            f"at epoch {label.epoch} in {table.source}")
                           if label.scenario_id in known
                           else ("scenario_id", f"{label.scenario_id!r} is not a scenario of "
                                 f"{table.source}"))
            raise InputError(path, field, what + "; a label must be of a scored sample in "
                             "the file", location=number)
        latest[label.key] = (index[key], label)
    return list(latest.values())


def _corrected(labels: list[tuple[int, Label]], table: SampleTable, *, confidence: float,
               seed: int, bounds: tuple[float, float], half_width: float) -> CorrectedFigures:
    from harness.stats.corrected import SampleLabel, corrected_figures

    columns = table.columns
    given = [SampleLabel(index=i, target=lb.target, value=float(lb.value), random=lb.random)
             for i, lb in labels]
    return corrected_figures(
        columns.scores, columns.passed.astype(float), columns.offsets, given,
        confidence=confidence, seed=seed, score_range=bounds, half_width=half_width)


def _agreement(path: Path, labels: list[tuple[int, Label]], table: SampleTable, *,
               confidence: float, seed: int, bounds: tuple[float, float]) -> RunAgreement:
    """The judge's agreement with the labels of ``passed`` and ``score``."""
    from harness.calibration.report import AnalysisOptions
    from harness.calibration.run_agreement import file_agreement

    columns = table.columns
    samples = [(sid, int(epoch), float(score), bool(ok))
               for sid, a, b in zip(columns.ids, columns.offsets[:-1], columns.offsets[1:],
                                    strict=True)
               for epoch, score, ok in zip(table.epoch_values[a:b].tolist(),
                                           columns.scores[a:b].tolist(),
                                           columns.passed[a:b].tolist(), strict=True)]
    return file_agreement(samples, labels, source=str(path),
                          options=AnalysisOptions(confidence=confidence, seed=seed),
                          score_range=bounds)


@app.command("stats", epilog=examples(
    ("the statistics of a file of scores on a 1 to 5 scale",
     "harness stats scores.jsonl --score-range 1:5"),
    ("the epochs and scenarios needed to detect a 0.05 difference",
     "harness stats scores.jsonl --target-mdd 0.05"),
    ("the figures corrected by human labels of a random sample of the samples",
     "harness stats scores.jsonl --labels labels.jsonl")))
def stats(
    file: Annotated[Path, typer.Argument(
        help="JSONL of sample scores: one object per line with scenario_id, epoch, score "
        "and, optionally, passed")],
    as_json: Annotated[bool, typer.Option(
        "--json", rich_help_panel=OUTPUT_PANEL, help="print one JSON object")] = False,
    confidence: Annotated[float, typer.Option(
        metavar="LEVEL", help="confidence level of the intervals")] = 0.95,
    seed: Annotated[int, typer.Option(metavar="N", help="seed of the cluster bootstrap")] = 0,
    bootstrap_resamples: Annotated[
        int, typer.Option(metavar="N", help="bootstrap resamples (0 skips the bootstrap)")
    ] = 9999,
    target_mdd: Annotated[float | None, typer.Option(
        "--target-mdd", metavar="DIFF",
        help="a difference to detect: the epochs per scenario and the scenarios a paired "
        "comparison needs for it, Miller 2024 (default: half the current minimum detectable "
        "difference)")] = None,
    errors_as_failures: Annotated[bool, typer.Option(
        help="count lines with status 'errored' as failures (score 0), as a run with "
        "--errors-as-failures does (default: left out, and counted)")] = False,
    score_range: Annotated[str, typer.Option(
        "--score-range", metavar="LOW:HIGH",
        help="the range every score lies in (outside it: an error); a sample without "
        "'passed' passes at the top of it")] = "0:1",
    all_k: Annotated[bool, typer.Option(
        "--all-k", rich_help_panel=OUTPUT_PANEL,
        help="pass@k and pass^k for every k in the tables, not only 1, 2, 4, 8, ... and the "
        "largest (the JSON has every k)")] = False,
    labels: Annotated[Path | None, typer.Option(
        "--labels", metavar="FILE",
        help="human labels of the samples (JSONL, one label a line: scenario_id, epoch, "
        "annotator, target, value, random): the mean score and pass rate corrected by the "
        "random ones (PPI++), beside the judge's")] = None,
    half_width: Annotated[float, typer.Option(
        "--half-width", metavar="W",
        help="with --labels: the half-width, as a share of the score range, that the "
        "number of labels needed is planned for")] = 0.05,
) -> None:
    """Suite statistics from a JSONL of sample scores.

    Every figure with its confidence interval, as a run reports them."""
    # Imported here: numpy and scipy load only when statistics are computed, not for --help.
    from harness.models.provenance import roles_notice
    from harness.stats.jsonl import read_sample_scores
    from harness.stats.sampling import ScenarioStats
    from harness.stats.suite import suite_stats_from_columns
    from harness.stats.summary import (
        StatsReport,
        design_power,
        offline_notice,
        summary_head,
        write_summary_json,
    )

    if not 0.0 < confidence < 1.0:
        raise InputError("command line", "--confidence",
                         f"expected a number strictly between 0 and 1, got {confidence}")
    if bootstrap_resamples < 0:
        raise InputError("command line", "--bootstrap-resamples",
                         f"expected 0 or more, got {bootstrap_resamples}")
    check_target_mdd(target_mdd)
    if not 0.0 < half_width < 1.0:
        raise InputError("command line", "--half-width",
                         f"expected a share of the score range between 0 and 1, got "
                         f"{half_width}")
    bounds = _score_range(score_range)
    table = read_sample_scores(file, errors_as_failures=errors_as_failures, score_range=bounds)
    given = None if labels is None else _sample_labels(labels, table)
    corrected = agreement = None
    if labels is not None and given is not None:
        corrected = _corrected(given, table, confidence=confidence, seed=seed, bounds=bounds,
                               half_width=half_width)
        agreement = _agreement(labels, given, table, confidence=confidence, seed=seed,
                               bounds=bounds)
    suite = suite_stats_from_columns(
        table.columns, judge_scores=table.judge_scores, confidence=confidence, seed=seed,
        bootstrap_resamples=bootstrap_resamples, score_range=bounds,
    )
    figures = summary_head(suite, power=design_power(suite, alpha=1.0 - confidence),
                           target_difference=target_mdd)
    notes = table.notes + figures.notes
    if target_mdd is not None and figures.design_for_target is None:
        notes.append("--target-mdd: no design computed (the variance components need at "
                     "least 2 scenarios)")
    out = StatsReport(
        **{**dict(figures), "notes": notes}, source=str(file),
        # Was any sample made with offline mock models, which roles were (when the lines
        # name their models), and the notice that says so.
        offline=table.n_offline > 0, offline_samples=table.n_offline, roles=table.roles,
        notice=roles_notice(table.roles) or offline_notice(table.n_offline, table.n_samples),
        corrected=corrected,
    )
    if agreement is not None:
        from harness.calibration.run_agreement import StatsWithAgreement

        out = StatsWithAgreement(**dict(out), agreement=agreement)
    if as_json:
        sys.stdout.flush()
        write_summary_json(out, suite.scenarios.rows(), sys.stdout.buffer)
        sys.stdout.buffer.flush()
    else:
        # The table shows the first rows only; the rest are never built.
        rows = [ScenarioStats.model_validate(row)
                for row in itertools.islice(suite.scenarios.rows(), TABLE_ROWS)]
        _print_tables(out, rows, terminal_console(), all_k=all_k)
