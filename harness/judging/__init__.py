"""Rubric judges: rubrics (YAML), judge prompts, one judge call -> per-criterion verdicts,
repeated samples and panels, pairwise comparison in both orders, and the offline mock judge.

The flow: :func:`load_rubrics` -> :func:`judge_transcript` (``n`` samples per judge, one or
more judges) -> :class:`AggregatedJudgment` (score, pass verdict, disagreement, judge errors
apart). :func:`compare_pair` / :func:`summarise_pairwise` for pairwise comparisons.
"""

from harness.judging.aggregate import (
    AggregatedJudgment,
    AggregationMethod,
    CriterionAggregate,
    Disagreement,
    aggregate_panel,
    aggregate_samples,
    aggregate_votes,
)
from harness.judging.batch import JudgeItem, answer_transcript, judge_items
from harness.judging.context import JudgeContext, context_for_scenario
from harness.judging.judge import JudgeSettings, judge_once, judge_transcript, metric_name
from harness.judging.pairwise import (
    PairCandidate,
    PairwiseCriterion,
    PairwiseResult,
    PairwiseSummary,
    compare_pair,
    compare_pairs,
    summarise_pairwise,
)
from harness.judging.prompts import PROMPT_VERSION, build_judge_prompt, template_hash
from harness.judging.rubric import (
    BUILTIN_RUBRICS_DIR,
    Criterion,
    Rubric,
    Scale,
    UnknownRubricError,
    check_rubric_ids,
    get_rubric,
    load_rubric_file,
    load_rubrics,
    parse_rubric,
    rubric_json_schema,
)
from harness.judging.scoring import RubricScore, score_rubric
from harness.judging.verdicts import (
    CriterionVerdict,
    JudgeError,
    JudgeOutcome,
    Judgment,
    outcome_from_json,
    response_model_for,
)

__all__ = [
    "BUILTIN_RUBRICS_DIR",
    "PROMPT_VERSION",
    "AggregatedJudgment",
    "AggregationMethod",
    "Criterion",
    "CriterionAggregate",
    "CriterionVerdict",
    "Disagreement",
    "JudgeContext",
    "JudgeError",
    "JudgeItem",
    "JudgeOutcome",
    "JudgeSettings",
    "Judgment",
    "PairCandidate",
    "PairwiseCriterion",
    "PairwiseResult",
    "PairwiseSummary",
    "Rubric",
    "RubricScore",
    "Scale",
    "UnknownRubricError",
    "aggregate_panel",
    "aggregate_samples",
    "aggregate_votes",
    "answer_transcript",
    "build_judge_prompt",
    "check_rubric_ids",
    "compare_pair",
    "compare_pairs",
    "context_for_scenario",
    "get_rubric",
    "judge_items",
    "judge_once",
    "judge_transcript",
    "load_rubric_file",
    "load_rubrics",
    "metric_name",
    "outcome_from_json",
    "parse_rubric",
    "response_model_for",
    "rubric_json_schema",
    "score_rubric",
    "summarise_pairwise",
    "template_hash",
]
