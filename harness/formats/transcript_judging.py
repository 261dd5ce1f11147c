"""Judging the transcripts of a contract-4 file (``harness score-transcripts --judge MODEL
--rubric ID``): every transcript x rubric x judge x sample runs concurrently under the model
layer's bounds (:mod:`harness.judging.batch`).

A line's judge context is taken from the line: the reference answer and reference tool calls
from its expectations, and the user's goal from ``metadata.goal`` when given (otherwise the
judge infers it from the conversation). The agent's system prompt and tool definitions travel
on the transcript itself. A line has no simulated-user profile, so ``simulator_fidelity``
rubrics come back not scored, with the reason, and one warning per rubric and reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from harness.formats.transcript_file import TranscriptRecord
from harness.judging.aggregate import AggregatedJudgment, AggregationMethod
from harness.judging.batch import JudgeItem, JudgeRun, judge_items, resolve_rubrics, summarise_run
from harness.judging.context import JudgeContext
from harness.judging.judge import JudgeSettings, settings_for_rubric


def context_for_record(record: TranscriptRecord) -> JudgeContext:
    """The judge context a contract-4 line provides (see the module docstring)."""
    expectations = record.expectations.expectations
    goal = record.metadata.get("goal")
    return JudgeContext(
        scenario_id=record.id,
        goal=str(goal) if goal is not None else None,
        reference_answer=expectations.reference_answer,
        expected_tool_calls=expectations.tool_calls,
    )


def judge_records(
    records: Sequence[TranscriptRecord],
    *,
    judges: Sequence[str],
    rubric_ids: Sequence[str],
    rubric_dirs: Sequence[str | Path] = (),
    settings: JudgeSettings | None = None,
    samples: int | None = None,
    method: AggregationMethod | None = None,
    base_url: str | None = None,
) -> JudgeRun:
    """Judge contract-4 records with the named judge models (``provider:model``) under the
    named rubrics. Each rubric is judged with ``samples`` and ``method`` when given, else
    with its own ``samples`` and ``aggregation`` (then 1 sample, mean); temperature and the
    rest come from ``settings``. Rubric ids and model names are checked before any model call
    (:class:`~harness.errors.InputError` / :class:`~harness.errors.ModelConfigError`).
    ``base_url`` points non-mock judges at an OpenAI-compatible or gateway server."""
    from harness.models.hub import ModelHub  # the model layer, only when judging

    rubrics = resolve_rubrics(rubric_ids, rubric_dirs)
    per_rubric = {r.id: settings_for_rubric(r, settings, samples=samples, method=method)
                  for r in rubrics}
    items = [JudgeItem(r.id, r.transcript, context_for_record(r)) for r in records]

    async def run() -> dict[str, list[AggregatedJudgment]]:
        async with ModelHub() as hub:
            models = [hub.get(name, base_url=None if name.startswith("mock:") else base_url)
                      for name in dict.fromkeys(judges)]
            for model in models:
                # A missing key fails every call the same way: say so once, up front,
                # instead of recording a judge error on every transcript.
                if not model.spec.is_offline:
                    hub.endpoint(model.spec.provider, model.spec.base_url).require_key(
                        str(model.spec))
            return await judge_items(items, rubrics, models, per_rubric)

    results = asyncio.run(run())
    return summarise_run(results, rubrics, list(dict.fromkeys(judges)), per_rubric)
