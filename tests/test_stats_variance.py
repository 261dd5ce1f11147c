"""Variance components against the classical ANOVA formulas, statsmodels' REML mixed model
(balanced designs, where REML and ANOVA agree) and simulation (unbalanced designs)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from harness.stats import (
    InsufficientDataError,
    nested_variance_components,
    suite_stats,
    variance_components,
)


def _nested(
    rng: np.random.Generator, epochs: list[int], judges: list[list[int]],
    sd: tuple[float, float, float],
) -> dict[str, list[list[float]]]:
    out = {}
    for c, n_c in enumerate(epochs):
        a = rng.normal(0, sd[0])
        out[f"s{c}"] = [
            list(a + rng.normal(0, sd[1]) + rng.normal(0, sd[2], judges[c][e]))
            for e in range(n_c)
        ]
    return out


def _mixedlm(frame: pd.DataFrame, nested: bool) -> tuple[float, float, float]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if nested:
            m = smf.mixedlm("y ~ 1", frame, groups="s", re_formula="1",
                            vc_formula={"e": "0 + C(e)"}).fit(reml=True)
            return float(m.cov_re.iloc[0, 0]), float(m.vcomp[0]), float(m.scale)
        m = smf.mixedlm("y ~ 1", frame, groups="s").fit(reml=True)
        return float(m.cov_re.iloc[0, 0]), float(m.scale), 0.0


def test_balanced_one_way_matches_anova_and_reml() -> None:
    rng = np.random.default_rng(0)
    data = {f"s{c}": list(rng.normal(rng.normal(0, 0.6), 0.5, 5)) for c in range(20)}
    got = variance_components(data)
    y = np.array(list(data.values()))
    ms_between = 5 * np.var(y.mean(axis=1), ddof=1)
    ms_within = np.sum((y - y.mean(axis=1, keepdims=True)) ** 2) / (20 * 4)
    assert got.within == pytest.approx(ms_within)
    assert got.between == pytest.approx((ms_between - ms_within) / 5)
    frame = pd.DataFrame([{"s": s, "y": v} for s, xs in data.items() for v in xs])
    between, within, _ = _mixedlm(frame, nested=False)
    assert got.between == pytest.approx(between, rel=1e-3)
    assert got.within == pytest.approx(within, rel=1e-3)
    assert got.intraclass_correlation == pytest.approx(between / (between + within), rel=1e-3)


def test_balanced_nested_matches_reml() -> None:
    rng = np.random.default_rng(0)
    data = _nested(rng, [4] * 15, [[3] * 4] * 15, (0.5, 0.4, 0.3))
    got = nested_variance_components(data)
    frame = pd.DataFrame([
        {"s": s, "e": f"{s}_{e}", "y": v}
        for s, ts in data.items() for e, t in enumerate(ts) for v in t
    ])
    scenario, epoch, judge = _mixedlm(frame, nested=True)
    assert got.scenario == pytest.approx(scenario, rel=1e-3)
    assert got.epoch == pytest.approx(epoch, rel=1e-3)
    assert got.judge == pytest.approx(judge, rel=1e-3)
    assert got.n_judgments == 15 * 4 * 3 and got.n_transcripts == 60


def test_unbalanced_estimates_are_unbiased() -> None:
    # Fixed unbalanced design, 1500 simulated data sets: the mean of each estimate must be
    # within 4 Monte Carlo standard errors of the true component.
    rng = np.random.default_rng(42)
    epochs = [int(k) for k in rng.integers(1, 7, 20)]
    epochs[0] = 3
    judges = [[int(j) for j in rng.integers(1, 4, n)] for n in epochs]
    truth = (0.3, 0.2, 0.1)
    sd = tuple(float(np.sqrt(v)) for v in truth)
    est = np.array([
        [(v := nested_variance_components(_nested(rng, epochs, judges, sd))).scenario_raw,
         v.epoch_raw, v.judge]
        for _ in range(1500)
    ])
    mean = est.mean(axis=0)
    mc_se = est.std(axis=0, ddof=1) / np.sqrt(len(est))
    assert np.all(np.abs(mean - truth) < 4 * mc_se), (mean, mc_se)


def test_two_level_unbalanced_is_unbiased() -> None:
    rng = np.random.default_rng(9)
    epochs = [int(k) for k in rng.integers(1, 8, 25)]
    epochs[0] = 2
    est = []
    for _ in range(1500):
        data = {f"s{c}": list(rng.normal(rng.normal(0, 0.5), 0.7, n))
                for c, n in enumerate(epochs)}
        v = variance_components(data)
        est.append((v.between_raw, v.within))
    arr = np.array(est)
    mc_se = arr.std(axis=0, ddof=1) / np.sqrt(len(arr))
    assert np.all(np.abs(arr.mean(axis=0) - (0.25, 0.49)) < 4 * mc_se)


def test_parts_add_up_to_squared_clustered_stderr() -> None:
    rng = np.random.default_rng(3)
    data = {f"s{c}": [float(rng.random() < p) for _ in range(int(rng.integers(2, 6)))]
            for c, p in enumerate(rng.beta(0.5, 0.5, 30))}
    suite = suite_stats(data, bootstrap_resamples=0)
    v = suite.variance
    assert v is not None and not v.truncated
    assert suite.mean.stderr is not None
    assert v.suite_variance_between + v.suite_variance_within == pytest.approx(
        suite.mean.stderr**2, rel=1e-10
    )


def test_negative_between_is_truncated_and_flagged() -> None:
    # Identical scenario means but noisy epochs: the moment estimate is negative.
    data = {"a": [0.0, 1.0], "b": [1.0, 0.0], "c": [0.0, 1.0]}
    v = variance_components(data)
    assert v.between_raw < 0 and v.between == 0.0
    assert v.truncated == ["between"]
    assert v.intraclass_correlation == 0.0


def test_judge_noise_only() -> None:
    # Transcripts identical within a scenario; only the judge varies.
    data = {"a": [[0.4, 0.6], [0.4, 0.6]], "b": [[0.9, 0.7], [0.7, 0.9]]}
    v = nested_variance_components(data)
    assert v.judge == pytest.approx(0.02)
    assert v.epoch == 0.0 and "epoch" in v.truncated
    assert v.judge_share_of_within == 1.0


def test_nested_parts_add_up_to_the_squared_stderr_of_scenario_means() -> None:
    # By the moment equations, scenario/C + epoch*mean(1/n_c)/C + judge*mean(q_c)/C is the
    # sample variance of the scenario means over C, when nothing is truncated.
    rng = np.random.default_rng(5)
    data = _nested(rng, [2, 3, 4, 2, 5, 3], [[2, 3], [1, 2, 2], [3, 1, 2, 2], [2, 2],
                                             [1, 1, 2, 3, 2], [2, 2, 2]], (0.5, 0.4, 0.3))
    v = nested_variance_components(data)
    assert v.truncated == [] and min(v.scenario, v.epoch, v.judge) > 0
    means = [np.mean([np.mean(t) for t in ts]) for ts in data.values()]
    n_c = np.array([len(ts) for ts in data.values()])
    q_c = np.array([sum(1 / len(t) for t in ts) for ts in data.values()]) / n_c**2
    assert v.suite_variance_scenario == pytest.approx(v.scenario / 6)
    assert v.suite_variance_epoch == pytest.approx(v.epoch * np.mean(1 / n_c) / 6)
    assert v.suite_variance_judge == pytest.approx(v.judge * np.mean(q_c) / 6)
    assert v.suite_variance_scenario + v.suite_variance_epoch + v.suite_variance_judge == (
        pytest.approx(np.var(means, ddof=1) / 6, rel=1e-10))
    assert v.judge_share_of_within == pytest.approx(v.judge / (v.epoch + v.judge))


def test_zero_is_not_truncated_and_no_within_noise_has_no_judge_share() -> None:
    # Every judge sample and every epoch agree: judge and epoch noise are exactly 0.
    v = nested_variance_components({"a": [[0.5, 0.5], [0.5, 0.5]], "b": [[1.0, 1.0], [1.0]]})
    assert (v.judge, v.epoch_raw) == (0.0, 0.0) and v.scenario == pytest.approx(0.125)
    assert v.truncated == [] and v.judge_share_of_within is None


def test_truncation_is_named_and_an_exact_zero_is_not_truncated() -> None:
    # var(scenario means) = 1/8 = pooled within (1/4) / 2 epochs: between is exactly 0.
    v = variance_components({"a": [0.0, 1.0], "b": [1.0, 1.0]})
    assert v.between_raw == 0.0 and v.truncated == []
    # Equal scenario means and epoch noise: the scenario part is negative, and named.
    nested = nested_variance_components({"a": [[0.0, 0.0], [1.0, 1.0]],
                                         "b": [[1.0, 1.0], [0.0, 0.0]]})
    assert nested.scenario_raw < 0 and "scenario" in nested.truncated


def test_insufficient_data() -> None:
    with pytest.raises(InsufficientDataError, match="2 scenarios"):
        variance_components({"a": [1.0, 0.0]})
    with pytest.raises(InsufficientDataError, match="^within-scenario variance needs at least "
                       "one scenario with 2 or more epochs$"):
        variance_components({"a": [1.0], "b": [0.0]})
    with pytest.raises(ValueError, match="^variance components need finite scores$"):
        variance_components({"a": [1.0, float("nan")], "b": [0.0, 1.0]})
    with pytest.raises(InsufficientDataError,
                       match="^judge noise needs at least one transcript judged twice$"):
        nested_variance_components({"a": [[1.0], [0.0]], "b": [[1.0], [1.0]]})
    with pytest.raises(ValueError, match="no scores"):
        nested_variance_components({"a": [[1.0], []], "b": [[1.0, 0.0]]})


def test_suite_reports_judge_noise_when_given() -> None:
    rng = np.random.default_rng(1)
    judged = _nested(rng, [3] * 6, [[2] * 3] * 6, (0.3, 0.2, 0.1))
    scores = {s: [float(np.mean(t)) for t in ts] for s, ts in judged.items()}
    suite = suite_stats(scores, judge_scores=judged, bootstrap_resamples=0)
    assert suite.judge_variance is not None
    assert suite.judge_variance == nested_variance_components(judged)
    lonely = suite_stats(scores, judge_scores={s: [[x] for x in xs] for s, xs in
                                               scores.items()}, bootstrap_resamples=0)
    assert lonely.judge_variance is None
    assert any("judge noise not separated" in n for n in lonely.notes)


def test_variance_input_errors_name_the_problem() -> None:
    with pytest.raises(InsufficientDataError,
                       match="^variance components need at least 2 scenarios, got 1$"):
        nested_variance_components({"a": [[1.0, 0.5]]})
    with pytest.raises(ValueError, match="^scenario 'a' has an epoch with no scores$"):
        variance_components({"a": [], "b": [1.0, 0.0]})
