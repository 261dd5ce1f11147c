"""Figures corrected by human labels: what the reviewers would have given the whole suite,
estimated from the judge on every sample and the humans on a random few (prediction-powered
inference, PPI++: Angelopoulos, Duchi & Zrnic 2023), with samples clustered by scenario.

The suite figure is the mean of scenario means (contract 2), so each sample carries the weight
``w = 1 / (C n_c)``. With ``J`` the judge's suite figure over all ``N`` samples, ``n`` labelled
samples drawn at random, human value ``Y`` and judge value ``f`` on each, and
``u = N w (Y - lambda f)``, the estimate is

    theta = lambda J + mean(u)

(``N w`` is 1 when every scenario has the same number of epochs). It is unbiased for the
human figure for any ``lambda`` chosen without the labels it is applied to.

Interval, and why this one. Epochs of one scenario are not independent, and the suite is a
sample of scenarios, so the variance is taken over scenarios, as for the judge's own figure:
each scenario contributes ``T_c = lambda g_c + (C/n) sum_{labelled in c} (u - mean(u))``
(``g_c`` its judge mean), and the variance is ``var(T) / C`` (a linearised cluster variance;
it carries the judge's scenario spread, the labels' spread and their covariance). With the
20-30 labels a run really has, three things made the plain version cover too little or too
much in ``benchmarks/ppi_coverage.py`` (lambda tuned on the same labels: 91.5-93% for a 95%
interval with 20 labels and strong scenario effects), and each is handled:

1. ``lambda`` tuned on the same labels it corrects with is optimistic: it is **cross-fitted**
   (the labels split at random, seeded, in two halves; each half corrected with the lambda
   tuned on the other), so each half's correction is unbiased and its variance honest.
2. The labels' part of the variance is estimated from ``n`` values around their folds' means
   (each fold has its own lambda, so its own mean): it is scaled by ``n / (n - K)`` for the
   ``K`` means, and the interval uses a **t quantile** whose degrees of
   freedom (Welch-Satterthwaite) run from the labelled scenarios less one, when the labels'
   part dominates, to ``C - 1`` when the judge's part does.
3. For pass/fail labels, a judge that agreed on every labelled sample would give the labels'
   part a variance of 0, as if it never erred: half a disagreement each way is added to that
   part (as adjusted Wald intervals for paired proportions add to the discordant cells,
   Agresti & Min 2005).

With these, the 95% interval covered 93.0-95.4% (mean) and 94.4-96.9% (pass rate) in every
simulated design with 20 to 200 labels (4,000 runs each); the low end is 20 labels with strong
scenario effects, where the t interval on the labels alone covers 92.5%. Below
:data:`MIN_LABELS` random labels, or with labels in fewer than 2 scenarios, no figure is given
(``withheld`` says how many more labels it needs). With 5 labels the mean's interval covered
89-92% and the pass rate's was 0.93 wide (1,000 runs each); with 8, 93.4-93.6% and 0.78 wide;
at 10 the interval held (94.7% for the mean) but is wide, and conservative for pass rates
(98%): fewer labels than that say little a reader could use. Labels chosen by hand must not
be passed here: the estimate is unbiased only for a random sample of the samples.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from harness.stats import lazy_scipy as sps
from harness.stats.estimate import check_confidence
from harness.wording import plural

MIN_LABELS = 10
"""Fewest random labels for a corrected figure (see the module docstring)."""
CROSS_FIT_FOLDS = 2
BINARY_PSEUDO_DISAGREEMENT = 0.5
"""Disagreements added each way to the labels' variance for pass/fail labels."""

CorrectedTarget = Literal["mean", "pass_rate"]


class LabelsNeeded(BaseModel):
    """Random labels needed for a corrected interval of ``half_width`` (normal quantile,
    from this run's variance parts), and what the humans alone would need.

    ``corrected`` / ``humans_alone`` are ``None`` when no number of labels reaches the width
    (the judge's scenario spread alone is wider: more scenarios are needed, not labels);
    either may exceed the number of samples, which ``note`` then says.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    half_width: float
    corrected: int | None
    humans_alone: int | None
    note: str | None = None


class LabelsOnly(BaseModel):
    """The classical figure from the labelled samples alone (lambda = 0), same clustering."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    value: float
    ci_low: float
    ci_high: float
    stderr: float


