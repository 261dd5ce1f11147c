"""What a run directory reports: ``summary.json`` (the suite figures, each with its interval,
n and method) and ``samples.jsonl`` (one line per sample), both computed from the store.

``samples.jsonl`` lines (stable; ``harness stats`` reads them directly, skipping samples that
are not ``scored``)::

    {"scenario_id": str, "epoch": int, "status": "scored" | "errored" | "unscored",
     "score": float | null, "passed": bool | null, "metrics": {name: float},
     "judge_scores": [float, ...]        (only when judged several times),
     "stop_reason": str, "error": {"kind", "message", "role"} | null,
     "usage": {role: {calls, cached_calls, input_tokens, output_tokens, latency_s, cost_usd,
                      unpriced_calls}},
     "duration_s": float, "models": {role: [model, ...]}, "offline": bool,
     "simulator_findings": [{"kind", "turn", "evidence"}, ...]   (only when there are some),
     "attribution": {"party", "reason", "evidence"}   (only for a failed or errored sample),
     "rerun": {"attempt", "sample_index", "replaced"}   (only for a sample run again)}

``summary.json`` is a :class:`~harness.runs.summary_model.RunSummary` (its keys are documented
in docs/reports.md, "Run outputs").
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from harness.checks.failures import JudgeFailure, analyse_failures
from harness.checks.result import CheckReport, CheckResult
from harness.files import atomic_write, read_text, write_text_atomic
from harness.json_values import STORED_DEPTH, load_json
from harness.judging.rubric import judges_the_simulator
from harness.models.provenance import RoleCollector, roles_notice
from harness.runs.attribution_figures import AttributionCollector, without_simulator_figures
from harness.runs.config import RunConfig
from harness.runs.failure_attribution import attribute
from harness.runs.judge_record import mixed_judge_notes, read_judge_record
from harness.runs.latency import LatencyCollector
from harness.runs.sample import SampleRecord
from harness.runs.shards import ShardCoverage
from harness.runs.simulator_figures import SimulatorCollector
from harness.runs.store import RunStore
from harness.runs.summary_model import (
    SUMMARY_SCHEMA,
    SUMMARY_SCHEMA_VERSION,
    AdaptiveReport,
    ErrorPolicyNote,
    MetricSummary,
    RunCounts,
    RunStop,
    RunSummary,
    RunUsage,
    SampleError,
    TagFigures,
    check_summary,
)
from harness.runs.tool_figures import ToolCollector
from harness.scenarios.selectors import ScenarioFilter, select_stored
from harness.stats.estimate import InsufficientDataError, mean_of_cluster_means
from harness.stats.suite import suite_stats
from harness.stats.summary import SuiteSummary, design_power, offline_notice, stats_summary
from harness.transcript import UsageTotals
from harness.version import __version__

MAX_LISTED_ERRORS = 200


def sample_line(record: SampleRecord) -> dict[str, Any]:
    """One ``samples.jsonl`` line (see the module docstring)."""
    line: dict[str, Any] = {
        "scenario_id": record.scenario_id,
        "epoch": record.epoch,
        "status": record.status,
        "score": record.score,
        "passed": record.passed,
        "metrics": record.metrics,
    }
    if record.score_by_judge_sample:
        line["judge_scores"] = record.score_by_judge_sample
    line.update(
        stop_reason=record.transcript.stop_reason,
        error=None if record.error is None else record.error.model_dump(mode="json"),
        usage={role: u.model_dump(mode="json") for role, u in record.usage.items()},
        duration_s=round(record.finished_at - record.started_at, 6),
        models=record.models,
        offline=record.offline,
    )
    if record.simulator_findings:
        line["simulator_findings"] = [f.model_dump(mode="json")
                                      for f in record.simulator_findings]
    if record.attribution is not None:
        line["attribution"] = record.attribution.model_dump(mode="json")
    if record.rerun is not None:
        line["rerun"] = record.rerun.model_dump(mode="json")
    return line


def failure_evidence(report: CheckReport) -> CheckReport:
    """``report`` cut down to what :func:`analyse_failures` reads (the sample's id and error,
    and each check with findings, with those findings), so that it gives the same analysis.
    The summary keeps one report per sample; whole ones, details included, made the memory
    of the summary grow by ~20 kB per sample (some 200 MB over 10,000 samples)."""
    return CheckReport(
        scenario_id=report.scenario_id,
        epoch=report.epoch,
        error=report.error,
        results=[CheckResult(name=r.name, value=r.value, passed=r.passed, findings=r.findings)
                 for r in report.results if r.findings],
    )


class _Collector:
    """One pass over the stored samples, keeping only what the summary needs (a transcript
    is never held beyond its own sample, so memory does not grow with the run)."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.scores: dict[str, list[float]] = defaultdict(list)
        self.passed: dict[str, list[bool]] = defaultdict(list)
        self.judge_scores: dict[str, list[list[float]]] = defaultdict(list)
        self.metrics: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        self.status: Counter[str] = Counter()
        self.stop_reasons: Counter[str] = Counter()
        self.errors_by_kind: Counter[str] = Counter()
        self.errors: list[SampleError] = []
        self.check_reports: list[CheckReport] = []
        self.judge_failures: list[JudgeFailure] = []
        self.usage: dict[str, UsageTotals] = {}
        self.n_offline = 0
        self.roles = RoleCollector()
        self.scenarios: set[str] = set()
        self.tag_scenarios: dict[str, set[str]] = defaultdict(set)
        self.tag_status: dict[str, Counter[str]] = defaultdict(Counter)
        self.latency = LatencyCollector()
        self.tools = ToolCollector()
        self.simulator = SimulatorCollector()
        self.attribution = AttributionCollector()
        # per scenario, lined up with ``scores``: whether that sample's failure is the
        # simulator's (for the agent's figures without those samples)
        self.simulator_fault: dict[str, list[bool]] = defaultdict(list)

    def add(self, record: SampleRecord) -> None:
        sid = record.scenario_id
        self.scenarios.add(sid)
        self.latency.add(record)
        self.tools.add(record)
        self.simulator.add(record)
        if record.attribution is None:  # a store written before attributions were kept
            record.attribution = attribute(record)
        attribution = record.attribution
        self.attribution.add(record, attribution)
        self.status[record.status] += 1
        for tag in record.tags:
            self.tag_scenarios[tag].add(sid)
            self.tag_status[tag][record.status] += 1
        self.stop_reasons[record.transcript.stop_reason] += 1
        self.n_offline += record.offline
        for role, totals in record.usage.items():
            self.usage.setdefault(role, UsageTotals()).merge(totals)
        for role, models in record.models.items():
            usage = record.usage.get(role)
            self.roles.add(role, models, None if usage is None else usage.model_dump())
        if record.status == "errored":
            assert record.error is not None
            self.errors_by_kind[record.error.kind] += 1
            if len(self.errors) < MAX_LISTED_ERRORS:
                self.errors.append(SampleError(scenario_id=sid, epoch=record.epoch,
                                               **dict(record.error)))
            if self.config.design.error_policy == "as_failures":
                self.scores[sid].append(0.0)
                self.passed[sid].append(False)
                self.simulator_fault[sid].append(False)
            return
        for name, value in record.metrics.items():
            self.metrics[name][sid].append(value)
        for report in record.checks:
            self.check_reports.append(failure_evidence(CheckReport.model_validate(report)))
        for judgment in record.judgments:
            if judges_the_simulator(judgment.get("target")):
                continue  # the simulator's failing, not a lead for fixing the agent
            for criterion in judgment.get("failed_criteria", []):
                self.judge_failures.append(JudgeFailure(
                    scenario_id=sid, epoch=record.epoch, rubric_id=judgment["rubric_id"],
                    criterion_id=criterion))
        if record.status == "scored":
            assert record.score is not None and record.passed is not None
            self.scores[sid].append(record.score)
            self.passed[sid].append(record.passed)
            self.judge_scores[sid].append(record.score_by_judge_sample)
            self.simulator_fault[sid].append(attribution is not None
                                             and attribution.party == "simulator")


