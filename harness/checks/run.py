"""The one entry point: :func:`run_checks` runs every check whose expectation is given.

Check names (the keys of :meth:`CheckReport.metrics`), each valued in [0, 1]:

- with ``tool_calls``: ``trajectory_exact_match``, ``trajectory_in_order_match``,
  ``trajectory_any_order_match``, ``trajectory_precision``, ``trajectory_recall``,
  ``trajectory_f1`` and ADK's ``tool_trajectory_avg_score`` (see :mod:`.trajectory`);
- with ``single_tool_use``: ``trajectory_single_tool_use:<tool>`` per named tool;
- with ``tool_order``: ``tool_order_score`` (LCS share of the expected first-call order);
- with ``parameters``: ``parameter_accuracy`` (partial credit, see :mod:`.parameters`);
- with ``forbidden_tools``: ``forbidden_tools_avoided`` (1 when none was called);
- with ``no_tool_calls``: ``no_tool_calls`` (1 when the agent called no tool);
- with ``max_tool_calls``: ``max_tool_calls`` (1 when the calls made are within the budget);
- with ``latency_budget_s``: ``latency_budget``, the share of user turns whose agent time
  (the agent's model-call latencies plus its tool-call latencies in that turn) is within the
  budget. Per turn, because that is what a user waits for and a long conversation should not
  be penalised for its length; model and tool time rather than wall-clock time, because wall
  time includes the simulated user and any queueing behind the concurrency limit. Unscored
  when the transcript has no agent timings (imported conversations);
- with ``reference_answer``: ADK's ``response_match_score`` (ROUGE-1 F, see :mod:`.response`)
  of the final answer; with ``reference_answers`` (per turn), ADK's mean over those turns of
  the ROUGE-1 F of each turn's last agent message with text against that turn's answer (a
  turn with no such message scores 0, as an empty response does in ADK);
- with ``required_phrases``: ``required_phrases``, the share found in the final answer;
- with ``final_state``: ``final_state_match`` (1 when equal/contained; unscored when the
  transcript has no final state);
- with ``response_matches``, ``response_json_schema``, ``response_max_chars``: checks of
  those names on the final answer (see :mod:`.response_format`);
- a scenario's own ``checks`` (see :mod:`.custom`), under their names, after the built-ins.

``tool_trajectory_avg_score`` and ``response_match_score`` pass at or above their thresholds
(``trajectory_threshold``, ``response_match_threshold``); a threshold of ``None`` makes the
check informational: reported with ``passed`` ``None``, and left out of the sample's score.

An errored transcript (its agent or simulator call failed) gets no scores at all: the report
carries the error instead, so it is counted apart and never as a failed check.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from harness.checks import parameters as params_mod
from harness.checks import response_format
from harness.checks import trajectory as traj
from harness.checks.args import CheckConfigError, CompiledMatching, compile_matching, merge_matching
from harness.checks.custom import CompiledCheck, compile_check, run_check
from harness.checks.response import find_phrases, rouge1
from harness.checks.result import CheckReport, CheckResult, Finding
from harness.checks.spec import CheckSpec, Expectations
from harness.checks.state import state_diff
from harness.transcript import ToolCallRecord, Transcript
from harness.user_code import ImportPathError

_EPS = 1e-9

BUILTIN_CHECK_NAMES = frozenset({
    "trajectory_exact_match", "trajectory_in_order_match", "trajectory_any_order_match",
    "trajectory_precision", "trajectory_recall", "trajectory_f1",
    "tool_trajectory_avg_score", "tool_order_score",
    "parameter_accuracy", "forbidden_tools_avoided", "no_tool_calls", "max_tool_calls",
    "latency_budget", "response_match_score", "required_phrases", "final_state_match",
    "response_matches", "response_json_schema", "response_max_chars",
})
"""Names of the built-in checks (plus ``trajectory_single_tool_use:<tool>``), which a
scenario's own checks may not take."""


@dataclass(frozen=True)
class PreparedExpectations:
    """Expectations with matchers imported and patterns checked, reusable across samples."""

    expectations: Expectations
    global_matching: CompiledMatching
    call_matchings: tuple[CompiledMatching, ...]
    custom_checks: tuple[CompiledCheck, ...] = ()


