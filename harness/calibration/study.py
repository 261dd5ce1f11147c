"""Running judges on a labelled dataset (a calibration *study*): every judge on every item,
``samples`` times (sample indexes 0..K-1), through the model layer and its response cache.
The outcomes become contract-3 judgment records and go through the same :func:`analyse` as
``harness calibrate --judgments``, so both paths give the same report.

What a judge is asked, by dataset kind:

- **Pointwise**: the item's ``text`` is judged as the agent's answer to its ``input`` (a
  one-exchange transcript; the item's ``context`` is shown as the reference answer) under the
  rubric, and one criterion's score is kept: the rubric's first criterion, or ``criterion``.
  How it is compared with the human labels (same scale, an explicit ``scale_map``, or the
  criterion's pass verdict for true/false labels) is in
  :mod:`harness.calibration.study_records`.
- **Pairwise**: the two outputs are compared under the rubric as a whole (or one criterion),
  with the item's ``input`` shown as the user's goal, by
  :func:`harness.judging.pairwise_judge.compare_pair`: every sample in both orders. Position
  consistency needs both, so that is the default (``swap=True``, the CLI's ``--swap``);
  ``swap=False`` asks only the original order, halving the calls, and the position
  statistics are then reported as undefined.

A call that fails after retries or re-asks is a missing score or verdict for that sample
(recorded with its error, counted, handled by the report's stated policy), never a score. A
configuration failure (missing key, unknown model, a replay-cache miss) would fail every call
alike, so it stops the study instead; what was judged is kept.

With several rubrics (two prompts for the same question), every (model, rubric) pair is its
own judge, with the id ``MODEL@RUBRIC_ID`` (with one rubric the id is the model name), so the
report compares prompts exactly as it compares models: paired, on the same items.

With ``out_dir`` the study is durable and resumable (:mod:`harness.calibration.study_dir`):
running it again with the same directory judges only what is missing or failed.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pydantic import ValidationError

from harness.calibration.analysis import analyse
from harness.calibration.datasets import (
    PairwiseDataset,
    PairwiseItem,
    PointwiseDataset,
    PointwiseItem,
    load_dataset,
)
from harness.calibration.judgments import (
    PairwiseJudgment,
    PointwiseJudgment,
    build_pairwise,
    build_pointwise,
)
from harness.calibration.report import AnalysisOptions, CalibrationReport
from harness.calibration.scale import Scale
from harness.calibration.study_dir import REPORT_PAGE_FILE, StudyDirectory, canonical_order
from harness.calibration.study_records import (
    Record,
    SampleResult,
    StudyCounts,
    StudySettings,
    choose_criterion,
    label_mode,
    pairwise_records,
    pointwise_record,
    pointwise_sample,
    raise_if_fatal,
)
from harness.choices import CacheMode
from harness.errors import InputError, ModelError
from harness.judging.batch import answer_transcript, resolve_rubrics
from harness.judging.context import JudgeContext
from harness.judging.judge import judge_once
from harness.judging.offline import PairwiseCase
from harness.judging.pairwise_judge import (
    PairwiseCriterion,
    PairwisePreference,
    StrictPairwisePreference,
    compare_pair,
)
from harness.judging.prompts import build_pairwise_prompt, template_hash
from harness.judging.rubric import Rubric
from harness.models.base import ChatModel, ModelSpec
from harness.models.batch_journal import journal_beside
from harness.models.config import CacheConfig, ModelsConfig
from harness.models.hub import ModelHub
from harness.models.mock import bind_offline
from harness.models.provenance import RoleCollector, roles_notice
from harness.models.request import ModelRequest
from harness.wording import plural

if TYPE_CHECKING:
    from harness.calibration.judgments import JudgmentSet

OFFLINE_NOTICE = (
    "OFFLINE: these numbers come from mock: models ({models}), not from a real judge; no model "
    "service was called. Use them to try the pipeline, not to decide whether to trust a judge."
)
# A labelled item has a request and an answer: no tool calls and no simulated user to judge.
TEXT_TARGETS = ("final_response", "conversation", "agent_turn")

ProgressCallback = Callable[[int, int], None]


class PageWriter(Protocol):
    """Writes a study's page from its report, judgments and dataset (the report layer's
    :func:`~harness.report.html.calibration_page.write_calibration_page`)."""

    def __call__(self, path: Path, report: CalibrationReport, judgments: JudgmentSet,
                 dataset: PointwiseDataset | PairwiseDataset, /) -> object: ...

Item = PointwiseItem | PairwiseItem


@dataclass(frozen=True)
class StudyPlan:
    """What every judge call of a study needs: its settings, the rubric, the criterion the
    pairwise judge compares on, and the records' scale (pointwise)."""

    settings: StudySettings
    rubric: Rubric
    pair_criterion: PairwiseCriterion | None
    scale: Scale | None


