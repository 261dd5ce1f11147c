"""The judge's figures beside the ones corrected by random human labels (PPI++, see
:mod:`harness.stats.corrected`), in the terminal: each row names its source plainly ("judge",
"corrected with 40 human labels"), then the labels-only figure, what the labels are worth and
how many a narrower interval needs."""

from __future__ import annotations

from rich.console import Console

from harness.report.formatting import fmt_ci, fmt_num, make_table
from harness.safe_text import terminal_text
from harness.stats.corrected import CorrectedEstimate, CorrectedFigures
from harness.stats.estimate import Estimate
from harness.wording import plural


def _cell(value: float | None, low: float | None, high: float | None) -> str:
    return f"{fmt_num(value)} {fmt_ci(low, high)}"


def _plan(est: CorrectedEstimate) -> str | None:
    need = est.labels_needed
    if need is None or est.value is None:
        return None
    width = f"+/-{need.half_width:.3g}"
    if need.corrected is None:
        return need.note
    alone = ("more than the judge's scenario spread allows" if need.humans_alone is None
             else plural(need.humans_alone, "label"))
    text = (f"{width} needs about {plural(need.corrected, 'random label')} with the judge "
            f"({alone} from humans alone)")
    return text + (f"; {need.note}" if need.note else "")


def corrected_notes(corrected: CorrectedFigures) -> list[str]:
    """The notes under the corrected figures, as the terminal and the HTML page print them:
    withheld figures and why, the labels a half-width needs, each figure's own notes, then
    the labels left out and why."""
    lines: list[str] = []
    for name, est in (("mean score", corrected.mean), ("pass rate", corrected.pass_rate)):
        if est is None:
            continue
        if est.withheld is not None:
            lines.append(f"{name}: withheld: {est.withheld}")
            continue
        plan = _plan(est)
        if plan:
            lines.append(f"{name}: {plan}")
        lines += [f"{name}: {note}" for note in est.notes]
    return lines + corrected.notes


def render_corrected(mean: Estimate, pass_rate: Estimate, corrected: CorrectedFigures,
                     console: Console) -> None:
    """The judge's mean score and pass rate (``mean``, ``pass_rate``: the suite's own) each
    followed by its corrected figure, then notes: withheld figures and why, the labels left
    out, the labels a half-width needs."""
    level = f"{mean.confidence:.0%}"
    table = make_table("Judge and human-corrected figures", "figure", "source",
                       f"value [{level} interval]", "lambda", "labels worth",
                       text=("source",))
    for name, judge, est in (("mean score", mean, corrected.mean),
                             ("pass rate", pass_rate, corrected.pass_rate)):
        table.add_row(name, "judge", _cell(judge.value, judge.ci_low, judge.ci_high), "", "")
        if est is None:
            table.add_row("", "no random labels", "—", "", "")
            continue
        source = f"corrected with {plural(est.n_labelled, 'human label')}"
        if est.withheld is not None:
            table.add_row("", source, "withheld", "", "")
            continue
        table.add_row("", source, _cell(est.value, est.ci_low, est.ci_high),
                      fmt_num(est.lam, 2), fmt_num(est.effective_labels, 0))
        only = est.labels_only
        if only is not None:
            table.add_row("", "labels alone", _cell(only.value, only.ci_low, only.ci_high),
                          "0", "")
    table.caption = ("corrected: what the reviewers would have given every sample, from the "
                     "judge on all and random human labels (PPI++, clustered by scenario); "
                     "labels worth: how many labels alone would give the same width")
    console.print(table)
    for line in corrected_notes(corrected):
        console.print(f"[dim]note: {terminal_text(line)}[/]")
