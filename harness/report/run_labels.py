"""A run's human labels in the terminal (issue 27): how the judge agreed with the reviewers
on the labelled samples, per target, then the judge's figures beside the corrected ones
(:func:`harness.report.corrected.render_corrected`). Used by ``harness report`` and
``harness stats --labels``."""

from __future__ import annotations

from rich.console import Console

from harness.calibration.run_agreement import RunAgreement, RunLabels, TargetAgreement
from harness.report.corrected import render_corrected
from harness.report.formatting import fmt_ci, fmt_num, ident, make_table
from harness.safe_text import terminal_text
from harness.stats.estimate import Estimate
from harness.wording import plural

STATISTIC_NAMES = {
    "sensitivity": "sensitivity", "specificity": "specificity", "accuracy": "accuracy",
    "cohen_kappa": "Cohen's kappa", "mean_bias": "mean bias", "mae": "MAE",
    "spearman": "Spearman",
}
"""How each figure is named in the terminal and on the page (the JSON keeps its key)."""


def labels_line(agreement: RunAgreement) -> str:
    """One line: how many labels, reviewers and samples, random and chosen, from where."""
    count = agreement.labels
    return (f"{plural(count['labels'], 'label')} by {plural(count['reviewers'], 'reviewer')} "
            f"on {plural(count['samples'], 'sample')} ({agreement.source}): "
            f"{count['random']} from the random queue, {count['chosen']} chosen by hand; both "
            "count for agreement, only random ones correct the figures")


def agreement_notes(agreement: RunAgreement) -> list[str]:
    """The notes under the agreement: figures left undefined and why, each target's own
    notes, labels left out and why, and the agreement's own notes."""
    lines = []
    for target in agreement.targets:
        for name, est in target.figures():
            if est.value is None and est.undefined:
                # the reason names its statistic first ("specificity: the humans …")
                head, sep, reason = est.undefined.partition(": ")
                why = reason if sep and set(head) <= set("abcdefghijklmnopqrstuvwxyz_ ()") \
                    else est.undefined
                lines.append(f"{target.target}: {STATISTIC_NAMES[name]}: no figure ({why})")
        lines += [f"{target.target}: {note}" for note in target.notes]
    lines += [f"{plural(out.count, 'label')} left out: {out.reason}"
              for out in agreement.left_out]
    return lines + agreement.notes


def _target_rows(target: TargetAgreement) -> list[tuple[object, str, str]]:
    # The target alone on its row: a criterion's id is long, and a column of its own beside
    # the figures would not leave 80 columns room for them.
    rows: list[tuple[object, str, str]] = [
        (ident(target.target, "bold"),
         f"{target.n_random} random, {target.n_chosen} chosen", str(target.n_samples))]
    for name, est in target.figures():
        cell = ("—" if est.value is None
                else f"{fmt_num(est.value)} {fmt_ci(est.ci_low, est.ci_high)}")
        rows.append((f"  {STATISTIC_NAMES[name]}", cell, str(est.n)))
    return rows


def render_agreement(agreement: RunAgreement, console: Console) -> None:
    """The agreement table: a row naming each target (its labels, random and chosen, in
    the value column, and its labelled samples), then its figures with their intervals and
    n; notes below."""
    console.print(terminal_text(labels_line(agreement)))
    if agreement.targets:
        level = f"{agreement.confidence:.0%}"
        table = make_table("Judge vs reviewers, labelled samples",
                           "target: figure", f"value [{level} interval]", "n")
        for target in agreement.targets:
            for row in _target_rows(target):
                table.add_row(*row)  # type: ignore[arg-type]
        caption = ("pass/fail: sensitivity = share of the samples the reviewers passed "
                         "that the judge passed, specificity = of those they failed, that it "
                         "failed; mean bias = judge − reviewers; intervals: "
                         f"{agreement.method}")
        console.print(table)
        # below the table rather than its caption: a narrow table would squeeze it
        console.print(f"[dim]{caption}[/]")
    for line in agreement_notes(agreement):
        console.print(f"[dim]note: {terminal_text(line)}[/]")


def render_run_labels(labels: RunLabels, mean: Estimate, pass_rate: Estimate,
                      console: Console) -> None:
    """The agreement, then the judge's mean and pass rate beside the corrected ones."""
    render_agreement(labels.agreement, console)
    if labels.corrected is not None:
        render_corrected(mean, pass_rate, labels.corrected, console)
