"""Does a run pass, for the whole suite or one scenario, and if not, why: one message built
in one place, raised by :func:`assert_passes` and shown by the pytest plugin's failing items.

A scenario passes when its pass rate (``gate_on="mean"``) or the lower bound of the pass
rate's Wilson interval (``"lower-bound"``) reaches ``min_pass_rate`` and none of its samples
errored; the suite passes when the gate (:func:`harness.runs.gate.evaluate_gate`) passes on
the suite's pass rate, no sample errored and the run was not stopped early. Errored samples
fail the assertion but are listed apart, never counted as low scores.

``gate_on="corrected-lower-bound"`` gates the suite only (as ``harness run --gate-on
corrected-lower-bound`` does): the lower end of its pass rate corrected by random human
labels (the run's stored ones, or a contract-10 file), which needs at least 10 of them; a
scenario's few epochs give no corrected figure of their own.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.checks.result import CheckResult
from harness.choices import RunGateBasis
from harness.runs.gate import GateResult, evaluate_gate
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore
from harness.safe_text import visible_controls
from harness.stats.sampling import ScenarioStats, scenario_stats

if TYPE_CHECKING:
    from harness.runs.api import RunResult

REPORT_FILENAME = "report.html"
REASON_CHARS = 240


@dataclass
class _Failing:
    """One check, rubric or rubric criterion over a scenario's scored samples."""

    values: list[float] = field(default_factory=list)
    passed: list[bool] = field(default_factory=list)
    reason: str | None = None

    def add(self, value: float, passed: bool, reason: str | None = None) -> None:
        self.values.append(value)
        self.passed.append(passed)
        if not passed and self.reason is None and reason:
            self.reason = reason


@dataclass
class _ScenarioEvidence:
    checks: dict[str, _Failing] = field(default_factory=lambda: defaultdict(_Failing))
    criteria: dict[str, _Failing] = field(default_factory=lambda: defaultdict(_Failing))
    errors: list[str] = field(default_factory=list)


def _evidence(samples: Iterable[SampleRecord]) -> dict[str, _ScenarioEvidence]:
    """Per scenario: every gating check and rubric (criterion) value with its verdict, and
    the errored samples' reasons."""
    out: dict[str, _ScenarioEvidence] = defaultdict(_ScenarioEvidence)
    for rec in samples:
        ev = out[rec.scenario_id]
        if rec.error is not None:
            ev.errors.append(f"epoch {rec.epoch}: {rec.error.kind}: {rec.error.message}")
        if rec.status != "scored":
            continue
        for report in rec.checks:
            for result in report.get("results", []):
                checked = CheckResult.model_validate(result)
                if checked.gating and checked.passed is not None and checked.value is not None:
                    ev.checks[checked.name].add(checked.value, checked.passed)
        for judged in rec.judgments:
            _add_judgment(ev, judged)
    return out


def _add_judgment(ev: _ScenarioEvidence, judged: dict[str, Any]) -> None:
    rubric = judged.get("rubric_id")
    if judged.get("score") is None or judged.get("passed") is None:
        return  # errored or not applicable: not a score
    ev.criteria[f"rubric:{rubric}"].add(float(judged["score"]), bool(judged["passed"]))
    reasons: dict[str, str] = {}
    for judgment in judged.get("judgments", []):
        for verdict in judgment.get("verdicts", []):
            if verdict.get("reasoning"):
                reasons.setdefault(str(verdict.get("criterion_id")), str(verdict["reasoning"]))
    for crit in judged.get("criteria", []):
        if crit.get("value") is None or crit.get("passed") is None:
            continue
        cid = str(crit["criterion_id"])
        ev.criteria[f"{rubric}/{cid}"].add(float(crit["value"]), bool(crit["passed"]),
                                         reasons.get(cid))


def _interval(low: float | None, high: float | None) -> str:
    return "no interval (1 sample)" if low is None or high is None else f"{low:.3f}–{high:.3f}"