def summarise(store: RunStore, config: RunConfig, *, run_dir: Path,
              stopped: RunStop | None = None, adaptive: AdaptiveReport | None = None,
              scenarios_loaded: int | None = None,
              shards: ShardCoverage | None = None) -> RunSummary:
    """Compute the run summary from the store, writing ``samples.jsonl`` on the way (in one
    step: an error leaves the previous file, and no temporary file). ``stopped`` says why the
    run stopped early, ``adaptive`` what adaptive sampling did; ``scenarios_loaded`` (the
    suite's size) lets the counts say how much of the plan has samples when a run stopped
    early; ``shards`` says which shards of the grid a shard's run or a merged run holds (a
    shard's run plans only its shard's samples). Raises
    :class:`~harness.errors.InputError` when ``samples.jsonl`` cannot be written."""
    collector = _Collector(config)
    with atomic_write(run_dir / "samples.jsonl") as out:
        for record in store.iter_samples():
            collector.add(record)
            out.write(json.dumps(sample_line(record), ensure_ascii=False) + "\n")
    return _summary(collector, store, config, scenarios_loaded=scenarios_loaded,
                    stopped=stopped, adaptive=adaptive, shards=shards)


def _score_section(c: _Collector, config: RunConfig) -> tuple[SuiteSummary | None, list[str]]:
    scores = {sid: xs for sid, xs in c.scores.items() if xs}
    if not scores:
        return None, ["no scored samples: no suite figures can be computed"]
    judge, judge_note = _judge_scores(c, config, scores)
    try:
        suite = suite_stats(
            scores, {sid: c.passed[sid] for sid in scores}, judge_scores=judge,
            confidence=config.design.confidence, seed=config.design.seed,
            bootstrap_resamples=config.design.bootstrap_resamples if len(scores) >= 2 else 0,
        )
    except InsufficientDataError as err:
        return None, [str(err)]
    return stats_summary(suite, power=design_power(suite)), [judge_note] if judge_note else []


