"""How well the reviewers of a run agree with each other, per labelled target:
Krippendorff's alpha with a bootstrap interval over samples (:func:`reviewer_agreement`).

A sample labelled by two or more reviewers on a target is a unit of that target's
reliability matrix (samples × reviewers); samples with one label count for nothing here. The
level follows the target: pass/fail targets are nominal, a criterion's scale is ordinal, the
0–1 score is interval. Hand-picked and random labels count alike: agreement is about the
reviewers, not about which samples they saw.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
from pydantic import BaseModel, ConfigDict

from harness.calibration.bootstrap import ItemBootstrap, undefined_estimate
from harness.calibration.reliability import KrippendorffAlpha
from harness.calibration.report import AlphaLevel, BootstrapEstimate
from harness.runs.labels import Label, target_kind

_LEVELS: dict[str, AlphaLevel] = {"bool": "nominal", "scale": "ordinal", "unit": "interval"}


class ReviewerAgreement(BaseModel):
    """The reviewers' agreement on one target: ``alpha`` (Krippendorff's, at ``level``,
    with its percentile bootstrap interval over the samples), ``n_samples`` (samples with
    two or more reviewers, the units of alpha), ``n_labels`` (their labels) and the
    ``reviewers`` who labelled the target at all."""

    model_config = ConfigDict(extra="forbid")

    target: str
    level: AlphaLevel
    alpha: BootstrapEstimate
    n_samples: int
    n_labels: int
    reviewers: list[str]


def reviewer_agreement(labels: Iterable[Label], *, n_resamples: int = 2000,
                       confidence: float = 0.95, seed: int = 0) -> dict[str, ReviewerAgreement]:
    """Per target (in the order first met), the agreement among the reviewers of ``labels``:
    the labels that count (``RunStore.labels()``; given several versions of a reviewer's
    label on one target, the last given counts). Never raises for too few labels: alpha is
    then undefined with the reason."""
    by_target: dict[str, dict[tuple[str, int], dict[str, float]]] = {}
    for label in labels:
        units = by_target.setdefault(label.target, {})
        units.setdefault((label.scenario_id, label.epoch), {})[label.annotator] = float(
            label.value)
    return {target: _agreement(target, units, n_resamples, confidence, seed)
            for target, units in by_target.items()}


def _agreement(target: str, units: dict[tuple[str, int], dict[str, float]],
               n_resamples: int, confidence: float, seed: int) -> ReviewerAgreement:
    level = _LEVELS[target_kind(target)]
    reviewers = list(dict.fromkeys(name for rated in units.values() for name in rated))
    shared = [rated for rated in units.values() if len(rated) >= 2]
    n = len(shared)
    n_labels = sum(len(rated) for rated in shared)
    detail = f"{level} level, samples labelled by two or more reviewers"
    if n == 0:
        alpha = undefined_estimate(0, "krippendorff_alpha: no sample has labels of two "
                                   "reviewers yet", detail)
    else:
        matrix = np.full((n, len(reviewers)), np.nan)
        column = {name: i for i, name in enumerate(reviewers)}
        for row, rated in enumerate(shared):
            for name, value in rated.items():
                matrix[row, column[name]] = value
        statistic = KrippendorffAlpha(matrix, level)
        boot = ItemBootstrap(n, n_resamples, confidence, seed)
        alpha = boot.estimate(lambda idx: statistic(np.bincount(idx, minlength=n)),
                              detail=detail)
    return ReviewerAgreement(target=target, level=level, alpha=alpha, n_samples=n,
                             n_labels=n_labels, reviewers=reviewers)