def _failing_lines(title: str, items: dict[str, _Failing], confidence: float) -> list[str]:
    lines: list[str] = []
    # a rubric's own line first, then its criteria
    for name, got in sorted(items.items(), key=lambda kv: (
            kv[0].removeprefix("rubric:").split("/")[0], "/" in kv[0], kv[0])):
        if all(got.passed):
            continue
        stats = scenario_stats(name, got.values, got.passed, confidence=confidence)
        failed = len(got.passed) - stats.n_passed
        line = (f"    {visible_controls(name)}: failed {failed} of {stats.n_epochs}; score "
                f"{stats.mean:.3f} ({_interval(stats.mean_ci_low, stats.mean_ci_high)}), "
                f"n={stats.n_epochs}")
        if got.reason:
            reason = " ".join(got.reason.split())
            if len(reason) > REASON_CHARS:
                reason = reason[:REASON_CHARS - 1] + "…"
            line += f"\n      judge's reason: {visible_controls(reason)}"
        lines.append(line)
    return [f"  {title}:", *lines] if lines else []


def _scenario_block(sid: str, stats: ScenarioStats | None, ev: _ScenarioEvidence,
                    confidence: float) -> list[str]:
    pct = f"{confidence:.0%}"
    if stats is None:
        head = f"scenario {visible_controls(sid)!r}: no scored sample"
    else:
        head = (f"scenario {visible_controls(sid)!r}: pass rate {stats.pass_rate:.3f} "
                f"({stats.n_passed} of {stats.n_epochs} passed; {pct} interval "
                f"{_interval(stats.pass_rate_ci_low, stats.pass_rate_ci_high)}), mean score "
                f"{stats.mean:.3f} ({_interval(stats.mean_ci_low, stats.mean_ci_high)}), "
                f"n={stats.n_epochs}")
    lines = [head, *_failing_lines("failing checks", ev.checks, confidence),
             *_failing_lines("failing rubrics and criteria", ev.criteria, confidence)]
    if ev.errors:
        lines.append(f"  errored samples ({len(ev.errors)}, not scored):")
        lines.extend(f"    {visible_controls(e)}" for e in ev.errors)
    return lines


def _where(run_dir: Path) -> str:
    report = run_dir / REPORT_FILENAME
    return f"run directory: {run_dir}" + (f"\nHTML report: {report}" if report.is_file() else "")


def suite_gate(result: RunResult, *, min_pass_rate: float = 1.0,
               gate_on: RunGateBasis = "mean", labels: Path | None = None,
               labels_option: str = "labels=FILE") -> GateResult:
    """The gate of ``min_pass_rate`` on the suite's pass rate, on ``gate_on``'s basis; for
    ``"corrected-lower-bound"`` the pass rate corrected by ``labels`` (a contract-10 file;
    default: the run's stored labels), and a failure that says how many more random labels
    it needs (naming ``labels_option`` as the way to give them) when there are too few.
    Raises :class:`~harness.errors.InputError` for a labels file that does not fit the run,
    :class:`ValueError` for ``labels`` with another basis (they would be ignored)."""
    if labels is not None and gate_on != "corrected-lower-bound":
        raise ValueError("labels apply only with gate_on='corrected-lower-bound' (the labels "
                         "correct the gated figure)")
    corrected = None
    if gate_on == "corrected-lower-bound":
        from harness.runs.corrected_figures import gate_corrected_figures

        corrected = gate_corrected_figures(result.run_dir, result.summary.config.design,
                                           labels)
    gate = evaluate_gate(result.summary.score, min_pass_rate=min_pass_rate, gate_on=gate_on,
                         corrected=corrected, labels_option=labels_option)
    assert gate is not None  # a threshold is always set
    return gate


