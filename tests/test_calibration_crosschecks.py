"""Report-level statistics that had no test of their own, each cross-checked through analyse()
against an independent implementation: Bland–Altman limits (numpy, and scipy's bootstrap for
the interval), judge self-consistency and the judge beside the human raters (the
`krippendorff` package), the linear kappa and ordinal alpha (scikit-learn, krippendorff), and
the pairwise tie rate and length preference (direct counts written here)."""

from __future__ import annotations

from typing import Any

import krippendorff
import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from harness.calibration import AnalysisOptions, analyse, build_pairwise, build_pointwise
from harness.calibration.judgments import PairwiseJudgment, PointwiseJudgment
from harness.calibration.report import PairwiseJudgeReport, PointwiseJudgeReport

SCALE = {"min": 1, "max": 5}
RNG = np.random.default_rng(20250611)


def _pointwise(rows: list[dict[str, Any]], options: AnalysisOptions) -> PointwiseJudgeReport:
    records = [PointwiseJudgment.model_validate({"scale": SCALE, **row}) for row in rows]
    [judge] = analyse(build_pointwise(records, "synthetic.jsonl"), options).judges
    assert isinstance(judge, PointwiseJudgeReport)
    return judge


def _pairwise(records: list[PairwiseJudgment], options: AnalysisOptions) -> PairwiseJudgeReport:
    [judge] = analyse(build_pairwise(records, "synthetic.jsonl"), options).judges
    assert isinstance(judge, PairwiseJudgeReport)
    return judge