def plan_study(dataset_path: Path, dataset: PointwiseDataset | PairwiseDataset, rubric: Rubric,
               *, criterion: str | None, samples: int, swap: bool, allow_ties: bool,
               temperature: float | None, max_reasks: int,
               scale_map: Mapping[int, float] | None) -> StudyPlan:
    """Check the study's options against the dataset and rubric, before any model call.
    Raises InputError naming the option (or the dataset field) at fault."""
    if rubric.target not in TEXT_TARGETS:
        raise InputError("--rubric", None, f"rubric {rubric.id!r} judges {rubric.target}, which "
                         "a labelled item does not have; use a rubric whose target is one of "
                         f"{', '.join(TEXT_TARGETS)}")
    scale: Scale | None = None
    pair: PairwiseCriterion | None = None
    if isinstance(dataset, PointwiseDataset):
        if not swap:
            raise InputError("--no-swap", None, "only applies to pairwise datasets")
        chosen: str | None = choose_criterion(rubric, criterion)
        assert chosen is not None
        labels, scale = label_mode(dataset, rubric, chosen, scale_map)
        prompt_hash = template_hash(rubric.target)
    else:
        if scale_map is not None:
            raise InputError("--scale-map", None, "only applies to pointwise datasets")
        chosen = None if criterion is None else choose_criterion(rubric, criterion)
        labels, prompt_hash = "pairwise", template_hash("pairwise")
        if chosen is None:
            pair = PairwiseCriterion.from_rubric(rubric, allow_tie=allow_ties)
        else:
            crit = rubric.criterion(chosen)
            pair = PairwiseCriterion(id=crit.id, question=crit.question, allow_tie=allow_ties)
    try:
        settings = StudySettings(
            kind=dataset.kind, dataset=str(dataset_path),
            dataset_sha256=hashlib.sha256(dataset_path.read_bytes()).hexdigest(),
            rubric=rubric.label,
            rubric_sha256=hashlib.sha256(rubric.model_dump_json().encode()).hexdigest(),
            prompt_hash=prompt_hash, criterion=chosen, labels=labels,
            scale_map=dict(scale_map) if scale_map is not None else None, samples=samples,
            swap=swap, allow_ties=allow_ties, temperature=temperature, max_reasks=max_reasks)
    except ValidationError as err:
        first = err.errors()[0]
        option = "--" + str(first["loc"][0]).replace("_", "-")
        raise InputError(option, None, first["msg"]) from None
    return StudyPlan(settings, rubric, pair, scale)


# --- one judge sample ----------------------------------------------------------------------


async def judge_pointwise(model: ChatModel, plan: StudyPlan, item: PointwiseItem,
                          sample: int) -> SampleResult:
    """One sample of one pointwise item: the rubric judge on the item's text."""
    transcript = answer_transcript(item.text, question=item.input, item_id=item.item_id)
    context = JudgeContext(scenario_id=item.item_id, reference_answer=item.context)
    outcome = await judge_once(model, plan.rubric, transcript, context, sample_index=sample,
                               params=plan.settings.params(),
                               max_reasks=plan.settings.max_reasks)
    assert plan.settings.criterion is not None
    return pointwise_sample(outcome, plan.settings.criterion)


