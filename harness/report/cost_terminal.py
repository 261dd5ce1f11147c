"""``harness run --dry-run`` in the terminal: what a run will call and cost, per role, with
and without the providers' prompt caches and batch prices, how long it should take, and what
the gate asked for needs (:mod:`harness.runs.cost_estimate`)."""

from __future__ import annotations

from rich.console import Console

from harness.report.formatting import make_table
from harness.runs.cost_estimate import CostEstimate, fmt_duration
from harness.safe_text import terminal_text
from harness.wording import plural


def _usd(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def _dollars(value: float | None) -> str:
    return "an unknown cost" if value is None else f"${value:.4f}"


def render_estimate(estimate: CostEstimate, console: Console) -> None:
    """Print the estimate's table and the lines under it (fits 80 columns)."""
    table = make_table(
        f"Estimated cost of {plural(estimate.scenarios, 'scenario')} x "
        f"{plural(estimate.epochs, 'epoch')} = {plural(estimate.samples, 'sample')} (USD)",
        "role", "calls", "input", "output", "list price", "cached", "+ batch")
    for r in estimate.roles:
        table.add_row(terminal_text(r.role), str(r.calls), f"{r.input_tokens:,}",
                      f"{r.output_tokens:,}", _usd(r.cost_usd), _usd(r.cost_with_cache_usd),
                      _usd(r.cost_with_batch_and_cache_usd))
    table.add_row("total", str(sum(r.calls for r in estimate.roles)),
                  f"{sum(r.input_tokens for r in estimate.roles):,}",
                  f"{sum(r.output_tokens for r in estimate.roles):,}",
                  _usd(estimate.cost_usd), _usd(estimate.cost_with_cache_usd),
                  _usd(estimate.cost_with_batch_and_cache_usd), style="bold")
    table.columns[0].min_width = len("simulator")
    console.print(table)
    console.print("input, output: tokens; cached: with the providers' prompt caches; "
                  "+ batch: the judges' requests through the batch APIs too (--judge-batch, "
                  "half price)")
    source = (f"measured on {plural(estimate.measured_scenarios, 'scenario')} of "
              f"{terminal_text(estimate.measured_from)}, the rest estimated from the scenarios"
              if estimate.measured_from else "estimated from the scenarios (pass "
              "--estimate-from RUN_DIR to measure them on an earlier run)")
    if estimate.measured_from and estimate.measured_scenarios == estimate.scenarios:
        source = f"measured on {terminal_text(estimate.measured_from)}"
    console.print(f"tokens: {source}")
    if estimate.unpriced_models:
        console.print("[yellow]no price for "
                      + ", ".join(terminal_text(m) for m in estimate.unpriced_models)
                      + ": add them under prices: in the models YAML[/]")
    console.print(f"time: about {fmt_duration(estimate.duration_s)} "
                  f"({terminal_text(estimate.duration_basis)})")
    decision = estimate.decision
    if decision is None:
        return
    if decision.achievable and decision.epochs is not None:
        console.print(
            f"decision: {terminal_text(decision.decision)} needs {decision.epochs} "
            f"epoch{'s' * (decision.epochs != 1)} of {plural(decision.n_scenarios, 'scenario')}"
            f" ({plural(decision.samples or 0, 'sample')}): {_dollars(decision.cost_usd)} at "
            f"list price, {_dollars(decision.cost_with_batch_and_cache_usd)} cached + batch")
    else:
        console.print(f"decision: {terminal_text(decision.decision)}: "
                      f"{terminal_text(decision.reason or 'not reachable')}")
