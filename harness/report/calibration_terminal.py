"""Terminal rendering of a :class:`CalibrationReport` with rich: one table per judge, then
the human baseline, comparisons, policies and notes. Model text never reaches the terminal
(only ids and numbers), and ids, labels, paths and notes go through
:func:`~harness.safe_text.terminal_text`, so they cannot inject rich markup or terminal
escape sequences."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table

from harness.calibration.report import (
    BootstrapEstimate,
    CalibrationReport,
    PairwiseJudgeReport,
    PointwiseJudgeReport,
)
from harness.report.calibration_verdict import print_verdicts
from harness.report.formatting import fmt_ci, fmt_num, ident, widen_for_identifiers
from harness.safe_text import terminal_text
from harness.wording import plural


def _stats_table(title: str, level: str) -> Table:
    # No borders: at 80 columns the names and the notes need the room.
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
                  pad_edge=False, collapse_padding=True)
    table.add_column("statistic")
    table.add_column("value", justify="right", no_wrap=True)
    table.add_column(f"{level} interval", justify="right", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    table.add_column("note", overflow="fold")
    return table


def _row(table: Table, name: str, estimate: BootstrapEstimate | None) -> None:
    if estimate is None:
        return
    if estimate.value is None:
        table.add_row(ident(name), "undefined", "", str(estimate.n),
                      terminal_text(estimate.undefined or ""))
        return
    interval = fmt_ci(estimate.ci_low, estimate.ci_high)
    note = estimate.detail or ""
    if estimate.resamples_undefined:
        note += f" ({plural(estimate.resamples_undefined, 'resample')} undefined)"
    table.add_row(ident(name), fmt_num(estimate.value), interval, str(estimate.n),
                  terminal_text(note.strip()))


def _judge_name(judge_id: str | None) -> str:
    return terminal_text(judge_id) if judge_id is not None else "judge"


# The statistics a brief report shows (the headline kappa and alpha are the quadratic and
# the ordinal ones on a discrete scale; see docs/calibration.md).
BRIEF_POINTWISE = ("spearman", "kendall_tau_b", "cohen_kappa", "krippendorff_alpha",
                   "mean_bias", "mae")
BRIEF_PAIRWISE = ("accuracy", "accuracy_both_orders", "position_consistency", "order_kappa")


def _pointwise(judge: PointwiseJudgeReport, level: str, console: Console, *,
               brief: bool) -> None:
    counts = (
        f"{plural(judge.n_items, 'item')} scored; missing: "
        f"{plural(judge.n_missing_human, 'human label')}, "
        f"{plural(judge.n_missing_judge, 'judge score')}, {judge.n_missing_both} both"
    )
    table = _stats_table(f"{_judge_name(judge.judge_id)} vs people ({counts})", level)
    if brief:
        for name in BRIEF_POINTWISE:
            _row(table, name, getattr(judge, name))
        if judge.pass_fail:
            _row(table, "pass/fail accuracy", judge.pass_fail.accuracy)
        widen_for_identifiers(table)
        console.print(table)
        return
    for name in ("spearman", "kendall_tau_b", "pearson", "cohen_kappa_unweighted",
                 "cohen_kappa_linear", "cohen_kappa_quadratic", "krippendorff_alpha_nominal",
                 "krippendorff_alpha_ordinal", "krippendorff_alpha_interval", "mean_bias", "mae"):
        _row(table, name, getattr(judge, name))
    ba = judge.bland_altman
    _row(table, "bland_altman lower", ba.lower)
    _row(table, "bland_altman upper", ba.upper)
    if judge.pass_fail:
        pf = judge.pass_fail
        for name in ("accuracy", "cohen_kappa", "coverage", "false_failure_rate", "alignment"):
            _row(table, f"pass/fail {name}", getattr(pf, name))
    if judge.thresholds:
        _row(table, f"best threshold (max {judge.thresholds.criterion})",
             judge.thresholds.best_threshold)
    if judge.self_consistency:
        sc = judge.self_consistency
        _row(table, "self-consistency alpha", sc.krippendorff_alpha)
        _row(table, "samples disagree (share)", sc.share_items_disagree)
    if judge.verbosity:
        _row(table, "verbosity (residual~length)", judge.verbosity.spearman)
    if judge.beside_humans:
        bh = judge.beside_humans
        _row(table, "alpha, humans only", bh.alpha_humans)
        _row(table, "alpha, judge added", bh.alpha_with_judge)
        _row(table, "human vs rest spearman", bh.human_vs_rest_spearman)
        _row(table, "judge vs rest spearman", bh.judge_vs_rest_spearman)
    widen_for_identifiers(table)
    console.print(table)
    if judge.confusion_matrix:
        cm = judge.confusion_matrix
        matrix = Table(title="confusion (rows: people, columns: judge)", title_justify="left")
        matrix.add_column("")
        labels = [f"{c:g}" if isinstance(c, float) else terminal_text(c) for c in cm.categories]
        for label in labels:
            matrix.add_column(label, justify="right")
        for label, row in zip(labels, cm.counts, strict=True):
            matrix.add_row(label, *(str(c) for c in row))
        console.print(matrix)
    if judge.thresholds and judge.thresholds.curve:
        rule = terminal_text(judge.thresholds.human_rule)
        curve = Table(title=f"threshold trade-off (people: {rule})", title_justify="left")
        for col in ("threshold", "judge pass rate", "coverage", "false failures", "accuracy",
                    "kappa", "alignment"):
            curve.add_column(col, justify="right")
        for p in judge.thresholds.curve:
            curve.add_row(fmt_num(p.threshold), fmt_num(p.judge_pass_rate), fmt_num(p.coverage),
                          fmt_num(p.false_failure_rate), fmt_num(p.accuracy),
                          fmt_num(p.cohen_kappa), fmt_num(p.alignment))
        console.print(curve)
    if judge.ppi:
        _ppi(judge, level, console)


def _ppi(judge: PointwiseJudgeReport, level: str, console: Console) -> None:
    assert judge.ppi is not None
    if judge.ppi.undefined:
        console.print(f"PPI: undefined — {terminal_text(judge.ppi.undefined)}")
        return
    table = Table(title="prediction-powered inference (PPI++)", title_justify="left",
                  box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    table.add_column("target")
    for col in ("PPI", f"{level} interval", "humans only", f"{level} interval", "λ", "worth"):
        table.add_column(col, justify="right", no_wrap=True)
    for result in (judge.ppi.mean_score, judge.ppi.pass_rate):
        if result is None:
            continue
        table.add_row(
            ident(result.target), fmt_num(result.estimate), fmt_ci(result.ci_low, result.ci_high),
            fmt_num(result.classical_estimate),
            fmt_ci(result.classical_ci_low, result.classical_ci_high),
            fmt_num(result.lam), fmt_num(result.effective_human_labels, 1),
        )
    table.caption = ("humans only: the same figure from the human labels alone; worth: how "
                     "many human labels the PPI estimate is worth")
    table.caption_justify = "left"
    console.print(table)


def _pairwise(judge: PairwiseJudgeReport, level: str, console: Console, *,
              brief: bool) -> None:
    counts = (
        f"{plural(judge.n_items, 'item')}, {judge.n_units_both_orders} judged in both "
        f"orders, {plural(judge.n_missing_verdicts, 'missing verdict')}"
    )
    table = _stats_table(f"{_judge_name(judge.judge_id)} vs gold ({counts})", level)
    if brief:
        for name in BRIEF_PAIRWISE:
            _row(table, name, getattr(judge, name))
        widen_for_identifiers(table)
        console.print(table)
        return
    for name in ("accuracy", "accuracy_original_order", "accuracy_swapped_order",
                 "accuracy_both_orders", "position_consistency", "order_kappa",
                 "first_position_rate", "tie_rate"):
        _row(table, name, getattr(judge, name))
    if judge.self_consistency:
        _row(table, "self-consistency alpha", judge.self_consistency.krippendorff_alpha_nominal)
        _row(table, "samples disagree (share)", judge.self_consistency.share_disagree)
    if judge.length_preference:
        _row(table, "judge picks longer", judge.length_preference.judge_longer_rate)
        _row(table, "gold picks longer", judge.length_preference.gold_longer_rate)
    if judge.beside_humans:
        bh = judge.beside_humans
        _row(table, "human vs rest accuracy", bh.human_vs_rest_accuracy)
        _row(table, "judge vs rest accuracy", bh.judge_vs_rest_accuracy)
        _row(table, "judge − human accuracy", bh.accuracy_difference)
    widen_for_identifiers(table)
    console.print(table)


def render_report(report: CalibrationReport, console: Console, *, brief: bool = False) -> None:
    """Print the report as rich tables. ``brief`` shows each judge's headline statistics and
    the report's notes only (no tables of detail, human baseline, comparisons or policies)."""
    level = f"{report.options.confidence:.0%}"
    scale = f", scale {report.scale.describe()}" if report.scale else ""
    console.print(f"[bold]Judge calibration[/] ({report.kind}, "
                  f"{terminal_text(report.source)}{scale})")
    for judge in report.judges:
        if isinstance(judge, PointwiseJudgeReport):
            _pointwise(judge, level, console, brief=brief)
        else:
            _pairwise(judge, level, console, brief=brief)
    if not brief:
        _baseline_comparisons_policies(report, level, console)
    for note in report.notes:
        console.print(f"[yellow]note:[/] {terminal_text(note)}")
    print_verdicts(report, console)  # whether to trust each judge (the page ends with it too)


