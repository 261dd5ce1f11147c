"""Rich tables for a run summary and a paired comparison. Every number is shown with its
interval and n; errors are shown apart from scores. Text that came from scenarios or models
is escaped, so it can never inject console markup."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from harness.runs.gate import GateResult


def _num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _ci(low: float | None, high: float | None) -> str:
    return "—" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left", title_style="bold")
    for i, col in enumerate(columns):
        table.add_column(col, justify="left" if i == 0 else "right", overflow="fold")
    return table


def render_run(summary: dict[str, Any], console: Console, *, run_dir: str | None = None,
               gate: GateResult | None = None, max_rows: int = 50) -> None:
    """Print the run summary: suite figures, scenarios, metrics, errors, failure groups,
    usage, and the gate verdict."""
    if summary.get("offline"):
        console.print(Panel(escape(summary["notice"]), style="bold yellow"))
    counts = summary["counts"]
    head = (f"{counts['scenarios']} scenarios, {counts['samples']} samples: "
            f"{counts['scored']} scored, {counts['errored']} errored, "
            f"{counts['unscored']} unscored")
    console.print(f"[bold]Run[/] {escape(run_dir or '')}  {head}")
    stopped = summary.get("stopped")
    if stopped:
        console.print(f"[bold red]stopped early[/] ({escape(stopped['reason'])}): "
                      f"{escape(stopped['message'])} — finished samples are kept; "
                      "continue with [bold]harness run --resume DIR[/]")
    score = summary.get("score")
    if score is None:
        for note in summary.get("notes", []):
            console.print(f"[yellow]{escape(note)}[/]")
    else:
        _suite_table(score, console)
        _scenario_table(score, summary, console, max_rows)
    _metrics_table(summary["metrics"], console, max_rows)
    _errors(summary, console)
    _failures(summary["failure_analysis"], console)
    _usage(summary["usage"], console)
    adaptive = summary.get("adaptive")
    if adaptive:
        _adaptive(adaptive, console)
    if gate is not None:
        render_gate(gate, console)


def _suite_table(score: dict[str, Any], console: Console) -> None:
    level = f"{score['confidence']:.0%}"
    table = _table(f"Suite ({score['n_scenarios']} scenarios, {score['n_samples']} samples)",
                   "figure", "value", f"{level} interval", "n", "how")
    table.columns[-1].justify = "left"
    table.add_row("mean score", _num(score["mean"]), _ci(score["ci_low"], score["ci_high"]),
                  str(score["n_samples"]), "clustered by scenario, t on C-1 df")
    boot = score.get("bootstrap")
    if boot:
        table.add_row("mean score", _num(score["mean"]), _ci(boot["ci_low"], boot["ci_high"]),
                      str(score["n_samples"]),
                      f"cluster bootstrap ({boot['n_resamples']} resamples, seed {boot['seed']})")
    pr = score["pass_rate"]
    table.add_row("pass rate", _num(pr["value"]), _ci(pr["ci_low"], pr["ci_high"]),
                  str(pr["n"]), "mean of scenario pass rates")
    ks = sorted(score["pass_hat_k_detail"], key=int)
    for k in ([ks[0], ks[-1]] if len(ks) > 1 else ks):
        for label, key, how in (("pass@", "pass_at_k_detail", "Chen et al."),
                                ("pass^", "pass_hat_k_detail", "tau-bench")):
            d = score[key][k]
            table.add_row(f"{label}{k}", _num(d["value"]), _ci(d["ci_low"], d["ci_high"]),
                          str(d["n"]), f"{how}, mean over scenarios")
    console.print(table)
    power = score.get("power")
    if power and power.get("minimum_detectable_difference") is not None:
        console.print(
            "[dim]smallest difference a paired comparison with this design could detect "
            f"(power {power['power']:.0%}, alpha {power['alpha']}): "
            f"{power['minimum_detectable_difference']:.3f}[/]")


def _scenario_table(score: dict[str, Any], summary: dict[str, Any], console: Console,
                    max_rows: int) -> None:
    level = f"{score['confidence']:.0%}"
    errors: dict[str, int] = {}
    for e in summary.get("errors", []):
        errors[e["scenario_id"]] = errors.get(e["scenario_id"], 0) + 1
    table = _table("Scenarios", "scenario", "n", "mean", "sd", "pass rate",
                   f"Wilson {level}", "pass^k", "flaky", "errors")
    rows = score["scenarios"]
    for s in rows[:max_rows]:
        k_max = max(s["pass_hat_k"], key=int)
        table.add_row(escape(s["scenario_id"]), str(s["n_epochs"]), _num(s["mean"]),
                      _num(s["sd"]), _num(s["pass_rate"]),
                      _ci(s["pass_rate_ci_low"], s["pass_rate_ci_high"]),
                      f"{_num(s['pass_hat_k'][k_max])} (k={k_max})",
                      "[yellow]yes[/]" if s["flaky"] else "",
                      str(errors.get(s["scenario_id"], "")))
    if len(rows) > max_rows:
        table.caption = f"{len(rows) - max_rows} more in summary.json"
    console.print(table)


def _metrics_table(metrics: dict[str, Any], console: Console, max_rows: int) -> None:
    if not metrics:
        return
    table = _table("Metrics (mean of scenario means)", "metric", "mean", "interval",
                   "scenarios", "samples")
    for name, m in list(metrics.items())[:max_rows]:
        table.add_row(escape(name), _num(m["value"]), _ci(m["ci_low"], m["ci_high"]),
                      str(m["n_scenarios"]), str(m["n"]))
    console.print(table)


def _errors(summary: dict[str, Any], console: Console) -> None:
    policy = summary["error_policy"]
    if not policy["errored_samples"]:
        return
    console.print(f"[bold red]{policy['errored_samples']} errored samples[/] "
                  f"(not scores: {escape(policy['meaning'])})")
    table = _table("Errors", "scenario", "epoch", "kind", "message")
    for e in summary["errors"][:10]:
        table.add_row(escape(e["scenario_id"]), str(e["epoch"]), escape(e["kind"]),
                      escape(e["message"][:200]))
    console.print(table)


def _failures(analysis: dict[str, Any], console: Console) -> None:
    groups = analysis.get("groups", [])
    if not groups:
        return
    table = _table(f"Failure analysis ({analysis['n_failed_samples']} of "
                   f"{analysis['n_samples']} samples with a finding)",
                   "kind", "samples", "scenarios", "recommendation")
    table.columns[-1].justify = "left"
    table.columns[2].justify = "left"
    for g in groups[:15]:
        scen = ", ".join(g["scenarios"][:4]) + (" …" if len(g["scenarios"]) > 4 else "")
        table.add_row(escape(f"{g['kind']}: {g['key']}"), str(g["samples"]), escape(scen),
                      escape(g["recommendation"]))
    console.print(table)


def _usage(usage: dict[str, Any], console: Console) -> None:
    table = _table("Model usage", "role", "calls", "cached", "input tokens", "output tokens",
                   "cost (USD)")
    for role, u in usage["by_role"].items():
        table.add_row(role, str(u["calls"]), str(u["cached_calls"]), str(u["input_tokens"]),
                      str(u["output_tokens"]), f"{u['cost_usd']:.4f}")
    if usage.get("unpriced_calls"):
        table.caption = (f"{usage['unpriced_calls']} calls to models with no price entry are "
                         "not in the cost")
    console.print(table)


def _adaptive(adaptive: dict[str, Any], console: Console) -> None:
    line = (f"adaptive sampling: target width {adaptive['target_width']:.3f}, "
            f"final width {_num(adaptive.get('final_width'))} "
            f"({escape(str(adaptive.get('final_reason')))}), "
            f"{adaptive.get('samples_used')} samples")
    savings = adaptive.get("savings")
    if savings and savings.get("fixed_samples") is not None:
        line += (f"; fixed epochs would need {savings['fixed_samples']} samples "
                 f"({savings['fixed_epochs_per_scenario']} per scenario): saved "
                 f"{savings['saved_samples']} samples"
                 + (f", about {savings['saved_model_calls']} model calls"
                    if savings.get("saved_model_calls") is not None else ""))
    console.print(line)


def render_gate(gate: GateResult, console: Console) -> None:
    for check in gate.checks:
        mark = "[bold green]PASS[/]" if check.passed else "[bold red]FAIL[/]"
        console.print(f"gate {mark} {escape(check.detail)}")


def render_comparison(result: dict[str, Any], console: Console, *, max_rows: int = 50) -> None:
    """Print a paired comparison (candidate minus baseline)."""
    d = result["difference"]
    level = f"{1 - result['alpha']:.0%}"
    table = _table(f"Paired comparison on {result['n_scenarios']} common scenarios "
                   "(candidate − baseline)", "figure", "value", f"{level} interval / p", "how")
    table.columns[-1].justify = "left"
    table.add_row("baseline mean", _num(result["baseline_mean"]), "", "")
    table.add_row("candidate mean", _num(result["candidate_mean"]), "", "")
    table.add_row("difference", _num(d["value"]), _ci(d["ci_low"], d["ci_high"]),
                  escape(d["method"]))
    for key in ("t_test", "permutation_test"):
        t = result[key]
        table.add_row(key.replace("_", " "), _num(t["statistic"]), f"p = {_num(t['p_value'])}",
                      escape(t["method"]))
    if result.get("mcnemar"):
        m = result["mcnemar"]
        table.add_row("McNemar (pass/fail)", _num(m.get("statistic")),
                      f"p = {_num(m['p_value'])}", escape(m["method"]))
    table.add_row("correlation of scenario means", _num(result["correlation"]), "", "Pearson")
    console.print(table)
    rows = sorted(result["scenarios"], key=lambda s: s["difference"])
    per = _table("Per scenario (most regressed first)", "scenario", "baseline", "candidate",
                 "difference")
    for s in rows[:max_rows]:
        per.add_row(escape(s["scenario_id"]), _num(s["baseline_mean"]),
                    _num(s["candidate_mean"]), _num(s["difference"]))
    console.print(per)
    for note in result.get("notes", []):
        console.print(f"[dim]{escape(note)}[/]")
    if result["significant_regression"]:
        console.print("[bold red]significant regression[/]")
    elif result["significant_improvement"]:
        console.print("[bold green]significant improvement[/]")
    else:
        console.print("no significant difference")
