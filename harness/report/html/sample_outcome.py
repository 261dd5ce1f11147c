"""Why a sample's outcome is what it is, for the run page: the gating checks and the rubrics
that failed it, each with what was expected against what happened, and how each rubric's
verdict was reached.

The sample's verdict is :mod:`harness.runs.scoring`'s: it fails when a gating check with a
verdict failed or a judged rubric failed. Only those are named here; the descriptive views
(exact, in-order and any-order match, precision, recall, F1) and a criterion that failed
inside a rubric that passed are information, not causes; so is a rubric that judges the
simulated user (``simulator_fidelity``), which never decides the agent's verdict.

The rubric thresholds are not stored with a judgment; they are read from the rubrics the run
named (the built-ins and ``rubric_paths``) when a rubric of the same id and version is found,
and the text says so plainly when not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from harness.checks.result import CheckResult
from harness.errors import InputError
from harness.judging.rubric import Rubric, judges_the_simulator, load_rubrics
from harness.runs.sample import SampleRecord

MAX_DETAIL_CHARS = 160  # one finding's message in the "failed because" line
THRESHOLD_TOLERANCE = 1e-9  # as the rubric scoring compares


@dataclass(frozen=True)
class RubricRule:
    """What a rubric's verdict was computed with (from the rubric file)."""

    threshold: float
    criterion_thresholds: dict[str, float]


def rubric_rules(rubric_paths: Sequence[str]) -> dict[tuple[str, str], RubricRule]:
    """The rules of the rubrics a run could have used, by (id, version as text). A rubric
    file that no longer loads leaves its rubric out (the page then says the threshold is not
    known); it never stops the page."""
    try:
        rubrics = load_rubrics(rubric_paths)
    except InputError:
        try:
            rubrics = load_rubrics()
        except InputError:
            return {}
    return {(r.id, str(r.version)): _rule(r) for r in rubrics.values()}


@cache
def builtin_rubric_rules() -> dict[tuple[str, str], RubricRule]:
    """:func:`rubric_rules` of the built-in rubrics alone (read once per process), for pages
    that draw a sample without the run's own rubric paths at hand."""
    return rubric_rules([])


def _rule(rubric: Rubric) -> RubricRule:
    return RubricRule(threshold=rubric.threshold, criterion_thresholds={
        c.id: rubric.criterion_threshold(c) for c in rubric.criteria})


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_DETAIL_CHARS else text[:MAX_DETAIL_CHARS - 1] + "…"


def _names(calls: Sequence[Mapping[str, Any]]) -> str:
    return " → ".join(str(c.get("name")) for c in calls) or "no tool call"


def _check_reason(result: Mapping[str, Any], reference: Sequence[Mapping[str, Any]] | None,
                  actual: Sequence[Mapping[str, Any]]) -> str:
    """``name value (needs ≥ threshold): expected against actual`` for one failed gating
    check: its first finding, or for the trajectory score the reference tools against the
    tools called."""
    name, value = result.get("name"), result.get("value")
    details = result.get("details") or {}
    needs = []
    if isinstance(details.get("threshold"), (int, float)):
        needs.append(f"needs ≥ {details['threshold']:g}")
    if details.get("match_type"):
        needs.append(f"{details['match_type']} match")
    head = f"{name} {value:.3f}" if isinstance(value, (int, float)) else str(name)
    findings = result.get("findings") or []
    if findings:
        message = _short(findings[0].get("message", ""))
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        if needs and "threshold" not in message:  # else the finding names the bar itself
            head += f" ({', '.join(needs)})"
        return f"{head}: {message}{more}"
    head += f" ({', '.join(needs)})" if needs else ""
    if name == "tool_trajectory_avg_score" and reference is not None:
        return f"{head}: expected {_names(reference)}, called {_names(actual)}"
    return head


def _rubric_reason(judgment: Mapping[str, Any], rule: RubricRule | None) -> str:
    rubric, score = judgment.get("rubric_id"), judgment.get("score")
    shown = f"{score:.3f}" if isinstance(score, (int, float)) else "—"
    bar = (f"below its threshold {rule.threshold:g}" if rule is not None
           else "below its threshold")
    failed = [c for c in judgment.get("criteria", []) if c.get("passed") is False]
    parts = []
    for c in failed:
        cid, value = c.get("criterion_id"), c.get("value")
        need = rule.criterion_thresholds.get(str(cid)) if rule is not None else None
        text = f"{cid} {value:.2f}" if isinstance(value, (int, float)) else str(cid)
        parts.append(text + (f" < {need:.2f}" if need is not None else ""))
    crit = f"; criteria below their own: {', '.join(parts)}" if parts else ""
    return f"rubric {rubric} {shown}, {bar}{crit}"


def _rule_of(judgment: Mapping[str, Any], rules: Mapping[tuple[str, str], RubricRule]
             ) -> RubricRule | None:
    """The rule of the judgment's rubric, or ``None`` when it is not known or does not agree
    with the stored verdict (a file edited since, keeping its version)."""
    rule = rules.get((str(judgment.get("rubric_id")), str(judgment.get("rubric_version"))))
    score, passed = judgment.get("score"), judgment.get("passed")
    if rule is None or not isinstance(score, (int, float)) or passed is None:
        return rule
    return rule if (score >= rule.threshold - THRESHOLD_TOLERANCE) == passed else None


def failed_because(record: SampleRecord, reference: Sequence[Mapping[str, Any]] | None,
                   rules: Mapping[tuple[str, str], RubricRule]) -> list[dict[str, str]]:
    """What failed a scored sample that did not pass, in the order the page lists the checks
    and judges: one ``{"name", "text"}`` per gating check and judged rubric that failed;
    empty for a sample that passed, errored or was not scored. ``reference`` is the
    reference trajectory (``None`` when the run did not store it)."""
    if record.status != "scored" or record.passed is not False:
        return []
    actual = [{"name": c.name} for c in record.transcript.tool_calls]
    reasons = [{"name": str(r.get("name")), "text": _check_reason(r, reference, actual)}
               for report in record.checks for r in report.get("results", [])
               if _gates(r) and r.get("passed") is False]
    reasons += [{"name": f"rubric {j.get('rubric_id')}",
                 "text": _rubric_reason(j, _rule_of(j, rules))}
                for j in record.judgments if j.get("passed") is False
                and not judges_the_simulator(j.get("target"))]
    return reasons


def _gates(result: Mapping[str, Any]) -> bool:
    # stored JSON leaves ``gating`` out where the check's name implies it
    return CheckResult.model_validate(result).gating


def rubric_rule_text(judgment: Mapping[str, Any], rules: Mapping[tuple[str, str], RubricRule]
                     ) -> str:
    """How a rubric's verdict was reached, in one sentence: the aggregation of the judge
    samples, the weighted mean over the criteria that applied, and the threshold; a criterion
    below its own threshold is marked but does not fail the rubric by itself."""
    rule = _rule_of(judgment, rules)
    n = judgment.get("n_votes") or len(judgment.get("samples", []) or [])
    method = judgment.get("method") or "mean"
    kind = "panel votes" if judgment.get("level") == "panel" else "judge samples"
    votes = "one judge sample" if n == 1 else f"the {method} of {n} {kind}"
    bar = f"{rule.threshold:g}" if rule is not None else "the rubric's threshold"
    return (f"Score: the weighted mean of the criteria that applied, each from {votes}; the "
            f"rubric passes when the score is at least {bar}. A criterion below its own "
            "threshold reads fail but does not fail the rubric by itself.")