def _noisy_scores(n: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    human = RNG.integers(1, 6, n).astype(float)
    judge = np.clip(np.round(human + 0.4 + RNG.normal(0, noise, n)), 1, 5)
    return human, judge


def test_bland_altman_equals_numpy_and_the_bias_interval_equals_scipy() -> None:
    human, judge = _noisy_scores(50, 1.0)
    options = AnalysisOptions(n_resamples=999, confidence=0.9, seed=5)
    report = _pointwise([{"item_id": str(i), "human": h, "judge": j}
                         for i, (h, j) in enumerate(zip(human, judge, strict=True))], options)
    diff = judge - human
    bias, sd = diff.mean(), diff.std(ddof=1)
    ba = report.bland_altman
    assert ba.bias.value == pytest.approx(bias, abs=1e-12)
    assert ba.sd.value == pytest.approx(sd, abs=1e-12)
    assert ba.lower.value == pytest.approx(bias - 1.96 * sd, abs=1e-12)
    assert ba.upper.value == pytest.approx(bias + 1.96 * sd, abs=1e-12)
    assert sd > 0.5 and bias > 0  # the data really carry a bias and a spread
    reference = stats.bootstrap((diff,), np.mean, n_resamples=999, confidence_level=0.9,
                                method="percentile", rng=np.random.default_rng(5))
    assert ba.bias.ci_low == pytest.approx(reference.confidence_interval.low)
    assert ba.bias.ci_high == pytest.approx(reference.confidence_interval.high)
    upper = stats.bootstrap((diff,), lambda d: d.mean() + 1.96 * d.std(ddof=1),
                            n_resamples=999, confidence_level=0.9, method="percentile",
                            rng=np.random.default_rng(5), vectorized=False)
    assert ba.upper.ci_low == pytest.approx(upper.confidence_interval.low)
    assert ba.upper.ci_high == pytest.approx(upper.confidence_interval.high)


def test_bland_altman_needs_two_items_and_says_so() -> None:
    report = _pointwise([{"item_id": "a", "human": 3, "judge": 4}], AnalysisOptions(n_resamples=20))
    assert report.bland_altman.bias.value == 1
    assert report.bland_altman.sd.value is None
    assert report.bland_altman.upper.undefined == "bland_altman: needs at least 2 items"


@pytest.mark.parametrize("level", ["ordinal", "interval", "nominal"])
def test_pointwise_self_consistency_equals_krippendorff_and_numpy(level: str) -> None:
    n, k = 40, 3
    truth = RNG.integers(1, 6, n)
    samples = np.clip(truth[:, None] + RNG.integers(-1, 2, (n, k)), 1, 5).astype(float)
    samples[RNG.random(n) < 0.2, 2] = np.nan  # two samples on some items
    samples[0] = [4, np.nan, np.nan]  # one sample only: not a repeated item
    human: list[int | None] = [int(t) for t in truth]
    human[1] = None  # unlabelled, but its samples still show self-consistency
    rows = [{"item_id": str(i), "human": human[i],
             "judge": [None if np.isnan(v) else float(v) for v in samples[i]]}
            for i in range(n)]
    report = _pointwise(rows, AnalysisOptions(n_resamples=50, alpha_level=level))  # type: ignore[arg-type]
    sc = report.self_consistency
    assert sc is not None
    repeated = samples[(~np.isnan(samples)).sum(axis=1) >= 2]
    assert sc.n_items == len(repeated) == n - 1
    expected = krippendorff.alpha(reliability_data=repeated.T, level_of_measurement=level)
    assert sc.krippendorff_alpha.value == pytest.approx(expected, abs=1e-12)
    assert sc.mean_sample_sd.value == pytest.approx(
        np.mean([np.std(row[~np.isnan(row)], ddof=1) for row in repeated]), abs=1e-12)
    spread = np.nanmax(repeated, axis=1) > np.nanmin(repeated, axis=1)
    assert sc.share_items_disagree.value == pytest.approx(spread.mean())
    assert sc.samples_per_item == (2, 3)


def test_a_judge_that_repeats_itself_has_self_consistency_one() -> None:
    rows = [{"item_id": str(i), "human": i % 5 + 1, "judge": [i % 5 + 1] * 3} for i in range(10)]
    sc = _pointwise(rows, AnalysisOptions(n_resamples=20)).self_consistency
    assert sc is not None
    assert sc.krippendorff_alpha.value == 1 and sc.mean_sample_sd.value == 0
    assert sc.share_items_disagree.value == 0


def test_pairwise_self_consistency_equals_krippendorff_nominal() -> None:
    codes = {"A": 0.0, "B": 1.0, "tie": 2.0}
    records, cells = [], []
    for i in range(30):
        gold = "A" if i % 2 else "B"
        for swapped in (False, True):
            k = 3 if i % 5 else 2
            verdicts = [str(RNG.choice(["A", "A", "A", "B", "tie"])) for _ in range(k)]
            if i == 7 and swapped:
                verdicts[1] = None  # type: ignore[call-overload]
            records += [PairwiseJudgment(item_id=str(i), gold=gold, verdict=v, swapped=swapped)
                        for v in verdicts]
            given = [codes[v] for v in verdicts if v is not None]
            cells.append(given + [np.nan] * (3 - len(given)))
    judge = _pairwise(records, AnalysisOptions(n_resamples=50))
    sc = judge.self_consistency
    assert sc is not None and sc.n_item_orders == 60
    matrix = np.array(cells)
    expected = krippendorff.alpha(reliability_data=matrix.T, level_of_measurement="nominal")
    assert sc.krippendorff_alpha_nominal.value == pytest.approx(expected, abs=1e-12)
    disagree = [len(set(row[~np.isnan(row)])) > 1 for row in matrix]
    assert sc.share_disagree.value == pytest.approx(np.mean(disagree))


def _three_raters(n: int) -> tuple[np.ndarray, np.ndarray]:
    truth = RNG.integers(1, 6, n)
    raters = np.clip(truth[:, None] + RNG.integers(-1, 2, (n, 3)), 1, 5).astype(float)
    raters[RNG.random((n, 3)) < 0.1] = np.nan
    raters[:, 0] = np.where(np.isnan(raters[:, 0]), truth, raters[:, 0])  # one rating at least
    judge = np.clip(truth + RNG.integers(-1, 2, n), 1, 5).astype(float)
    return raters, judge


@pytest.mark.parametrize("level", ["ordinal", "interval"])
def test_alpha_with_the_judge_beside_the_humans_equals_krippendorff(level: str) -> None:
    raters, judge = _three_raters(45)
    rows = [{"item_id": str(i), "human": [None if np.isnan(v) else float(v) for v in raters[i]],
             "judge": [float(judge[i]), float(min(5, judge[i] + 1))]} for i in range(45)]
    report = _pointwise(rows, AnalysisOptions(n_resamples=200, alpha_level=level))  # type: ignore[arg-type]
    bh = report.beside_humans
    assert bh is not None
    judge_mean = judge + np.where(judge < 5, 0.5, 0.0)
    if level == "ordinal":  # categories: the judge's mean rounded half up to the scale
        judge_mean = np.floor(judge_mean + 0.5)
    humans_only = krippendorff.alpha(reliability_data=raters.T, level_of_measurement=level)
    with_judge = krippendorff.alpha(reliability_data=np.column_stack([raters, judge_mean]).T,
                                    level_of_measurement=level)
    assert bh.alpha_humans.value == pytest.approx(humans_only, abs=1e-12)
    assert bh.alpha_with_judge.value == pytest.approx(with_judge, abs=1e-12)
    assert bh.alpha_difference.value == pytest.approx(with_judge - humans_only, abs=1e-12)
    # paired: the interval of the difference is not the difference of the intervals
    assert bh.alpha_difference.ci_low is not None and bh.alpha_difference.ci_high is not None
    assert bh.alpha_difference.ci_low <= bh.alpha_difference.value <= bh.alpha_difference.ci_high
    assert bh.alpha_difference.ci_high - bh.alpha_difference.ci_low < (
        (bh.alpha_with_judge.ci_high or 0) - (bh.alpha_with_judge.ci_low or 0)
        + (bh.alpha_humans.ci_high or 0) - (bh.alpha_humans.ci_low or 0))


def test_report_level_linear_kappa_and_ordinal_alpha_equal_sklearn_and_krippendorff() -> None:
    raters = RNG.integers(1, 6, (60, 2)).astype(float)
    raters[:, 1] = np.clip(raters[:, 0] + RNG.integers(-1, 2, 60), 1, 5)
    judge = np.clip(raters[:, 0] + RNG.integers(-2, 2, 60), 1, 5).astype(float)
    rows = [{"item_id": str(i), "human": list(raters[i]), "judge": float(judge[i])}
            for i in range(60)]
    report = _pointwise(rows, AnalysisOptions(n_resamples=50))
    consensus = np.floor(raters.mean(axis=1) + 0.5)  # mean of the raters, rounded half up
    assert report.cohen_kappa_linear.value == pytest.approx(
        cohen_kappa_score(consensus, judge, labels=[1, 2, 3, 4, 5], weights="linear"),
        abs=1e-12)
    assert report.krippendorff_alpha_ordinal.value == pytest.approx(
        krippendorff.alpha(reliability_data=np.vstack([consensus, judge]),
                           level_of_measurement="ordinal"), abs=1e-12)
    # the headline alpha is the ordinal one on a discrete scale
    assert report.krippendorff_alpha.value == report.krippendorff_alpha_ordinal.value
    assert report.cohen_kappa_linear.value != report.cohen_kappa_quadratic.value


def test_tie_rate_counts_given_verdicts_in_both_orders() -> None:
    verdicts = [("A", "tie"), ("tie", "tie"), ("B", None), (None, None), ("A", "A"), ("tie", "B")]
    records = [PairwiseJudgment(item_id=str(i), gold="A", verdict=v, swapped=sw)
               for i, pair in enumerate(verdicts) for sw, v in zip((False, True), pair,
                                                                    strict=True)]
    judge = _pairwise(records, AnalysisOptions(n_resamples=100))
    given = [v for pair in verdicts for v in pair if v is not None]
    assert judge.tie_rate.value == pytest.approx(given.count("tie") / len(given))  # 4 / 9
    assert judge.tie_rate.value == pytest.approx(4 / 9)
    # missing verdicts are never in the denominator, whichever policy counts them elsewhere
    excluded = _pairwise(records, AnalysisOptions(n_resamples=100, missing_verdict="exclude"))
    assert excluded.tie_rate.value == judge.tie_rate.value


def test_length_preference_equals_a_direct_count() -> None:
    n = 40
    len_a = RNG.integers(5, 60, n).astype(float)
    len_b = RNG.integers(5, 60, n).astype(float)
    len_b[:4] = len_a[:4]  # equal lengths: no longer output
    gold = [str(RNG.choice(["A", "B", "tie"])) for _ in range(n)]
    records, picks, decisive = [], 0, 0
    for i in range(n):
        longer = None if len_a[i] == len_b[i] else ("A" if len_a[i] > len_b[i] else "B")
        for swapped in (False, True):
            # a verbose judge: the longer output four times in five, else a coin or a tie
            roll = RNG.random()
            verdict = (longer if longer and roll < 0.8
                       else str(RNG.choice(["A", "B", "tie"])) if roll < 0.95 else None)
            records.append(PairwiseJudgment(item_id=str(i), gold=gold[i], verdict=verdict,
                                            swapped=swapped, length_a=len_a[i],
                                            length_b=len_b[i]))
            if longer and verdict in ("A", "B"):
                decisive += 1
                picks += verdict == longer
    judge = _pairwise(records, AnalysisOptions(n_resamples=100))
    lp = judge.length_preference
    assert lp is not None
    assert lp.judge_longer_rate.value == pytest.approx(picks / decisive)
    assert picks / decisive > 0.7
    gold_decisive = [(i, g) for i, g in enumerate(gold)
                     if g in ("A", "B") and len_a[i] != len_b[i]]
    gold_longer = sum((g == "A") == (len_a[i] > len_b[i]) for i, g in gold_decisive)
    assert lp.gold_longer_rate.value == pytest.approx(gold_longer / len(gold_decisive))


def test_no_lengths_no_length_preference_and_equal_lengths_undefined() -> None:
    plain = [PairwiseJudgment(item_id="1", gold="A", verdict="A", swapped=s) for s in (False, True)]
    assert _pairwise(plain, AnalysisOptions(n_resamples=10)).length_preference is None
    same = [PairwiseJudgment(item_id="1", gold="A", verdict="A", swapped=s, length_a=3,
                             length_b=3) for s in (False, True)]
    lp = _pairwise(same, AnalysisOptions(n_resamples=10)).length_preference
    assert lp is not None and lp.judge_longer_rate.value is None
    assert "no decisive verdict on items of different lengths" in str(
        lp.judge_longer_rate.undefined)