def prepare_expectations(
    expectations: Expectations,
    checks: Sequence[CheckSpec] = (),
    *,
    base_dir: Path | None = None,
) -> PreparedExpectations:
    """Import custom matchers and a scenario's own ``checks`` (resolved from ``base_dir``
    first), and validate what pydantic cannot (turns given for all reference calls or none,
    patterns and schemas that compile). Raises :class:`CheckConfigError` naming the field,
    before anything is scored."""
    global_matching = compile_matching(expectations.arg_matching)
    calls = expectations.tool_calls or []
    with_turn = [c.turn is not None for c in calls]
    if any(with_turn) and not all(with_turn):
        first = with_turn.index(False)
        raise CheckConfigError(
            f"tool_calls[{first}].turn",
            "a turn on every reference call or on none (some calls name their turn)",
        )
    call_matchings = tuple(
        compile_matching(merge_matching(expectations.arg_matching, c.match),
                         field=f"tool_calls[{i}].match")
        for i, c in enumerate(calls)
    )
    params_mod.compile_patterns(expectations.parameters)
    response_format.compile_response_checks(expectations.response_matches,
                                            expectations.response_json_schema)
    compiled: list[CompiledCheck] = []
    for i, spec in enumerate(checks):
        try:
            compiled.append(compile_check(spec, base_dir=base_dir))
        except ImportPathError as err:
            raise CheckConfigError(f"checks[{i}].use", f"a check f(transcript, expectations): "
                                   f"{err}") from None
    return PreparedExpectations(expectations, global_matching, call_matchings, tuple(compiled))


def malformed_call_warnings(calls: Sequence[ToolCallRecord]) -> list[str]:
    """One warning per call whose arguments were not a JSON object."""
    return [
        f"tool call {j} ({c.name}, turn {c.turn}) has arguments that are not a JSON object "
        f"({c.raw_arguments!r}); scored as not matching"
        for j, c in enumerate(calls)
        if c.raw_arguments is not None
    ]


def run_checks(
    transcript: Transcript, expectations: Expectations | PreparedExpectations
) -> CheckReport:
    """Run every check whose expectation is given on ``transcript``.

    Takes the scenario's :class:`Expectations` (or the result of
    :func:`prepare_expectations`, to import matchers once for many samples) and returns a
    :class:`CheckReport`. Raises :class:`CheckConfigError` when the expectations cannot be
    used (a matcher that does not import, a bad pattern).
    """
    prepared = (
        expectations
        if isinstance(expectations, PreparedExpectations)
        else prepare_expectations(expectations)
    )
    report = CheckReport(scenario_id=transcript.scenario_id, epoch=transcript.epoch)
    if transcript.errored:
        reason = transcript.error.message if transcript.error else transcript.stop_detail
        report.error = f"{transcript.stop_reason}: {reason or 'no detail'}"
        return report
    exp = prepared.expectations
    calls = transcript.tool_calls
    report.warnings.extend(malformed_call_warnings(calls))
    results = report.results

    if exp.tool_calls is not None:
        trajectory_results, warnings = _trajectory_checks(transcript, prepared)
        results.extend(trajectory_results)
        report.warnings.extend(warnings)
    for tool in exp.single_tool_use:
        value = traj.single_tool_use(tool, calls)
        results.append(CheckResult(name=f"trajectory_single_tool_use:{tool}", value=value,
                                   passed=value == 1.0,
                                   details={"calls": sum(c.name == tool for c in calls)}))
    if exp.tool_order is not None:
        results.append(_tool_order_check(exp.tool_order, calls))
    if exp.parameters:
        results.append(_parameter_check(prepared, calls))
    if exp.forbidden_tools:
        results.append(_forbidden_check(exp.forbidden_tools, calls))
    if exp.no_tool_calls:
        results.append(_no_calls_check(calls))
    if exp.max_tool_calls is not None:
        results.append(_max_calls_check(exp.max_tool_calls, calls))
    if exp.latency_budget_s is not None:
        results.append(_latency_check(exp.latency_budget_s, transcript))
    if exp.reference_answer is not None:
        results.append(_response_match_check(exp.reference_answer, exp.response_match_threshold,
                                             transcript.final_response))
    if exp.reference_answers is not None:
        results.append(_per_turn_response_match_check(exp, transcript))
    if exp.required_phrases:
        results.append(_phrases_check(exp.required_phrases, transcript.final_response))
    if exp.final_state is not None:
        results.append(_final_state_check(exp, transcript))
    response = transcript.final_response
    if exp.response_matches is not None:
        results.append(response_format.matches_check(exp.response_matches, response))
    if exp.response_json_schema is not None:
        results.append(response_format.json_schema_check(exp.response_json_schema, response))
    if exp.response_max_chars is not None:
        results.append(response_format.max_chars_check(exp.response_max_chars, response))
    results.extend(run_check(c, transcript, exp) for c in prepared.custom_checks)
    report.warnings = list(dict.fromkeys(report.warnings))
    return report


