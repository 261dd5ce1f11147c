"""How one sample's transcript, checks and judgments become the score the statistics use.

- Every check value and rubric score (each normalised to [0, 1]) is kept as a **metric**
  under its name, so each can be summarised with its own interval.
- The sample **score** is the mean of its components: the mean value of the *gating* checks
  (one component, so the seven trajectory views of one tool sequence do not outweigh a
  rubric) and each judged rubric's score (one component each). A scenario's
  ``scoring.weights`` makes it a weighted mean: ``checks`` weighs the checks component, a
  rubric id that rubric's; a component not named weighs 1 (so by default the plain mean).
- The sample **passes** when every gating check passed and every judged rubric passed.
- Rubrics that judge the **simulated user** (a target in
  :data:`~harness.judging.rubric.SIMULATOR_TARGETS`, e.g. ``simulator_fidelity``) are kept
  as metrics, judge samples and judgments, and reported, but are not components of the
  score and do not decide the pass: the simulator's quality is not the agent's. Their judge
  failing every sample still errors the sample, as any failed model call does.
- Gating checks are the check results that say so (``gating``) and have a pass verdict
  (``passed`` not ``None``). Each check decides, built-in or one's own alike: the
  descriptive trajectory views (``trajectory_exact_match``, ``..._in_order_match``,
  ``..._any_order_match``, ``..._precision``, ``..._recall``, ``..._f1``) are reported
  only, so the strictness of the trajectory gate is the scenario's choice of
  ``adk_trajectory_match`` (EXACT, IN_ORDER or ANY_ORDER) through
  ``tool_trajectory_avg_score``; a ``None`` threshold or ``gating: false`` reports a check
  only.
- A sample whose episode failed, or whose judges all failed for a rubric, is **errored**:
  it has no score, and the run's error policy decides, explicitly, how it counts.
- A scenario's own check that raised or returned an invalid value (``error`` set) makes the
  sample **errored** (kind ``check_error``): its verdict would otherwise rest on the checks
  that happened to work, and a bug in a check should be seen, not averaged away.
- A sample with nothing to score (no scored check, no scored rubric) is **unscored**.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.checks.result import CheckReport
from harness.judging.aggregate import AggregatedJudgment
from harness.judging.judge import metric_name
from harness.judging.rubric import judges_the_simulator
from harness.judging.verdicts import JudgeError, Judgment
from harness.models.types import Role
from harness.runs.sample import SampleRecord
from harness.transcript import ErrorInfo, Transcript, UsageTotals


def build_sample(
    transcript: Transcript,
    checks: CheckReport,
    judgments: Sequence[AggregatedJudgment],
    *,
    started_at: float,
    finished_at: float,
    weights: Mapping[str, float] | None = None,
) -> SampleRecord:
    """Combine one episode's results into a stored sample (see the module docstring).

    ``weights`` are the scenario's ``scoring.weights`` (``checks`` or a rubric id -> a weight
    above 0; 1 when not named)."""
    common: dict[str, Any] = {
        "scenario_id": transcript.scenario_id,
        "epoch": transcript.epoch,
        "transcript": transcript,
        "checks": [checks.model_dump(mode="json")],
        "judgments": [j.model_dump(mode="json") for j in judgments],
        "usage": _usage(transcript, judgments),
        "models": _models(transcript, judgments),
        "offline": transcript.offline or any(j.offline for j in judgments),
        "started_at": started_at,
        "finished_at": finished_at,
    }
    if transcript.errored:
        error = transcript.error or ErrorInfo(
            kind=transcript.stop_reason, message=transcript.stop_detail or transcript.stop_reason
        )
        return SampleRecord(status="errored", error=error, **common)
    check_errors = [r.error for r in checks.results if r.error is not None]
    if check_errors:
        return SampleRecord(
            status="errored",
            error=ErrorInfo(kind="check_error", message="; ".join(check_errors)),
            **common,
        )
    failed = [j for j in judgments if j.status == "judge_error"]
    if failed:
        detail = "; ".join(f"{j.rubric_id}: {j.error or 'every judge sample failed'}"
                           for j in failed)
        return SampleRecord(
            status="errored",
            error=ErrorInfo(kind="judge_error", message=detail, role="judge"),
            **common,
        )

    metrics: dict[str, float] = {}
    gating_values: list[float] = []
    checks_passed = True
    for result in checks.results:
        if result.value is None:
            continue
        metrics[result.name] = result.value
        if result.gating and result.passed is not None:
            gating_values.append(result.value)
            checks_passed = checks_passed and result.passed is not False
    weight = dict(weights or {})
    components: list[tuple[float, float]] = []  # (value, weight)
    if gating_values:
        components.append((sum(gating_values) / len(gating_values), weight.get("checks", 1.0)))
    rubrics_passed = True
    judge_samples: dict[str, list[float]] = {}
    counted_samples: dict[str, list[float]] = {}  # the rubrics that are score components
    for judgment in judgments:
        if judgment.score is None:
            continue
        name = metric_name(judgment.rubric_id)
        metrics[name] = judgment.score
        votes = [v for v in judgment.vote_scores if v is not None]
        if votes:
            judge_samples[name] = votes
        if judges_the_simulator(judgment.target):
            continue  # reported, never the agent's score or pass
        components.append((judgment.score, weight.get(judgment.rubric_id, 1.0)))
        rubrics_passed = rubrics_passed and judgment.passed is not False
        if votes:
            counted_samples[name] = votes
    if not components:
        return SampleRecord(
            status="unscored", metrics=metrics, judge_samples=judge_samples, **common
        )
    return SampleRecord(
        status="scored",
        score=_weighted_mean(components),
        score_by_judge_sample=_score_by_judge_sample(gating_values, counted_samples,
                                                     judgments, weight),
        passed=checks_passed and rubrics_passed,
        metrics=metrics,
        judge_samples=judge_samples,
        **common,
    )


def _weighted_mean(components: Sequence[tuple[float, float]]) -> float:
    return sum(v * w for v, w in components) / sum(w for _, w in components)


def _score_by_judge_sample(
    gating_values: Sequence[float],
    judge_samples: dict[str, list[float]],
    judgments: Sequence[AggregatedJudgment],
    weight: Mapping[str, float],
) -> list[float]:
    """The sample score with the k-th vote of every rubric that counts toward it, k = 0 ..
    the fewest votes - 1 (empty unless every such rubric has at least two votes), weighted
    as the score is."""
    if not judge_samples:
        return []
    k_max = min(len(v) for v in judge_samples.values())
    if k_max < 2:
        return []
    base = ([(sum(gating_values) / len(gating_values), weight.get("checks", 1.0))]
            if gating_values else [])
    rubric_of = {metric_name(j.rubric_id): j.rubric_id for j in judgments}
    return [
        _weighted_mean([*base, *((v[k], weight.get(rubric_of[name], 1.0))
                                 for name, v in judge_samples.items())])
        for k in range(k_max)
    ]


def _usage(
    transcript: Transcript, judgments: Sequence[AggregatedJudgment]
) -> dict[Role, UsageTotals]:
    usage = {role: totals.model_copy() for role, totals in transcript.usage.items()}
    for judgment in judgments:
        for vote in _all_judgments(judgment):
            usage.setdefault("judge", UsageTotals()).merge(vote.usage)
    return usage


def _models(
    transcript: Transcript, judgments: Sequence[AggregatedJudgment]
) -> dict[Role, list[str]]:
    models: dict[Role, list[str]] = {role: [name] for role, name in transcript.models.items()}
    judges = list(dict.fromkeys(name for j in judgments for name in j.judge_models))
    if judges:
        models["judge"] = judges
    return models


def _all_judgments(aggregate: AggregatedJudgment) -> list[Judgment | JudgeError]:
    """Every single judge sample (successful or failed) under an aggregate, panels included."""
    out: list[Judgment | JudgeError] = [*aggregate.judgments, *aggregate.errors]
    for member in aggregate.members:
        out.extend(_all_judgments(member))
    return out
