"""Pairwise comparison of two runs' transcripts (``harness pairwise RUN_A RUN_B``): open both
run stores, pair their samples, judge every pair under one rubric with every judge,
``samples`` times each and in both orders (:func:`harness.judging.pairwise_judge.compare_pair`),
through the model hub, its response cache and retries, and build the report.

What is paired, how a pair's verdict is formed and what the figures mean:
:mod:`harness.runs.pairwise_runs_report`. A failure no retry can fix (missing key, unknown model,
replay-cache miss) would fail every call alike, so it stops the comparison instead of being
recorded as one judge error per pair.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.choices import CacheMode
from harness.errors import InputError, raise_if_fatal
from harness.judging.batch import resolve_rubrics
from harness.judging.context import JudgeContext
from harness.judging.pairwise_judge import PairwiseCriterion, PairwiseResult, compare_pair
from harness.judging.prompts import PROMPT_VERSION, template_hash
from harness.models.base import ChatModel, ModelSpec
from harness.models.batch_journal import journal_beside
from harness.models.config import CacheConfig, ModelsConfig
from harness.models.hub import ModelHub
from harness.models.types import GenerationParams
from harness.runs.pairwise_runs_report import (
    PairOutcome,
    PairwiseRunReport,
    RunRoles,
    SamplePair,
    combine_pair,
    jsonl_lines,
    pair_samples,
    summarise_runs_pairwise,
)
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore
from harness.scenarios.judge_context import context_for_scenario
from harness.scenarios.selectors import ScenarioFilter, select_stored
from harness.wording import plural

ProgressCallback = Callable[[int, int], None]


async def judge_pairs(
    pairs: Sequence[SamplePair],
    judges: Sequence[ChatModel],
    criterion: PairwiseCriterion,
    *,
    samples: int = 1,
    contexts: Mapping[str, JudgeContext] | None = None,
    concurrency: int = 8,
    params: GenerationParams | None = None,
    max_reasks: int = 2,
    progress: ProgressCallback | None = None,
) -> list[PairOutcome]:
    """Judge every pair with every judge, ``samples`` times (sample indexes 0..K-1), both
    orders each; at most ``concurrency`` comparisons (two calls each) in flight, or all of
    them when a judge is batched (they wait on batches, not on the provider). Outcomes in
    ``pairs`` order. Raises the first configuration failure (ModelConfigError,
    CacheMissError) after cancelling the rest."""
    contexts = contexts or {}
    total = len(pairs) * len(judges) * samples
    semaphore = asyncio.Semaphore(max(1, total) if any(j.batched for j in judges)
                                  else concurrency)
    done = 0

    async def one(pair: SamplePair, model: ChatModel, index: int) -> PairwiseResult:
        nonlocal done
        async with semaphore:
            result = await compare_pair(
                model, criterion, pair.a, pair.b, pair_id=pair.pair_id,
                context=contexts.get(pair.scenario_id, JudgeContext(scenario_id=pair.scenario_id)),
                sample_index=index, params=params, max_reasks=max_reasks)
        raise_if_fatal(result.error_type, result.message)
        done += 1
        if progress is not None:
            progress(done, total)
        return result

    if progress is not None:
        progress(0, total)
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [[group.create_task(one(pair, model, i))
                      for model in judges for i in range(samples)] for pair in pairs]
    except BaseExceptionGroup as failures:
        first: BaseException = failures
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None
    names = [str(m.spec) for m in judges]
    return [combine_pair(pair.scenario_id, pair.epoch, names, [t.result() for t in row])
            for pair, row in zip(pairs, tasks, strict=True)]


def scenario_contexts(paths: Sequence[str], scenario_ids: Iterable[str]
                      ) -> tuple[dict[str, JudgeContext], list[str]]:
    """Judge contexts (goal, reference answer) from the scenario files a run was made from,
    as they are on disk now. Scenarios whose file is gone or no longer valid are judged
    without them; the second value lists those ids."""
    from harness.formats import validate_paths

    found = {s.id: s for s in validate_paths(paths, check_imports=False).scenarios}
    contexts = {sid: context_for_scenario(found[sid]) for sid in scenario_ids if sid in found}
    return contexts, [sid for sid in scenario_ids if sid not in contexts]


@dataclass
class PairwiseRunResult:
    """What :func:`compare_runs_pairwise` returns: the report and the per-pair lines."""

    report: PairwiseRunReport
    lines: list[dict[str, Any]]


def _open_samples(run_dir: Path, selector: ScenarioFilter | None
                  ) -> tuple[list[SampleRecord], list[str]]:
    """A run's stored samples (those of the scenarios ``selector`` keeps) and the scenario
    paths it was made from."""
    with RunStore.open(run_dir) as store:
        keep = None if selector is None or not selector.active else select_stored(
            store.scenario_tags(), selector, run_dir)
        records = [r for r in store.iter_samples() if keep is None or r.scenario_id in keep]
        paths = [str(p) for p in store.config.get("run", {}).get("scenario_paths", [])]
    return records, paths


async def compare_runs_pairwise(
    run_a: str | Path,
    run_b: str | Path,
    judges: Sequence[str],
    rubric_id: str,
    *,
    samples: int = 1,
    concurrency: int = 8,
    rubric_dirs: Sequence[str | Path] = (),
    models: ModelsConfig | None = None,
    cache_path: str | Path | None = None,
    cache_mode: CacheMode = "read-write",
    base_url: str | None = None,
    hub: ModelHub | None = None,
    progress: ProgressCallback | None = None,
    selector: ScenarioFilter | None = None,
    judge_batch: bool = False,
) -> PairwiseRunResult:
    """Compare the transcripts of two run directories pairwise under rubric ``rubric_id``
    with ``judges`` (``provider:model``; ``mock:judge`` runs offline); see the module
    docstring for what is compared and how it is combined. ``selector`` (``--tag``,
    ``--exclude-tag``, ``-k``) keeps the samples of some scenarios of each run.

    Models come from ``hub`` when given (left open), else from a hub built from ``models``
    with the response cache at ``cache_path`` (``cache_mode``); ``base_url`` points non-mock
    judges at an OpenAI-compatible server. ``judge_batch`` sends the judges' requests through
    their providers' batch APIs, journalled beside the response cache
    (:func:`~harness.models.batch_journal.journal_beside`), so the same command run again after
    a stop waits for the batches it sent instead of sending them again.

    Raises InputError for a bad option, an unknown rubric or runs with no scenario in
    common; StoreError for a directory that is not a run; ModelConfigError for a bad model
    name, a missing key, or a replay-cache miss — all before or instead of any verdict.
    """
    judge_ids = list(dict.fromkeys(judges))
    if not judge_ids:
        raise InputError("--judge", None, "at least one judge model is needed")
    if samples < 1:
        raise InputError("--samples", None, f"expected at least 1, got {samples}")
    if concurrency < 1:
        raise InputError("--concurrency", None, f"expected at least 1, got {concurrency}")
    for name in judge_ids:
        ModelSpec.parse(name)  # a malformed name fails before any work
    [rubric] = resolve_rubrics([rubric_id], rubric_dirs)
    records_a, paths_a = _open_samples(Path(run_a), selector)
    records_b, paths_b = _open_samples(Path(run_b), selector)
    pairing = pair_samples(records_a, records_b)
    if not pairing.common_scenarios:
        raise InputError(f"{run_a} and {run_b}", None, "the runs have no scenario in common, "
                         "so there is nothing to compare")
    contexts, missing = scenario_contexts(paths_a, pairing.common_scenarios)
    if missing and paths_b:
        more, missing = scenario_contexts(paths_b, missing)
        contexts.update(more)
    notes = []
    if missing:
        notes.append(f"{plural(len(missing), 'scenario')} "
                     f"{'was' if len(missing) == 1 else 'were'} judged without their goal and "
                     "reference "
                     "answer (their scenario files are gone or no longer valid): "
                     + ", ".join(missing))
    criterion = PairwiseCriterion.from_rubric(rubric)

    config = models or ModelsConfig()
    if cache_path is not None:
        config = config.model_copy(update={"cache": CacheConfig(
            path=Path(cache_path), mode=cache_mode)})
    active = hub or ModelHub(config)
    if judge_batch:
        active.enable_batches(journal_beside(active.cache))
    try:
        chat_models = [active.get(j, base_url=None if j.startswith("mock:") else base_url)
                       for j in judge_ids]
        judge_names = [str(m.spec) for m in chat_models]  # as the comparisons record them
        if active.cache is None or active.config.cache.mode in ("off", "refresh"):
            # No cache can answer: a missing key would fail every call alike, so say it once.
            for model in chat_models:
                if not model.spec.is_offline:
                    active.endpoint(model.spec.provider, model.spec.base_url).require_key(
                        str(model.spec))
        outcomes = await judge_pairs(pairing.pairs, chat_models, criterion, samples=samples,
                                     contexts=contexts, concurrency=concurrency,
                                     progress=progress)
        usage = active.ledger.total.as_dict()
    finally:
        if hub is None:
            await active.aclose()

    run_roles = {str(path): RunRoles.of(records)
                 for path, records in ((run_a, records_a), (run_b, records_b))}
    report = summarise_runs_pairwise(
        pairing, outcomes, run_a=str(run_a), run_b=str(run_b),
        rubric={"id": rubric.id, "version": rubric.version, "target": rubric.target,
                "prompt_version": PROMPT_VERSION, "prompt_hash": template_hash("pairwise")},
        judges=judge_names, samples=samples, run_roles=run_roles, usage=usage, notes=notes,
        selection=selector)
    return PairwiseRunResult(report=report, lines=jsonl_lines(pairing, outcomes))


__all__ = [
    "PairwiseRunResult",
    "compare_runs_pairwise",
    "judge_pairs",
    "scenario_contexts",
]
