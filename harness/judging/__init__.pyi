# The names this package exports, read by type checkers and, at run time, by
# lazy_loader.attach_stub (see __init__.py): each is imported on first use.
from .aggregate import (
    AggregatedJudgment,
    AggregationMethod,
    CriterionAggregate,
    Disagreement,
    aggregate_panel,
    aggregate_samples,
    aggregate_votes,
)
from .batch import JudgeItem, answer_transcript, judge_items
from .context import JudgeContext
from .judge import JudgeSettings, judge_once, judge_transcript, metric_name
from .pairwise_judge import (
    PairCandidate,
    PairwiseCriterion,
    PairwiseResult,
    PairwiseSummary,
    compare_pair,
    compare_pairs,
    summarise_pairwise,
)
from .prompts import PROMPT_VERSION, build_judge_prompt, template_hash
from .rubric import (
    BUILTIN_RUBRICS_DIR,
    Criterion,
    Rubric,
    RubricScale,
    UnknownRubricError,
    check_rubric_ids,
    get_rubric,
    load_rubric_file,
    load_rubrics,
    parse_rubric,
    rubric_json_schema,
)
from .scoring import RubricScore, score_rubric
from .verdicts import (
    CriterionVerdict,
    JudgeError,
    JudgeOutcome,
    Judgment,
    outcome_from_json,
    response_model_for,
)
