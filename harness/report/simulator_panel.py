"""The terminal table of a simulator panel (``simulator_panel.json``,
:class:`~harness.runs.simulator_panel.SimulatorPanel`): one row per simulator with the
agent's mean score and pass rate under it, each with its interval, and its paired
difference against the first; then the variance shares, the gate and the flip line. Fits 80
columns: each figure sits above its interval in one cell, and simulator names are
identifiers (:func:`~harness.report.formatting.ident`), never split across lines."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.console import Console

from harness.report.formatting import (
    fmt_ci,
    fmt_num,
    fmt_p,
    ident,
    make_table,
    widen_for_identifiers,
)
from harness.safe_text import terminal_text
from harness.wording import plural

if TYPE_CHECKING:
    from harness.runs.simulator_panel import PanelDifference, SimulatorPanel
    from harness.stats.estimate import Estimate

# The components' names as a reader says them.
COMPONENT_WORDS = {"scenario": "scenario", "simulator": "simulator",
                   "interaction": "scenario x simulator", "residual": "epoch (residual)"}


def _cell(estimate: Estimate | None) -> str:
    """A figure above its interval, or a dash."""
    if estimate is None:
        return "—"
    return f"{fmt_num(estimate.value)}\n{fmt_ci(estimate.ci_low, estimate.ci_high)}"


def _difference_cell(d: PanelDifference | None) -> str:
    """The paired difference above its interval and its p-value; ``first`` for the first
    simulator, a dash when there is none."""
    if d is None:
        return "first"
    if d.difference is None:
        return "—"
    return f"{_cell(d.difference)}\np {fmt_p(d.p_value)}"


def variance_line(panel: SimulatorPanel) -> str | None:
    """The variance shares in one sentence, or ``None`` without components."""
    v = panel.variance
    if v is None:
        return None
    shares = ", ".join(f"{COMPONENT_WORDS[k]} {share:.0%}" for k, share in v.shares.items())
    return (f"Variance of a sample's score: {shares} ({v.n_scenarios} scenarios x "
            f"{v.n_simulators} simulators x {plural(v.n_epochs, 'epoch')}, method of "
            "moments)")


def render_panel(panel: SimulatorPanel, console: Console, *, run_dir: str) -> None:
    """Print the panel: its table, the variance shares, the gate, the flip line, notes."""
    level = f"{panel.confidence:.0%}"
    if panel.offline:
        console.print("[bold yellow]OFFLINE models in the panel's runs: figures that depend "
                      "on an offline role come from a mock model (each sub-run's summary "
                      "names its roles)[/]")
    table = make_table(
        f"Simulator panel ({plural(len(panel.members), 'simulator')}; {level} intervals "
        "under each figure)", "simulator", "mean score", "pass rate", "vs first")
    table.box, table.show_edge, table.pad_edge, table.collapse_padding = (
        box.SIMPLE_HEAD, False, False, True)
    differences = {d.simulator: d for d in panel.differences}
    for member in panel.members:
        table.add_row(ident(member.simulator), _cell(member.mean), _cell(member.pass_rate),
                      _difference_cell(differences.get(member.simulator)), end_section=True)
    widen_for_identifiers(table)
    table.caption = (f"vs first: the agent's mean score under this simulator minus under "
                     f"{terminal_text(panel.members[0].simulator)}, scenario by scenario as "
                     "harness compare pairs runs (t interval on C-1 df; p: paired t test)")
    console.print(table)
    for member in panel.members:
        if member.scored < member.samples:
            console.print(f"{terminal_text(member.simulator)}: {member.scored} of "
                          f"{plural(member.samples, 'sample')} scored ({member.errored} "
                          "errored)")
    line = variance_line(panel)
    if line:
        console.print(line)
    if panel.gate is not None:
        if panel.gate.passed:
            console.print("[bold green]gate PASS[/] under every simulator")
        else:
            console.print(f"[bold red]gate FAIL[/] under "
                          f"{terminal_text(', '.join(panel.gate.failed_under))} (a panel's "
                          "gate fails when it fails under any simulator)")
    if panel.flip:
        console.print(f"[bold yellow]{terminal_text(panel.flip)}[/]")
    for note in panel.notes:
        console.print(f"[dim]note: {terminal_text(note)}[/]")
    console.print(f"[dim]each simulator's run: harness report {terminal_text(run_dir)}/"
                  "simulators/<slug>[/]")
