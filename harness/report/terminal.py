"""Rich tables for a run summary and a paired comparison. Every number is shown with its
interval and n; errors are shown apart from scores. Text that came from scenarios, models or
the summary file goes through :func:`~harness.safe_text.terminal_text`, so it can never
inject console markup or terminal escape sequences."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console, RenderableType
from rich.panel import Panel
from rich.table import Table

from harness.report.formatting import (
    fmt_ci,
    fmt_num,
    fmt_p,
    ident,
    make_table,
    prompt_cache_share,
)
from harness.safe_text import terminal_text
from harness.wording import plural

if TYPE_CHECKING:
    from harness.calibration.run_agreement import RunLabels
    from harness.checks.failures import FailureAnalysis
    from harness.runs.gate import GateResult
    from harness.runs.summary_model import (
        AdaptiveReport,
        MetricSummary,
        RunCounts,
        RunSummary,
        RunUsage,
        TagFigures,
    )
    from harness.stats.estimate import Estimate
    from harness.stats.sampling import ScenarioStats
    from harness.stats.summary import SuiteFigures


def handful_of_k(ks: list[int]) -> list[int]:
    """The k values a table shows by default: 1, 2, 4, 8, ... and the largest (in order)."""
    if not ks:
        return []
    largest = max(ks)
    wanted = {1 << i for i in range(largest.bit_length())} | {largest}
    return [k for k in ks if k in wanted]


def estimate_how(est: Estimate, how: str) -> str:
    """``how`` an estimate was computed, or what replaced its usual interval: the
    no-spread bound when every scenario agreed, or the cut at the range; with no interval,
    why there is none (see :data:`NO_SUITE_INTERVAL`)."""
    if est.ci_low is None:
        return f"none: {plural(est.n_clusters, 'scenario')} (see below)"
    if est.stderr == 0.0:
        return f"every scenario the same: bound for {plural(est.n_clusters, 'scenario')}"
    if est.clipped:
        return how + "; cut at the score range"
    return how


# Why a suite figure has no standard error or interval: the unit of the suite's intervals is
# the scenario, and one scenario gives no spread between scenarios to measure.
NO_SUITE_INTERVAL = (
    "no suite SE or interval from {n}: they are clustered by scenario (t on C-1 = {df} df; "
    "Wilson on the effective n from the spread between scenarios) and need at least 2; "
    "the scenario's own intervals over its epochs are in the Scenarios table")


def render_run(summary: RunSummary, console: Console, *, run_dir: str | None = None,
               max_rows: int = 50, brief: bool = False, labels: RunLabels | None = None
               ) -> None:
    """Print the run summary: suite figures, scenarios, metrics, errors, failure groups,
    usage, latency, the per-tool table, and the gate verdict when the summary has one.
    ``brief`` leaves the latency and per-tool tables to summary.json and the HTML report,
    saying so in one line. ``labels`` (the run's human labels) adds, after the suite table,
    the judge's agreement with them and the figures they correct."""
    render_notice(summary.notice, console)
    counts = summary.counts
    head = (f"{_scenarios_and_samples(counts)}: {counts.scored} scored, "
            f"{counts.errored} errored, {counts.unscored} unscored")
    console.print(f"[bold]Run[/] {terminal_text(run_dir or '')}  {head}")
    stopped = summary.stopped
    if stopped:
        console.print(f"[bold red]stopped early[/] ({terminal_text(stopped.reason)}): "
                      f"{terminal_text(stopped.message)} — finished samples are kept; "
                      "continue with [bold]harness run --resume "
                      f"{terminal_text(run_dir or 'DIR')}[/]")
    score = summary.score
    if score is None:
        for note in summary.notes:
            console.print(f"[yellow]{terminal_text(note)}[/]")
    else:
        render_suite(score, console)
        if labels is not None:
            from harness.report.run_labels import render_run_labels

            render_run_labels(labels, score.mean_estimate, score.pass_rate, console)
        errors: dict[str, int] = {}
        for e in summary.errors:
            errors[e.scenario_id] = errors.get(e.scenario_id, 0) + 1
        render_scenarios(score, score.scenarios, console, errors=errors, max_rows=max_rows)
        render_variance(score, console)
        render_notes([*score.notes, *summary.notes], console)
    _tags_table(summary.tags, console, max_rows)
    _metrics_table(summary.metrics, console, max_rows)
    _errors(summary, console)
    _failures(summary.failure_analysis, console, run_dir=run_dir)
    from harness.report.simulator import render_attribution, render_simulator

    render_simulator(summary.simulator, console)
    render_attribution(summary.attribution, summary.score, console)
    _usage(summary.usage, console)
    # imported here: those tables are built with this module's helpers
    from harness.report.latency import render_latency, render_tools

    if brief and (summary.latency or summary.tools):
        console.print("latency and per-tool figures: in summary.json and the HTML report")
    elif not brief:
        render_latency(summary.latency, console)
        render_tools(summary.tools, console, max_rows)
    if summary.adaptive is not None:
        _adaptive(summary.adaptive, console)
    if summary.gate is not None:
        render_gate(summary.gate, console)


def _scenarios_and_samples(counts: RunCounts) -> str:
    """"11 scenarios, 55 samples", or, when part of the plan has no sample (an early stop),
    "11 scenarios loaded (3 with samples), 12 of 55 planned samples"."""
    loaded, planned = counts.scenarios_loaded, counts.samples_planned
    with_samples, samples = counts.scenarios, counts.samples
    scenarios = (plural(with_samples, "scenario") if loaded in (None, with_samples)
                 else f"{plural(loaded, 'scenario')} loaded ({with_samples} with samples)")
    samples_text = (plural(samples, "sample") if planned in (None, samples)
                    else f"{samples} of {plural(planned, 'planned sample')}")
    return f"{scenarios}, {samples_text}"


def render_suite(score: SuiteFigures, console: Console, *, all_k: bool = False) -> None:
    """The suite figures (``harness stats``' figures, a run summary's ``score``): the mean
    score with its clustered t interval and the cluster bootstrap, the pass rate, and pass@k
    and pass^k for k = 1, 2, 4, 8, ... and the largest (every k with ``all_k``), each with
    its standard error, interval and how it was computed; then the design's power."""
    level = f"{score.confidence:.0%}"
    table = make_table(f"Suite ({plural(score.n_scenarios, 'scenario')}, "
                       f"{plural(score.n_samples, 'sample')})",
                       "figure", "value", "SE", f"{level} interval", "how", text=("how",))
    table.add_row("mean score", fmt_num(score.mean), fmt_num(score.stderr),
                  fmt_ci(score.ci_low, score.ci_high),
                  estimate_how(score.mean_estimate, "clustered SE, t on C-1 df"))
    boot = score.bootstrap
    if boot:
        table.add_row("mean score", fmt_num(score.mean), "", fmt_ci(boot.ci_low, boot.ci_high),
                      f"cluster bootstrap, {plural(boot.n_resamples, 'resample')}, "
                      f"seed {boot.seed}")
    pr = score.pass_rate
    table.add_row("pass rate", fmt_num(pr.value), fmt_num(pr.stderr), fmt_ci(pr.ci_low, pr.ci_high),
                  estimate_how(pr, "Wilson, effective n"))
    every_k = sorted(score.pass_at_k_detail)
    ks = every_k if all_k else handful_of_k(every_k)
    for label, detail in (("pass@", score.pass_at_k_detail), ("pass^", score.pass_hat_k_detail)):
        for k in ks:
            d = detail[k]
            table.add_row(f"{label}{k}", fmt_num(d.value), fmt_num(d.stderr),
                          fmt_ci(d.ci_low, d.ci_high), estimate_how(d, "Wilson, effective n"))
    table.caption = ("pass rate, pass@k (Chen et al. 2021) and pass^k (tau-bench): means of "
                     "the scenarios' own figures")
    if len(ks) < len(every_k):
        table.caption += (f"; k = {', '.join(map(str, ks))} of 1..{every_k[-1]} shown (harness "
                          "stats --all-k lists every k, and the JSON output has them all)")
    if score.mean_estimate.ci_low is None:
        c = score.n_scenarios
        table.caption += "\n" + NO_SUITE_INTERVAL.format(n=plural(c, "scenario"), df=c - 1)
    console.print(table)
    render_power(score, console)


def render_notice(notice: str | None, console: Console) -> None:
    """The offline notice, first and hard to miss, when the figures came from mock models."""
    if notice:
        console.print(Panel(terminal_text(notice), style="bold yellow"))


def render_notes(notes: list[str], console: Console) -> None:
    for note in notes:
        console.print(f"[dim]note: {terminal_text(note)}[/]")


def render_scenarios(score: SuiteFigures, scenarios: Sequence[ScenarioStats], console: Console,
                     *, errors: dict[str, int] | None = None, max_rows: int = 50) -> None:
    """Per-scenario figures (``scenarios``: all of ``score``'s, or the first of them), each
    with its interval: the mean with its t interval over epochs, the pass rate with its
    Wilson interval, pass^k at the largest k. The epoch count is in the title when every
    scenario has the same (else a column), and so is the number of flaky scenarios (passed in
    some epochs, failed in others). ``errors`` (scenario -> errored samples) adds a column
    when any scenario has one."""
    level = f"{score.confidence:.0%}"
    rows = scenarios[:max_rows]
    epochs = {s.n_epochs for s in rows}
    same = len(epochs) == 1
    k_max = f"^{max(epochs)}" if same else "^k"
    title = "Scenarios (" + (f"{plural(max(epochs), 'epoch')} each; " if same else "") + \
        f"{len(score.flaky_scenarios)} of {score.n_scenarios} flaky)"
    errors = errors or {}
    show_errors = any(errors.get(s.scenario_id) for s in rows)
    columns = ["scenario", *([] if same else ["n"]), "mean", f"t {level}", "pass",
               f"Wilson {level}", f"pass{k_max}", *(["errors"] if show_errors else [])]
    table = make_table(title, *columns)
    # No borders: at 80 columns the ids need every character the figures leave.
    table.box, table.show_edge, table.pad_edge, table.collapse_padding = (
        box.SIMPLE_HEAD, False, False, True)
    no_spread = set()
    for s in rows:
        # The mark goes after the id: the figures' columns keep their plain form.
        marked = s.mean_ci_low is not None and s.sd == 0.0
        if marked:
            no_spread.add(s.n_epochs)
        cells: list[RenderableType] = [ident(s.scenario_id, mark=" *" if marked else ""),
                                       *([] if same else [str(s.n_epochs)]),
                 fmt_num(s.mean), fmt_ci(s.mean_ci_low, s.mean_ci_high),
                 fmt_num(s.pass_rate), fmt_ci(s.pass_rate_ci_low, s.pass_rate_ci_high),
                 fmt_num(s.pass_hat_k[max(s.pass_hat_k)])]
        if show_errors:
            cells.append(str(errors.get(s.scenario_id, "")))
        table.add_row(*cells)
    captions = []
    if score.n_scenarios > max_rows:
        captions.append(f"{score.n_scenarios - max_rows} more in the JSON output")
    if no_spread:
        captions.append(no_spread_note(sorted(no_spread)))
    table.caption = "\n".join(captions) or None
    console.print(table)


def no_spread_note(epochs: list[int]) -> str:
    """The footnote of a mean interval marked ``*``: every epoch scored the same, so the
    interval is not a t interval but the widest one a score in its range allows (see
    :mod:`harness.stats.bounded`, rule 2)."""
    counts = " or ".join(map(str, epochs))
    return (f"* every epoch scored the same: with no spread to measure, the mean's interval "
            f"is not a t interval but the "
            f"widest that {counts} equal epochs allow for a score in [0, 1] (at 0 or 1 the "
            "exact one-sided bound, as Clopper-Pearson; else Wilson at the largest "
            "variance); more epochs narrow it")


def _share(part: float, whole: float) -> str:
    return fmt_num(part / whole, 2) if whole > 0 else "—"


def render_variance(score: SuiteFigures, console: Console) -> None:
    """Where the suite's uncertainty comes from: between-scenario and within-scenario
    variance of a single sample, their shares of the squared standard error, and, when
    transcripts were judged several times, the within part split into agent and judge
    noise."""
    vc = score.variance_components
    if vc is None:
        return
    table = make_table("Variance components (single sample)", "part", "variance", "share of SE²")
    se2 = vc.suite_variance_between + vc.suite_variance_within
    table.add_row("between scenarios", fmt_num(vc.between, 4),
                  _share(vc.suite_variance_between, se2))
    table.add_row("within scenario (epochs)", fmt_num(vc.within, 4),
                  _share(vc.suite_variance_within, se2))
    jv = score.judge_variance_components
    if jv is not None:
        nested = jv.suite_variance_epoch + jv.suite_variance_judge
        within = vc.suite_variance_within
        table.add_row("  of which agent (epochs)", fmt_num(jv.epoch, 4),
                      _share(within * jv.suite_variance_epoch, se2 * nested))
        table.add_row("  of which judge", fmt_num(jv.judge, 4),
                      _share(within * jv.suite_variance_judge, se2 * nested))
    console.print(table)


def render_power(score: SuiteFigures, console: Console) -> None:
    """The smallest difference a paired comparison with this design detects, and what it
    takes (epochs or scenarios) to detect the target in ``design_for_target``."""
    power = score.power
    if power is None:
        return
    console.print(
        "smallest difference a paired comparison with this design could detect "
        f"(alpha {power.alpha:.2g}, power {power.power:.0%}, "
        f"correlation {power.correlation:g}): {power.minimum_detectable_difference:.3f}")
    design = score.design_for_target
    if design is None:
        return
    by_epochs = design.epochs_with_current_scenarios
    by_scenarios = design.scenarios_with_current_epochs
    how = f"to detect {design.target_difference:.3f}" + (
        "" if design.target_source == "given" else " (half of that)")
    if by_epochs.achievable:
        epochs = (f"{_epochs(by_epochs.epochs)} per scenario with these "
                  f"{plural(by_epochs.n_scenarios, 'scenario')}")
    else:
        epochs = (f"no number of epochs with these {plural(by_epochs.n_scenarios, 'scenario')} "
                  f"(the between-scenario floor is {power.floor_with_unlimited_epochs:.3f})")
    console.print(f"{how}: {epochs}; or {plural(by_scenarios.n_scenarios, 'scenario')} at "
                  f"{_epochs(by_scenarios.epochs)} (Miller 2024)")


def _epochs(n: int | None) -> str:
    return "an unknown number of epochs" if n is None else plural(n, "epoch")


def _tags_table(tags: dict[str, TagFigures], console: Console, max_rows: int) -> None:
    """Per scenario tag: the suite's mean (t interval) and pass rate (Wilson interval) on the
    tag's scenarios; printed only when scenarios have tags."""
    if not tags:
        return
    level = next((f"{t.mean.confidence:.0%}" for t in tags.values() if t.mean), "")
    table = make_table("Tags (suite figures on each tag's scenarios)", "tag", "scen.",
                       "samples", "mean", f"t {level}", "pass", f"Wilson {level}")
    table.box, table.show_edge, table.pad_edge, table.collapse_padding = (
        box.SIMPLE_HEAD, False, False, True)
    for tag, t in list(tags.items())[:max_rows]:
        figures = [cell for est in (t.mean, t.pass_rate) for cell in (
            ("—", "—") if est is None else (fmt_num(est.value), fmt_ci(est.ci_low, est.ci_high)))]
        table.add_row(ident(tag), str(t.scenarios), str(t.samples), *figures)
    if len(tags) > max_rows:
        table.caption = f"{len(tags) - max_rows} more tags in summary.json"
    console.print(table)


def _metrics_table(metrics: dict[str, MetricSummary], console: Console, max_rows: int) -> None:
    if not metrics:
        return
    table = make_table("Metrics (mean of scenario means)", "metric", "mean", "interval",
                   "scenarios", "samples")
    for name, m in list(metrics.items())[:max_rows]:
        table.add_row(ident(name), fmt_num(m.value), fmt_ci(m.ci_low, m.ci_high),
                      str(m.n_scenarios), str(m.n))
    console.print(table)


def _errors(summary: RunSummary, console: Console) -> None:
    policy = summary.error_policy
    if not policy.errored_samples:
        return
    console.print(f"[bold red]{plural(policy.errored_samples, 'errored sample')}[/] "
                  f"(not scores: {terminal_text(policy.meaning)})")
    table = make_table("Errors", "scenario", "epoch", "kind", "message", text=("kind", "message"))
    for e in summary.errors[:10]:
        table.add_row(ident(e.scenario_id), str(e.epoch), terminal_text(e.kind),
                      terminal_text(e.message[:200]))
    console.print(table)


FAILURE_GROUPS_SHOWN = 5


def _failures(analysis: FailureAnalysis, console: Console, *, run_dir: str | None) -> None:
    """The largest failure groups, each with its size, scenarios and recommendation; the rest
    are counted and pointed to (every group is in the summary)."""
    groups = analysis.groups
    if not groups:
        return
    console.print(f"[bold]Failure analysis[/] ({analysis.n_failed_samples} of "
                  f"{plural(analysis.n_samples, 'sample')} with a finding, "
                  f"{plural(len(groups), 'group')}, largest first)")
    # A bullet column gives each group's wrapped lines a hanging indent.
    listing = Table.grid(padding=(0, 1))
    listing.add_column(width=1)
    listing.add_column()
    for g in groups[:FAILURE_GROUPS_SHOWN]:
        named = ", ".join(terminal_text(sid) for sid in g.scenarios[:3]) + (
            f" and {len(g.scenarios) - 3} more" if len(g.scenarios) > 3 else "")
        listing.add_row("•", f"[bold]{terminal_text(g.kind)}: {terminal_text(g.key)}[/] "
                        f"({plural(g.samples, 'sample')}; {named})")
        listing.add_row("", f"[dim]{terminal_text(g.recommendation)}[/]")
    if len(groups) > FAILURE_GROUPS_SHOWN:
        where = f"{terminal_text(run_dir)}/summary.json" if run_dir else "summary.json"
        listing.add_row("…", f"{plural(len(groups) - FAILURE_GROUPS_SHOWN, 'more group')}, "
                        "each with its "
                        f"scenarios and recommendation: {where} (failure_analysis)")
    console.print(listing)


def _usage(usage: RunUsage, console: Console) -> None:
    if not usage.by_role:  # no model answered (a run stopped before its first call): no table
        return
    table = make_table("Model usage", "role", "calls", "cached", "input tokens", "output tokens",
                       "cost (USD)")
    for role, u in usage.by_role.items():
        table.add_row(terminal_text(role), str(u.calls), str(u.cached_calls),
                      str(u.input_tokens), str(u.output_tokens), f"{u.cost_usd:.4f}")
    notes = [f"{terminal_text(role)}: {prompt_cache_share(u)} of input tokens from the "
             f"provider's prompt cache, ${u.prompt_cache_saved_usd:.4f} saved"
             for role, u in usage.by_role.items()
             if u.prompt_cache_read_tokens or u.prompt_cache_write_tokens]
    notes += [f"{terminal_text(role)}: {u.batched_calls} of {plural(u.calls, 'call')} "
              f"through the providers' batch APIs at half price, ${u.batch_saved_usd:.4f} saved"
              for role, u in usage.by_role.items() if u.batched_calls]
    if usage.unpriced_calls:
        notes.append(f"{plural(usage.unpriced_calls, 'call')} to models with no price entry "
                     + ("is" if usage.unpriced_calls == 1 else "are") + " not in the cost")
    if notes:
        table.caption = "\n".join(notes)
    console.print(table)


def _adaptive(adaptive: AdaptiveReport, console: Console) -> None:
    line = (f"adaptive sampling: target width {adaptive.target_width:.3f}, "
            f"final width {fmt_num(adaptive.final_width)} "
            f"({terminal_text(adaptive.final_reason)}), "
            + (f"{plural(adaptive.samples_used, 'sample')}" if adaptive.samples_used is not None
               else "samples not counted"))
    savings = adaptive.savings
    if savings is not None and savings.fixed_samples is not None:
        line += (f"; fixed epochs would need {plural(savings.fixed_samples, 'sample')} "
                 f"({savings.fixed_epochs_per_scenario} per scenario): saved "
                 f"{plural(savings.saved_samples or 0, 'sample')}"
                 + (f", about {savings.saved_model_calls} model calls"
                    if savings.saved_model_calls is not None else ""))
    console.print(line)


def render_gate(gate: GateResult, console: Console) -> None:
    for check in gate.checks:
        mark = "[bold green]PASS[/]" if check.passed else "[bold red]FAIL[/]"
        console.print(f"gate {mark} {terminal_text(check.detail)}")


def render_comparison(result: dict[str, Any], console: Console, *, max_rows: int = 50) -> None:
    """Print a paired comparison (candidate minus baseline): the suite figures and tests
    (how each was computed as a numbered note under the table, so no explanation is broken
    mid-word), each scenario's difference with its interval and what changed, and the
    verdict with, when the suite test and the scenarios' own intervals seem to disagree, why
    both hold (``result["verdict"]``, see :func:`harness.runs.comparison.comparison_verdict`)."""
    from harness.report.judge_drift import render_corrected_comparison, render_judges

    render_notice(result.get("notice"), console)
    render_judges(result, console)
    d = result["difference"]
    level = f"{1 - result['alpha']:.0%}"
    n = result["n_scenarios"]
    table = make_table(f"Paired comparison on {plural(n, 'common scenario')} "
                       "(candidate − baseline)", "figure", "value", f"{level} interval / p",
                       "how")
    hows: list[str] = []

    def how(text: str) -> str:
        hows.append(text)
        return f"[{len(hows)}]"

    table.add_row("baseline mean", fmt_num(result["baseline_mean"]), "", "")
    table.add_row("candidate mean", fmt_num(result["candidate_mean"]), "", "")
    table.add_row("difference", fmt_num(d["value"]), fmt_ci(d["ci_low"], d["ci_high"]),
                  how(d["method"]))
    verdict_key = "t_test" if result.get("verdict_test", "t") == "t" else "permutation_test"
    for key in ("t_test", "permutation_test"):
        t = result[key]
        name = key.replace("_", " ") + (" (verdict)" if key == verdict_key else "")
        table.add_row(name, fmt_num(t["statistic"]), f"p = {fmt_p(t['p_value'])}",
                      how(t["method"]))
    if result.get("mcnemar"):
        m = result["mcnemar"]
        table.add_row("McNemar (pass/fail)", fmt_num(m.get("statistic")),
                      f"p = {fmt_p(m['p_value'])}", how(m["method"]))
    table.add_row("correlation of scenario means", fmt_num(result["correlation"]), "", "Pearson")
    console.print(table)
    for i, text in enumerate(hows, 1):
        console.print(f"[dim]\\[{i}] {terminal_text(text)}[/]")
    _per_scenario_differences(result, console, level=level, max_rows=max_rows)
    render_corrected_comparison(result, console)
    for note in result.get("notes", []):
        console.print(f"[dim]note: {terminal_text(note)}[/]")
    _verdict(result, console)


# What each kind of change is called in the per-scenario table (the HTML page's words).
_CHANGES = {"regression": "[bold red]regression[/]", "improvement": "[bold green]improvement[/]",
            "lower": "lower", "higher": "higher", "same": "same"}


def _change(s: dict[str, Any]) -> str:
    """``regression`` when the scenario's interval lies below 0, ``improvement`` above,
    else the sign of the difference (within noise)."""
    if s.get("ci_high") is not None and s["ci_high"] < 0:
        return "regression"
    if s.get("ci_low") is not None and s["ci_low"] > 0:
        return "improvement"
    return "lower" if s["difference"] < 0 else "higher" if s["difference"] > 0 else "same"


def _per_scenario_differences(result: dict[str, Any], console: Console, *, level: str,
                              max_rows: int) -> None:
    rows = sorted(result["scenarios"], key=lambda s: s["difference"])
    per = make_table("Per scenario (most regressed first)", "scenario", "base", "cand.",
                     "diff.", f"{level} interval", "change", text=("change",))
    per.box, per.show_edge, per.pad_edge, per.collapse_padding = (
        box.SIMPLE_HEAD, False, False, True)
    for s in rows[:max_rows]:
        change = _change(s)
        per.add_row(ident(s["scenario_id"]), fmt_num(s["baseline_mean"]),
                    fmt_num(s["candidate_mean"]), fmt_num(s["difference"]),
                    fmt_ci(s.get("ci_low"), s.get("ci_high")),
                    _CHANGES[change] + ("*" if s.get("judge_changed") else ""))
    captions = []
    if any(s.get("judge_changed") for s in rows):
        captions.append("*: the judge changed for this scenario: its difference is not the "
                        "agent's alone")
    if len(rows) > max_rows:
        captions.append(f"{len(rows) - max_rows} more in the JSON output")
    same = [s for s in rows if s["difference"] == 0.0 and s.get("ci_low") is not None]
    if same:
        captions.append(
            "same: equal means in both runs; the interval stays wide because each run's "
            "mean is known only to within its own interval over its epochs (widest when "
            "every epoch scored alike)")
    captions.append(f"interval: {result.get('scenario_interval_method', '')}")
    per.caption = "\n".join(captions)
    console.print(per)


def _verdict(result: dict[str, Any], console: Console) -> None:
    verdict = result.get("verdict")
    if verdict is None:  # a comparison dict made without the runs layer's words
        verdict = {"outcome": "regression" if result["significant_regression"] else
                   "improvement" if result["significant_improvement"] else "none",
                   "headline": "significant regression" if result["significant_regression"]
                   else "significant improvement" if result["significant_improvement"]
                   else "no significant difference", "scenarios": "", "reconcile": None}
    colour = {"regression": "bold red", "improvement": "bold green"}.get(verdict["outcome"])
    headline = terminal_text(verdict["headline"])
    if verdict.get("judge_changed"):
        colour = "bold yellow"
    console.print(f"[{colour}]{headline}[/]" if colour else headline)
    for line in (verdict["scenarios"], verdict["reconcile"], verdict.get("corrected")):
        if line:
            console.print(terminal_text(line))
