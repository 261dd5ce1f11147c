"""`harness stats --target-mdd`: the epochs and scenarios needed to detect a difference,
cross-checked by brute force on the Miller (2024) variance formula and against statsmodels;
the per-scenario mean interval against scipy; and the offline notice that every figure made
with mock models must carry."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console
from scipy import stats as sps
from statsmodels.stats.power import NormalIndPower

from harness.cli import main
from harness.report.terminal import render_power
from harness.stats import design_for_target, minimum_detectable_difference, suite_stats
from harness.stats.summary import summary_head

ALPHA, POWER = 0.05, 0.8
Z = sps.norm.ppf(1 - ALPHA / 2) + sps.norm.ppf(POWER)


def _write(tmp_path: Path, lines: list[Any], name: str = "scores.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n"
                            for ln in lines), encoding="utf-8")
    return path


def _run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
         *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["harness", *args])
    monkeypatch.setenv("COLUMNS", "250")  # rich tables wide enough not to wrap a cell
    code: int | str | None = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return (code if isinstance(code, int) else 1), out.out, out.err


def _noisy_suite(n_scenarios: int = 8, epochs: int = 4, seed: int = 7) -> dict[str, list[float]]:
    """Scenarios of similar difficulty and noisy epochs: within-scenario variance dominates,
    so more epochs can reach a smaller difference."""
    rng = np.random.default_rng(seed)
    return {f"s{c}": [float(x) for x in rng.uniform(0.0, 1.0, epochs) * 0.8
                      + 0.1 + 0.02 * c] for c in range(n_scenarios)}


def _lines(scores: dict[str, list[float]], **extra: Any) -> list[dict[str, Any]]:
    return [{"scenario_id": s, "epoch": e, "score": x, **extra}
            for s, xs in scores.items() for e, x in enumerate(xs)]


def _components(scores: dict[str, list[float]]) -> tuple[float, float, int, int]:
    """One-way ANOVA by hand (balanced): within = mean of the per-scenario variances,
    between = variance of the scenario means minus within / K (0 if negative)."""
    k = len(next(iter(scores.values())))
    means = [float(np.mean(v)) for v in scores.values()]
    within = float(np.mean([np.var(v, ddof=1) for v in scores.values()]))
    between = max(0.0, float(np.var(means, ddof=1)) - within / k)
    return between, within, len(scores), k


def _mdd(between: float, within: float, c: int, k: float) -> float:
    return float(Z * math.sqrt((2 * between + 2 * within / k) / c))


def test_target_mdd_matches_brute_force_and_statsmodels(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    scores = _noisy_suite()
    between, within, c, k = _components(scores)
    current = _mdd(between, within, c, k)
    target = round(0.8 * current, 3)
    path = _write(tmp_path, _lines(scores))
    code, out, err = _run(monkeypatch, capsys, "stats", str(path), "--json",
                          "--target-mdd", str(target))
    assert code == 0, err
    data = json.loads(out)
    assert data["power"]["minimum_detectable_difference"] == pytest.approx(current, rel=1e-9)
    design = data["design_for_target"]
    assert design["target_difference"] == target and design["target_source"] == "given"

    # Epochs with these scenarios: the smallest K whose MDD is at most the target.
    need_k = next(kk for kk in range(1, 100_000) if _mdd(between, within, c, kk) <= target)
    by_epochs = design["epochs_with_current_scenarios"]
    assert by_epochs["achievable"] is True and by_epochs["n_scenarios"] == c
    assert by_epochs["epochs"] == need_k > k
    assert by_epochs["achieved_difference"] == pytest.approx(_mdd(between, within, c, need_k))

    # Scenarios at these epochs: the smallest C; statsmodels' one-sample normal power
    # (ratio=0) solves the same equation for n with effect size target / sd(difference).
    need_c = next(cc for cc in range(2, 100_000) if _mdd(between, within, cc, k) <= target)
    sd_diff = math.sqrt(2 * between + 2 * within / k)
    n_sm = NormalIndPower().solve_power(effect_size=target / sd_diff, alpha=ALPHA, power=POWER,
                                        ratio=0.0, alternative="two-sided")
    by_scen = design["scenarios_with_current_epochs"]
    assert by_scen["n_scenarios"] == need_c == math.ceil(n_sm - 1e-6)
    assert by_scen["epochs"] == k


def test_the_default_target_is_half_the_current_difference_and_the_table_shows_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    scores = _noisy_suite()
    between, within, c, k = _components(scores)
    path = _write(tmp_path, _lines(scores))
    code, out, _ = _run(monkeypatch, capsys, "stats", str(path), "--json")
    assert code == 0
    data = json.loads(out)
    design = data["design_for_target"]
    half = data["power"]["minimum_detectable_difference"] / 2
    assert design["target_difference"] == pytest.approx(half)
    assert design["target_source"] == "half the current minimum detectable difference"
    need_c = next(cc for cc in range(2, 100_000) if _mdd(between, within, cc, k) <= half)
    assert design["scenarios_with_current_epochs"]["n_scenarios"] == need_c

    code, text, _ = _run(monkeypatch, capsys, "stats", str(path), "--target-mdd", "0.2")
    assert code == 0
    need_k = next(kk for kk in range(1, 100_000) if _mdd(between, within, c, kk) <= 0.2)
    need_c = next(cc for cc in range(2, 100_000) if _mdd(between, within, cc, k) <= 0.2)
    flat = " ".join(text.split())
    assert (f"to detect 0.200: {need_k} epochs per scenario with these {c} scenarios; or "
            f"{need_c} scenarios at {k} epochs") in flat


def test_a_target_below_the_between_scenario_floor_needs_more_scenarios(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # Scenario means far apart, epochs nearly identical: only scenarios help.
    scores = {f"s{c}": [c / 10, c / 10 + 0.01, c / 10 - 0.01] for c in range(1, 7)}
    between, within, c, k = _components(scores)
    floor = float(Z * math.sqrt(2 * between / c))
    path = _write(tmp_path, _lines(scores))
    code, out, _ = _run(monkeypatch, capsys, "stats", str(path), "--json",
                        "--target-mdd", f"{floor / 2:.4f}")
    assert code == 0
    design = json.loads(out)["design_for_target"]
    by_epochs = design["epochs_with_current_scenarios"]
    assert by_epochs["achievable"] is False and by_epochs["epochs"] is None
    assert f"{floor:.4g}" in by_epochs["reason"]
    need_c = next(cc for cc in range(2, 100_000)
                  if _mdd(between, within, cc, k) <= float(f"{floor / 2:.4f}"))
    assert design["scenarios_with_current_epochs"]["n_scenarios"] == need_c
    code, text, _ = _run(monkeypatch, capsys, "stats", str(path), "--target-mdd",
                         f"{floor / 2:.4f}")
    assert "no number of epochs with these 6 scenarios" in " ".join(text.split())


@pytest.mark.parametrize("value", ["0", "-0.1", "nan", "inf"])
def test_a_bad_target_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str], value: str) -> None:
    path = _write(tmp_path, _lines(_noisy_suite()))
    code, out, err = _run(monkeypatch, capsys, "stats", str(path), "--target-mdd", value)
    assert code == 2 and out == "" and "--target-mdd" in err and "Traceback" not in err


def test_design_for_target_without_variance_is_none_and_a_given_target_one_epoch() -> None:
    flat = minimum_detectable_difference(n_scenarios=5, epochs=3, between_variance=0.0,
                                         within_variance=0.0)
    assert design_for_target(flat) is None
    given = design_for_target(flat, 0.1)
    assert given is not None
    assert given.epochs_with_current_scenarios.epochs == 1
    assert given.scenarios_with_current_epochs.n_scenarios == 2
    with pytest.raises(ValueError):
        design_for_target(flat, -1.0)


def test_harmonic_epochs_of_equal_counts_do_not_round_up() -> None:
    # 6 scenarios of 3 epochs: 6 / (6 * (1/3)) is 2.9999999999999996 or 3.0000000000000004.
    epochs = 6 / sum([1 / 3] * 6)
    analysis = minimum_detectable_difference(n_scenarios=6, epochs=epochs,
                                             between_variance=0.01, within_variance=0.02)
    design = design_for_target(analysis)
    assert design is not None and design.scenarios_with_current_epochs.epochs == 3


def test_render_power_says_when_no_epochs_reach_the_target() -> None:
    analysis = minimum_detectable_difference(n_scenarios=4, epochs=2, between_variance=0.04,
                                             within_variance=0.01)
    design = design_for_target(analysis, analysis.floor_with_unlimited_epochs / 2)
    assert design is not None
    console = Console(width=300, record=True)
    figures = summary_head(suite_stats({"a": [1.0, 0.0], "b": [0.0, 0.0]},
                                       bootstrap_resamples=0))
    render_power(figures.model_copy(update={"power": analysis, "design_for_target": design}),
                 console)
    text = console.export_text()
    assert f"floor is {analysis.floor_with_unlimited_epochs:.3f}" in text
    assert f"{design.scenarios_with_current_epochs.n_scenarios} scenarios at 2 epochs" in text


def test_scenario_mean_interval_matches_scipy(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    scores = _noisy_suite(n_scenarios=3, epochs=5)
    path = _write(tmp_path, _lines(scores))
    code, out, _ = _run(monkeypatch, capsys, "stats", str(path), "--json")
    assert code == 0
    rows = {s["scenario_id"]: s for s in json.loads(out)["scenarios"]}
    for sid, xs in scores.items():
        low, high = sps.t.interval(0.95, len(xs) - 1, loc=np.mean(xs), scale=sps.sem(xs))
        assert rows[sid]["mean_ci_low"] == pytest.approx(low, rel=1e-12)
        assert rows[sid]["mean_ci_high"] == pytest.approx(high, rel=1e-12)
    code, text, _ = _run(monkeypatch, capsys, "stats", str(path))
    first = rows["s0"]
    assert f"[{first['mean_ci_low']:.3f}, {first['mean_ci_high']:.3f}]" in text


def test_offline_samples_carry_the_notice_in_json_and_terminal(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    scores = _noisy_suite(n_scenarios=3, epochs=2)
    offline = _write(tmp_path, _lines(scores, offline=True), name="offline.jsonl")
    code, out, _ = _run(monkeypatch, capsys, "stats", str(offline), "--json")
    data = json.loads(out)
    assert code == 0 and data["offline"] is True and data["offline_samples"] == 6
    assert data["notice"].startswith("OFFLINE:") and "mock:" in data["notice"]
    code, text, _ = _run(monkeypatch, capsys, "stats", str(offline))
    assert "OFFLINE" in text and "mock:" in text

    lines = _lines(scores)
    for line in lines[:2]:
        line["offline"] = True
    mixed = _write(tmp_path, lines, name="mixed.jsonl")
    code, out, _ = _run(monkeypatch, capsys, "stats", str(mixed), "--json")
    data = json.loads(out)
    assert data["offline"] is True and "2 of 6 samples" in data["notice"]

    real = _write(tmp_path, _lines(scores, offline=False), name="real.jsonl")
    code, out, _ = _run(monkeypatch, capsys, "stats", str(real), "--json")
    data = json.loads(out)
    assert data["offline"] is False and data["notice"] is None
    code, text, _ = _run(monkeypatch, capsys, "stats", str(real))
    assert "OFFLINE" not in text


def test_an_offline_flag_that_is_not_a_boolean_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, [{"scenario_id": "a", "epoch": 0, "score": 1.0, "offline": "yes"}])
    code, out, err = _run(monkeypatch, capsys, "stats", str(path), "--json")
    assert code == 2 and out == ""
    assert f"{path}:1: offline" in err and "true or false" in err


def test_offline_notice_by_count() -> None:
    from harness.stats.summary import OFFLINE_NOTICE, offline_notice

    assert offline_notice(0, 5) is None
    assert offline_notice(1, 5) == (
        "OFFLINE: 1 of 5 samples were made with mock: models in at least one role; figures "
        "that mix them with real results say nothing dependable about any real agent.")
    assert offline_notice(5, 5) == OFFLINE_NOTICE


def test_design_power_and_summary_keys() -> None:
    from harness.stats import suite_stats
    from harness.stats.summary import design_power, stats_summary

    scores = {"a": [1.0, 0.0, 1.0], "b": [0.0, 0.0], "c": [1.0, 1.0, 1.0, 0.0]}
    suite = suite_stats(scores, bootstrap_resamples=0)
    assert suite.variance is not None
    got = design_power(suite, alpha=0.1, power=0.9, correlation=0.3)
    assert got == minimum_detectable_difference(
        n_scenarios=3, epochs=3 / (1 / 3 + 1 / 2 + 1 / 4),
        between_variance=suite.variance.between, within_variance=suite.variance.within,
        alpha=0.1, power=0.9, paired=True, correlation=0.3)
    out = stats_summary(suite, power=got)
    assert (out.df, out.method, out.power) == (2, suite.mean.method, got)
    assert [s.scenario_id for s in out.scenarios] == ["a", "b", "c"]
    assert stats_summary(suite).power is None
