"""``harness stats FILE [--json]``: suite statistics from a JSONL of sample scores
(contract 2). No model calls; results from any tool can be analysed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.cli.app import app
from harness.errors import InputError
from harness.stats.jsonl import read_sample_scores
from harness.stats.suite import suite_stats
from harness.stats.summary import design_power, stats_summary


def _num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _interval(obj: dict[str, Any] | None) -> str:
    if not obj or obj.get("ci_low") is None:
        return "—"
    return f"[{obj['ci_low']:.3f}, {obj['ci_high']:.3f}]"


def _print_tables(out: dict[str, Any], console: Console) -> None:
    level = f"{out['confidence']:.0%}"
    suite = Table(title=f"Suite ({out['n_scenarios']} scenarios, {out['n_samples']} samples)",
                  title_justify="left")
    for col, justify in (("figure", "left"), ("value", "right"), ("SE", "right"),
                         (f"{level} interval", "right"), ("how", "left")):
        suite.add_column(col, justify=justify)  # type: ignore[arg-type]
    suite.add_row("mean score", _num(out["mean"]), _num(out["stderr"]),
                  _interval(out), "clustered by scenario, t on C-1 df")
    boot = out["bootstrap"]
    if boot:
        suite.add_row("mean score", _num(out["mean"]), "", _interval(boot),
                      f"cluster bootstrap, {boot['n_resamples']} resamples, seed {boot['seed']}")
    pr = out["pass_rate"]
    suite.add_row("pass rate", _num(pr["value"]), _num(pr["stderr"]), _interval(pr),
                  "mean of scenario pass rates")
    for k in out["pass_at_k"]:
        d = out["pass_at_k_detail"][k]
        suite.add_row(f"pass@{k}", _num(d["value"]), _num(d["stderr"]), _interval(d),
                      "Chen et al., mean over scenarios")
    for k in out["pass_hat_k"]:
        d = out["pass_hat_k_detail"][k]
        suite.add_row(f"pass^{k}", _num(d["value"]), _num(d["stderr"]), _interval(d),
                      "tau-bench, mean over scenarios")
    console.print(suite)

    per = Table(title="Scenarios", title_justify="left")
    for col in ("scenario", "n", "mean", "sd", "pass rate", f"Wilson {level}", "flaky"):
        per.add_column(col, justify="left" if col == "scenario" else "right",
                       overflow="fold")
    for s in out["scenarios"]:
        per.add_row(escape(s["scenario_id"]), str(s["n_epochs"]), _num(s["mean"]),
                    _num(s["sd"]), _num(s["pass_rate"]),
                    f"[{s['pass_rate_ci_low']:.3f}, {s['pass_rate_ci_high']:.3f}]",
                    "yes" if s["flaky"] else "")
    console.print(per)

    vc = out["variance_components"]
    if vc:
        var = Table(title="Variance components (single sample)", title_justify="left")
        var.add_column("part")
        var.add_column("variance", justify="right")
        var.add_column("share of SE²", justify="right")
        se2 = vc["suite_variance_between"] + vc["suite_variance_within"]
        var.add_row("between scenarios", _num(vc["between"], 4),
                    _num(vc["suite_variance_between"] / se2 if se2 else None, 2))
        var.add_row("within scenario (epochs)", _num(vc["within"], 4),
                    _num(vc["suite_variance_within"] / se2 if se2 else None, 2))
        jv = out["judge_variance_components"]
        if jv:
            var.add_row("  of which agent (epoch)", _num(jv["epoch"], 4), "")
            var.add_row("  of which judge", _num(jv["judge"], 4), "")
        console.print(var)
    power = out["power"]
    if power:
        console.print(
            f"Smallest difference a paired comparison with this design detects "
            f"(alpha {power['alpha']:.2g}, power {power['power']:.0%}, correlation 0): "
            f"{power['minimum_detectable_difference']:.3f}"
        )
    for note in out["notes"]:
        console.print(f"note: {escape(note)}")


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
) -> None:
    """Suite statistics with confidence intervals from a JSONL of sample scores."""
    if not 0.0 < confidence < 1.0:
        raise InputError("command line", "--confidence",
                         f"expected a number strictly between 0 and 1, got {confidence}")
    if bootstrap_resamples < 0:
        raise InputError("command line", "--bootstrap-resamples",
                         f"expected 0 or more, got {bootstrap_resamples}")
    table = read_sample_scores(file)
    suite = suite_stats(
        table.scores, table.passed, judge_scores=table.judge_scores, confidence=confidence,
        seed=seed, bootstrap_resamples=bootstrap_resamples,
    )
    out = stats_summary(
        suite, source=str(file), power=design_power(suite, alpha=1.0 - confidence)
    )
    out["notes"] = table.notes + out["notes"]
    if as_json:
        typer.echo(json.dumps(out, indent=2, allow_nan=False))
    else:
        _print_tables(out, Console(highlight=False))