def tag_figures(c: _Collector, config: RunConfig) -> dict[str, TagFigures]:
    """Each tag's mean and pass rate, from :func:`~harness.stats.suite.suite_stats` on the
    tag's scenarios alone, as the suite's are computed (same error policy, confidence and
    scenario order, so a run of only those scenarios gives the same numbers)."""
    out: dict[str, TagFigures] = {}
    for tag in sorted(c.tag_scenarios):
        members = c.tag_scenarios[tag]
        scores = {sid: xs for sid, xs in c.scores.items() if xs and sid in members}
        suite = suite_stats(scores, {sid: c.passed[sid] for sid in scores},
                            confidence=config.design.confidence, seed=config.design.seed,
                            bootstrap_resamples=0) if scores else None
        status = c.tag_status[tag]
        out[tag] = TagFigures(
            scenarios=len(members), samples=sum(status.values()), scored=status["scored"],
            mean=None if suite is None else suite.mean,
            pass_rate=None if suite is None else suite.pass_rate)
    return out


def _judge_scores(
    c: _Collector, config: RunConfig, scores: dict[str, list[float]]
) -> tuple[dict[str, list[list[float]]] | None, str | None]:
    """Each scored sample's scores with each judge sample, when every figure's sample has at
    least two (else judge noise cannot be told apart from agent noise), or the reason why
    not (a note for the summary)."""
    if config.design.no_judge:
        return None, "judge noise: not measured, judging was skipped (--no-judge)"
    if config.design.judge_samples is not None and config.design.judge_samples < 2:
        return None, ("judge noise: not separated from agent noise (each transcript was judged "
                      "once; run with --judge-samples 2 or more to separate it); the "
                      "within-scenario variance includes any judge noise")
    n_figures = sum(len(xs) for xs in scores.values())
    n_judged = sum(len(js) >= 2 for sid in scores for js in c.judge_scores.get(sid, []))
    if n_judged < n_figures:
        n_failures = n_figures - sum(len(c.judge_scores.get(sid, [])) for sid in scores)
        why = (f"{n_failures} errored samples count as failures (--errors-as-failures) and "
               "have no judge samples" if n_failures else
               f"{n_figures - n_judged} of {n_figures} scored samples have fewer than 2 judge "
               "samples (a scenario without rubrics, a rubric judged once: give "
               "--judge-samples 2 or more, or judge samples that failed)")
        return None, f"judge noise: not separated from agent noise: {why}"
    return {sid: c.judge_scores[sid] for sid in scores}, None


def metric_summaries(metrics: dict[str, dict[str, list[float]]],
                     confidence: float) -> dict[str, MetricSummary]:
    """Each metric's mean of scenario means with its clustered interval (and n)."""
    out: dict[str, MetricSummary] = {}
    for name in sorted(metrics):
        per_scenario = metrics[name]
        means = [sum(v) / len(v) for v in per_scenario.values() if v]
        n = sum(len(v) for v in per_scenario.values())
        estimate = mean_of_cluster_means(
            means, confidence=confidence, n=n, bounds=(0.0, 1.0),
            method="mean of scenario means; SE clustered by scenario; t interval on C-1 df",
        )
        out[name] = MetricSummary(**dict(estimate), n_scenarios=len(means))
    return out