async def judge_pairwise(model: ChatModel, plan: StudyPlan, item: PairwiseItem,
                         sample: int) -> SampleResult:
    """One sample of one pairwise item, in both orders (or the original one only)."""
    criterion = plan.pair_criterion
    assert criterion is not None
    context = JudgeContext(scenario_id=item.item_id, goal=item.input)
    params, reasks = plan.settings.params(), plan.settings.max_reasks
    out = SampleResult()
    if plan.settings.swap:
        result = await compare_pair(model, criterion, item.output_a, item.output_b,
                                    pair_id=item.item_id, context=context, sample_index=sample,
                                    params=params, max_reasks=reasks)
        raise_if_fatal(result.error_type, result.message)
        answered = {order.swapped: order for order in result.orders}
        for swapped in (False, True):
            order = answered.get(swapped)
            out.verdicts[swapped] = order.verdict if order is not None else None
            if order is not None:
                out.said[swapped], out.reasoning[swapped] = order.said, order.reasoning
            else:
                out.errors[swapped] = f"{result.error_type}: {result.message}"
        return out
    # The original order alone: the very request compare_pair makes for it, so the two modes
    # share cache entries.
    prompt = build_pairwise_prompt(criterion, item.output_a, item.output_b, context)
    answer_model = PairwisePreference if criterion.allow_tie else StrictPairwisePreference
    try:
        judge = bind_offline(model, PairwiseCase(item.output_a, item.output_b,
                                                 criterion.allow_tie))
        response = await judge.structured(
            ModelRequest(prompt.messages, "judge", params=params, sample_index=sample,
                         max_reasks=reasks),
            answer_model)
    except ModelError as err:
        raise_if_fatal(type(err).__name__, str(err))
        out.verdicts[False] = None
        out.errors[False] = f"{type(err).__name__}: {err}"
        return out
    answer = response.value.model_dump()  # one of two models with the same two fields
    out.verdicts[False] = out.said[False] = answer["verdict"]
    out.reasoning[False] = answer["reasoning"]
    return out


# --- the study -----------------------------------------------------------------------------


def judge_id(model: str, rubric: Rubric, several_rubrics: bool) -> str:
    """The id a (model, rubric) pair is reported under: the model name, or ``MODEL@RUBRIC_ID``
    when the study compares several rubrics."""
    return f"{model}@{rubric.id}" if several_rubrics else model


class _Runner:
    """Judges the units not done yet, writing each unit's records as it finishes.
    ``judges`` maps each judge id to its model and its plan (rubric)."""

    def __init__(self, judges: Mapping[str, tuple[ChatModel, StudyPlan]], concurrency: int,
                 counts: StudyCounts, directory: StudyDirectory | None,
                 progress: ProgressCallback | None) -> None:
        self.judges, self.counts = judges, counts
        self.directory, self.progress = directory, progress
        # Batched samples wait on their batches, not on the provider: all go at once.
        batched = any(model.batched for model, _ in judges.values())
        self.semaphore = asyncio.Semaphore(1_000_000 if batched else concurrency)
        self.records: list[Record] = []

    async def _sample(self, model: ChatModel, plan: StudyPlan, item: Item, index: int
                      ) -> SampleResult:
        async with self.semaphore:
            if isinstance(item, PointwiseItem):
                return await judge_pointwise(model, plan, item, index)
            return await judge_pairwise(model, plan, item, index)

    async def _unit(self, judge_id: str, item: Item) -> None:
        model, plan = self.judges[judge_id]
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(self._sample(model, plan, item, i))
                     for i in range(plan.settings.samples)]
        results = [task.result() for task in tasks]
        offline = model.spec.is_offline
        records: list[Record]
        if isinstance(item, PointwiseItem):
            records = [pointwise_record(item, judge_id, results, plan.settings, plan.rubric,
                                        plan.scale, offline)]
        else:
            records = list(pairwise_records(item, judge_id, results, plan.settings, offline))
        self.counts.failed_calls += sum(len(r.errors) for r in results)
        self.counts.not_applicable += sum(r.not_applicable for r in results)
        self.counts.units_judged += 1
        self.records.extend(records)
        if self.directory is not None:
            self.directory.append(records)
        if self.progress is not None:
            self.progress(self.counts.units_resumed + self.counts.units_judged, self.counts.units)

    async def run(self, units: Sequence[tuple[str, Item]]) -> None:
        """Judge ``units`` concurrently. The first failure (a fatal model error, a budget)
        cancels the rest and is raised as itself; finished units stay written."""
        if self.progress is not None:
            self.progress(self.counts.units_resumed, self.counts.units)
        try:
            async with asyncio.TaskGroup() as group:
                for judge_id, item in units:
                    group.create_task(self._unit(judge_id, item))
        except BaseExceptionGroup as failures:
            first: BaseException = failures
            while isinstance(first, BaseExceptionGroup):
                first = first.exceptions[0]
            raise first from None