def _call_view(index: int, call: ToolCallRecord) -> dict[str, object]:
    view: dict[str, object] = {"index": index, "name": call.name, "turn": call.turn}
    if call.raw_arguments is not None:
        view["raw_arguments"] = call.raw_arguments
    else:
        view["args"] = call.arguments
    return view


def _trajectory_checks(
    transcript: Transcript, prepared: PreparedExpectations
) -> tuple[list[CheckResult], list[str]]:
    exp = prepared.expectations
    reference = exp.tool_calls or []
    calls = transcript.tool_calls
    compat, warnings = traj.compatibility(reference, calls, prepared.call_matchings)
    scores = traj.trajectory_scores(compat)
    findings = traj.diagnose(reference, calls, prepared.call_matchings, scores.pairs,
                             frozenset(exp.forbidden_tools))
    matched_ref = {i for i, _ in scores.pairs}
    matched_act = {j for _, j in scores.pairs}
    counts = {"reference_calls": len(reference), "actual_calls": len(calls),
              "matched": len(scores.pairs)}
    matching_details = {
        **counts,
        # the whole reference, so a report can show it beside the calls the agent made
        "reference": [{"index": i, "name": r.name, "args": r.args, "turn": r.turn}
                      for i, r in enumerate(reference)],
        "pairs": [{"reference": i, "actual": j, "name": reference[i].name}
                  for i, j in sorted(scores.pairs)],
        "unmatched_reference": [{"index": i, "name": r.name, "args": r.args}
                                for i, r in enumerate(reference) if i not in matched_ref],
        "unmatched_actual": [_call_view(j, c) for j, c in enumerate(calls)
                             if j not in matched_act],
    }
    results = [
        CheckResult(name="trajectory_exact_match", value=scores.exact_match,
                    passed=scores.exact_match == 1.0, details=counts),
        CheckResult(name="trajectory_in_order_match", value=scores.in_order_match,
                    passed=scores.in_order_match == 1.0, details=counts),
        CheckResult(name="trajectory_any_order_match", value=scores.any_order_match,
                    passed=scores.any_order_match == 1.0, details=matching_details,
                    findings=findings),
    ]
    for name, value in (("trajectory_precision", scores.precision),
                        ("trajectory_recall", scores.recall), ("trajectory_f1", scores.f1)):
        results.append(CheckResult(name=name, value=value, passed=value >= 1.0 - _EPS,
                                   details=counts))

    # ADK: per user turn when the reference names turns, else one invocation for everything.
    if reference and reference[0].turn is not None:
        ref_turns = [r.turn or 0 for r in reference]
        act_turns = [c.turn for c in calls]
        n_turns = max([transcript.user_turns, 1, *(t + 1 for t in ref_turns),
                       *(t + 1 for t in act_turns)])
    else:
        ref_turns, act_turns, n_turns = [0] * len(reference), [0] * len(calls), 1
    per_turn = traj.adk_tool_trajectory(compat, ref_turns, act_turns, n_turns,
                                        exp.adk_trajectory_match)
    adk_score = sum(per_turn) / len(per_turn)
    threshold = exp.trajectory_threshold
    results.append(CheckResult(
        name="tool_trajectory_avg_score", value=adk_score,
        passed=None if threshold is None else adk_score >= threshold,
        details={"match_type": exp.adk_trajectory_match, "per_turn": per_turn,
                 "threshold": threshold},
    ))
    return results, warnings


