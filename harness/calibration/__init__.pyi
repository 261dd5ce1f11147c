# The names this package exports, read by type checkers and, at run time, by
# lazy_loader.attach_stub (see __init__.py): each is imported on first use.
from .analysis import analyse
from .datasets import (
    PairwiseDataset,
    PairwiseItem,
    PointwiseDataset,
    PointwiseItem,
    load_dataset,
)
from .judgments import (
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
from .report import AnalysisOptions, BootstrapEstimate, CalibrationReport
from .reviewers import ReviewerAgreement, reviewer_agreement
from .scale import Scale