def _policy(settings: StudySettings) -> str:
    """How one rubric's judge answers were obtained and compared with the labels."""
    if settings.kind == "pointwise":
        how = {"levels": "its level is compared with the human labels directly (same scale)",
               "mapped": "its level is mapped onto the human scale by --scale-map "
                         + ",".join(f"{k}={v:g}" for k, v in (settings.scale_map or {}).items()),
               "pass": "its pass verdict (normalised score at or above the criterion's "
                       "threshold) is compared with the true/false human labels",
               }[settings.labels]
        return (f"judge scores: rubric {settings.rubric}, criterion {settings.criterion}, "
                f"{plural(settings.samples, 'sample')} per item; {how}; an N/A answer and a call "
                "that failed after retries are missing judge samples, never scores")
    orders = "both orders" if settings.swap else "the original order only (--no-swap)"
    return (f"judge verdicts: pairwise comparison under rubric {settings.rubric}"
            + (f", criterion {settings.criterion}" if settings.criterion else "")
            + f", {plural(settings.samples, 'sample')} per item in {orders}, ties "
            + ("allowed" if settings.allow_ties else "not allowed")
            + "; a call that failed after retries is a missing verdict")


def study_notes(settings: Sequence[StudySettings], models: Sequence[str],
                counts: StudyCounts, others: Sequence[str], threshold_note: str | None
                ) -> tuple[list[str], list[str]]:
    """The policies and notes a study adds to its report: how judge answers were obtained
    and compared (one policy per rubric), the offline notice for mock ``models`` (with the
    real judges beside them, and this invocation's calls and cost, when they are mixed),
    failed calls and N/A answers."""
    every = list(settings)
    offline = [m for m in models if ModelSpec.parse(m).is_offline]
    notes = []
    if offline and len(offline) == len(models):
        notes.append(OFFLINE_NOTICE.format(models=", ".join(offline)))
    elif offline:
        judges = RoleCollector()
        judges.add("judge", models, counts.usage)
        notice = roles_notice(judges.roles())
        assert notice is not None  # some judges are offline
        notes.append(notice)
    policies = [_policy(one) for one in every]
    if len(every) > 1:
        policies.append("several rubrics: each (model, rubric) pair is a judge of its own, "
                        "named MODEL@RUBRIC_ID, and compared with the others on the same items")
    if counts.failed_calls:
        missing = ("is a missing score/verdict" if counts.failed_calls == 1
                   else "are missing scores/verdicts")
        notes.append(f"{plural(counts.failed_calls, 'judge call')} failed after retries or "
                     f"re-asks and {missing} (see the policies); running the study again "
                     "with the same --out judges those items again")
    if counts.not_applicable:
        notes.append(f"{plural(counts.not_applicable, 'judge answer')} "
                     f"{'was' if counts.not_applicable == 1 else 'were'} N/A (missing judge "
                     "samples)")
    if threshold_note:
        notes.append(threshold_note)
    if others:
        notes.append(f"the study directory also holds judgments by {', '.join(others)}, not "
                     "asked for this time and left out of this report")
    return policies, notes


def _gate(plan: StudyPlan) -> float:
    """The criterion's own pass threshold in its scale's units."""
    assert plan.settings.criterion is not None
    crit = plan.rubric.criterion(plan.settings.criterion)
    levels = plan.rubric.scale_of(crit)
    return levels.lowest + plan.rubric.criterion_threshold(crit) * (
        levels.highest - levels.lowest)


