"""Terminal tables of ``harness score-transcripts`` (contract 4): ids, check names and error
text are :class:`~harness.report.formatting.Identifier` cells (control characters shown,
never read as markup, never split across lines)."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from harness.report.formatting import ident
from harness.safe_text import visible_controls
from harness.wording import plural

# The per-transcript table shows the core trajectory metrics (short headers) and names the
# other checks that failed; the summary table lists every metric. The JSON keeps everything.
_CORE = {
    "trajectory_exact_match": "exact",
    "trajectory_in_order_match": "in\norder",
    "trajectory_any_order_match": "any\norder",
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


def render_scored_transcripts(output: dict[str, Any], console: Console) -> None:
    """The tables of ``harness score-transcripts``: each transcript's core trajectory metrics
    and other failed checks, then every metric's mean with its interval, latency and the
    failure rate. ``output`` is the command's JSON object."""
    core = [n for n in _CORE if n in output["summary"]["metrics"]]
    # No edges and collapsed padding: at 80 columns the ids need the room.
    table = Table(title="Transcripts", title_justify="left", box=box.SIMPLE_HEAD,
                  show_edge=False, pad_edge=False, collapse_padding=True)
    table.add_column("id")
    for name in core:
        table.add_column(_CORE[name], justify="right", no_wrap=True)
    table.add_column("other failed checks", overflow="fold", ratio=1)
    for row in output["transcripts"]:
        failed = [_short(c["name"]) for c in row["checks"]
                  if c["passed"] is False and c["name"] not in _CORE]
        if "error" in row:
            failed = [f"not scored: {row['error']}"]
        table.add_row(ident(row["id"]), *(_fmt(row.get(n)) for n in core),
                      ident(", ".join(failed)) if failed else "—")
    console.print(table)

    n = output["summary"]["n_transcripts"]
    summary = Table(title=f"Summary over {plural(n, 'transcript')}",
                    title_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
                    pad_edge=False, collapse_padding=True)
    summary.add_column("metric")
    summary.add_column("mean", justify="right", no_wrap=True)
    summary.add_column("95% CI", justify="right", no_wrap=True)
    summary.add_column("n", justify="right", no_wrap=True)
    for name, stats in output["summary"]["metrics"].items():
        interval = ("—" if stats["ci_low"] is None
                    else f"[{stats['ci_low']:.2f}, {stats['ci_high']:.2f}] {stats['method']}")
        summary.add_row(ident(name), _fmt(stats["mean"]), interval, str(stats["n"]))
    console.print(summary)
    latency = output["summary"].get("latency_in_seconds")
    if latency:
        console.print(f"latency_in_seconds: mean {latency['mean']:.2f}, median "
                      f"{latency['median']:.2f}, p90 {latency['p90']:.2f}, max "
                      f"{latency['max']:.2f} (n {latency['n']})")
    failure = output["summary"].get("failure")
    if failure:
        console.print(f"failure rate: {failure['rate']:.2f} [{failure['ci_low']:.2f}, "
                      f"{failure['ci_high']:.2f}] 95% Wilson ({failure['failed']} of "
                      f"{plural(failure['n'], 'row')} failed, reported apart and not scored)")
    _simulator_findings(output, console)


def _simulator_findings(output: dict[str, Any], console: Console) -> None:
    """Each finding of the user turns (transcript, turn, kind, evidence) and their count,
    when some transcript carried a ``user`` block."""
    counts = output["summary"].get("simulator_findings")
    if not counts:
        return
    console.print(f"Simulated user (the user's turns, not the agent's): "
                  f"{counts['transcripts_with_findings']} of "
                  f"{plural(counts['transcripts_checked'], 'checked transcript')} with a "
                  f"finding, {plural(counts['findings'], 'finding')}")
    if not counts["findings"]:
        return
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    table.add_column("id")
    table.add_column("turn", justify="right", no_wrap=True)
    table.add_column("finding")
    table.add_column("evidence", overflow="fold", ratio=1)
    for row in output["transcripts"]:
        for finding in row.get("simulator_findings", []):
            table.add_row(ident(row["id"]), str(finding["turn"]), ident(finding["kind"]),
                          Text(visible_controls(finding["evidence"])))
    console.print(table)
