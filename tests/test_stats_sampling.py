"""Per-scenario statistics, cross-checked against brute force, published values and
statsmodels."""

from __future__ import annotations

import itertools
import statistics

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from harness.stats import pass_at_k, pass_hat_k, scenario_stats, suite_stats, wilson_interval


def _subset_fractions(n: int, c: int, k: int) -> tuple[float, float]:
    """Fraction of k-subsets of n attempts (c passing) with at least one pass / all passes:
    the definition the unbiased estimators stand for, counted directly."""
    attempts = [True] * c + [False] * (n - c)
    subsets = list(itertools.combinations(attempts, k))
    any_pass = sum(any(s) for s in subsets) / len(subsets)
    all_pass = sum(all(s) for s in subsets) / len(subsets)
    return any_pass, all_pass


def test_published_values() -> None:
    assert pass_at_k(10, 3, 5) == pytest.approx(0.91667, abs=5e-6)
    assert pass_hat_k(10, 3, 2) == pytest.approx(0.0667, abs=5e-5)
    assert pass_hat_k(10, 3, 2) == pytest.approx(3 / 45)


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_pass_at_k_and_pass_hat_k_match_subset_counting(n: int) -> None:
    for c in range(n + 1):
        for k in range(1, n + 1):
            any_pass, all_pass = _subset_fractions(n, c, k)
            assert pass_at_k(n, c, k) == pytest.approx(any_pass, abs=1e-12)
            assert pass_hat_k(n, c, k) == pytest.approx(all_pass, abs=1e-12)


def test_large_n_does_not_overflow() -> None:
    # C(2000, 1000) is far beyond float range; the estimator must still be a probability.
    value = pass_at_k(2000, 3, 1000)
    assert 0.0 < value < 1.0
    assert value == pytest.approx(1 - (1000 * 999 * 998) / (2000 * 1999 * 1998), rel=1e-9)


@pytest.mark.parametrize("bad", [(0, 0, 1), (5, 6, 1), (5, -1, 1), (5, 2, 0), (5, 2, 6)])
def test_counts_are_validated(bad: tuple[int, int, int]) -> None:
    with pytest.raises(ValueError):
        pass_at_k(*bad)
    with pytest.raises(ValueError):
        pass_hat_k(*bad)


@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.99])
def test_wilson_matches_statsmodels(confidence: float) -> None:
    for n in (1, 3, 10, 57):
        for successes in range(n + 1):
            low, high = wilson_interval(successes, n, confidence)
            ref_low, ref_high = proportion_confint(
                successes, n, alpha=1 - confidence, method="wilson"
            )
            assert low == pytest.approx(ref_low, abs=1e-12)
            assert high == pytest.approx(ref_high, abs=1e-12)


def test_wilson_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        wilson_interval(1, 0)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    with pytest.raises(ValueError):
        wilson_interval(1, 2, confidence=1.0)


def test_scenario_stats_figures() -> None:
    scores = [1.0, 0.0, 1.0, 0.5, 1.0]
    s = scenario_stats("s", scores, confidence=0.9)
    assert s.n_epochs == 5
    assert s.mean == pytest.approx(statistics.fmean(scores))
    assert s.sd == pytest.approx(statistics.stdev(scores))
    assert s.stderr == pytest.approx(statistics.stdev(scores) / 5**0.5)
    # Default pass rule: score >= 1 - 1e-6, so 0.5 is a fail.
    assert s.n_passed == 3
    assert s.pass_rate == pytest.approx(0.6)
    ref = proportion_confint(3, 5, alpha=0.1, method="wilson")
    assert (s.pass_rate_ci_low, s.pass_rate_ci_high) == pytest.approx(ref)
    assert sorted(s.pass_at_k) == [1, 2, 3, 4, 5]
    assert s.pass_at_k[2] == pytest.approx(1 - 1 / 10)
    assert s.pass_hat_k[2] == pytest.approx(3 / 10)
    assert s.flaky


def test_explicit_pass_flags_and_tolerance() -> None:
    s = scenario_stats("s", [0.7, 0.7], [True, True])
    assert s.n_passed == 2 and not s.flaky
    # A score a hair under 1 from float rounding still passes by default.
    assert scenario_stats("s", [1 - 1e-9]).n_passed == 1
    assert scenario_stats("s", [1 - 1e-3]).n_passed == 0


def test_single_epoch_has_no_sd() -> None:
    s = scenario_stats("s", [0.0])
    assert s.sd is None and s.stderr is None
    assert not s.flaky


def test_scenario_stats_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="no epochs"):
        scenario_stats("s", [])
    with pytest.raises(ValueError, match="non-finite"):
        scenario_stats("s", [float("nan")])
    with pytest.raises(ValueError, match="passed flags"):
        scenario_stats("s", [1.0, 0.0], [True])


def test_every_scenario_at_once_equals_one_at_a_time() -> None:
    # Unequal epoch counts in no particular order, so scenarios sharing a count are grouped
    # for the vectorised pass@k / pass^k and must come back in their own order and row.
    rng = np.random.default_rng(3)
    counts = [7, 1, 3, 7, 12, 3, 2, 7, 1, 5]
    scores = {f"s{i}": [float(x) for x in rng.random(n) < rng.random()]
              for i, n in enumerate(counts)}
    scores["s2"] = [0.5, 0.5, 0.5]
    rows = list(suite_stats(scores, bootstrap_resamples=0).scenarios.rows())
    assert [r["scenario_id"] for r in rows] == list(scores)
    for row, (sid, xs) in zip(rows, scores.items(), strict=True):
        one = scenario_stats(sid, xs).model_dump(mode="json")
        assert row.keys() == one.keys()
        for key, value in one.items():
            assert row[key] == pytest.approx(value, abs=1e-15), (sid, key)
        n, c = len(xs), int(sum(x >= 1 for x in xs))
        for k in range(1, n + 1):
            assert row["pass_at_k"][str(k)] == pytest.approx(pass_at_k(n, c, k), abs=1e-12)
            assert row["pass_hat_k"][str(k)] == pytest.approx(pass_hat_k(n, c, k), abs=1e-12)


def test_wilson_bounds_stay_in_the_unit_interval_and_default_to_95() -> None:
    # Unclamped, rounding puts the upper bound a hair above 1 (and the lower below 0) here.
    assert wilson_interval(16, 16, 0.95)[1] == 1.0 and wilson_interval(14, 14, 0.9)[1] == 1.0
    assert wilson_interval(0, 16, 0.95)[0] == 0.0
    assert wilson_interval(3, 5) == pytest.approx(
        proportion_confint(3, 5, alpha=0.05, method="wilson"))
    for successes, n in ((-1, 2), (0, 0), (3, 2)):
        with pytest.raises(ValueError, match=rf"^need n >= 1 and 0 <= successes <= n, got "
                                             rf"{successes}/{n}$"):
            wilson_interval(successes, n)


def test_count_errors_and_the_pass_mark() -> None:
    from harness.stats.columns import PASS_TOLERANCE, default_passed

    with pytest.raises(ValueError, match=r"^need n >= 1 and 0 <= c <= n, got n=2, c=3$"):
        pass_at_k(2, 3, 1)
    with pytest.raises(ValueError, match=r"^k must be between 1 and n=2, got 3$"):
        pass_hat_k(2, 1, 3)
    assert default_passed(1.0 - PASS_TOLERANCE) and not default_passed(0.99)
