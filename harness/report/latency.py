"""Terminal tables of a run's latency figures and per-tool table (computed in
:mod:`harness.runs.latency` and :mod:`harness.runs.tool_figures`), compact enough for 80
columns: values only; the intervals and the per-scenario figures are in ``summary.json``
and the HTML report."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table

from harness.report.formatting import fmt_num, fmt_seconds, make_table
from harness.safe_text import terminal_text

if TYPE_CHECKING:
    from harness.runs.latency import LatencySpread, RunLatency
    from harness.runs.tool_figures import ToolFigures
    from harness.stats.estimate import Estimate


def _compact(table: Table) -> None:
    """No vertical rules, no outer edge, one space between columns: ten columns fit 80."""
    table.box, table.padding, table.collapse_padding = box.SIMPLE_HEAD, (0, 1), True
    table.show_edge = table.pad_edge = False


def render_latency(latency: RunLatency | None, console: Console) -> None:
    """Mean, median, p95 and max durations per episode, user turn, tool call and model call
    of each role; nothing when the run recorded no timed conversation."""
    if latency is None:
        return
    table = make_table("Latency", "per", "n", "mean", "median", "p95", "max")
    _compact(table)
    overall = latency.overall
    rows: list[tuple[str, LatencySpread]] = [
        ("episode", overall.episode), ("user turn", overall.user_turn),
        ("tool call", overall.tool_call),
        *((f"{role} call", s) for role, s in overall.model_call.items())]
    for name, s in rows:
        table.add_row(terminal_text(name), str(s.n), fmt_seconds(s.mean), fmt_seconds(s.median),
                      fmt_seconds(s.p95), fmt_seconds(s.max))
    table.caption = "episode: no judging; user turn: agent + tool time"
    console.print(table)


def _value(est: Estimate | None) -> str:
    return fmt_num(None if est is None else est.value, 2)


def _rate(count: int, rate: float | None) -> str:
    return str(count) if rate is None or count == 0 else f"{count} {rate:.0%}"


def render_tools(tools: dict[str, ToolFigures] | None, console: Console,
                 max_rows: int = 50) -> None:
    """One row per tool: calls, share of episodes calling it, precision, recall, parameter
    accuracy, invalid-argument and error counts with their rates, median and p95 seconds."""
    if not tools:
        return
    table = make_table("Tools", "tool", "calls", "used", "prec", "rec", "args", "inval",
                       "errors", "p50", "p95")
    _compact(table)
    for name, t in list(tools.items())[:max_rows]:
        table.add_row(terminal_text(name), str(t.calls), _value(t.share_of_episodes),
                      _value(t.precision), _value(t.recall), _value(t.parameter_accuracy),
                      _rate(t.invalid_arguments, t.invalid_argument_rate),
                      _rate(t.errors, t.error_rate), fmt_seconds(t.latency.median),
                      fmt_seconds(t.latency.p95))
    more = f"; {len(tools) - max_rows} more tools in summary.json" if len(tools) > max_rows else ""
    table.caption = ("used: share of episodes offering it; prec, rec: vs its reference calls; "
                     "args: parameter accuracy; inval: invalid arguments; intervals: "
                     f"summary.json{more}")
    console.print(table)
