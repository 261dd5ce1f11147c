"""The terminal table of ``harness simulator-realism``: each feature's real and simulated
means and distances, then the realism score line."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from harness.report.formatting import fmt_ci, fmt_num, make_table
from harness.safe_text import terminal_text
from harness.wording import plural


def _distance(figure: dict[str, Any] | None) -> str:
    if figure is None:
        return "—"
    return f"{figure['value']:.2f} {fmt_ci(figure['ci_low'], figure['ci_high'], 2)}"


def render_realism(output: dict[str, Any], console: Console) -> None:
    """The table of every feature (real mean, simulated mean, KS distance with its interval,
    Wasserstein distance), then the notes and the realism score line. ``output`` is the
    command's JSON object."""
    comparison = output["comparison"]
    level = round(comparison["confidence"] * 100)
    table = make_table("Realism against real users", "feature", "real", "simulated",
                       f"KS [{level}% CI]", "W1")
    for f in comparison["features"]:
        w1 = f["wasserstein"]
        table.add_row(f["name"], fmt_num(f["real_mean"], 2), fmt_num(f["simulated_mean"], 2),
                      _distance(f["ks"]), fmt_num(w1["value"] if w1 else None, 2))
    console.print(table)
    console.print("real, simulated: means; KS: largest gap between the two distributions "
                  "(0 same, 1 apart); W1: Wasserstein distance in the feature's unit",
                  style="dim")
    for note in output["notes"]:
        console.print(f"note: {terminal_text(note)}", style="yellow")
    score = comparison["score"]
    n_real, n_sim = comparison["n_real_conversations"], comparison["n_simulated_conversations"]
    sets = f"{plural(n_real, 'real conversation')}, {plural(n_sim, 'simulated one')}"
    if score is None:
        console.print("[bold]realism score —[/] (no feature that both sets have)")
        console.print(sets, style="dim")
        return
    n_scored = len(comparison["features"]) - len(comparison["features_left_out"])
    console.print(f"[bold]realism score {score['value']:.2f}[/] "
                  f"{fmt_ci(score['ci_low'], score['ci_high'], 2)} (1 − mean KS over "
                  f"{plural(n_scored, 'feature')})")
    console.print(sets, style="dim")