class CorrectedEstimate(BaseModel):
    """A suite figure corrected by random human labels, beside the judge's own.

    ``value`` and the interval are ``None`` when ``withheld`` says why (too few labels).
    ``lam`` (``"lambda"`` in JSON) is the mean of the cross-fitted lambdas (or the fixed
    one); ``effective_labels`` is how many labelled samples alone would give the same
    interval width (``n * var(labels only) / var(corrected)``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True,
                              serialize_by_alias=True)

    target: CorrectedTarget
    value: float | None
    ci_low: float | None
    ci_high: float | None
    stderr: float | None
    df: float | None
    confidence: float
    n_labelled: int
    n_labelled_scenarios: int
    n_samples: int
    n_scenarios: int
    lam: float | None = Field(serialization_alias="lambda", validation_alias="lambda")
    judge_value: float
    labels_only: LabelsOnly | None
    effective_labels: float | None
    labels_needed: LabelsNeeded | None
    method: str
    withheld: str | None = None
    notes: list[str] = Field(default_factory=list)


def power_tuned_lambda(y: np.ndarray, f: np.ndarray, judge_variance: float,
                       labelled_share: float) -> float:
    """PPI++'s variance-minimising lambda for a mean, ``Cov(Y, f) / ((1 + n/N) Var(f))``,
    clipped to [0, 1] as the authors' ``ppi_py`` does; 0 for a constant judge.

    ``y`` and ``f`` are the labelled items' human and judge values (the covariance is the
    biased one, as in ``ppi_py``), ``judge_variance`` the judge's variance over all items,
    ``labelled_share`` the ``n/N`` of the formula. Clipping keeps the estimate between the
    labels-only one and the original PPI: a judge that disagrees with people (negative
    covariance) is not used upside down.
    """
    if judge_variance == 0 or len(y) < 2:
        return 0.0
    cov = float(np.mean((y - y.mean()) * (f - f.mean())))
    return min(1.0, max(0.0, cov / ((1 + labelled_share) * judge_variance)))


def _cross_fitted_lambdas(y: np.ndarray, f: np.ndarray, judge_variance: float,
                          labelled_share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """One lambda per label, each tuned on the labels of the other folds; and each label's
    fold."""
    n = y.size
    fold = np.empty(n, dtype=np.int64)
    fold[np.random.default_rng(seed).permutation(n)] = np.arange(n) % CROSS_FIT_FOLDS
    lam = np.empty(n)
    for k in range(CROSS_FIT_FOLDS):
        train = fold != k
        lam[~train] = power_tuned_lambda(y[train], f[train], judge_variance, labelled_share)
    return lam, fold


class _Parts:
    """The estimate and its variance parts for given per-label lambdas and folds (labels of
    one fold share a lambda)."""

    def __init__(self, g: np.ndarray, weight: np.ndarray, codes: np.ndarray, y: np.ndarray,
                 f: np.ndarray, lam: np.ndarray, fold: np.ndarray, binary: bool) -> None:
        c, n = g.size, y.size
        u = weight * (y - lam * f)
        lam_bar = float(lam.mean())
        self.value = lam_bar * float(g.mean()) + float(u.mean())
        # Each fold's labels around their own mean: the folds' lambdas differ, and so do
        # their means, which is not noise of the estimate.
        n_folds = int(fold.max()) + 1
        fold_mean = np.bincount(fold, weights=u, minlength=n_folds) / np.bincount(
            fold, minlength=n_folds)
        a = np.bincount(codes, weights=u - fold_mean[fold], minlength=c) * (c / n)
        t_c = lam_bar * g + a
        total = float(np.var(t_c, ddof=1)) / c
        self.judge_part = lam_bar**2 * float(np.var(g, ddof=1)) / c
        # The labels' part: what is left of the total (their spread and their covariance
        # with the judge's), scaled by n/(n-K) for the K fold means it is taken around.
        label_part = max(total - self.judge_part, 0.0)
        extra = float(np.var(a, ddof=1)) / c * n_folds / (n - n_folds)
        if binary:
            scale = float(weight.mean())
            extra += 2 * BINARY_PSEUDO_DISAGREEMENT * scale**2 / ((n + 1) * n)
        self.label_part = label_part + extra
        self.variance = total + extra
        self.n_labelled_scenarios = int(np.unique(codes).size)

    def df(self, c: int) -> float:
        """Welch-Satterthwaite degrees of freedom of the two parts, within [1, C - 1]."""
        j, lab, m = self.judge_part, self.label_part, self.n_labelled_scenarios
        if j + lab == 0:
            return float(c - 1)
        df = (j + lab) ** 2 / (j**2 / (c - 1) + lab**2 / max(m - 1, 1))
        return min(max(df, 1.0), float(c - 1))


def _labels_needed(corrected: _Parts, classical: _Parts, n: int, n_samples: int,
                   half_width: float, confidence: float) -> LabelsNeeded:
    """Labels for a given half-width, from variance = floor + (variance now - floor) x n/n'.

    The floor, which no number of labels removes, is the spread over scenarios of the
    figure itself; it is estimated by the judge's part of the corrected variance and shared
    by both plans, so the two counts answer the same question.
    """
    z = float(sps.norm.ppf(0.5 + confidence / 2))
    room = (half_width / z) ** 2 - corrected.judge_part

    def needed(parts: _Parts) -> int | None:
        if room <= 0:
            return None
        return max(2, math.ceil(max(parts.variance - corrected.judge_part, 0.0) * n / room))

    got, alone = needed(corrected), needed(classical)
    note = None
    if got is None:
        note = (f"no number of labels reaches +/-{half_width:g}: the figure's spread over "
                "scenarios alone is wider; more scenarios are needed")
    elif max(got, alone or 0) > n_samples:
        note = (f"more labels than the {n_samples} samples: the counts say how far off the "
                "width is; more epochs or scenarios are needed")
    return LabelsNeeded(half_width=half_width, corrected=got, humans_alone=alone, note=note)


def corrected_figure(
    judge: np.ndarray,
    offsets: np.ndarray,
    labelled: np.ndarray,
    human: np.ndarray,
    *,
    target: CorrectedTarget = "mean",
    confidence: float = 0.95,
    lam: float | None = None,
    seed: int = 0,
    bounds: tuple[float, float] = (0.0, 1.0),
    half_width: float | None = None,
) -> CorrectedEstimate:
    """The PPI++ estimate of the human suite figure, clustered by scenario.

    Args:
        judge: the judge's value of every sample, scenario by scenario (scenario ``i`` owns
            ``judge[offsets[i]:offsets[i + 1]]``); pass flags as 0/1 for ``"pass_rate"``.
        offsets: scenario boundaries, from 0 to ``len(judge)``.
        labelled: indices into ``judge`` of the randomly drawn labelled samples (distinct).
        human: the reviewers' value of each labelled sample (several reviewers: their mean).
        target: ``"mean"`` (scores) or ``"pass_rate"`` (0/1 values: the pass/fail rules).
        lam: a fixed lambda (0 is the labels-only figure, 1 the original PPI); ``None``
            cross-fits the power-tuned one.
        seed: the seed of the cross-fitting split.
        bounds: the figure's range; the interval is cut at it.
        half_width: when given, the labels needed for an interval of this half-width.

    Returns the figure with ``withheld`` set (and no value) below :data:`MIN_LABELS` labels or
    with labels in fewer than 2 scenarios. Raises ``ValueError`` on inputs that do not line
    up (lengths, indices out of range or repeated, non-finite values, a bad confidence).
    """
    check_confidence(confidence)
    judge = np.asarray(judge, dtype=float)
    offsets = np.asarray(offsets, dtype=np.int64)
    labelled = np.asarray(labelled, dtype=np.int64)
    y = np.asarray(human, dtype=float)
    _check_inputs(judge, offsets, labelled, y)
    c, big_n, n = offsets.size - 1, judge.size, labelled.size
    counts = np.diff(offsets)
    codes_all = np.repeat(np.arange(c), counts)
    g = np.bincount(codes_all, weights=judge, minlength=c) / counts
    base = {"target": target, "confidence": confidence, "n_labelled": n,
            "n_samples": big_n, "n_scenarios": c, "judge_value": float(g.mean())}
    codes = codes_all[labelled]
    n_lab_scen = int(np.unique(codes).size)
    withheld = _withheld(n, n_lab_scen, c)
    if withheld is not None:
        return CorrectedEstimate(
            **base, value=None, ci_low=None, ci_high=None, stderr=None, df=None, lam=None,
            n_labelled_scenarios=n_lab_scen, labels_only=None, effective_labels=None,
            labels_needed=None, method=METHOD, withheld=withheld)

    f = judge[labelled]
    weight = big_n / (c * counts[codes])
    binary = target == "pass_rate"
    judge_variance = float(np.var(judge, ddof=1))
    one_fold = np.zeros(n, dtype=np.int64)
    lams, folds = ((np.full(n, float(lam)), one_fold) if lam is not None else
                   _cross_fitted_lambdas(y, f, judge_variance, n / big_n, seed))
    parts = _Parts(g, weight, codes, y, f, lams, folds, binary)
    classical = _Parts(g, weight, codes, y, f, np.zeros(n), one_fold, binary)
    low, high, stderr, df, clipped = _interval(parts, c, confidence, bounds)
    c_low, c_high, c_se, _, _ = _interval(classical, c, confidence, bounds)
    notes = _notes(y, f, judge_variance, binary, clipped, bounds)
    return CorrectedEstimate(
        **base, value=parts.value, ci_low=low, ci_high=high, stderr=stderr, df=df,
        lam=float(lams.mean()) if lam is None else float(lam), n_labelled_scenarios=n_lab_scen,
        labels_only=LabelsOnly(value=classical.value, ci_low=c_low, ci_high=c_high,
                               stderr=c_se),
        effective_labels=(n * classical.variance / parts.variance
                          if parts.variance > 0 and classical.variance > 0 else None),
        labels_needed=(None if half_width is None else _labels_needed(
            parts, classical, n, big_n, half_width, confidence)),
        method=METHOD if lam is None else METHOD.replace(
            f"power-tuned and cross-fitted ({CROSS_FIT_FOLDS} folds)", f"fixed at {lam:g}"),
        notes=notes)


METHOD = ("PPI++ (Angelopoulos, Duchi & Zrnic 2023) for the mean of scenario means: judge "
          "on every sample, random human labels; lambda power-tuned and cross-fitted "
          f"({CROSS_FIT_FOLDS} folds); variance over scenarios (linearised), labels' part "
          "x n/(n-K); t interval, Welch-Satterthwaite df")


def _check_inputs(judge: np.ndarray, offsets: np.ndarray, labelled: np.ndarray,
                  y: np.ndarray) -> None:
    if offsets.ndim != 1 or offsets.size < 2 or offsets[0] != 0 or offsets[-1] != judge.size \
            or np.any(np.diff(offsets) <= 0):
        raise ValueError("offsets must run from 0 to len(judge), every scenario with a sample")
    if labelled.shape != y.shape:
        raise ValueError("labelled and human must have the same length")
    if labelled.size and (labelled.min() < 0 or labelled.max() >= judge.size):
        raise ValueError("a labelled index is outside the samples")
    if np.unique(labelled).size != labelled.size:
        raise ValueError("a sample is labelled twice: pass one value per labelled sample")
    if not (np.all(np.isfinite(judge)) and np.all(np.isfinite(y))):
        raise ValueError("judge and human values must be finite")


def _withheld(n: int, n_lab_scen: int, c: int) -> str | None:
    if n < MIN_LABELS:
        return (f"needs at least {MIN_LABELS} random labels, got {n}: {MIN_LABELS - n} more "
                "(with fewer, the interval does not hold its level)")
    if c < 2:
        return "needs at least 2 scenarios: one scenario gives no spread over scenarios"
    if n_lab_scen < 2:
        return ("needs random labels in at least 2 scenarios (all are in one): the labels' "
                "spread over scenarios cannot be estimated")
    return None


def _interval(parts: _Parts, c: int, confidence: float, bounds: tuple[float, float]
              ) -> tuple[float, float, float, float, bool]:
    df = parts.df(c)
    stderr = math.sqrt(parts.variance)
    half = float(sps.t.ppf(0.5 + confidence / 2, df)) * stderr
    low, high = parts.value - half, parts.value + half
    clipped = low < bounds[0] or high > bounds[1]
    return max(low, bounds[0]), min(high, bounds[1]), stderr, df, clipped


def _notes(y: np.ndarray, f: np.ndarray, judge_variance: float, binary: bool, clipped: bool,
           bounds: tuple[float, float]) -> list[str]:
    notes = []
    if judge_variance == 0:
        notes.append("the judge gave every sample the same value: it carries no "
                     "information, so lambda is 0 and the figure is the labels' alone")
    if np.ptp(y) == 0:
        notes.append(f"every label has the same value ({y[0]:g}): the labels' spread is "
                     + ("estimated with half a disagreement each way added"
                        if binary else "0, so the interval may be too narrow"))
    if clipped:
        notes.append(f"the interval reached past [{bounds[0]:g}, {bounds[1]:g}] and is cut "
                     "at it")
    return notes


@dataclass(frozen=True)
class SampleLabel:
    """One reviewer's value for one target of one sample (``index`` into the suite's
    samples), as :func:`corrected_figures` takes it: ``target`` ``"score"`` (in [0, 1]) or
    ``"passed"`` (0 or 1) correct the figures; other targets are counted and left out."""

    index: int
    target: str
    value: float
    random: bool


class CorrectedFigures(BaseModel):
    """The corrected mean score and pass rate (``None`` when no random label of that target
    exists), with what the labels were and which were left out of the correction and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mean: CorrectedEstimate | None
    pass_rate: CorrectedEstimate | None
    n_labels: int
    n_chosen_left_out: int
    n_other_targets: int
    notes: list[str] = Field(default_factory=list)


