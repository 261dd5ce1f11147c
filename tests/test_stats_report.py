"""How statistics are shown: p-values never print as 0.000, the tables show a handful of k
unless asked for all, and the gate never shows a lower bound outside [0, 1] without saying
that it was cut there."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

from harness.cli import app
from harness.report.formatting import fmt_p
from harness.report.terminal import handful_of_k, render_comparison
from harness.runs.gate import evaluate_gate
from harness.stats import compare_runs
from harness.stats.summary import StatsReport, SuiteFigures
from tests.helpers.figures import gate_figures


def test_fmt_p() -> None:
    assert fmt_p(3e-12) == "<0.001"
    assert fmt_p(0.0004) == "<0.001"
    assert fmt_p(0.0005) == "0.001"  # rounds to a figure that is not zero
    assert fmt_p(0.0625) == "0.062"
    assert fmt_p(1.0) == "1.000"
    assert fmt_p(None) == "—"


def test_a_tiny_p_value_prints_as_below_0_001() -> None:
    rng = np.random.default_rng(0)
    base = {f"s{i}": [float(x) for x in rng.random(4) < 0.9] for i in range(40)}
    cand = {f"s{i}": [float(x) for x in rng.random(4) < 0.1] for i in range(40)}
    result = compare_runs(base, cand).model_dump(mode="json")
    assert result["t_test"]["p_value"] < 1e-6
    buffer = io.StringIO()
    render_comparison({**result, "notice": None}, Console(file=buffer, width=250))
    text = buffer.getvalue()
    assert "p = <0.001" in text and "p = 0.000" not in text


def test_handful_of_k() -> None:
    assert handful_of_k(list(range(1, 101))) == [1, 2, 4, 8, 16, 32, 64, 100]
    assert handful_of_k([1, 2, 3, 4, 5]) == [1, 2, 4, 5]
    assert handful_of_k([1]) == [1]
    assert handful_of_k([]) == []


def _write_epochs(path: Path, n_scenarios: int, epochs: int) -> Path:
    rng = np.random.default_rng(1)
    with path.open("w") as out:
        for s in range(n_scenarios):
            p = rng.random()
            for e in range(epochs):
                out.write(json.dumps({"scenario_id": f"s{s}", "epoch": e,
                                      "score": float(rng.random() < p)}) + "\n")
    return path


def test_stats_table_shows_a_handful_of_k_unless_asked_for_all(tmp_path: Path) -> None:
    path = _write_epochs(tmp_path / "s.jsonl", 3, 100)
    shown = CliRunner().invoke(app, ["stats", str(path), "--bootstrap-resamples", "0"],
                               terminal_width=200)
    assert shown.exit_code == 0, shown.output
    for k in ("1", "2", "4", "64", "100"):
        assert f"pass@{k} " in shown.stdout and f"pass^{k} " in shown.stdout
    for k in ("3", "5", "99"):
        assert f"pass@{k} " not in shown.stdout
    assert "--all-k lists every k" in shown.stdout
    every = CliRunner().invoke(app, ["stats", str(path), "--bootstrap-resamples", "0",
                                     "--all-k"], terminal_width=200)
    for k in range(1, 101):
        assert f"pass@{k} " in every.stdout and f"pass^{k} " in every.stdout
    # The JSON always has every k.
    out = json.loads(CliRunner().invoke(app, ["stats", str(path), "--json",
                                              "--bootstrap-resamples", "0"]).stdout)
    assert list(out["pass_at_k"]) == [str(k) for k in range(1, 101)]
    assert len(out["pass_hat_k_detail"]) == 100


def _figures(ci_low: float, ci_high: float, *, ci_clipped: bool = False) -> SuiteFigures:
    return gate_figures(mean=0.75, ci_low=ci_low, ci_high=ci_high, ci_clipped=ci_clipped,
                        pass_rate=0.75, pass_rate_ci=(0.3, 0.96))


def test_gate_cuts_an_old_summarys_negative_lower_bound_and_says_so() -> None:
    # A summary written before intervals were cut: the t interval of one-epoch binary data.
    gate = evaluate_gate(_figures(-0.046, 1.546), min_score=0.5, gate_on="lower-bound")
    assert gate is not None
    [check] = gate.checks
    assert check.value == 0.0 and not check.passed
    assert check.detail == ("mean score lower bound 0.000 < 0.500 (interval 0.000–1.000, "
                            "clipped to the range [0, 1])")


def test_gate_says_so_when_the_summary_interval_was_cut() -> None:
    gate = evaluate_gate(_figures(0.0, 1.0, ci_clipped=True), min_score=0.5)
    assert gate is not None
    assert gate.checks[0].passed and "clipped to the range [0, 1]" in gate.checks[0].detail
    plain = evaluate_gate(_figures(0.6, 0.9), min_score=0.5)
    assert plain is not None and "clipped" not in plain.checks[0].detail


@pytest.mark.parametrize("gate_on", ["mean", "lower-bound"])
def test_gate_on_a_run_summary_from_stats(tmp_path: Path, gate_on: str) -> None:
    # One epoch, binary: the stats summary itself cuts the interval; the gate shows the cut.
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps({"scenario_id": s, "epoch": 0, "score": x}) + "\n"
                            for s, x in (("a", 1), ("b", 1), ("c", 1), ("d", 0))))
    out = json.loads(CliRunner().invoke(app, ["stats", str(path), "--json"]).stdout)
    assert (out["ci_low"], out["ci_high"], out["ci_clipped"]) == (0.0, 1.0, True)
    # Its output without the streamed scenarios is the model it was written from.
    head = StatsReport.model_validate({k: v for k, v in out.items() if k != "scenarios"})
    gate = evaluate_gate(head, min_score=0.5, gate_on=gate_on)  # type: ignore[arg-type]
    assert gate is not None
    assert "interval 0.000–1.000, clipped to the range [0, 1]" in gate.checks[0].detail