def failure_message(result: RunResult, *, scenario: str | None = None,
                    min_pass_rate: float = 1.0, gate_on: RunGateBasis = "mean",
                    labels: Path | None = None,
                    labels_option: str = "labels=FILE") -> str | None:
    """Why ``result`` (the whole suite, or only ``scenario``) does not pass, or ``None`` when
    it does. The message lists, per failing scenario, its pass rate and mean score with
    their intervals and n, each failing gating check and rubric criterion with its score,
    interval, n and the judge's reason, the errored samples apart, and ends with the run
    directory and its HTML report when there is one. Outside text (ids, reasons, errors) is
    shown with control characters escaped. ``gate_on="corrected-lower-bound"`` (with
    ``labels``, see :func:`suite_gate`) is for the suite only. Raises :class:`KeyError` for
    a ``scenario`` the run does not hold, :class:`ValueError` for a corrected gate on one
    scenario."""
    if scenario is not None and gate_on == "corrected-lower-bound":
        raise ValueError("gate_on='corrected-lower-bound' gates the suite, not one scenario: "
                         "a scenario's few samples give no corrected figure")
    summary = result.summary
    confidence = summary.config.design.confidence
    with RunStore.open(result.run_dir) as store:
        evidence = _evidence(store.iter_samples())
    per_scenario = {s.scenario_id: s for s in (summary.score.scenarios if summary.score else [])}
    problems: list[str] = []
    if scenario is not None:
        if scenario not in evidence:
            raise KeyError(f"scenario {scenario!r} is not in the run at {result.run_dir}")
        stats = per_scenario.get(scenario)
        value = None if stats is None else (
            stats.pass_rate if gate_on == "mean" else stats.pass_rate_ci_low)
        if value is None or value < min_pass_rate:
            shown = "none" if value is None else f"{value:.3f}"
            basis = "pass rate" if gate_on == "mean" else "pass rate lower bound"
            problems.append(f"{basis} {shown} < {min_pass_rate:.3f}")
        if evidence[scenario].errors:
            problems.append(f"{len(evidence[scenario].errors)} errored sample(s)")
        shown_ids = [scenario]
    else:
        gate = suite_gate(result, min_pass_rate=min_pass_rate, gate_on=gate_on, labels=labels,
                          labels_option=labels_option)
        problems += [c.detail for c in gate.checks if not c.passed]
        if summary.counts.errored:
            problems.append(f"{summary.counts.errored} errored sample(s)")
        if summary.stopped is not None:
            problems.append(f"the run stopped early: {summary.stopped.message}")
        shown_ids = [sid for sid, ev in evidence.items()
                     if ev.errors or sid not in per_scenario
                     or per_scenario[sid].n_passed < per_scenario[sid].n_epochs]
    if not problems:
        return None
    lines = [("scenario " + repr(visible_controls(scenario)) if scenario else "the suite")
             + " does not pass: " + "; ".join(problems)]
    for sid in shown_ids:
        lines += _scenario_block(sid, per_scenario.get(sid), evidence[sid], confidence)
    if summary.notice:
        lines.append(summary.notice)
    lines.append(_where(result.run_dir))
    return "\n".join(lines)


def assert_passes(result: RunResult, *, min_pass_rate: float = 1.0,
                  gate_on: RunGateBasis = "mean", scenario: str | None = None,
                  labels: Path | None = None) -> None:
    """Raise :class:`AssertionError` with :func:`failure_message` unless ``result`` passes
    (the suite, or only ``scenario``). ``min_pass_rate`` is in [0, 1] (default 1.0: every
    scored sample passes); ``gate_on`` is ``"mean"``, ``"lower-bound"`` or, for the suite,
    ``"corrected-lower-bound"`` (corrected by ``labels``, a contract-10 file, or the run's
    stored labels)."""
    if not 0.0 <= min_pass_rate <= 1.0:
        raise ValueError(f"min_pass_rate must be in [0, 1], got {min_pass_rate}")
    message = failure_message(result, scenario=scenario, min_pass_rate=min_pass_rate,
                              gate_on=gate_on, labels=labels)
    if message is not None:
        raise AssertionError(message)