def _shard_notes(shards: ShardCoverage | None, config: RunConfig) -> list[str]:
    """What a shard's run or a merged run covers of the grid, when its figures do not cover
    all of it (a complete merge needs no note: its figures are the suite's)."""
    if shards is None:
        return []
    grid = ("" if shards.grid_samples is None
            else f" of the grid's {shards.grid_samples} samples (scenarios x epochs)")
    if config.design.shard is not None:
        if shards.held_samples == 0:
            return [f"shard {config.design.shard} holds no sample{grid}: nothing ran, and it "
                    "merges fine"]
        return [f"shard {config.design.shard} holds {shards.held_samples}{grid}: its figures cover "
                "only those; harness merge combines the shards' runs into the suite's"]
    if not shards.missing:
        return []
    held = shards.label(shards.held) or "none"
    lacking = ("" if shards.grid_samples is None or shards.held_samples is None
               else f" ({shards.grid_samples - shards.held_samples} samples)")
    return [f"merged shards {held}; missing {shards.label(shards.missing)}{lacking}: the "
            "figures cover only the shards merged"]


def _summary(c: _Collector, store: RunStore, config: RunConfig, *,
             scenarios_loaded: int | None, stopped: RunStop | None,
             adaptive: AdaptiveReport | None, shards: ShardCoverage | None = None) -> RunSummary:
    score, notes = _score_section(c, config)
    judge = read_judge_record(store)
    notes = [*notes, *_shard_notes(shards, config), *mixed_judge_notes(judge)]
    planned = (None if scenarios_loaded is None or config.design.adaptive is not None
               else scenarios_loaded * config.design.epochs)
    if shards is not None and config.design.shard is not None:
        planned = shards.held_samples  # a shard's run plans its own part of the grid
    n_errored = c.status.get("errored", 0)
    policy_text = (
        "errored samples are excluded from every figure and listed under 'errors'"
        if config.design.error_policy == "exclude"
        else "errored samples count as failures (score 0, not passed) in every figure"
    )
    roles = c.roles.roles()
    return RunSummary(
        schema=SUMMARY_SCHEMA,
        schema_version=SUMMARY_SCHEMA_VERSION,
        harness_version=__version__,
        offline=c.n_offline > 0,
        # Samples stored before roles were recorded say only whether they were offline.
        notice=roles_notice(roles) or offline_notice(c.n_offline, sum(c.status.values())),
        roles=roles,
        config=config,
        counts=RunCounts(
            scenarios=len(c.scenarios),
            scenarios_loaded=scenarios_loaded,
            # a fixed design plans every scenario x epoch; an adaptive one decides as it goes
            samples_planned=planned,
            samples=sum(c.status.values()),
            scored=c.status.get("scored", 0),
            errored=n_errored,
            unscored=c.status.get("unscored", 0),
            stop_reasons=dict(c.stop_reasons),
            errors_by_kind=dict(c.errors_by_kind),
        ),
        error_policy=ErrorPolicyNote(policy=config.design.error_policy, meaning=policy_text,
                                     errored_samples=n_errored),
        score=score,
        metrics=metric_summaries(c.metrics, config.design.confidence),
        errors=c.errors,
        failure_analysis=analyse_failures(c.check_reports, c.judge_failures),
        usage=RunUsage(
            by_role=dict(sorted(c.usage.items())),
            total_cost_usd=sum(u.cost_usd for u in c.usage.values()),
            unpriced_calls=sum(u.unpriced_calls for u in c.usage.values()),
        ),
        events=store.events(),
        notes=notes,
        adaptive=adaptive,
        stopped=stopped,
        tags=tag_figures(c, config),
        latency=c.latency.latency(),
        tools=c.tools.tools(config.design.confidence),
        shards=shards,
        judge=judge,
        simulator=c.simulator.figures(config.design.confidence),
        attribution=c.attribution.figures(
            without_simulator_figures(c.scores, c.passed, c.simulator_fault,
                                      confidence=config.design.confidence,
                                      seed=config.design.seed)
            if c.attribution.simulator_samples else None,
            config.design.confidence),
    )


