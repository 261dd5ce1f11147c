"""Paired comparison against scipy (paired t), statsmodels (McNemar) and brute-force sign
flips (permutation test)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from harness.stats import InsufficientDataError, compare_runs, mcnemar_test


def _runs(seed: int, n: int = 12, shift: float = 0.0, epochs: int = 3):
    rng = np.random.default_rng(seed)
    p = rng.beta(1.2, 1.2, n)
    base = {f"s{i}": [float(rng.random() < p[i]) for _ in range(epochs)] for i in range(n)}
    q = np.clip(p + shift, 0, 1)
    cand = {f"s{i}": [float(rng.random() < q[i]) for _ in range(epochs)] for i in range(n)}
    return base, cand


def test_difference_and_t_test_match_scipy() -> None:
    base, cand = _runs(0)
    res = compare_runs(base, cand)
    ma = np.array([np.mean(base[s]) for s in base])
    mb = np.array([np.mean(cand[s]) for s in base])
    ref = sps.ttest_rel(mb, ma)
    assert res.t_test.statistic == pytest.approx(ref.statistic)
    assert res.t_test.p_value == pytest.approx(ref.pvalue)
    d = mb - ma
    assert res.difference.value == pytest.approx(d.mean())
    assert res.difference.stderr == pytest.approx(d.std(ddof=1) / math.sqrt(len(d)))
    low, high = sps.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=d.std(ddof=1) / 12**0.5)
    assert (res.difference.ci_low, res.difference.ci_high) == pytest.approx((low, high))
    assert res.correlation == pytest.approx(np.corrcoef(ma, mb)[0, 1])
    assert [r.scenario_id for r in res.scenarios] == list(base)


def test_permutation_test_matches_enumerated_sign_flips() -> None:
    base, cand = _runs(1, n=10, shift=0.2)
    res = compare_runs(base, cand, seed=3)
    d = np.array([np.mean(cand[s]) - np.mean(base[s]) for s in base])
    observed = abs(d.mean())
    flips = np.array(list(itertools.product([1, -1], repeat=len(d))))
    null = np.abs((flips * d).mean(axis=1))
    expected = np.mean(null >= observed - 1e-12)
    assert res.permutation_test.p_value == pytest.approx(expected)
    assert "exact" in res.permutation_test.method


def test_randomised_permutation_is_seeded() -> None:
    base, cand = _runs(2, n=20, shift=0.1)
    a = compare_runs(base, cand, seed=5, permutation_resamples=2000)
    b = compare_runs(base, cand, seed=5, permutation_resamples=2000)
    assert a.permutation_test == b.permutation_test
    assert a.permutation_test.seed == 5 and "randomised" in a.permutation_test.method


@pytest.mark.parametrize(
    "table", [[[10, 3], [7, 20]], [[5, 0], [4, 1]], [[30, 40], [12, 18]], [[8, 2], [2, 8]]]
)
def test_mcnemar_matches_statsmodels(table: list[list[int]]) -> None:
    (both, only_base), (only_cand, neither) = table
    base = [True] * (both + only_base) + [False] * (only_cand + neither)
    cand = [True] * both + [False] * only_base + [True] * only_cand + [False] * neither
    got = mcnemar_test(base, cand)
    discordant = only_base + only_cand
    ref = sm_mcnemar(np.array(table), exact=discordant < 25, correction=True)
    assert got.p_value == pytest.approx(ref.pvalue)
    assert got.statistic == pytest.approx(ref.statistic)
    assert got.only_baseline_passed == only_base and got.only_candidate_passed == only_cand
    assert ("exact" in got.method) == (discordant < 25)
    forced = mcnemar_test(base, cand, exact=True)
    assert forced.p_value == pytest.approx(sm_mcnemar(np.array(table), exact=True).pvalue)


@pytest.mark.parametrize(
    ("table", "exact"),
    [([[10, 5], [19, 6]], True), ([[10, 5], [20, 6]], False), ([[10, 6], [20, 6]], False)],
    ids=["24-discordant", "25-discordant", "26-discordant"],
)
def test_mcnemar_switches_to_chi_square_at_25_discordant_pairs(
        table: list[list[int]], exact: bool) -> None:
    # Fewer than 25 discordant pairs: exact binomial; 25 or more: chi-square with continuity
    # correction. The two p-values differ by ~20% here, so the method used is visible in p.
    (both, only_base), (only_cand, neither) = table
    base = [True] * (both + only_base) + [False] * (only_cand + neither)
    cand = [True] * both + [False] * only_base + [True] * only_cand + [False] * neither
    got = mcnemar_test(base, cand)
    ref = sm_mcnemar(np.array(table), exact=exact, correction=True)
    other = sm_mcnemar(np.array(table), exact=not exact, correction=True)
    assert got.p_value == pytest.approx(ref.pvalue, rel=1e-9)
    assert got.p_value != pytest.approx(other.pvalue, rel=0.05)
    assert got.statistic == pytest.approx(ref.statistic)
    assert got.method.startswith("McNemar exact" if exact else "McNemar chi-square")


def test_mcnemar_edge_cases() -> None:
    assert mcnemar_test([True, False], [True, False]).p_value == 1.0
    with pytest.raises(ValueError):
        mcnemar_test([True], [True, False])
    with pytest.raises(InsufficientDataError):
        mcnemar_test([], [])


def test_mcnemar_in_comparison_pairs_epochs_by_position() -> None:
    base = {"a": [1.0, 1.0, 0.0], "b": [0.0, 0.0], "c": [1.0]}
    cand = {"a": [0.0, 1.0], "b": [1.0, 1.0, 1.0], "c": [1.0]}
    res = compare_runs(base, cand)
    assert res.mcnemar is not None
    # a: (1,0),(1,1); b: (0,1),(0,1); c: (1,1) -> only_base 1, only_cand 2.
    assert res.mcnemar.n_pairs == 5
    assert (res.mcnemar.only_baseline_passed, res.mcnemar.only_candidate_passed) == (1, 2)
    assert any("McNemar pairs samples by epoch position" in n for n in res.notes)


def test_scenarios_in_one_run_are_reported_not_dropped_silently() -> None:
    base, cand = _runs(3, n=6)
    base["only_base"] = [1.0]
    cand["only_cand"] = [0.0]
    res = compare_runs(base, cand)
    assert res.n_scenarios == 6
    assert res.only_in_baseline == ["only_base"] and res.only_in_candidate == ["only_cand"]
    assert any("only in baseline" in n for n in res.notes)


def test_regression_verdict() -> None:
    base, cand = _runs(4, n=40, shift=-0.35, epochs=4)
    worse = compare_runs(base, cand)
    assert worse.difference.value < 0
    assert worse.significant_regression and not worse.significant_improvement
    assert worse.difference.ci_high is not None and worse.difference.ci_high < 0
    better = compare_runs(cand, base)
    assert better.significant_improvement and not better.significant_regression
    same = compare_runs(base, base)
    assert not same.significant_regression and same.t_test.p_value == 1.0
    perm = compare_runs(base, cand, test="permutation")
    assert perm.verdict_test == "permutation" and perm.significant_regression


def test_verdict_follows_alpha() -> None:
    base, cand = _runs(7, n=15, shift=-0.1)
    res = compare_runs(base, cand, alpha=0.05)
    p = res.t_test.p_value
    assert 0.05 < p < 1 and res.difference.value < 0
    assert not res.significant_regression
    assert compare_runs(base, cand, alpha=min(0.99, p * 1.01)).significant_regression
    assert not compare_runs(base, cand, alpha=p * 0.99).significant_regression


def test_significance_needs_p_strictly_below_alpha() -> None:
    # The rule (docs/statistics.md): significant when p < alpha. At p == alpha the
    # 1 - alpha interval of the difference has 0 on its edge, so it is not significant.
    base, cand = _runs(7, n=15, shift=-0.1)
    p_t = compare_runs(base, cand).t_test.p_value
    at = compare_runs(base, cand, alpha=p_t)
    assert at.t_test.p_value == p_t and at.difference.value < 0
    assert not at.significant_regression and not at.significant_improvement
    assert at.difference.ci_high == pytest.approx(0.0, abs=1e-9)
    assert compare_runs(base, cand, alpha=math.nextafter(p_t, 1.0)).significant_regression
    # The same rule for the permutation test, whose p-values are exact fractions.
    p_perm = compare_runs(base, cand, test="permutation").permutation_test.p_value
    assert not compare_runs(base, cand, test="permutation", alpha=p_perm).significant_regression
    assert compare_runs(base, cand, test="permutation",
                        alpha=math.nextafter(p_perm, 1.0)).significant_regression


def test_constant_difference_and_constant_run() -> None:
    base = {"a": [0.0], "b": [0.5], "c": [1.0]}
    cand = {"a": [0.0], "b": [0.5], "c": [1.0]}
    res = compare_runs(base, cand)
    assert res.t_test.statistic is None and res.t_test.p_value == 1.0
    flat = compare_runs({"a": [1.0], "b": [1.0]}, {"a": [0.0], "b": [1.0]})
    assert flat.correlation is None


def test_bad_input() -> None:
    with pytest.raises(InsufficientDataError, match="at least 2 scenarios"):
        compare_runs({"a": [1.0]}, {"a": [0.0], "b": [1.0]})
    with pytest.raises(ValueError, match="alpha"):
        compare_runs({"a": [1.0], "b": [0.0]}, {"a": [0.0], "b": [1.0]}, alpha=0)
    with pytest.raises(ValueError, match="pass flags"):
        compare_runs({"a": [1.0], "b": [0.0]}, {"a": [0.0], "b": [1.0]},
                     baseline_passed={"a": [True]})


def test_identical_runs_differ_by_exactly_zero_despite_rounding() -> None:
    # Two deterministic runs of the same agent: the same scores, in another epoch order and
    # with the last-place noise of components summed in another order. Before, the noise
    # alone gave a t statistic (e.g. -0.787) and a p-value below 1.
    rng = np.random.default_rng(8)
    base = {f"s{i}": [float(x) for x in rng.choice([0.1, 0.2, 0.7, 1 / 3], 4)]
            for i in range(12)}
    cand = {}
    for i, (sid, xs) in enumerate(base.items()):
        ys = list(reversed(xs))
        if i % 3 == 0:
            ys[0] = float(np.nextafter(ys[0], 2.0))
        cand[sid] = ys
    assert any(np.mean(cand[s]) != np.mean(base[s]) for s in base)  # the noise is there
    res = compare_runs(base, cand)
    assert all(r.difference == 0.0 for r in res.scenarios)
    assert res.difference.value == 0.0 and res.difference.stderr == 0.0
    assert res.t_test.statistic is None and res.t_test.p_value == 1.0
    assert res.permutation_test.p_value == 1.0
    assert not res.significant_regression and not res.significant_improvement
    # A real difference, however small in score terms, is still one.
    cand["s0"] = [x + 1e-4 for x in base["s0"]]
    assert compare_runs(base, cand).scenarios[0].difference == pytest.approx(1e-4)


@pytest.mark.parametrize(("n_scenarios", "says_so"), [(4, True), (5, True), (6, False)])
def test_permutation_test_says_when_it_can_never_reject(n_scenarios: int, says_so: bool
                                                        ) -> None:
    base = {f"s{i}": [0.0, 0.0] for i in range(n_scenarios)}
    cand = {f"s{i}": [1.0, 1.0] for i in range(n_scenarios)}  # as large as differences get
    res = compare_runs(base, cand, test="permutation")
    smallest = 2 / 2**n_scenarios
    assert res.permutation_test.p_value == pytest.approx(smallest)
    assert res.significant_improvement is (not says_so)
    notes = [n for n in res.notes if "permutation test cannot reject" in n]
    assert bool(notes) is says_so
    if says_so:
        assert f"2/2^{n_scenarios} = {smallest:.4g}" in notes[0]
        assert "can never be significant" in notes[0]


EPOCH_NOTE = (
    "McNemar pairs samples by epoch position and treats pairs as independent; with several "
    "epochs per scenario its p-value ignores clustering, so the verdict uses the "
    "scenario-level test")


def test_every_field_of_a_comparison_against_numpy_and_scipy() -> None:
    base = {"a": [1.0, 0.0, 1.0], "b": [0.0, 0.0], "c": [1.0, 0.5], "d": [0.5], "x": [1.0]}
    cand = {"a": [1.0, 1.0], "b": [1.0, 0.0, 1.0], "c": [0.0, 1.0], "d": [1.0], "y": [0.0]}
    cand_passed = {"a": [True, True], "b": [True, True, True], "c": [True, True],
                   "d": [True], "y": [False]}
    res = compare_runs(base, cand, candidate_passed=cand_passed, alpha=0.1)
    ids = ["a", "b", "c", "d"]
    ma = np.array([np.mean(base[s]) for s in ids])
    mb = np.array([np.mean(cand[s]) for s in ids])
    d = mb - ma
    assert res.n_scenarios == 4
    assert [(r.scenario_id, r.baseline_epochs, r.candidate_epochs) for r in res.scenarios] == [
        ("a", 3, 2), ("b", 2, 3), ("c", 2, 2), ("d", 1, 1)]
    assert [r.difference for r in res.scenarios] == pytest.approx(list(d))
    assert (res.baseline_mean, res.candidate_mean) == pytest.approx((ma.mean(), mb.mean()))
    diff = res.difference
    assert diff.n == 16 and diff.n_clusters == 4 and diff.df == 3 and diff.confidence == 0.9
    assert (diff.ci_low, diff.ci_high) == pytest.approx(sps.t.interval(
        0.9, 3, loc=d.mean(), scale=d.std(ddof=1) / 2))
    assert diff.method == ("mean of per-scenario differences (candidate - baseline); SE "
                           "clustered by scenario = sd(differences)/sqrt(C); t interval on "
                           "C-1 df")
    assert res.t_test.df == 3 and res.t_test.p_value == pytest.approx(
        sps.ttest_rel(mb, ma).pvalue)
    assert res.t_test.method == ("paired t test on scenario means (one-sample t test of the "
                                 "differences, as scipy.stats.ttest_rel), two-sided")
    perm = res.permutation_test
    assert perm.statistic == pytest.approx(d.mean())
    assert (perm.n_resamples, perm.seed) == (None, None)
    assert perm.method == ("paired permutation test (sign flips of per-scenario differences, "
                           "scipy.stats.permutation_test, exact)")
    # Candidate pass flags as given; baseline flags by default (score >= 1 - 1e-6); epochs
    # paired by position up to the shorter run.
    mc = res.mcnemar
    assert mc is not None
    assert (mc.n_pairs, mc.both_passed, mc.both_failed) == (7, 2, 0)
    assert (mc.only_baseline_passed, mc.only_candidate_passed) == (0, 5)
    assert res.notes == ["1 scenario only in baseline and 1 only in candidate: not compared",
                         "the permutation test cannot reject at alpha 0.1 with 4 scenarios "
                         "that differ: its smallest possible p-value is 2/2^4 = 0.125",
                         EPOCH_NOTE]


def test_notes_for_one_sided_extra_scenarios_and_single_epochs() -> None:
    base = {"a": [1.0], "b": [0.0], "c": [0.5]}
    cand = {"a": [0.0], "b": [0.5], "c": [0.5]}
    # Two scenarios differ: the permutation test's smallest p-value is 2/2^2 (see below).
    few = ("the permutation test cannot reject at alpha 0.05 with 2 scenarios that differ: "
           "its smallest possible p-value is 2/2^2 = 0.5")
    assert compare_runs(base, cand).notes == [few]
    assert compare_runs({**base, "z": [1.0]}, cand).notes == [
        "1 scenario only in baseline and 0 only in candidate: not compared", few]
    # More than one epoch on either side brings the McNemar note.
    assert compare_runs({**base, "a": [1.0, 1.0]}, cand).notes == [few, EPOCH_NOTE]
    assert compare_runs(base, {**cand, "a": [0.0, 0.0]}).notes == [few, EPOCH_NOTE]
    # A run whose scenario means are all equal has no correlation, whichever run it is.
    flat = compare_runs(base, {"a": [1.0], "b": [1.0], "c": [1.0]})
    assert flat.correlation is None
    assert flat.notes == [few, "correlation undefined: one run has the same mean on every "
                          "scenario"]


def test_the_same_nonzero_difference_everywhere_is_p_zero() -> None:
    res = compare_runs({"a": [0.0], "b": [0.5], "c": [0.25]},
                       {"a": [0.5], "b": [1.0], "c": [0.75]})
    assert res.t_test.p_value == 0.0 and res.t_test.df == 2 and res.t_test.statistic is None
    assert res.t_test.method == ("paired t test undefined (all differences equal); p set to 0 "
                                 "(identical non-zero difference)")
    assert res.significant_improvement and not res.significant_regression
    same = compare_runs({"a": [0.0], "b": [0.5]}, {"a": [0.0], "b": [0.5]})
    assert same.t_test.method == ("paired t test undefined (all differences equal); p set to 1 "
                                  "(no difference)")
    assert "every scenario has the same difference: tests are degenerate" in same.notes


def test_the_verdict_follows_the_chosen_test() -> None:
    # Here the t test rejects at 0.05 and the permutation test does not.
    base, cand = _runs(7, n=8, shift=-0.25, epochs=3)
    t_based = compare_runs(base, cand)
    assert t_based.t_test.p_value < 0.05 < t_based.permutation_test.p_value
    assert t_based.significant_regression
    assert not compare_runs(base, cand, test="permutation").significant_regression


def test_permutation_defaults_and_resample_count_match_scipy() -> None:
    base, cand = _runs(2, n=16, shift=0.1)
    d = np.array([np.mean(cand[s]) - np.mean(base[s]) for s in base])
    default = compare_runs(base, cand).permutation_test
    assert (default.n_resamples, default.seed) == (9999, 0)

    def scipy_p(n: int, seed: int) -> float:
        return float(sps.permutation_test(
            (d,), lambda x, axis: np.mean(x, axis=axis), permutation_type="samples",
            n_resamples=n, vectorized=True, rng=np.random.default_rng(seed)).pvalue)

    assert default.p_value == scipy_p(9999, 0)
    assert default.method == ("paired permutation test (sign flips of per-scenario "
                              "differences, scipy.stats.permutation_test, randomised)")
    few = compare_runs(base, cand, permutation_resamples=500, seed=3).permutation_test
    assert few.p_value == scipy_p(500, 3) and few.n_resamples == 500
    # 2^10 sign flips with 1024 resamples: scipy enumerates them all, and says so.
    small_base, small_cand = _runs(2, n=10, shift=0.1)
    exact = compare_runs(small_base, small_cand, permutation_resamples=1024).permutation_test
    assert "exact" in exact.method and exact.n_resamples is None and exact.seed is None


def test_bad_arguments_are_refused_with_a_reason() -> None:
    two = {"a": [1.0], "b": [0.0]}
    for alpha in (1.0, 1.5, -0.1):
        with pytest.raises(ValueError, match=rf"^alpha must be strictly between 0 and 1, got "
                                             rf"{alpha}$"):
            compare_runs(two, two, alpha=alpha)
    with pytest.raises(InsufficientDataError, match=r"^a paired comparison needs at least 2 "
                       r"scenarios in both runs, got 1 \(only in baseline: 1, only in "
                       r"candidate: 0\)$"):
        compare_runs(two, {"a": [1.0]})
    with pytest.raises(InsufficientDataError, match=r"^a paired comparison needs at least 2 "
                       r"scenarios in both runs, got 1$"):
        compare_runs({"a": [1.0]}, {"a": [0.0]})
    with pytest.raises(ValueError, match=r"^scenario 'b' has no epochs in one of the runs$"):
        compare_runs(two, {"a": [1.0], "b": []})
    with pytest.raises(ValueError, match=r"^candidate pass flags for scenario 'a' do not "
                       r"match its scores$"):
        compare_runs(two, two, candidate_passed={"a": [True, False], "b": [True]})
    with pytest.raises(ValueError, match=r"^baseline pass flags for scenario 'a' do not "
                       r"match its scores$"):
        compare_runs(two, two, baseline_passed={"b": [True]})


def test_mcnemar_counts_every_cell_and_accepts_0_1_flags() -> None:
    base = [True, True, False, False, True, False, False]
    cand = [True, False, True, False, False, False, False]
    got = mcnemar_test(base, cand)
    assert (got.n_pairs, got.both_passed, got.both_failed) == (7, 1, 3)
    assert (got.only_baseline_passed, got.only_candidate_passed) == (2, 1)
    as_ints = mcnemar_test([int(b) for b in base], [int(c) for c in cand])
    assert as_ints == got
    none = mcnemar_test([True, False], [True, False])
    assert (none.statistic, none.p_value) == (0.0, 1.0)
    assert none.method == "McNemar: no discordant pairs, p = 1"
    with pytest.raises(ValueError, match="^baseline and candidate need the same number of "
                       "paired outcomes$"):
        mcnemar_test([True], [True, False])
    with pytest.raises(InsufficientDataError, match="^McNemar's test needs at least one pair$"):
        mcnemar_test([], [])


def test_permutation_note_boundary_and_wording() -> None:
    # 5 scenarios differ: the smallest p is 2/2^5 = 0.0625. At alpha = 0.0625 the test
    # cannot reject (it needs p < alpha); at alpha 0.08 it can, and there is no note.
    base = {f"s{i}": [0.0] for i in range(5)}
    cand = {f"s{i}": [1.0] for i in range(5)}
    note = ("the permutation test cannot reject at alpha 0.0625 with 5 scenarios that "
            "differ: its smallest possible p-value is 2/2^5 = 0.0625")
    assert note in compare_runs(base, cand, alpha=0.0625).notes
    assert note + "; the verdict (--test permutation) can never be significant" in (
        compare_runs(base, cand, alpha=0.0625, test="permutation").notes)
    assert not any("cannot reject" in n for n in compare_runs(base, cand, alpha=0.08).notes)


def test_differences_within_a_billionth_of_the_means_are_rounding() -> None:
    # The tolerance is 1e-9 times the larger of 1 and the two means, inclusive.
    base = {"on_edge": [0.0], "above": [0.0], "small": [0.0], "large": [4.0], "real": [0.0]}
    cand = {"on_edge": [1e-9], "above": [1.5e-9], "small": [5e-10], "large": [4.0 + 3e-9],
            "real": [0.5]}
    got = {r.scenario_id: r.difference for r in compare_runs(base, cand).scenarios}
    assert got == {"on_edge": 0.0, "above": 1.5e-9, "small": 0.0, "large": 0.0, "real": 0.5}
