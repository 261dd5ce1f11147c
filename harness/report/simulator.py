"""The terminal blocks of the simulated user's findings (``summary.json``'s ``simulator``
section, :mod:`harness.runs.simulator_figures`), shown only when there are findings and
titled so that no one reads it as the agent's, and of who the failed samples are attributed
to (the ``attribution`` section, :mod:`harness.runs.attribution_figures`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console

from harness.report.formatting import fmt_ci, ident, make_table
from harness.wording import plural

if TYPE_CHECKING:
    from harness.runs.attribution_figures import AttributionFigures
    from harness.runs.simulator_figures import SimulatorFigures
    from harness.stats.estimate import Estimate
    from harness.stats.summary import SuiteSummary


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


def render_attribution(figures: AttributionFigures | None, score: SuiteSummary | None,
                       console: Console) -> None:
    """Who the failed and errored samples are attributed to (a row per party with any), each
    share with its interval; then, when the simulated user is blamed for some, the agent's
    pass rate and mean over all samples (``score``, the run's figures) beside the same
    without those samples, each column labelled. Nothing when no sample failed."""
    if figures is None:
        return
    if figures.reruns:
        again = figures.reruns_blamed_again
        console.print(f"[bold]Re-run[/]: {plural(figures.reruns, 'sample')} the simulator "
                      f"spoiled, with new seeds ({again} spoiled again); the first records are "
                      "kept in run.sqlite (replaced_samples)")
    if not figures.failed_samples:
        return
    failed = plural(figures.failed_samples, "failed or errored sample")
    console.print(f"[bold]Who failed[/]: {failed}, each attributed to one party")
    table = make_table("", "party", "samples", "share", "95% Wilson")
    for party, count in figures.by_party.items():
        if count:
            share = figures.shares[party]
            table.add_row(party, str(count), f"{share.value:.2f}",
                          fmt_ci(share.ci_low, share.ci_high, 2))
    console.print(table)
    without = figures.without_simulator
    if without is not None:
        left_out = f"without the simulator's {without.samples_left_out}"
        both = make_table("", "agent's figure", "all samples", left_out)
        for label, everything, kept in (
                ("pass rate", None if score is None else score.pass_rate, without.pass_rate),
                ("mean score", None if score is None else score.mean_estimate, without.mean)):
            both.add_row(label, _estimate(everything), _estimate(kept))
        console.print(both)
        console.print("the run's figures and its gate keep every sample; the right-hand "
                      "column leaves out the samples attributed to the simulator", style="dim")
    console.print("each sample's party, reason and evidence: samples.jsonl and the HTML report",
                  style="dim")


def _estimate(estimate: Estimate | None) -> str:
    if estimate is None:
        return "—"
    return f"{estimate.value:.3f} {fmt_ci(estimate.ci_low, estimate.ci_high)}"