def _raters(per_item: tuple[int, int] | list[int]) -> str:
    """"3 raters" when every item has as many, else "2–3 raters"."""
    low, high = per_item[0], per_item[1]
    return plural(high, "rater") if low == high else f"{low}–{high} raters"


def _baseline_comparisons_policies(report: CalibrationReport, level: str,
                                   console: Console) -> None:
    if report.human_baseline:
        hb = report.human_baseline
        table = _stats_table(
            f"people vs people ({plural(hb.n_items, 'item')}, {_raters(hb.raters_per_item)})",
            level)
        _row(table, "krippendorff_alpha_nominal", hb.krippendorff_alpha_nominal)
        _row(table, "krippendorff_alpha_ordinal", hb.krippendorff_alpha_ordinal)
        _row(table, "krippendorff_alpha_interval", hb.krippendorff_alpha_interval)
        _row(table, "fleiss_kappa", hb.fleiss_kappa)
        widen_for_identifiers(table)
        console.print(table)
    if report.comparisons:
        table = _stats_table("judge comparisons (a − b, paired)", level)
        for c in report.comparisons:
            _row(table, f"{c.judge_a} − {c.judge_b}: "
                 f"{c.statistic}", c.difference)
        widen_for_identifiers(table)
        console.print(table)
    for policy in report.policies:
        console.print(f"[dim]policy:[/] {terminal_text(policy)}")