def summary_so_far(store: RunStore) -> RunSummary:
    """The summary of what ``store`` holds now, under its stored configuration, as the run
    will write it (for a run still going, or one stopped before writing ``summary.json``).
    Nothing is written; the store may be read-only. Raises
    :class:`~harness.runs.store.StoreError` when the store cannot be read."""
    config = store.run_config()
    collector = _Collector(config)
    for record in store.iter_samples():
        collector.add(record)
    ids = store.scenario_ids()
    session = store.session() or {}
    planned = session.get("planned")
    summary = _summary(collector, store, config, stopped=None, adaptive=None,
                       scenarios_loaded=None if ids is None else len(ids))
    if isinstance(planned, int):  # a shard's run plans its shard, as the session recorded
        counts = summary.counts.model_copy(update={"samples_planned": planned})
        summary = summary.model_copy(update={"counts": counts})
    return summary


def summarise_selection(run_dir: Path, selector: ScenarioFilter) -> RunSummary:
    """The summary of the stored samples of the scenarios ``selector`` keeps, computed from
    the run's store under its configuration (as in its ``summary.json``), with a note naming
    the selection. Nothing is written.

    Raises :class:`InputError` when the summary cannot be read or the selector keeps no
    stored scenario (see :func:`~harness.scenarios.selectors.select_stored`), and
    :class:`~harness.runs.store.StoreError` for a store that cannot be read."""
    stored = read_summary(run_dir)
    collector = _Collector(stored.config)
    with RunStore.open(run_dir) as store:
        keep = select_stored(store.scenario_tags(), selector, run_dir)
        for record in store.iter_samples():
            if record.scenario_id in keep:
                collector.add(record)
        summary = _summary(collector, store, stored.config, scenarios_loaded=None,
                           stopped=stored.stopped, adaptive=None)
    note = (f"selected with {selector.describe()}: {len(keep)} of "
            f"{stored.counts.scenarios} scenarios; the figures cover only these")
    return summary.model_copy(update={"notes": [note, *summary.notes]})


def write_summary(run_dir: Path, summary: RunSummary) -> Path:
    """Write ``summary.json`` (indented JSON, non-ASCII characters kept) atomically: a crash
    never leaves half a file, nor a temporary one. Raises
    :class:`~harness.errors.InputError` when it cannot be written."""
    path = run_dir / "summary.json"
    write_text_atomic(path, summary.model_dump_json(indent=2) + "\n")
    return path


def read_summary(path: Path) -> RunSummary:
    """Read a run's ``summary.json`` (``path`` is the run directory or the file itself) into
    the model it was written from (see :func:`~harness.runs.summary_model.check_summary`).
    Nothing is written.

    Raises :class:`InputError` naming the file (and the field) when it cannot be read, is not
    JSON, is not a run summary, has another ``schema_version`` or a field missing, of the
    wrong type or unknown."""
    from harness.errors import InputError

    file = path / "summary.json" if path.is_dir() else path
    text = read_text(file, "a run summary (summary.json in a run directory)")
    try:
        data = load_json(text, file, max_depth=STORED_DEPTH)
    except ValueError as err:
        raise InputError(file, None, f"not valid JSON ({err})") from None
    return check_summary(data, str(file))


def scores_by_scenario(
    store: RunStore, policy: str
) -> tuple[dict[str, list[float]], dict[str, list[bool]]]:
    """Per-scenario scores and pass flags under the error policy, in epoch order (for
    adaptive sampling and paired comparison)."""
    scores: dict[str, list[float]] = defaultdict(list)
    passed: dict[str, list[bool]] = defaultdict(list)
    for sid, _epoch, score, ok in sample_scores(store, policy):
        scores[sid].append(score)
        passed[sid].append(ok)
    return dict(scores), dict(passed)


def sample_scores(store: RunStore, policy: str) -> list[tuple[str, int, float, bool]]:
    """``(scenario_id, epoch, score, passed)`` of every sample that counts under the error
    policy, by scenario then epoch: scored samples, and errored ones as failures (score 0)
    when ``policy`` is ``as_failures``. The one rule every paired or crossed figure reads."""
    rows = []
    for sid, epoch, status, score, ok in store.score_rows():
        if status == "scored" and score is not None:
            rows.append((sid, epoch, score, bool(ok)))
        elif status == "errored" and policy == "as_failures":
            rows.append((sid, epoch, 0.0, False))
    return rows
