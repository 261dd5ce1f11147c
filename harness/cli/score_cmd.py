"""``harness score-transcripts FILE [--json]``: score existing conversations (contract 4),
from our transcript JSONL or a Vertex AI agent-evaluation dataset (JSONL or CSV).

Checks run on every transcript, with no model call. With ``--judge MODEL --rubric ID`` the
rubric judges run too (:func:`harness.formats.transcript_judging.judge_records`): each rubric's
score is a metric ``rubric:<id>`` in each row and in the summary like the checks, each row
carries its full ``judgments``, and ``summary.judges`` names the judge models, rubric versions
and prompt hashes (and says so when the numbers come from offline mock judges).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, cast

import typer

from harness.choices import AggregationMethod
from harness.cli.app import Verbose, app, logs_to
from harness.cli.help_format import JUDGES_PANEL, OUTPUT_PANEL, examples
from harness.errors import InputError
from harness.logs import command_log_file
from harness.report.transcripts_terminal import render_scored_transcripts
from harness.safe_text import terminal_console, terminal_text


@app.command("score-transcripts", epilog=examples(
    ("the checks on our own transcript format",
     "harness score-transcripts examples/transcripts/seed_transcripts.jsonl"),
    ("a Vertex AI dataset, judged too by the offline mock judge",
     "harness score-transcripts examples/transcripts/vertex_dataset.csv \\\n"
     "    --judge mock:judge --rubric final_response_quality")))
def score_transcripts(
    file: Annotated[Path, typer.Argument(
        help="JSONL of {id, messages, expected_tool_calls} (OpenAI chat format), or a "
        "Vertex AI dataset (JSONL or .csv) with predicted_trajectory and "
        "reference_trajectory")],
    json_output: Annotated[bool, typer.Option(
        "--json", rich_help_panel=OUTPUT_PANEL, help="print one JSON object")] = False,
    single_tool_use: Annotated[list[str] | None, typer.Option(
        "--single-tool-use", metavar="TOOL",
        help="also check, on every transcript, that TOOL was called "
        "(trajectory_single_tool_use:TOOL; repeatable)")] = None,
    judge: Annotated[list[str] | None, typer.Option(
        "--judge", metavar="MODEL", rich_help_panel=JUDGES_PANEL,
        help="judge model (provider:model; repeat for a panel; mock:judge runs offline); "
        "needs --rubric")] = None,
    rubric: Annotated[list[str] | None, typer.Option(
        "--rubric", metavar="ID", rich_help_panel=JUDGES_PANEL,
        help="rubric id to judge with (repeatable)")] = None,
    rubrics_dir: Annotated[list[Path] | None, typer.Option(
        "--rubrics-dir", metavar="PATH", rich_help_panel=JUDGES_PANEL,
        help="more rubric files or directories, beside the built-in ones")] = None,
    samples: Annotated[int | None, typer.Option(
        metavar="K", rich_help_panel=JUDGES_PANEL,
        help="judge samples per transcript and judge, for every rubric (default: each "
        "rubric's own `samples`, else 1)", min=1, max=100)] = None,
    temperature: Annotated[float | None, typer.Option(
        metavar="T", rich_help_panel=JUDGES_PANEL,
        help="judge temperature (default: the provider's)", min=0, max=2)] = None,
    aggregate: Annotated[str | None, typer.Option(
        metavar="mean|majority", rich_help_panel=JUDGES_PANEL,
        help="how a rubric's judge samples combine, for every rubric (default: each "
        "rubric's own `aggregation`, else mean)")] = None,
    judge_base_url: Annotated[str | None, typer.Option(
        metavar="URL", rich_help_panel=JUDGES_PANEL,
        help="base URL for the judges (an OpenAI-compatible server or a gateway)")] = None,
    verbose: Verbose = False,
) -> None:
    """Score existing transcripts: checks, and judges if asked.

    The deterministic checks make no model calls: trajectory metrics under their Vertex AI
    names, ADK's scores, and the scenario checks given per line.
    A Vertex AI dataset (JSONL, or a .csv file) is read too: its latency and failure columns
    are summarised, and a failed row is reported apart, unscored.
    Malformed tool-call arguments are scored as non-matching, with a warning. With --judge and
    --rubric, rubric judges score them too; a missing or refused key or an unknown model
    stops the command (exit 2)."""
    from harness.formats.transcript_file import (
        load_transcript_file,
        score_records,
        with_single_tool_use,
    )

    records = with_single_tool_use(load_transcript_file(file), single_tool_use or [])
    # Judges are model calls: their libraries' log lines go to a file of this command's own.
    # A failed row (an errored transcript) is reported apart, never judged.
    with logs_to(command_log_file("score-transcripts"), verbose=verbose):
        judged = _judge([r for r in records if not r.transcript.errored], judge or [],
                        rubric or [], rubrics_dir or [], samples, temperature, aggregate,
                        judge_base_url)
    output = score_records(records, extra_metrics=judged.metrics if judged else None)
    if judged is not None:
        judged.attach(output)
    err = terminal_console(stderr=True, soft_wrap=True)
    for warning in output["warnings"]:
        err.print(f"[yellow]warning:[/] {terminal_text(warning)}")
    if judged is not None and judged.summary["offline"]:
        err.print(f"[yellow]note:[/] {terminal_text(judged.summary['note'])}")
    if json_output:
        # json's default ensure_ascii: every control, C1 and bidirectional character in ids
        # and model text goes out as a \u escape, never raw
        typer.echo(json.dumps(output, indent=2))
    else:
        render_scored_transcripts(output, terminal_console())


def _judge(records: list[Any], judges: list[str], rubric_ids: list[str],
           rubric_dirs: list[Path], samples: int | None, temperature: float | None,
           aggregate: str | None, base_url: str | None) -> Any:
    """Run the judges when asked (``None`` otherwise); bad options are input errors."""
    if not judges and not rubric_ids:
        return None
    if not judges or not rubric_ids:
        given, missing = ("--judge", "--rubric") if judges else ("--rubric", "--judge")
        raise InputError("command line", missing, f"{given} needs at least one {missing}")
    if aggregate not in (None, "mean", "majority"):
        raise InputError("command line", "--aggregate",
                         f"mean or majority (got {aggregate!r})")
    from harness.formats.transcript_judging import judge_records
    from harness.judging.judge import JudgeSettings

    return judge_records(records, judges=judges, rubric_ids=rubric_ids,
                         rubric_dirs=rubric_dirs, settings=JudgeSettings(temperature=temperature),
                         samples=samples, method=cast(AggregationMethod | None, aggregate),
                         base_url=base_url)
