"""The run page: a run directory's summary and every sample, as one HTML file.

The summary's figures come from ``summary.json`` (read through the model that writes it);
the samples come from the store, one at a time: each becomes a row of the samples table
(server-rendered, so it reads with scripts off) and a compact record for the drill-down
(embedded as data, rendered by the page's script on demand). The latency figures and the
per-tool table are the summary's (:mod:`harness.runs.latency`,
:mod:`harness.runs.tool_figures`); for a summary written before they were, they are computed
from the store in the same pass, by the same code.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.calibration.run_agreement import RunLabels, store_labels_report
from harness.checks.result import CheckResult
from harness.errors import InputError
from harness.json_values import load_json
from harness.judging.rubric import judges_the_simulator
from harness.models.types import Message
from harness.report.corrected import corrected_notes
from harness.report.html.page import embedded_data, render_page, write_page
from harness.report.html.plots import (
    Forest,
    ForestPoint,
    LineChart,
    Segment,
    Series,
    forest,
    line_chart,
    shares_bar,
)
from harness.report.html.sample_outcome import (
    RubricRule,
    builtin_rubric_rules,
    failed_because,
    rubric_rule_text,
    rubric_rules,
)
from harness.report.run_labels import STATISTIC_NAMES, agreement_notes, labels_line
from harness.report.terminal import handful_of_k
from harness.runs.failure_attribution import attribute
from harness.runs.latency import LatencyCollector
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore
from harness.runs.summary import read_summary
from harness.runs.summary_model import RunSummary
from harness.runs.tool_figures import ToolCollector
from harness.stats.summary import SuiteSummary
from harness.wording import plural

REPORT_FILENAME = "report.html"
MAX_FOREST_ROWS = 200  # a taller plot is a scroll, not a picture
GROUPS_SHOWN = 8  # failure groups shown open; the rest, touching fewer samples, folded
# Folders a command names itself inside its own output folder (``harness demo`` writes the
# suite's run to ``<out>/suite``): the run is then called by the folder above.
COMMAND_SUBFOLDERS = frozenset({"suite"})


def failure_kinds(record: SampleRecord) -> list[str]:
    """What went wrong in a sample, for the filters: the kinds of the checks' findings, a
    failed judge criterion (of a rubric judging the agent), or the error's kind for an
    errored sample."""
    kinds: set[str] = set()
    if record.error is not None:
        kinds.add(f"error: {record.error.kind}")
    for report in record.checks:
        for result in report.get("results", []):
            kinds.update(f["kind"] for f in result.get("findings", []))
    if any(j.get("failed_criteria") and not judges_the_simulator(j.get("target"))
           for j in record.judgments):
        kinds.add("judge_failed_criterion")
    return sorted(kinds)


def _reference_trajectory(checks: list[dict[str, Any]]) -> dict[str, Any] | None:
    for report in checks:
        for result in report.get("results", []):
            if result.get("name") == "trajectory_any_order_match":
                details = result.get("details") or {}
                # None: a run stored before checks kept the whole reference
                return {"reference": details.get("reference"),
                        "pairs": details.get("pairs", [])}
    return None


def _call_outcome(result: Any, error: str | None, is_error: bool,
                  latency_s: float | None) -> dict[str, Any]:
    return {"result": result, "error": error, "is_error": is_error, "latency_s": latency_s}


def _result_value(content: str) -> Any:
    try:
        return load_json(content, "a tool result")
    except (ValueError, InputError):
        return content


def _message_views(messages: list[Message], outcomes: dict[str, dict[str, Any]]
                   ) -> list[dict[str, Any]]:
    """Messages as the drill-down draws them: each tool call with its outcome (from
    ``outcomes`` by call id), tool results shown with their call rather than apart."""
    missing = _call_outcome(None, None, False, None)
    return [{"role": m.role, "content": m.content,
             "tool_calls": [{"name": c.name, "arguments": c.arguments, "raw": c.raw_arguments,
                             **outcomes.get(c.id, missing)} for c in m.tool_calls]}
            for m in messages if m.role != "tool"]


def sample_view(record: SampleRecord,
                rules: Mapping[tuple[str, str], RubricRule] | None = None) -> dict[str, Any]:
    """What the drill-down shows of one sample (the page's script renders it): the
    conversation with each tool call's arguments and result, the stop reason, the error,
    every check (value, verdict, details, findings), the reference trajectory against the
    actual one, and every rubric with each criterion's votes and each judge sample's score,
    reasoning and quoted evidence (for a grounding rubric, each sentence with its label,
    reasoning and evidence; for a ``user_turn`` rubric, each user turn's combined verdict
    under ``user_turns``). The simulated user's findings (kind, turn, evidence) come
    under ``simulator_findings``, apart from the agent's. A given history
    (``user.history``) comes apart from the conversation, under ``history``.
    ``failed_because`` names what failed a failed sample, and each rubric's ``rule`` says
    how its verdict was reached (``rules``: the rubrics' thresholds, when known; the
    built-in rubrics' when not given)."""
    rules = builtin_rubric_rules() if rules is None else rules
    t = record.transcript
    live = {c.call_id: _call_outcome(c.result, c.error, c.is_error, c.latency_s)
            for c in t.tool_calls}
    given = {m.tool_call_id: _call_outcome(_result_value(m.content), None, m.is_error, None)
             for m in t.history if m.role == "tool" and m.tool_call_id}
    judgments = []
    for j in record.judgments:
        samples = [{
            "judge": s.get("judge_model"), "sample": s.get("sample_index"),
            "error": s.get("error"),
            "verdicts": [{k: v.get(k) for k in ("criterion_id", "score", "normalised", "turn",
                                                "reasoning", "evidence",
                                                "unverified_evidence")}
                         for v in s.get("verdicts", [])],
            "sentences": [{k: v.get(k) for k in ("answer", "sentence", "label", "reasoning",
                                                 "evidence", "unverified_evidence",
                                                 "in_answer")}
                          for v in s.get("sentences", [])],
        } for s in j.get("judgments", [])]
        judgments.append({
            "rubric_id": j.get("rubric_id"), "target": j.get("target"),
            "judges_simulator": judges_the_simulator(j.get("target")), "score": j.get("score"),
            "passed": j.get("passed"), "status": j.get("status"),
            "unscored_reason": j.get("unscored_reason"), "error": j.get("error"),
            "criteria": [{k: c.get(k) for k in ("criterion_id", "value", "passed", "votes")}
                         for c in j.get("criteria", [])],
            "samples": samples, "rule": rubric_rule_text(j, rules),
            "user_turns": [{k: t.get(k) for k in ("turn", "checked", "passed", "value",
                                                  "failed_criteria", "reason", "votes")}
                           for t in j.get("user_turns", [])],
        })
    # ``gating`` spelled out for the page (the stored JSON leaves it out where it is implied)
    checks = [{**r, "gating": CheckResult.model_validate(r).gating}
              for report in record.checks for r in report.get("results", [])]
    trajectory = _reference_trajectory(record.checks)
    return {
        "scenario_id": record.scenario_id, "epoch": record.epoch, "status": record.status,
        "score": record.score, "passed": record.passed, "tags": record.tags,
        "stop_reason": t.stop_reason, "stop_detail": t.stop_detail,
        "error": None if record.error is None else record.error.model_dump(mode="json"),
        "system_prompt": t.system_prompt, "history": _message_views(t.history, given),
        "messages": _message_views(t.messages, live),
        "actual_trajectory": [{"name": c.name, "arguments": c.arguments, "turn": c.turn}
                              for c in t.tool_calls],
        "trajectory": trajectory,
        "failed_because": failed_because(
            record, trajectory["reference"] if trajectory else None, rules),
        "checks": checks, "judgments": judgments,
        "simulator_findings": [f.model_dump(mode="json") for f in record.simulator_findings],
        "attribution": _attribution(record),
        "rerun": None if record.rerun is None else record.rerun.model_dump(mode="json"),
        "duration_s": round(record.finished_at - record.started_at, 3),
    }


@dataclass(frozen=True)
class SampleRow:
    index: int
    scenario_id: str
    epoch: int
    outcome: str
    score: float | None
    stop_reason: str
    kinds: list[str]
    tags: list[str]
    error: str | None
    failed_because: list[str]  # the names of what failed a failed sample


def _attribution(record: SampleRecord) -> dict[str, Any] | None:
    """The party the sample's failure is attributed to (worked out now for a store written
    before attributions were kept), or ``None`` for a passed or unscored sample."""
    found = record.attribution or attribute(record)
    return None if found is None else found.model_dump(mode="json")


def _outcome(record: SampleRecord) -> str:
    if record.status != "scored":
        return record.status
    return "passed" if record.passed else "failed"


def _samples(store: RunStore, latency: LatencyCollector | None, tools: ToolCollector | None,
             rules: Mapping[tuple[str, str], RubricRule]
             ) -> tuple[list[SampleRow], list[dict[str, Any]]]:
    """The samples' rows and drill-down records, feeding the collectors given (a summary
    written before the latency figures and the per-tool table lacks them)."""
    rows: list[SampleRow] = []
    views: list[dict[str, Any]] = []
    for record in store.iter_samples():  # ordered by scenario and epoch
        for collector in (latency, tools):
            if collector is not None:
                collector.add(record)
        error = None if record.error is None else f"{record.error.kind}: {record.error.message}"
        view = sample_view(record, rules)
        rows.append(SampleRow(
            index=len(rows), scenario_id=record.scenario_id, epoch=record.epoch,
            outcome=_outcome(record), score=record.score,
            stop_reason=record.transcript.stop_reason, kinds=failure_kinds(record),
            tags=list(record.tags), error=error,
            failed_because=[r["name"] for r in view["failed_because"]],
        ))
        views.append(view)
    return rows, views


def _scenario_forest(score: SuiteSummary) -> Forest:
    """The forest plot of the scenarios, lowest mean first (the :data:`MAX_FOREST_ROWS`
    lowest when there are more; the table below it lists every one)."""
    scenarios = sorted(score.scenarios, key=lambda s: (s.mean, s.scenario_id))
    estimates = [ForestPoint(
        label=s.scenario_id, value=s.mean, low=s.mean_ci_low, high=s.mean_ci_high,
        marked=s.flaky,
        tooltip=(f"{s.scenario_id}: mean {s.mean:.3f}, pass rate {s.pass_rate:.2f} over " +
                 plural(s.n_epochs, "epoch") + (" (flaky)" if s.flaky else "")),
    ) for s in scenarios[:MAX_FOREST_ROWS]]
    return forest(estimates, score.score_range, reference=score.mean,
                  reference_label="suite mean")


def _tag_forest(summary: RunSummary) -> Forest | None:
    """The forest plot of the tags' mean scores (lowest first) against the suite mean, or
    ``None`` when no tag has a scored sample."""
    scored = sorted(((tag, t.mean) for tag, t in summary.tags.items() if t.mean is not None),
                    key=lambda item: (item[1].value, item[0]))
    if not scored or summary.score is None:
        return None
    estimates = [ForestPoint(
        label=tag, value=mean.value, low=mean.ci_low, high=mean.ci_high,
        tooltip=f"{tag}: mean {mean.value:.3f} over {plural(mean.n_clusters, 'scenario')}",
    ) for tag, mean in scored[:MAX_FOREST_ROWS]]
    return forest(estimates, summary.score.score_range, reference=summary.score.mean,
                  reference_label="suite mean")


def _k_chart(score: SuiteSummary) -> LineChart:
    series = [
        Series(name=name, css_class=css,
               points=[(k, e.value) for k, e in sorted(detail.items())],
               band=[(k, e.ci_low, e.ci_high) for k, e in sorted(detail.items())
                     if e.ci_low is not None and e.ci_high is not None])
        for detail, name, css in ((score.pass_at_k_detail, "pass@k", "s1"),
                                  (score.pass_hat_k_detail, "pass^k", "s2"))
    ]
    ks = sorted(score.pass_at_k_detail)
    return line_chart(series, x_domain=(1, max([*ks, 2])), x_label="k (epochs drawn)",
                      y_label="probability", x_ticks=handful_of_k(ks))


def _variance_bars(score: SuiteSummary) -> list[Segment]:
    vc, judge = score.variance_components, score.judge_variance_components
    if vc is None:
        return []
    if judge is not None:
        parts = [("between scenarios", vc.suite_variance_between),
                 ("between epochs (agent)", judge.suite_variance_epoch),
                 ("between judge samples", judge.suite_variance_judge)]
    else:
        parts = [("between scenarios", vc.suite_variance_between),
                 ("within scenario (epochs and judges)", vc.suite_variance_within)]
    return shares_bar(parts)


def run_name(run_dir: Path) -> str:
    """What the page calls a run: its directory's name, or, for a folder a command named
    itself inside the run's own folder (the demo's ``suite``), that folder's name."""
    path = run_dir.resolve()
    return path.parent.name if path.name in COMMAND_SUBFOLDERS and path.parent.name else path.name


def _failure_examples(summary: RunSummary, rows: Sequence[SampleRow]
                      ) -> list[list[tuple[int | None, str, str]]]:
    """Each failure group's example lines as (sample index or ``None``, the sample's name,
    the rest of the line), so the page links each to its sample. The lines read
    ``scenario#epoch: message`` (:func:`harness.checks.failures.analyse_failures`)."""
    index = {f"{r.scenario_id}#{r.epoch}": r.index for r in rows}
    out = []
    for group in summary.failure_analysis.groups:
        lines: list[tuple[int | None, str, str]] = []
        for line in group.examples:
            name, sep, rest = line.partition(": ")
            at = index.get(name) if sep else None
            lines.append((at, name, rest) if at is not None else (None, "", line))
        out.append(lines)
    return out


def run_page(run_dir: Path, labels_file: Path | None = None) -> str:
    """The HTML page of the run in ``run_dir``, with its human labels (``labels_file``'s,
    contract 10, else the stored ones) when it has some.

    Raises :class:`~harness.errors.InputError` when ``summary.json`` is missing or not a
    summary this harness reads, or the label file does not fit the run, and
    :class:`~harness.runs.store.StoreError` when the store is missing, damaged or of another
    schema version."""
    summary = read_summary(run_dir)
    with RunStore.open(run_dir, read_only=True) as store:
        labels = store_labels_report(store, run_dir, summary.config.design, labels_file)
        context = run_page_context(run_dir, summary, store, labels)
    return render_page("run.html.j2", **context)


def _corrected_row(figure: str, source: str, value: float | None, low: float | None,
                   high: float | None, *, lam: float | None = None, worth: float | None = None,
                   withheld: str | None = None, corrected: bool = False) -> dict[str, Any]:
    return {"figure": figure, "source": source, "value": value, "low": low, "high": high,
            "lam": lam, "worth": worth, "withheld": withheld, "corrected": corrected}


def _labels_context(labels: RunLabels | None, score: SuiteSummary | None) -> dict[str, Any]:
    """The labels section: the agreement rows and the judge's figures beside the corrected
    ones, each row named by its source."""
    if labels is None:
        return {"labels": None}
    rows: list[dict[str, Any]] = []
    if score is not None and labels.corrected is not None:
        for name, judge, est in (("mean score", score.mean_estimate, labels.corrected.mean),
                                 ("pass rate", score.pass_rate, labels.corrected.pass_rate)):
            rows.append(_corrected_row(name, "judge", judge.value, judge.ci_low, judge.ci_high))
            if est is None:
                rows.append(_corrected_row("", "no random labels", None, None, None))
                continue
            source = f"corrected with {plural(est.n_labelled, 'human label')}"
            rows.append(_corrected_row("", source, est.value, est.ci_low, est.ci_high,
                                       lam=est.lam, worth=est.effective_labels,
                                       withheld=est.withheld, corrected=True))
            only = est.labels_only
            if est.withheld is None and only is not None:
                rows.append(_corrected_row("", "labels alone", only.value, only.ci_low,
                                           only.ci_high))
    notes = corrected_notes(labels.corrected) if labels.corrected is not None else []
    return {"labels": labels, "labels_line": labels_line(labels.agreement),
            "agreement_notes": agreement_notes(labels.agreement),
            "statistic_names": STATISTIC_NAMES, "corrected_rows": rows,
            "corrected_notes": notes}


def run_page_context(run_dir: Path, summary: RunSummary, store: RunStore,
                     labels: RunLabels | None = None) -> dict[str, Any]:
    """What ``run.html.j2`` draws of the run in ``run_dir``: ``summary``'s figures and every
    sample of ``store`` (``title`` included), and ``labels`` (the run's human labels in the
    report) when given, for :func:`run_page` and for pages that show the run another way
    (``harness view``). Raises :class:`~harness.runs.store.StoreError` when a stored sample
    cannot be read."""
    latency = None if summary.latency is not None else LatencyCollector()
    tools = None if summary.tools is not None else ToolCollector()
    rules = rubric_rules(summary.config.design.rubric_paths)
    rows, views = _samples(store, latency, tools, rules)
    score = summary.score
    name = run_name(run_dir)
    return dict(
        title=f"Run {name}", run_name=name, run_dir=str(run_dir),
        summary=summary, score=score, rows=rows,
        kinds=sorted({k for r in rows for k in r.kinds}),
        tags=sorted({t for r in rows for t in r.tags}),
        scenario_ids=sorted({r.scenario_id for r in rows}),
        forest=_scenario_forest(score) if score and score.scenarios else None,
        forest_rows=MAX_FOREST_ROWS, groups_shown=GROUPS_SHOWN,
        tag_forest=_tag_forest(summary),
        k_chart=_k_chart(score) if score and score.pass_at_k_detail else None,
        variance=_variance_bars(score) if score else [],
        latency=summary.latency if latency is None else latency.latency(),
        tools=summary.tools if tools is None else tools.tools(summary.config.design.confidence),
        failure_examples=_failure_examples(summary, rows),
        samples_data=embedded_data("samples-data", views),
        **_labels_context(labels, score),
    )


def write_run_report(run_dir: Path, out: Path | None = None, *,
                     labels_file: Path | None = None) -> Path:
    """Write the run page to ``out`` (default ``RUN_DIR/report.html``) in one step and return
    its path. Raises as :func:`run_page` does, and
    :class:`~harness.errors.InputError` when the file cannot be written."""
    return write_page(out or run_dir / REPORT_FILENAME, run_page(run_dir, labels_file))
