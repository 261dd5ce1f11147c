"""``harness score-transcripts FILE [--json]``: score existing conversations (contract 4).

Checks run on every transcript, with no model call. Judges plug in here: parse the
``--judge``/``--rubric`` options in :func:`score_transcripts`, compute per-transcript judge
metrics from ``records`` and pass them to :func:`score_records` as ``extra_metrics``; they
then appear in each row and in the summary like the checks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.checks.transcript_file import load_transcript_file, score_records
from harness.cli.app import app

# The per-transcript table shows the core trajectory metrics (short headers) and names the
# other checks that failed; the summary table lists every metric. The JSON keeps everything.
_CORE = {
    "trajectory_exact_match": "exact",
    "trajectory_in_order_match": "in order",
    "trajectory_any_order_match": "any order",
    "trajectory_precision": "P",
    "trajectory_recall": "R",
    "trajectory_f1": "F1",
}


_SHORT = {
    "tool_trajectory_avg_score": "adk_trajectory",
    "response_match_score": "rouge1",
    "parameter_accuracy": "parameters",
    "forbidden_tools_avoided": "forbidden_tools",
    "final_state_match": "final_state",
}


def _short(name: str) -> str:
    if name.startswith("trajectory_single_tool_use:"):
        return "uses:" + name.split(":", 1)[1]
    return _SHORT.get(name, name)


def _fmt(value: Any) -> str:
    return "—" if value is None else f"{value:.2f}"


def _print_tables(output: dict[str, Any], console: Console) -> None:
    core = [n for n in _CORE if n in output["summary"]["metrics"]]
    table = Table(title="Transcripts", title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("id", overflow="fold", min_width=12)
    for name in core:
        table.add_column(_CORE[name], justify="right")
    table.add_column("other failed checks", overflow="fold", ratio=1)
    for row in output["transcripts"]:
        failed = [_short(c["name"]) for c in row["checks"]
                  if c["passed"] is False and c["name"] not in _CORE]
        table.add_row(escape(row["id"]), *(_fmt(row.get(n)) for n in core),
                      escape(", ".join(failed)) or "—")
    console.print(table)

    summary = Table(title=f"Summary over {output['summary']['n_transcripts']} transcripts",
                    title_justify="left", box=box.SIMPLE_HEAD)
    summary.add_column("metric", overflow="fold")
    summary.add_column("mean", justify="right")
    summary.add_column("n", justify="right")
    for name, stats in output["summary"]["metrics"].items():
        summary.add_row(escape(name), _fmt(stats["mean"]), str(stats["n"]))
    console.print(summary)


@app.command("score-transcripts")
def score_transcripts(
    file: Annotated[Path, typer.Argument(help="JSONL: one {id, messages, expected_tool_calls} "
                                         "object per line (OpenAI chat format).")],
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Score existing transcripts with the deterministic checks (no model calls): trajectory
    metrics under their Vertex AI names, ADK's scores, and the scenario checks given per line.
    Malformed tool-call arguments are scored as non-matching, with a warning."""
    records = load_transcript_file(file)
    output = score_records(records)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    for warning in output["warnings"]:
        # model text is data: escape it so brackets in it are not read as rich markup
        err.print(f"[yellow]warning:[/] {escape(warning)}", markup=True)
    if json_output:
        typer.echo(json.dumps(output, indent=2, ensure_ascii=False))
    else:
        _print_tables(output, Console(highlight=False))