def _tool_order_check(expected: list[str], calls: Sequence[ToolCallRecord]) -> CheckResult:
    names = [c.name for c in calls]
    score, found = traj.tool_order_score(expected, names)
    missing = list((Counter(expected) - Counter(found)).elements())
    findings = [] if score >= 1.0 - _EPS else [Finding(
        kind="wrong_order", subject=" -> ".join(expected),
        message=f"expected order {' -> '.join(expected)}; tools called in order "
        f"{' -> '.join(dict.fromkeys(names)) or '(none)'}",
    )]
    return CheckResult(name="tool_order_score", value=score, passed=score >= 1.0 - _EPS,
                       details={"expected": expected, "found_in_order": found,
                                "not_in_order": missing, "called": names},
                       findings=findings)


def _parameter_check(
    prepared: PreparedExpectations, calls: Sequence[ToolCallRecord]
) -> CheckResult:
    scores = params_mod.parameter_accuracy(prepared.expectations.parameters, calls,
                                           prepared.global_matching)
    value = sum(s.score for s in scores) / len(scores)
    findings: list[Finding] = []
    for s in scores:
        if s.call_index is None:
            findings.append(Finding(kind="missing_tool", tool=s.tool,
                                    message=f"{s.tool} was never called"))
        elif "*" in s.problems:
            findings.append(Finding(kind="malformed_arguments", tool=s.tool,
                                    message=f"{s.tool}: {s.problems['*']}"))
        elif s.problems:
            findings.append(Finding(
                kind="parameter_error", tool=s.tool, parameters=sorted(s.problems),
                message=f"{s.tool}: " + "; ".join(f"{k}: {v}" for k, v in s.problems.items()),
            ))
    details = {"calls": [{"tool": s.tool, "call": s.call_index, "score": s.score,
                          "earned": s.earned, "available": s.available,
                          "problems": s.problems} for s in scores]}
    return CheckResult(name="parameter_accuracy", value=value, passed=value >= 1.0 - _EPS,
                       details=details, findings=findings)


def _forbidden_check(forbidden: list[str], calls: Sequence[ToolCallRecord]) -> CheckResult:
    used = Counter(c.name for c in calls if c.name in set(forbidden))
    findings = [Finding(kind="forbidden_tool", tool=name,
                        message=f"called forbidden tool {name} {n} time(s)")
                for name, n in used.items()]
    return CheckResult(name="forbidden_tools_avoided", value=float(not used), passed=not used,
                       details={"forbidden": forbidden, "called": dict(used)},
                       findings=findings)


def _no_calls_check(calls: Sequence[ToolCallRecord]) -> CheckResult:
    used = Counter(c.name for c in calls)
    findings = [Finding(kind="unexpected_call", tool=name,
                        message=f"called {name} {n} time(s) where no tool call was expected")
                for name, n in used.items()]
    return CheckResult(name="no_tool_calls", value=float(not calls), passed=not calls,
                       details={"calls": len(calls), "called": dict(used)}, findings=findings)


def _max_calls_check(budget: int, calls: Sequence[ToolCallRecord]) -> CheckResult:
    ok = len(calls) <= budget
    used = Counter(c.name for c in calls)
    findings = [] if ok else [Finding(
        kind="over_calling", tool=used.most_common(1)[0][0],
        message=f"made {len(calls)} tool calls, budget {budget} "
        f"(most called: {used.most_common(1)[0][0]})",
    )]
    return CheckResult(name="max_tool_calls", value=float(ok), passed=ok,
                       details={"calls": len(calls), "budget": budget, "by_tool": dict(used)},
                       findings=findings)


