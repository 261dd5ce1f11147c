"""``harness compare`` in the terminal, the judge's part: a panel when the two runs' judges
differ (what differs, and what to do), a line when a run's judge was not recorded, and the
two runs' figures corrected by their human labels side by side with their difference
(the comparison's ``judges`` and ``corrected`` fields,
:mod:`harness.runs.judge_drift`)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.panel import Panel

from harness.report.formatting import fmt_ci, fmt_num, make_table
from harness.safe_text import terminal_text
from harness.wording import plural


def render_judges(result: dict[str, Any], console: Console) -> None:
    """The judges' panel (they differ) or note (one not recorded); nothing when the same."""
    judges = result.get("judges")
    if not judges or not judges.get("warning"):
        return
    if judges["same"] is None:
        warning = terminal_text(judges["warning"])
        console.print(f"[yellow]{warning[:1].upper()}{warning[1:]}.[/]")
        return
    lines = [f"- {terminal_text(d)}" for d in judges["differences"]]
    changed, n = len(judges["changed_scenarios"]), result["n_scenarios"]
    checks = len(judges["checks_only"])
    lines.append(
        f"The judge changed for {changed} of the {n} compared scenarios: their differences "
        "below mix a change of the agent with a change of the judge, and are not the "
        "agent's regression or improvement alone"
        + (f"; {plural(checks, 'scenario')} scored by checks alone "
           f"{'is' if checks == 1 else 'are'} not affected." if checks else "."))
    lines.append(terminal_text(_what_to_do(judges["warning"])))
    console.print(Panel("\n".join(lines), title="JUDGES DIFFER", title_align="left",
                        style="bold yellow"))


def _what_to_do(warning: str) -> str:
    """The warning's last sentences: what to do."""
    return warning[warning.index("To compare"):] if "To compare" in warning else ""


def _cell(est: dict[str, Any] | None) -> str:
    if est is None:
        return "no labels"
    if est.get("value") is None:
        return "withheld"
    return f"{fmt_num(est['value'])}\n{fmt_ci(est['ci_low'], est['ci_high'])}"


def _difference_cell(d: dict[str, Any] | None) -> str:
    if d is None:
        return "—"
    return f"{d['value']:+.3f}\n{fmt_ci(d['ci_low'], d['ci_high'])}"


def render_corrected_comparison(result: dict[str, Any], console: Console) -> None:
    """Both runs' corrected mean score and pass rate (each with its interval and labels)
    and the difference, candidate - baseline, with its interval; nothing when neither run
    has human labels of the compared scenarios."""
    corrected = result.get("corrected")
    if not corrected:
        return
    level = f"{1 - result['alpha']:.0%}"
    base, cand = corrected["baseline"], corrected["candidate"]

    table = make_table(f"On the reviewers' scale: corrected by human labels ({level} "
                       "intervals)", "figure", "baseline", "candidate", "cand. − base.")
    for key, name in (("mean", "mean score"), ("pass_rate", "pass rate")):
        table.add_row(name, _cell(None if base is None else base[key]),
                      _cell(None if cand is None else cand[key]),
                      _difference_cell(corrected["difference"][key]))
    labelled = "; ".join(f"{which} {plural(run['n_labelled_samples'], 'sample')}"
                         for which, run in (("baseline", base), ("candidate", cand)) if run)
    table.caption = (f"random samples labelled: {labelled}; "
                     "corrected: what the reviewers would have given every sample (PPI++ "
                     "on random labels, clustered by scenario), whatever each run's judge; "
                     "difference: the two independent estimates' intervals combined (MOVER), "
                     "conservative as the runs share their scenarios")
    console.print(table)
    notes = [corrected["note"]] if corrected.get("note") else []
    both = set(base["notes"]) & set(cand["notes"]) if base and cand else set()
    notes += [f"both runs: {n}" for n in (base["notes"] if base else []) if n in both]
    for which, run in (("baseline", base), ("candidate", cand)):
        notes += [f"{which}: {n}" for n in ([] if run is None else run["notes"])
                  if n not in both]
        for key in ("mean", "pass_rate"):
            est = None if run is None else run[key]
            if est is not None and est.get("withheld"):
                notes.append(f"{which} {key.replace('_', ' ')}: withheld: {est['withheld']}")
    for note in notes:
        console.print(f"[dim]note: {terminal_text(note)}[/]")
    _render_agreement(base, cand, level, console)


# What compare shows of each judge's agreement with its reviewers, per target.
AGREEMENT_ROWS = {"passed": (("accuracy", "accuracy"), ("cohen_kappa", "Cohen's kappa"),
                             ("sensitivity", "sensitivity"), ("specificity", "specificity")),
                  "score": (("mean_bias", "mean bias"), ("mae", "MAE"),
                            ("spearman", "Spearman"))}


def agreement_rows(base: dict[str, Any] | None, cand: dict[str, Any] | None
                   ) -> list[tuple[str, str, dict[str, Any] | None, dict[str, Any] | None]]:
    """``(target, statistic's name, baseline estimate, candidate estimate)`` for each
    statistic compare shows of the two judges' agreement with their reviewers (a run's
    ``agreement``: :func:`harness.calibration.run_agreement.with_compared_agreement`);
    empty when neither run has it."""
    by_run = [{t["target"]: t for t in (run or {}).get("agreement") or []}
              for run in (base, cand)]
    rows = []
    for target, stats in AGREEMENT_ROWS.items():
        if not any(target in found for found in by_run):
            continue
        for key, name in stats:
            a, b = ((found.get(target) or {}).get(key) for found in by_run)
            rows.append((target, name, a, b))
    return rows


def _agreement_cell(est: dict[str, Any] | None) -> str:
    if est is None:
        return "no labels"
    if est.get("value") is None:
        return "undefined"
    interval = fmt_ci(est.get("ci_low"), est.get("ci_high"))
    return f"{fmt_num(est['value'])} (n={est['n']})\n{interval}"


def _render_agreement(base: dict[str, Any] | None, cand: dict[str, Any] | None, level: str,
                      console: Console) -> None:
    rows = agreement_rows(base, cand)
    if not rows:
        return
    table = make_table(f"Each judge against its own reviewers ({level} intervals)",
                       "target", "statistic", "baseline", "candidate")
    shown = None
    for target, name, a, b in rows:
        table.add_row(target if target != shown else "", name, _agreement_cell(a),
                      _agreement_cell(b))
        shown = target
    table.caption = ("on the compared scenarios' labelled samples, random and chosen alike; "
                     "pass is the positive class; mean bias: judge − reviewers; intervals "
                     "resample scenarios")
    console.print(table)
