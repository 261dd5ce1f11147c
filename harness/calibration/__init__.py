"""Judge calibration: how well a judge agrees with people, with bootstrap intervals.

Read labelled items (:func:`load_dataset`) or existing judgments (:func:`load_judgments`,
contract 3), then :func:`analyse` them into a :class:`CalibrationReport`.
"""

from harness.calibration.analysis import analyse
from harness.calibration.datasets import (
    PairwiseDataset,
    PairwiseItem,
    PointwiseDataset,
    PointwiseItem,
    load_dataset,
)
from harness.calibration.judgments import (
    JudgmentSet,
    PairwiseJudgment,
    PairwiseJudgments,
    PointwiseJudgment,
    PointwiseJudgments,
    build_pairwise,
    build_pointwise,
    load_judgments,
    pairwise_judgments,
    pointwise_judgment,
)
from harness.calibration.report import AnalysisOptions, CalibrationReport, Estimate
from harness.calibration.scale import Scale

__all__ = [
    "AnalysisOptions",
    "CalibrationReport",
    "Estimate",
    "JudgmentSet",
    "PairwiseDataset",
    "PairwiseItem",
    "PairwiseJudgment",
    "PairwiseJudgments",
    "PointwiseDataset",
    "PointwiseItem",
    "PointwiseJudgment",
    "PointwiseJudgments",
    "Scale",
    "analyse",
    "build_pairwise",
    "build_pointwise",
    "load_dataset",
    "load_judgments",
    "pairwise_judgments",
    "pointwise_judgment",
]
