"""The terminal block of the simulated user's findings (``summary.json``'s ``simulator``
section, :mod:`harness.runs.simulator_figures`): shown only when there are findings, and
titled so that no one reads it as the agent's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console

from harness.report.formatting import fmt_ci, ident, make_table
from harness.wording import plural

if TYPE_CHECKING:
    from harness.runs.simulator_figures import SimulatorFigures


def render_simulator(figures: SimulatorFigures | None, console: Console) -> None:
    """One row per kind of finding that occurred (findings, samples), and the share of
    checked samples with any, with its interval; nothing when there is no finding."""
    if figures is None or not figures.samples_with_findings:
        return
    share = figures.share_with_findings
    console.print(
        "[bold]Simulated user[/] (the simulator's findings, not the agent's): "
        f"{figures.samples_with_findings} of "
        f"{plural(figures.samples_checked, 'checked sample')} with a finding, "
        f"{share.value:.2f} {fmt_ci(share.ci_low, share.ci_high, 2)} "
        f"{share.confidence:.0%} Wilson")
    table = make_table("", "finding", "findings", "samples")
    for kind, count in figures.by_kind.items():
        if count:
            table.add_row(ident(kind), str(count), str(figures.samples_by_kind[kind]))
    console.print(table)
    console.print("each finding with its turn and evidence: samples.jsonl and the HTML report",
                  style="dim")