def _default_threshold(plans: Sequence[StudyPlan], options: AnalysisOptions
                       ) -> tuple[AnalysisOptions, str | None]:
    """Numeric labels on the criterion's own scale, no --pass-threshold: use the criterion's
    own pass threshold in scale units, so pass/fail agreement is measured at the rubric's
    gate (the first rubric's, when several rubrics' criteria gate differently)."""
    first = plans[0].settings
    if options.pass_threshold is not None or first.labels != "levels":
        return options, None
    threshold = _gate(plans[0])
    note = (f"pass/fail statistics use criterion {first.criterion}'s own pass threshold, "
            f"{threshold:g} on its scale (rubric {first.rubric}); --pass-threshold overrides it")
    others = [p.settings.rubric for p in plans[1:] if _gate(p) != threshold]
    if others:
        note += (f"; the criteria of rubric(s) {', '.join(others)} gate elsewhere, but one "
                 "threshold applies to every judge")
    return options.model_copy(update={"pass_threshold": threshold}), note


async def run_calibration(
    dataset_path: str | Path,
    judges: Sequence[str],
    rubric_id: str | Sequence[str],
    *,
    samples: int = 1,
    out_dir: str | Path | None = None,
    criterion: str | None = None,
    scale_map: Mapping[int, float] | None = None,
    swap: bool = True,
    allow_ties: bool = True,
    temperature: float | None = None,
    max_reasks: int = 2,
    concurrency: int = 8,
    options: AnalysisOptions | None = None,
    rubric_dirs: Sequence[str | Path] = (),
    models: ModelsConfig | None = None,
    cache_path: str | Path | None = None,
    cache_mode: CacheMode = "read-write",
    base_url: str | None = None,
    hub: ModelHub | None = None,
    progress: ProgressCallback | None = None,
    write_page: PageWriter | None = None,
    judge_batch: bool = False,
) -> CalibrationReport:
    """Run ``judges`` (``provider:model``; ``mock:judge`` runs offline) on every item of the
    labelled dataset at ``dataset_path`` under rubric ``rubric_id``, ``samples`` times each,
    and analyse the judgments into a :class:`CalibrationReport` (see the module docstring).
    Several rubric ids make every (model, rubric) pair a judge of its own, ``MODEL@RUBRIC_ID``.

    ``out_dir`` makes the study durable and resumable; at the end it holds the report as
    ``report.json`` and, when ``write_page`` is given (the commands give
    :func:`harness.report.html.calibration_page.write_calibration_page`), as a page,
    ``report.html``: pages belong to the report layer, above this one. ``concurrency`` bounds
    judge samples in flight (a pairwise sample is two calls). ``options`` are the analysis
    options: their ``scale`` overrides the dataset's; without a ``pass_threshold``, numeric
    labels on the criterion's own scale get the criterion's pass threshold. Models come from
    ``hub`` when given (left open), else from a hub built from ``models`` with the response
    cache at ``cache_path`` (``cache_mode``); ``base_url`` points non-mock judges at an
    OpenAI-compatible server. ``progress(done, total)`` is called as (judge, item) units finish.
    ``judge_batch`` sends the judges' requests through their providers' batch APIs,
    journalled in ``out_dir`` (else beside the response cache), so the same command run again
    after a stop waits for the batches it sent instead of sending them again.

    Raises InputError for a bad dataset, option, rubric, criterion, scale mismatch (also
    between two rubrics' criteria), or a study directory with other settings;
    ModelConfigError for a bad model name, a missing key or a replay-cache miss (what was
    judged before it stays in ``out_dir``).
    """
    path = Path(dataset_path)
    options = options or AnalysisOptions()
    model_names = list(dict.fromkeys(judges))
    if not model_names:
        raise InputError("--judge", None, "at least one judge model is needed")
    if concurrency < 1:
        raise InputError("--concurrency", None, f"expected at least 1, got {concurrency}")
    for name in model_names:
        ModelSpec.parse(name)  # a malformed name fails before any work
    rubric_ids = [rubric_id] if isinstance(rubric_id, str) else list(rubric_id)
    if not rubric_ids:
        raise InputError("--rubric", None, "at least one rubric is needed")
    rubrics = resolve_rubrics(rubric_ids, rubric_dirs)
    dataset = load_dataset(path, scale=options.scale)
    plans = [plan_study(path, dataset, rubric, criterion=criterion, samples=samples, swap=swap,
                        allow_ties=allow_ties, temperature=temperature, max_reasks=max_reasks,
                        scale_map=scale_map) for rubric in rubrics]
    _check_same_scale(plans)
    all_settings = [plan.settings for plan in plans]
    several = len(plans) > 1
    plan_of = {judge_id(model, plan.rubric, several): (model, plan)
               for model in model_names for plan in plans}
    judge_ids = list(plan_of)
    item_ids = [item.item_id for item in dataset.items]
    directory = StudyDirectory(Path(out_dir)) if out_dir is not None else None
    done = directory.open(all_settings, judge_ids, item_ids) if directory is not None else set()
    counts = StudyCounts(units=len(judge_ids) * len(item_ids), units_resumed=len(done))

    config = models or ModelsConfig()
    if cache_path is not None:
        config = config.model_copy(
            update={"cache": CacheConfig(path=Path(cache_path), mode=cache_mode)})
    active = hub or ModelHub(config)
    if judge_batch:
        active.enable_batches(Path(out_dir) / "batches.sqlite" if out_dir is not None
                              else journal_beside(active.cache))
    try:
        chat_models = {name: active.get(name, base_url=None if name.startswith("mock:")
                                        else base_url) for name in model_names}
        runner = _Runner({jid: (chat_models[model], plan) for jid, (model, plan)
                          in plan_of.items()}, concurrency, counts, directory, progress)
        if directory is not None:
            directory.write_study(all_settings, judge_ids, counts, "running")
        try:
            await runner.run([(jid, item) for jid in judge_ids for item in dataset.items
                              if (jid, item.item_id) not in done])
        finally:
            counts.usage = active.ledger.total.as_dict()
            if directory is not None:
                directory.close()
                directory.write_study(all_settings, judge_ids, counts, "running")
    finally:
        if hub is None:
            await active.aclose()

    everything = [*(directory.kept if directory is not None else []), *runner.records]
    wanted = set(judge_ids)
    ours = canonical_order([r for r in everything if (r.judge_id or "") in wanted],
                           judge_ids, item_ids)
    others = list(dict.fromkeys(r.judge_id or "" for r in everything
                                if (r.judge_id or "") not in wanted))
    options, threshold_note = _default_threshold(plans, options)
    data = (build_pointwise([r for r in ours if isinstance(r, PointwiseJudgment)], str(path),
                            scale=plans[0].scale, off_scale=dataset.off_scale)
            if isinstance(dataset, PointwiseDataset)
            else build_pairwise([r for r in ours if isinstance(r, PairwiseJudgment)], str(path),
                                off_scale=dataset.off_scale))
    report = analyse(data, options)
    policies, notes = study_notes(all_settings, model_names, counts, others, threshold_note)
    report = report.model_copy(update={"policies": [*policies, *report.policies],
                                       "notes": [*notes, *report.notes]})
    if directory is not None:
        directory.rewrite(everything, judge_ids, item_ids)
        directory.write_report(report.to_json_dict())
        directory.write_study(all_settings, judge_ids, counts, "finished")
        if write_page is not None:
            write_page(directory.path / REPORT_PAGE_FILE, report, data, dataset)
    return report


def _check_same_scale(plans: Sequence[StudyPlan]) -> None:
    """Every rubric's judge scores must land on one scale, or they cannot share a report."""
    first = plans[0]
    for plan in plans[1:]:
        if plan.scale != first.scale or plan.settings.labels != first.settings.labels:
            def says(p: StudyPlan) -> str:
                scale = p.scale.describe() if p.scale is not None else "no declared scale"
                return (f"rubric {p.rubric.id!r} (criterion {p.settings.criterion!r}) gives "
                        f"{p.settings.labels} on {scale}")
            raise InputError("--rubric", None, f"{says(first)}, but {says(plan)}; prompts are "
                             "compared on the same scale: choose criteria on one scale "
                             "(--criterion) or map them (--scale-map)")


__all__ = [
    "OFFLINE_NOTICE",
    "TEXT_TARGETS",
    "StudyPlan",
    "judge_id",
    "judge_pairwise",
    "judge_pointwise",
    "plan_study",
    "run_calibration",
    "study_notes",
]
