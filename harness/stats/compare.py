"""Paired comparison of two runs on the same scenarios.

The unit is the scenario: the difference of each scenario's mean score between the runs
(candidate minus baseline; higher scores are better). Pairing removes the scenario
difficulty both runs share, which is why a paired comparison detects smaller differences
than comparing two independent intervals.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy import stats as sps

from harness.choices import PairedTest
from harness.stats.bounded import mean_intervals
from harness.stats.columns import UNIT_RANGE
from harness.stats.estimate import Estimate, InsufficientDataError, mean_of_cluster_means
from harness.stats.sampling import default_passed
from harness.wording import plural

# Below this many discordant pairs the chi-square approximation to McNemar's test is poor;
# the exact binomial test is used instead (the common rule of thumb).
MCNEMAR_EXACT_BELOW = 25
# A per-scenario difference this small (relative to the means, at least 1) is rounding, not
# a difference: two runs whose samples were scored from the same components in another order
# differ by a few units in the last place, and a t test on that noise is meaningless.
ZERO_DIFFERENCE = 1e-9
SCENARIO_INTERVAL_METHOD = (
    "per scenario: each run's mean over its epochs with its interval (t on n-1 df cut at the "
    "score range; the no-spread interval for n epochs when every epoch scored the same), "
    "combined into an interval for the difference by MOVER (Zou & Donner 2008; with Wilson "
    "intervals it is Newcombe's 1998 method 10), at the level of the suite interval and not "
    "adjusted for the number of scenarios; none when either run has a single epoch"
)


class McNemarResult(BaseModel):
    """McNemar's test on paired pass/fail outcomes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_pairs: int
    both_passed: int
    both_failed: int
    only_baseline_passed: int
    only_candidate_passed: int
    statistic: float
    p_value: float
    method: str


def mcnemar_test(
    baseline_passed: Sequence[bool],
    candidate_passed: Sequence[bool],
    *,
    exact: bool | None = None,
) -> McNemarResult:
    """McNemar's test that the two runs pass equally often, from paired pass flags.

    ``exact=None`` chooses the exact binomial test when there are fewer than 25 discordant
    pairs and the chi-square test with continuity correction otherwise. The statistic is the
    smaller discordant count for the exact test and the chi-square value otherwise.

    Raises ``ValueError`` on sequences of different lengths or no pairs.
    """
    if len(baseline_passed) != len(candidate_passed):
        raise ValueError("baseline and candidate need the same number of paired outcomes")
    if not baseline_passed:
        raise InsufficientDataError("McNemar's test needs at least one pair")
    a = np.asarray(baseline_passed, dtype=bool)
    b = np.asarray(candidate_passed, dtype=bool)
    only_base = int(np.sum(a & ~b))
    only_cand = int(np.sum(~a & b))
    discordant = only_base + only_cand
    use_exact = discordant < MCNEMAR_EXACT_BELOW if exact is None else exact
    if discordant == 0:
        statistic, p_value = (0.0, 1.0)
        method = "McNemar: no discordant pairs, p = 1"
    elif use_exact:
        statistic = float(min(only_base, only_cand))
        p_value = float(sps.binomtest(min(only_base, only_cand), discordant, 0.5).pvalue)
        method = "McNemar exact (two-sided binomial test on the discordant pairs)"
    else:
        statistic = (abs(only_base - only_cand) - 1.0) ** 2 / discordant
        p_value = float(sps.chi2.sf(statistic, 1))
        method = "McNemar chi-square with continuity correction, 1 df"
    return McNemarResult(
        n_pairs=int(a.size),
        both_passed=int(np.sum(a & b)),
        both_failed=int(np.sum(~a & ~b)),
        only_baseline_passed=only_base,
        only_candidate_passed=only_cand,
        statistic=statistic,
        p_value=min(1.0, p_value),
        method=method,
    )