def _latency_check(budget: float, transcript: Transcript) -> CheckResult:
    if not any(s.role == "agent" for s in transcript.steps):
        return CheckResult.unscored("latency_budget", "the transcript has no agent timings",
                                    budget_s=budget)
    per_turn = transcript.turn_latencies()
    over = sorted(t for t, v in per_turn.items() if v > budget)
    value = 1 - len(over) / len(per_turn)
    # the message rounds the unrounded time: rounding twice can print 1.099 for 1.0995002
    findings = [Finding(kind="over_latency", subject=f"turn {t}",
                        message=f"turn {t} took {per_turn[t]:.3f}s, budget {budget}s")
                for t in over]
    return CheckResult(name="latency_budget", value=value, passed=not over,
                       details={"budget_s": budget,
                                "turn_latency_s": {str(t): round(v, 6)
                                                   for t, v in sorted(per_turn.items())},
                                "over_budget_turns": over},
                       findings=findings)


def _response_match_check(
    reference: str, threshold: float | None, response: str
) -> CheckResult:
    precision, recall, fmeasure = rouge1(response, reference)
    ok = threshold is None or fmeasure >= threshold
    findings = [] if ok else [Finding(
        kind="response_mismatch", subject="reference_answer",
        message=f"ROUGE-1 F {fmeasure:.3f} against the reference answer, threshold {threshold}",
    )]
    return CheckResult(name="response_match_score", value=fmeasure,
                       passed=None if threshold is None else ok,
                       details={"rouge1_precision": precision, "rouge1_recall": recall,
                                "threshold": threshold, "empty_response": not response.strip()},
                       findings=findings)


def turn_responses(transcript: Transcript) -> dict[int, str]:
    """The last agent message with text in each user turn (0-based), by turn."""
    out: dict[int, str] = {}
    for message, turn in zip(transcript.messages, transcript.turn_of_messages(), strict=True):
        if message.role == "assistant" and message.content:
            out[turn] = message.content
    return out


def _per_turn_response_match_check(exp: Expectations, transcript: Transcript) -> CheckResult:
    answers = exp.reference_answers or []
    responses = turn_responses(transcript)
    per_turn = []
    for item in answers:
        response = responses.get(item.turn, "")
        precision, recall, fmeasure = rouge1(response, item.answer)
        per_turn.append({"turn": item.turn, "score": fmeasure, "rouge1_precision": precision,
                         "rouge1_recall": recall, "empty_response": not response.strip()})
    if not per_turn:
        return CheckResult.unscored("response_match_score", "reference_answers is empty")
    value = sum(p["score"] for p in per_turn) / len(per_turn)
    threshold = exp.response_match_threshold
    ok = threshold is None or value >= threshold  # exactly as ADK compares
    findings = [] if ok else [Finding(
        kind="response_mismatch", subject="reference_answers",
        message=f"mean ROUGE-1 F {value:.3f} over {len(per_turn)} turn(s) against their "
        f"reference answers, threshold {threshold}",
    )]
    return CheckResult(name="response_match_score", value=value,
                       passed=None if threshold is None else ok,
                       details={"threshold": threshold, "per_turn": per_turn},
                       findings=findings)


def _phrases_check(phrases: list[str], response: str) -> CheckResult:
    found, missing = find_phrases(response, phrases)
    findings = [Finding(kind="missing_phrase", subject=p,
                        message=f"the final answer does not contain {p!r}") for p in missing]
    return CheckResult(name="required_phrases", value=len(found) / len(phrases),
                       passed=not missing, details={"found": found, "missing": missing},
                       findings=findings)


def _final_state_check(exp: Expectations, transcript: Transcript) -> CheckResult:
    if transcript.final_state is None:
        return CheckResult.unscored("final_state_match", "the transcript has no final state",
                                    mode=exp.final_state_mode)
    assert exp.final_state is not None
    diff = state_diff(exp.final_state, transcript.final_state, exp.final_state_mode)
    findings = [Finding(kind="wrong_final_state", subject=line.split(":", 1)[0], message=line)
                for line in diff]
    return CheckResult(name="final_state_match", value=float(not diff), passed=not diff,
                       details={"mode": exp.final_state_mode, "diff": diff},
                       findings=findings)
