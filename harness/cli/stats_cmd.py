"""``harness stats FILE [--json]``: suite statistics from a JSONL of sample scores
(contract 2). No model calls; results from any tool can be analysed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from harness.cli.app import app, check_target_mdd
from harness.errors import InputError
from harness.models.provenance import roles_notice
from harness.report.terminal import (
    fmt_num,
    render_notes,
    render_notice,
    render_power,
    render_scenarios,
    render_variance,
)
from harness.stats.jsonl import read_sample_scores
from harness.stats.suite import suite_stats
from harness.stats.summary import design_power, offline_notice, stats_summary


def _interval(obj: dict[str, Any] | None) -> str:
    if not obj or obj.get("ci_low") is None:
        return "—"
    return f"[{obj['ci_low']:.3f}, {obj['ci_high']:.3f}]"


def _print_tables(out: dict[str, Any], console: Console) -> None:
    render_notice(out["notice"], console)
    level = f"{out['confidence']:.0%}"
    suite = Table(title=f"Suite ({out['n_scenarios']} scenarios, {out['n_samples']} samples)",
                  title_justify="left")
    for col, justify in (("figure", "left"), ("value", "right"), ("SE", "right"),
                         (f"{level} interval", "right"), ("how", "left")):
        suite.add_column(col, justify=justify)  # type: ignore[arg-type]
    suite.add_row("mean score", fmt_num(out["mean"]), fmt_num(out["stderr"]),
                  _interval(out), "clustered by scenario, t on C-1 df")
    boot = out["bootstrap"]
    if boot:
        suite.add_row("mean score", fmt_num(out["mean"]), "", _interval(boot),
                      f"cluster bootstrap, {boot['n_resamples']} resamples, seed {boot['seed']}")
    pr = out["pass_rate"]
    suite.add_row("pass rate", fmt_num(pr["value"]), fmt_num(pr["stderr"]), _interval(pr),
                  "mean of scenario pass rates")
    for k in out["pass_at_k"]:
        d = out["pass_at_k_detail"][k]
        suite.add_row(f"pass@{k}", fmt_num(d["value"]), fmt_num(d["stderr"]), _interval(d),
                      "Chen et al., mean over scenarios")
    for k in out["pass_hat_k"]:
        d = out["pass_hat_k_detail"][k]
        suite.add_row(f"pass^{k}", fmt_num(d["value"]), fmt_num(d["stderr"]), _interval(d),
                      "tau-bench, mean over scenarios")
    console.print(suite)
    render_power(out, console)
    render_scenarios(out, console)
    render_variance(out, console)
    render_notes(out["notes"], console)


@app.command("stats")
def stats(
    file: Annotated[Path, typer.Argument(help="JSONL of sample scores: one object per line "
                                         "with scenario_id, epoch, score, optional passed.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    confidence: Annotated[float, typer.Option(help="Confidence level of the intervals.")] = 0.95,
    seed: Annotated[int, typer.Option(help="Seed of the cluster bootstrap.")] = 0,
    bootstrap_resamples: Annotated[
        int, typer.Option(help="Bootstrap resamples (0 skips the bootstrap).")
    ] = 9999,
    target_mdd: Annotated[float | None, typer.Option(
        "--target-mdd", help="A difference to detect: report the epochs per scenario and the "
        "scenarios needed for a paired comparison to detect it (Miller 2024). Default: half "
        "the current minimum detectable difference.")] = None,
    errors_as_failures: Annotated[bool, typer.Option(
        help="Count lines with status 'errored' as failures (score 0), as a run made with "
        "--errors-as-failures does; by default they are skipped and counted.")] = False,
) -> None:
    """Suite statistics with confidence intervals from a JSONL of sample scores."""
    if not 0.0 < confidence < 1.0:
        raise InputError("command line", "--confidence",
                         f"expected a number strictly between 0 and 1, got {confidence}")
    if bootstrap_resamples < 0:
        raise InputError("command line", "--bootstrap-resamples",
                         f"expected 0 or more, got {bootstrap_resamples}")
    check_target_mdd(target_mdd)
    table = read_sample_scores(file, errors_as_failures=errors_as_failures)
    suite = suite_stats(
        table.scores, table.passed, judge_scores=table.judge_scores, confidence=confidence,
        seed=seed, bootstrap_resamples=bootstrap_resamples,
    )
    out = stats_summary(
        suite, source=str(file), power=design_power(suite, alpha=1.0 - confidence),
        target_difference=target_mdd,
    )
    out["notes"] = table.notes + out["notes"]
    if target_mdd is not None and out["design_for_target"] is None:
        out["notes"].append("--target-mdd: no design computed (the variance components need "
                            "at least 2 scenarios)")
    # Added keys (contract 2 fixes a minimum, not the whole set): was any sample made with
    # offline mock models, which roles were (when the lines name their models), and the
    # notice that says so.
    out["offline"] = table.n_offline > 0
    out["offline_samples"] = table.n_offline
    out["roles"] = {role: r.model_dump(mode="json") for role, r in table.roles.items()}
    out["notice"] = (roles_notice(table.roles)
                     or offline_notice(table.n_offline, table.n_samples))
    if as_json:
        typer.echo(json.dumps(out, indent=2, allow_nan=False))
    else:
        _print_tables(out, Console(highlight=False))