class TestResult(BaseModel):
    """A hypothesis test of "no difference" with how it was done."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    __test__ = False  # not a pytest test class

    statistic: float | None
    p_value: float
    method: str
    df: int | None = None
    n_resamples: int | None = None
    seed: int | None = None


class ScenarioDifference(BaseModel):
    """One scenario's means in both runs and their difference (candidate minus baseline),
    with the difference's interval (``None`` when either run has one epoch; see
    :data:`SCENARIO_INTERVAL_METHOD`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    scenario_id: str
    baseline_mean: float
    candidate_mean: float
    difference: float
    ci_low: float | None = None
    ci_high: float | None = None
    baseline_epochs: int
    candidate_epochs: int


class PairedComparison(BaseModel):
    """Candidate run against baseline run on their common scenarios.

    ``difference`` is candidate minus baseline (mean of per-scenario differences, clustered
    interval). ``significant_regression`` is true when the chosen test rejects "no
    difference" at ``alpha`` (two-sided) and the candidate is worse; ``significant_improvement``
    the same for better. Scenarios present in only one run are listed and not compared.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    n_scenarios: int
    only_in_baseline: list[str]
    only_in_candidate: list[str]
    baseline_mean: float
    candidate_mean: float
    difference: Estimate
    t_test: TestResult
    permutation_test: TestResult
    mcnemar: McNemarResult | None
    correlation: float | None
    alpha: float
    verdict_test: PairedTest
    significant_regression: bool
    significant_improvement: bool
    scenarios: list[ScenarioDifference]
    scenario_interval_method: str = SCENARIO_INTERVAL_METHOD
    notes: list[str]


def difference_interval(a: float, a_low: float, a_high: float, b: float, b_low: float,
                        b_high: float) -> tuple[float, float]:
    """An interval for ``b - a`` from two independent estimates and their intervals, by the
    method of variance estimates recovery (MOVER, Zou & Donner 2008): each side's distance
    from its estimate to the relevant bound stands for its own uncertainty, so asymmetric
    intervals near the ends of a range (Wilson, the no-spread bounds) stay asymmetric. With
    Wilson intervals for two proportions it is Newcombe's (1998) hybrid score interval
    (method 10). It never reaches past ``[b_low - a_high, b_high - a_low]`` (a hypotenuse is
    at most the sum of its sides), so intervals inside a range give one inside the widest
    difference. Returns ``(low, high)``.
    """
    d = b - a
    return d - math.hypot(b - b_low, a_high - a), d + math.hypot(b_high - b, a - a_low)


def _epoch_mean_intervals(groups: Sequence[Sequence[float]], means: Sequence[float], *,
                          confidence: float, score_range: tuple[float, float]
                          ) -> tuple[np.ndarray, np.ndarray]:
    """Each scenario's mean interval over its epochs, as a run summary computes it (NaN
    with one epoch)."""
    n = np.array([len(g) for g in groups], dtype=float)
    spread = np.array([max(g) > min(g) for g in groups])
    sd = np.array([float(np.std(g, ddof=1)) if len(g) > 1 else 0.0 for g in groups])
    intervals = mean_intervals(np.asarray(means, dtype=float), sd / np.sqrt(n), spread, n,
                               confidence=confidence, score_range=score_range)
    return intervals.low, intervals.high


def _permutation(d: np.ndarray, n_resamples: int, seed: int) -> TestResult:
    # Under "no difference" each scenario's difference is equally likely to have either sign:
    # a sign-flip test. With few scenarios scipy enumerates all 2^C flips (exact).
    res = sps.permutation_test(
        (d,), lambda x, axis: np.mean(x, axis=axis), permutation_type="samples",
        n_resamples=n_resamples, alternative="two-sided", vectorized=True,
        rng=np.random.default_rng(seed),
    )
    exact = 2 ** d.size <= n_resamples
    return TestResult(
        statistic=float(res.statistic), p_value=float(res.pvalue),
        method="paired permutation test (sign flips of per-scenario differences, "
        f"scipy.stats.permutation_test, {'exact' if exact else 'randomised'})",
        n_resamples=None if exact else n_resamples, seed=None if exact else seed,
    )


def _flags(
    scores: Mapping[str, Sequence[float]],
    passed: Mapping[str, Sequence[bool]] | None,
    sid: str,
    run: str,
) -> list[bool]:
    if passed is None:
        return [default_passed(float(s)) for s in scores[sid]]
    if sid not in passed or len(passed[sid]) != len(scores[sid]):
        raise ValueError(f"{run} pass flags for scenario {sid!r} do not match its scores")
    return [bool(p) for p in passed[sid]]


def compare_runs(
    baseline: Mapping[str, Sequence[float]],
    candidate: Mapping[str, Sequence[float]],
    baseline_passed: Mapping[str, Sequence[bool]] | None = None,
    candidate_passed: Mapping[str, Sequence[bool]] | None = None,
    *,
    alpha: float = 0.05,
    test: PairedTest = "t",
    seed: int = 0,
    permutation_resamples: int = 9999,
    score_range: tuple[float, float] = UNIT_RANGE,
) -> PairedComparison:
    """Compare two runs scenario by scenario (scenario id -> per-epoch scores).

    Computes the mean difference with a clustered t interval at ``1 - alpha``, the paired t
    test (``scipy.stats.ttest_rel`` on scenario means), a seeded permutation test, McNemar's
    test on pass flags paired by epoch position within each scenario (the i-th epoch of each
    run, up to the shorter run), and the Pearson correlation of the scenario means.
    ``test`` picks which test decides the verdict. Pass flags default to score >= 1 - 1e-6.
    Each scenario's difference gets an interval at the same level (see
    :data:`SCENARIO_INTERVAL_METHOD`; its means' intervals are cut at ``score_range``).

    Raises :class:`InsufficientDataError` with fewer than 2 common scenarios, ``ValueError``
    on ``alpha`` outside (0, 1) or a scenario with no epochs.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha!r}")
    common = [sid for sid in baseline if sid in candidate]
    only_base = [sid for sid in baseline if sid not in candidate]
    only_cand = [sid for sid in candidate if sid not in baseline]
    if len(common) < 2:
        raise InsufficientDataError(
            f"a paired comparison needs at least 2 scenarios in both runs, got {len(common)}"
            + (f" (only in baseline: {len(only_base)}, only in candidate: {len(only_cand)})"
               if only_base or only_cand else "")
        )
    for sid in common:
        if not baseline[sid] or not candidate[sid]:
            raise ValueError(f"scenario {sid!r} has no epochs in one of the runs")
    # fsum: the exactly rounded sum, whatever order the epochs come in.
    means_a = [math.fsum(baseline[sid]) / len(baseline[sid]) for sid in common]
    means_b = [math.fsum(candidate[sid]) / len(candidate[sid]) for sid in common]
    low_a, high_a = _epoch_mean_intervals([baseline[s] for s in common], means_a,
                                          confidence=1.0 - alpha, score_range=score_range)
    low_b, high_b = _epoch_mean_intervals([candidate[s] for s in common], means_b,
                                          confidence=1.0 - alpha, score_range=score_range)
    rows = []
    for i, sid in enumerate(common):
        ma, mb = means_a[i], means_b[i]
        diff = mb - ma
        if abs(diff) <= ZERO_DIFFERENCE * max(1.0, abs(ma), abs(mb)):
            diff = 0.0
        bounds: tuple[float | None, float | None] = (None, None)
        if not math.isnan(low_a[i]) and not math.isnan(low_b[i]):
            low, high = difference_interval(ma, low_a[i], high_a[i], mb, low_b[i], high_b[i])
            bounds = (float(low), float(high))
        rows.append(ScenarioDifference(
            scenario_id=sid, baseline_mean=ma, candidate_mean=mb, difference=diff,
            ci_low=bounds[0], ci_high=bounds[1],
            baseline_epochs=len(baseline[sid]), candidate_epochs=len(candidate[sid]),
        ))
    ma_arr = np.array([r.baseline_mean for r in rows])
    mb_arr = np.array([r.candidate_mean for r in rows])
    d = np.array([r.difference for r in rows])
    n_samples = sum(r.baseline_epochs + r.candidate_epochs for r in rows)
    difference = mean_of_cluster_means(
        d, confidence=1.0 - alpha, n=n_samples,
        method="mean of per-scenario differences (candidate - baseline); SE clustered by "
        "scenario = sd(differences)/sqrt(C); t interval on C-1 df",
    )
    notes: list[str] = []
    if only_base or only_cand:
        notes.append(
            f"{plural(len(only_base), 'scenario')} only in baseline and {len(only_cand)} only in "
            "candidate: not compared"
        )

    if np.ptp(d) == 0.0:
        # ttest_rel is undefined with zero spread; the difference is the same everywhere.
        p_t = 1.0 if d[0] == 0.0 else 0.0
        t_test = TestResult(
            statistic=None, p_value=p_t, df=len(d) - 1,
            method="paired t test undefined (all differences equal); p set to "
            + ("1 (no difference)" if p_t == 1.0 else "0 (identical non-zero difference)"),
        )
        notes.append("every scenario has the same difference: tests are degenerate")
    else:
        # The paired t test is the one-sample t test of the differences (what
        # scipy.stats.ttest_rel computes), run on them so that rounding noise stays zero.
        t_res = sps.ttest_1samp(d, 0.0)
        t_test = TestResult(
            statistic=float(t_res.statistic), p_value=float(t_res.pvalue), df=len(d) - 1,
            method="paired t test on scenario means (one-sample t test of the differences, "
            "as scipy.stats.ttest_rel), two-sided",
        )
    permutation = _permutation(d, permutation_resamples, seed)
    differing = int(np.count_nonzero(d))
    if differing and 2.0 / 2**differing >= alpha:
        notes.append(
            f"the permutation test cannot reject at alpha {alpha:g} with "
            f"{plural(differing, 'scenario')} that "
            f"{'differs' if differing == 1 else 'differ'}: its smallest possible p-value is "
            f"2/2^{differing} = "
            f"{2.0 / 2**differing:.4g}"
            + ("; the verdict (--test permutation) can never be significant"
               if test == "permutation" else "")
        )

    base_flags: list[bool] = []
    cand_flags: list[bool] = []
    for sid in common:
        pa = _flags(baseline, baseline_passed, sid, "baseline")
        pb = _flags(candidate, candidate_passed, sid, "candidate")
        n = min(len(pa), len(pb))
        base_flags += pa[:n]
        cand_flags += pb[:n]
    mcnemar = mcnemar_test(base_flags, cand_flags)
    if max(r.baseline_epochs for r in rows) > 1 or max(r.candidate_epochs for r in rows) > 1:
        notes.append(
            "McNemar pairs samples by epoch position and treats pairs as independent; with "
            "several epochs per scenario its p-value ignores clustering, so the verdict uses "
            "the scenario-level test"
        )

    correlation = None
    if np.ptp(ma_arr) > 0 and np.ptp(mb_arr) > 0:
        correlation = float(sps.pearsonr(ma_arr, mb_arr).statistic)
    else:
        notes.append("correlation undefined: one run has the same mean on every scenario")

    p_verdict = t_test.p_value if test == "t" else permutation.p_value
    mean_d = float(d.mean())
    significant = p_verdict < alpha and not math.isnan(p_verdict)
    return PairedComparison(
        n_scenarios=len(common),
        only_in_baseline=only_base,
        only_in_candidate=only_cand,
        baseline_mean=float(ma_arr.mean()),
        candidate_mean=float(mb_arr.mean()),
        difference=difference,
        t_test=t_test,
        permutation_test=permutation,
        mcnemar=mcnemar,
        correlation=correlation,
        alpha=alpha,
        verdict_test=test,
        significant_regression=significant and mean_d < 0,
        significant_improvement=significant and mean_d > 0,
        scenarios=rows,
        notes=notes,
    )
