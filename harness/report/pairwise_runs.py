"""Rich tables for a pairwise comparison of two runs (``harness pairwise``): the headline
figures with their intervals, the per-scenario table, and what was not compared. Text from
runs and models goes through :func:`~harness.safe_text.terminal_text`, so it can never
inject console markup or terminal escape sequences."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console

from harness.report.formatting import fmt_ci, fmt_num, ident, make_table
from harness.report.terminal import render_notes, render_notice
from harness.safe_text import terminal_text
from harness.wording import plural


def _proportion_row(p: dict[str, Any]) -> tuple[str, str, str]:
    return (fmt_num(p["value"]), fmt_ci(p["ci_low"], p["ci_high"]), f"{p['k']}/{p['n']}, Wilson")


def render_pairwise(report: dict[str, Any], console: Console, *, max_rows: int = 50) -> None:
    """Print a :class:`~harness.runs.pairwise_runs.PairwiseRunReport` (as its JSON dict)."""
    render_notice(report["notice"], console)
    counts = report["counts"]
    rubric = report["rubric"]
    console.print(
        f"[bold]Pairwise[/] A = {terminal_text(report['run_a'])}  "
        f"B = {terminal_text(report['run_b'])}\n"
        f"rubric {terminal_text(rubric['id'])} v{terminal_text(rubric['version'])}, judges "
        f"{terminal_text(', '.join(report['judges']))}, {plural(report['samples'], 'sample')} "
        f"each, both orders; {plural(counts['pairs'], 'pair')} in "
        f"{plural(counts['common_scenarios'], 'common scenario')}")
    table = make_table("B against A", "figure", "value", "95% interval", "how", text=("how",))
    table.add_row("wins A / wins B / ties",
                  f"{report['wins_a']} / {report['wins_b']} / {report['ties']}", "",
                  f"of {plural(counts['decided'], 'decided pair')}")
    rate = report["b_win_rate"]
    if rate is None:
        table.add_row("B win rate", "—", "—", "no decided pair")
    else:
        table.add_row("B win rate", fmt_num(rate["value"]), fmt_ci(rate["ci_low"], rate["ci_high"]),
                      f"B 1, tie 0.5, A 0; clustered by scenario, t on C-1 df, C = "
                      f"{rate['n_clusters']}")
    table.add_row("inconsistency rate", *_proportion_row(report["inconsistency_rate"]))
    table.add_row("first-position rate", *_proportion_row(report["first_position_rate"]))
    table.add_row("judge errors (pairs)", str(counts["judge_errors"]), "",
                  plural(counts["failed_comparisons"], "failed comparison"))
    console.print(table)
    if len(report["judges"]) > 1:
        judges = make_table("By judge (comparisons)", "judge", "A", "B", "ties", "errors",
                        "inconsistency")
        for name, s in report["by_judge"].items():
            judges.add_row(ident(name), str(s["wins_a"]), str(s["wins_b"]), str(s["ties"]),
                           str(s["n_errors"]), fmt_num(s["inconsistency_rate"]["value"]))
        console.print(judges)
    rows = sorted(report["scenarios"], key=lambda s: (s["b_win_rate"] is None,
                                                      s["b_win_rate"] or 0.0))
    per = make_table("Per scenario (B worst first)", "scenario", "pairs", "A/B/tie", "err",
                 "skip", "B rate", "incons.")
    per.box, per.show_edge, per.pad_edge, per.collapse_padding = (
        box.SIMPLE_HEAD, False, False, True)
    for s in rows[:max_rows]:
        per.add_row(ident(s["scenario_id"]), str(s["pairs"]),
                    f"{s['wins_a']}/{s['wins_b']}/{s['ties']}", str(s["judge_errors"]),
                    str(s["skipped"]), fmt_num(s["b_win_rate"]),
                    f"{s['inconsistent_comparisons']}/{s['comparisons']}")
    console.print(per)
    if len(rows) > max_rows:
        console.print(f"[dim]… {plural(len(rows) - max_rows, 'more scenario')} (--json lists "
                      "all)[/]")
    for side in ("a", "b"):
        only = report[f"scenarios_only_in_{side}"]
        if only:
            console.print(f"[yellow]scenarios only in run {side.upper()} (not compared):[/] "
                          + terminal_text(", ".join(only)))
    render_notes(report["notes"], console)
    if report["significant_regression"]:
        console.print("[bold red]significant regression: B loses to A (the interval of B's win "
                      "rate lies below 0.5)[/]")
    elif report["significant_improvement"]:
        console.print("[bold green]significant improvement: B beats A (the interval of B's "
                      "win rate lies above 0.5)[/]")
    else:
        console.print("no significant difference")
