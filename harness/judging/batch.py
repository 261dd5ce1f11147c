"""Judging many transcripts at once (``harness score-transcripts``, calibration studies):
every transcript x rubric x judge x sample runs concurrently under the model layer's bounds,
and the results come back as metrics (``rubric:<id>``, the rubric score in [0, 1]), full
judgment records, warnings for judge errors, and a summary that says which judges, rubric
versions and prompt hashes produced the numbers, and whether they came from offline models.
Reading transcript files is a format's business (:mod:`harness.formats.transcript_judging`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import raise_if_fatal
from harness.judging.aggregate import AggregatedJudgment
from harness.judging.judge import (
    JudgeSettings,
    judge_transcript,
    metric_name,
    settings_for_rubric,
)
from harness.judging.prompts import JudgeContext, template_hash
from harness.judging.rubric import Rubric, get_rubric, load_rubrics
from harness.models.base import ChatModel
from harness.models.types import Message
from harness.transcript import Transcript

OFFLINE_NOTE = ("judge scores come from offline mock models (mock:...), not from a real "
                "judge: use them to try the pipeline, not to draw conclusions")


@dataclass(frozen=True)
class JudgeItem:
    """One transcript to judge, with its id and the context its judges need."""

    id: str
    transcript: Transcript
    context: JudgeContext = field(default_factory=JudgeContext)


JudgeSettingsArg = JudgeSettings | Mapping[str, JudgeSettings] | None
"""Judge settings for a batch: one for every rubric, or per rubric id; a rubric missing from
the mapping, or ``None``, uses its own defaults."""


def settings_by_rubric(rubrics: Sequence[Rubric], settings: JudgeSettingsArg
                       ) -> dict[str, JudgeSettings]:
    """The settings each rubric (by id) is judged with (see :data:`JudgeSettingsArg`)."""
    if isinstance(settings, JudgeSettings):
        return {r.id: settings for r in rubrics}
    given = settings or {}
    return {r.id: given.get(r.id) or settings_for_rubric(r) for r in rubrics}


async def judge_items(
    items: Sequence[JudgeItem],
    rubrics: Sequence[Rubric],
    judges: Sequence[ChatModel],
    settings: JudgeSettingsArg = None,
) -> dict[str, list[AggregatedJudgment]]:
    """Judge every item under every rubric with the judge panel; results by item id, one
    aggregate per rubric in ``rubrics`` order, judged with ``settings``
    (:data:`JudgeSettingsArg`). Judge errors are inside the aggregates, except one that
    every call would meet alike (a missing or refused key, an unknown model, a replay-cache
    miss): that one is raised (ModelConfigError, CacheMissError) at once, the other
    judgings cancelled, rather than recorded on every item."""

    per_rubric = settings_by_rubric(rubrics, settings)

    async def one(item: JudgeItem, rubric: Rubric) -> AggregatedJudgment:
        judgment = await judge_transcript(judges, rubric, item.transcript, item.context,
                                          settings=per_rubric[rubric.id])
        fatal = judgment.fatal_error()
        if fatal is not None:
            raise_if_fatal(fatal.error_type, fatal.message)
        return judgment

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(one(item, rubric)) for item in items for rubric in rubrics]
    except BaseExceptionGroup as failures:
        first: BaseException = failures
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None
    results = [task.result() for task in tasks]
    out: dict[str, list[AggregatedJudgment]] = {}
    for k, item in enumerate(items):
        out[item.id] = list(results[k * len(rubrics):(k + 1) * len(rubrics)])
    return out


@dataclass
class JudgeRun:
    """What judging a batch produced, ready to merge into a report."""

    metrics: dict[str, dict[str, float | None]]
    judgments: dict[str, list[dict[str, Any]]]
    warnings: list[str]
    summary: dict[str, Any]

    def attach(self, output: dict[str, Any]) -> dict[str, Any]:
        """Add the judgments to each row of a ``score_records`` output (matched by ``id``),
        the judge summary under ``summary["judges"]``, and the warnings."""
        for row in output["transcripts"]:
            row["judgments"] = self.judgments.get(row["id"], [])
        output["summary"]["judges"] = self.summary
        output["warnings"].extend(self.warnings)
        return output


def summarise_run(
    results: Mapping[str, Sequence[AggregatedJudgment]],
    rubrics: Sequence[Rubric],
    judge_names: Sequence[str],
    settings: JudgeSettingsArg = None,
) -> JudgeRun:
    """Metrics, records, warnings and a summary from :func:`judge_items` results (pure);
    ``settings`` as given to :func:`judge_items`."""
    per_rubric = settings_by_rubric(rubrics, settings)
    metrics: dict[str, dict[str, float | None]] = {}
    judgments: dict[str, list[dict[str, Any]]] = {}
    warnings: list[str] = []
    counts = {"scored": 0, "not_scored": 0, "judge_error": 0}
    unscored: dict[tuple[str, str], list[str]] = {}
    failed_votes = 0
    offline = False
    for item_id, aggregates in results.items():
        metrics[item_id] = {metric_name(a.rubric_id): a.score for a in aggregates}
        judgments[item_id] = [a.model_dump(mode="json") for a in aggregates]
        for a in aggregates:
            counts[a.status] += 1
            if a.status == "not_scored":
                unscored.setdefault((a.rubric_id, a.unscored_reason or "not scored"),
                                    []).append(item_id)
            failed_votes += a.n_failed
            offline = offline or a.offline
            if a.status == "judge_error":
                warnings.append(f"id {item_id}: rubric {a.rubric_id}: judge error, no score "
                                f"({a.error})")
            elif a.n_failed:
                warnings.append(f"id {item_id}: rubric {a.rubric_id}: {a.n_failed} of "
                                f"{a.n_votes} judge votes failed; scored on the others")
    # One warning per rubric and reason, not per transcript: an inapplicable rubric on a
    # large file would otherwise bury every other warning.
    for (rubric_id, reason), ids in unscored.items():
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        warnings.append(f"rubric {rubric_id}: no score for {len(ids)} transcript(s) "
                        f"({shown}): {reason}")
    summary: dict[str, Any] = {
        "models": list(judge_names),
        "rubrics": {r.id: {"version": r.version, "target": r.target, "threshold": r.threshold,
                           "prompt_hash": template_hash(r.target),
                           "samples": per_rubric[r.id].samples,
                           "aggregation": per_rubric[r.id].method} for r in rubrics},
        "samples": _common({s.samples for s in per_rubric.values()}),
        "temperature": _common({s.temperature for s in per_rubric.values()}),
        "aggregation": _common({s.method for s in per_rubric.values()}),
        "judgments": counts,
        "failed_votes": failed_votes,
        "offline": offline,
    }
    real = [name for name in judge_names if not name.startswith("mock:")]
    if offline:
        summary["note"] = OFFLINE_NOTE if not real else (
            f"judge scores come partly from offline mock models ("
            f"{', '.join(n for n in judge_names if n not in real)}) and partly from real ones "
            f"({', '.join(real)}): the offline votes say nothing about a real judge")
    return JudgeRun(metrics=metrics, judgments=judgments, warnings=warnings, summary=summary)


def _common(values: set[Any]) -> Any:
    """The one value every rubric shares, or ``None`` when they differ (see each rubric)."""
    return values.pop() if len(values) == 1 else None


def answer_transcript(answer: str, *, question: str | None = None,
                      item_id: str = "item") -> Transcript:
    """A transcript holding one answer (after the question it answers, when given), so a
    labelled item's text can be judged with any final-response or conversation rubric (e.g.
    for calibration against human labels)."""
    messages = [Message(role="user", content=question)] if question is not None else []
    messages.append(Message(role="assistant", content=answer))
    return Transcript(scenario_id=item_id, messages=messages, stop_reason="imported")



def resolve_rubrics(
    rubric_ids: Iterable[str], rubric_dirs: Iterable[str | Path] = ()
) -> list[Rubric]:
    """The rubrics named on the command line (built-in plus ``rubric_dirs``). Raises
    :class:`~harness.judging.rubric.UnknownRubricError` for an unknown id, before any model
    call."""
    available = load_rubrics(rubric_dirs)
    return [get_rubric(available, rid, source="--rubric") for rid in dict.fromkeys(rubric_ids)]