def _human_values(labels: Sequence[SampleLabel], target: str) -> tuple[np.ndarray, np.ndarray]:
    """The labelled samples of ``target`` and each one's mean over its reviewers."""
    total: dict[int, list[float]] = {}
    for label in labels:
        if label.target == target and label.random:
            total.setdefault(label.index, []).append(label.value)
    index = np.array(sorted(total), dtype=np.int64)
    return index, np.array([np.mean(total[i]) for i in index.tolist()])


def corrected_figures(
    judge_scores: np.ndarray, judge_passed: np.ndarray, offsets: np.ndarray,
    labels: Sequence[SampleLabel], *, confidence: float = 0.95, seed: int = 0,
    score_range: tuple[float, float] = (0.0, 1.0), half_width: float | None = None,
) -> CorrectedFigures:
    """:func:`corrected_figure` for the mean score and the pass rate from one set of labels.

    Only labels with ``random`` true enter (a sample labelled by several reviewers counts
    once, with their mean); the others are counted. ``score`` labels, in [0, 1], are mapped
    onto ``score_range``; ``half_width`` (in [0, 1] units, scaled like the scores for the
    mean) asks for the labels needed. Raises ``ValueError`` as :func:`corrected_figure`.
    """
    low, high = score_range
    width = high - low
    chosen = sum(1 for lb in labels if not lb.random and lb.target in ("score", "passed"))
    other = sum(1 for lb in labels if lb.target not in ("score", "passed"))
    notes = []
    if chosen:
        notes.append(f"{plural(chosen, 'label')} chosen by hand (random: false) left out of "
                     "the correction: only a random sample of the samples keeps it unbiased")
    if other:
        notes.append(f"{plural(other, 'label')} of rubrics or criteria left out: the "
                     "corrected figures are the mean score and the pass rate (such labels "
                     "measure the judge's agreement)")
    figures: dict[str, CorrectedEstimate | None] = {}
    for name, target, judge, bounds, scale in (
            ("mean", "score", judge_scores, score_range, width),
            ("pass_rate", "passed", judge_passed, (0.0, 1.0), 1.0)):
        index, human = _human_values(labels, target)
        if index.size == 0:
            figures[name] = None
            continue
        if name == "mean":
            human = low + human * width
        figures[name] = corrected_figure(
            np.asarray(judge, dtype=float), offsets, index, human,
            target="mean" if name == "mean" else "pass_rate", confidence=confidence,
            seed=seed, bounds=bounds,
            half_width=None if half_width is None else half_width * scale)
    if figures["mean"] is not None or figures["pass_rate"] is not None:
        notes.append("pass@k and pass^k are not corrected: they need every epoch of a "
                     "scenario labelled, which random labels of single samples do not give")
    return CorrectedFigures(mean=figures["mean"], pass_rate=figures["pass_rate"],
                            n_labels=len(labels), n_chosen_left_out=chosen,
                            n_other_targets=other, notes=notes)
