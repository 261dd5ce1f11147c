"""The built-in checks: ordinary registered checks, named in a scenario through its
``expectations``, which :func:`expand_expectations` turns into check specs when it loads.

Each built-in is registered with :func:`~harness.checks.registry.check` as a user's check
is, and takes its arguments under the names of the expectation fields it reads (so
``{use: max_tool_calls, args: {max_tool_calls: 3}}`` is what ``max_tool_calls: 3`` under
``expectations`` expands to). Registered names, and the metrics they report (each valued in
[0, 1]):

- ``trajectory`` (``tool_calls``, with ``arg_matching``, ``adk_trajectory_match``,
  ``trajectory_threshold``, ``forbidden_tools``): ``trajectory_exact_match``,
  ``trajectory_in_order_match``, ``trajectory_any_order_match``, ``trajectory_precision``,
  ``trajectory_recall``, ``trajectory_f1`` (descriptive: reported, not gating) and ADK's
  ``tool_trajectory_avg_score`` (see :mod:`.trajectory`); on a scenario from an ADK file
  (``adk_invocations``) that one is ADK 2.13's own, and ours is reported beside it as
  ``tool_trajectory_avg_score_strict`` (see :mod:`.adk_scores`);
- ``single_tool_use``: ``trajectory_single_tool_use:<tool>`` per named tool;
- ``tool_order``: ``tool_order_score`` (LCS share of the expected first-call order);
- ``parameters`` (with ``arg_matching``): ``parameter_accuracy`` (partial credit, see
  :mod:`.parameters`);
- ``forbidden_tools``: ``forbidden_tools_avoided`` (1 when none was called);
- ``no_tool_calls``: ``no_tool_calls`` (1 when the agent called no tool);
- ``max_tool_calls``: ``max_tool_calls`` (1 when the calls made are within the budget);
- ``latency_budget`` (``latency_budget_s``): ``latency_budget``, the share of user turns whose
  agent time (the agent's model-call latencies plus its tool-call latencies in that turn) is
  within the budget. Per turn, because that is what a user waits for and a long
  conversation should not be penalised for its length; model and tool time rather than
  wall-clock time, because wall time includes the simulated user and any queueing behind
  the concurrency limit. Unscored when the transcript has no agent timings (imported
  conversations);
- ``response_match`` (``reference_answer`` or ``reference_answers``, with
  ``response_match_threshold``): ADK's ``response_match_score`` (ROUGE-1 F, see
  :mod:`.response`) of the final answer; with ``reference_answers`` (per turn), ADK's mean
  over those turns of the ROUGE-1 F of each turn's last agent message with text against that
  turn's answer (a turn with no such message scores 0, as an empty response does in ADK);
  on a scenario from an ADK file, ADK 2.13's mean over every invocation (one without a
  reference scores 0), with ours beside it as ``response_match_score_referenced``;
- ``required_phrases``: ``required_phrases``, the share found in the final answer;
- ``final_state`` (with ``final_state_mode``): ``final_state_match`` (1 when
  equal/contained; unscored when the transcript has no final state);
- ``response_matches``, ``response_json_schema``, ``response_max_chars``: checks of those
  names on the final answer (see :mod:`.response_format`).

``tool_trajectory_avg_score`` and ``response_match_score`` pass at or above their thresholds
(``trajectory_threshold``, ``response_match_threshold``); a threshold of ``None`` makes the
check informational: reported with ``passed`` ``None`` and ``gating`` false, and left out of
the sample's score.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from harness.checks import adk_scores, response_format
from harness.checks import parameters as params_mod
from harness.checks import trajectory as traj
from harness.checks.args import CheckConfigError, CompiledMatching, compile_matching, merge_matching
from harness.checks.registry import check
from harness.checks.response import find_phrases, rouge1, turn_responses
from harness.checks.result import CheckResult, Finding
from harness.checks.spec import CheckSpec, Expectations, ParameterExpectation
from harness.checks.state import state_diff
from harness.transcript import ToolCallRecord, Transcript

_EPS = 1e-9

BUILTIN_CHECK_NAMES = frozenset({
    "trajectory_exact_match", "trajectory_in_order_match", "trajectory_any_order_match",
    "trajectory_precision", "trajectory_recall", "trajectory_f1",
    "tool_trajectory_avg_score", "tool_order_score",
    "parameter_accuracy", "forbidden_tools_avoided", "no_tool_calls", "max_tool_calls",
    "latency_budget", "response_match_score", "required_phrases", "final_state_match",
    "response_matches", "response_json_schema", "response_max_chars",
    adk_scores.TRAJECTORY_STRICT, adk_scores.RESPONSE_REFERENCED,
})
"""Names of the metrics the built-in checks report (plus ``trajectory_single_tool_use:<tool>``),
which a scenario's own checks may not take."""

# Registered name -> (the name of its spec, the expectation fields it takes, the first
# turning it on). In the order the checks run, which is the order of a sample's metrics.
_BUILTINS: dict[str, tuple[str, tuple[str, ...]]] = {
    "trajectory": ("trajectory", ("tool_calls", "arg_matching", "adk_trajectory_match",
                                  "trajectory_threshold", "forbidden_tools",
                                  "adk_invocations")),
    "single_tool_use": ("single_tool_use", ("single_tool_use",)),
    "tool_order": ("tool_order_score", ("tool_order",)),
    "parameters": ("parameter_accuracy", ("parameters", "arg_matching")),
    "forbidden_tools": ("forbidden_tools_avoided", ("forbidden_tools",)),
    "no_tool_calls": ("no_tool_calls", ("no_tool_calls",)),
    "max_tool_calls": ("max_tool_calls", ("max_tool_calls",)),
    "latency_budget": ("latency_budget", ("latency_budget_s",)),
    "response_match": ("response_match_score", ("reference_answer", "reference_answers",
                                                 "response_match_threshold",
                                                 "adk_invocations")),
    "required_phrases": ("required_phrases", ("required_phrases",)),
    "final_state": ("final_state_match", ("final_state", "final_state_mode")),
    "response_matches": ("response_matches", ("response_matches",)),
    "response_json_schema": ("response_json_schema", ("response_json_schema",)),
    "response_max_chars": ("response_max_chars", ("response_max_chars",)),
}


_ON_WHEN_TRUTHY = frozenset({"single_tool_use", "parameters", "forbidden_tools",
                             "no_tool_calls", "required_phrases"})


def _given(exp: Expectations, use: str) -> bool:
    """Whether the expectations ask for the built-in ``use`` (its main field is set)."""
    if use == "response_match":
        return exp.reference_answer is not None or exp.reference_answers is not None
    field = _BUILTINS[use][1][0]
    value = getattr(exp, field)
    # a list that defaults to empty, or a flag, asks when non-empty or true; the rest
    # (tool_calls: [] included, "the agent should call nothing") whenever given
    return bool(value) if field in _ON_WHEN_TRUTHY else value is not None


def expand_expectations(expectations: Expectations) -> list[CheckSpec]:
    """The check specs a scenario's ``expectations`` stand for: one per built-in whose
    expectation is given, in the order they run, each with the fields it reads as ``args``
    (JSON, as a user would write them)."""
    specs = []
    for use, (name, fields) in _BUILTINS.items():
        if _given(expectations, use):
            args = expectations.model_dump(mode="json", include=set(fields))
            specs.append(CheckSpec(use=use, name=name, args=args))
    return specs


def builtin_spec_name(use: str) -> str | None:
    """The name a built-in's spec takes (its metric's, for a check reporting one), or
    ``None`` when ``use`` names no built-in."""
    held = _BUILTINS.get(use)
    return None if held is None else held[0]


def clashing_field(use: str, expectations: Expectations) -> str | None:
    """The expectation field that already runs the built-in ``use`` when a second run of it
    would report the same metric names (``trajectory`` and ``single_tool_use`` name their
    own metrics, and so does ``response_match`` on a scenario from an ADK file; the others
    report under their spec's name), or ``None``."""
    if use == "response_match" and expectations.adk_invocations is not None \
            and expectations.reference_answers is not None:
        return "reference_answers"
    if use not in ("trajectory", "single_tool_use") or not _given(expectations, use):
        return None
    return _BUILTINS[use][1][0]


def _fields(use: str, args: dict[str, Any]) -> Expectations:
    """``args`` validated as the expectation fields the built-in ``use`` takes. Raises
    :class:`CheckConfigError` naming the argument that cannot be used."""
    allowed = _BUILTINS[use][1]
    unknown = sorted(set(args) - set(allowed))
    if unknown:
        raise CheckConfigError(unknown[0], f"an argument of the built-in check {use!r} "
                               f"(one of {', '.join(allowed)})")
    try:
        exp = Expectations.model_validate(args)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or use
        raise CheckConfigError(where, f"a valid value ({first['msg'][:1].lower()}"
                               f"{first['msg'][1:]})") from None
    if not _given(exp, use):
        raise CheckConfigError(allowed[0], f"a value: the built-in check {use!r} needs it")
    return exp


def _taking(use: str, *names: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A ``prepare`` that validates the built-in's fields and passes ``names`` on."""
    def prepare(args: dict[str, Any]) -> dict[str, Any]:
        exp = _fields(use, args)
        return {n: getattr(exp, n) for n in names}
    return prepare


def _prepare_trajectory(args: dict[str, Any]) -> dict[str, Any]:
    exp = _fields("trajectory", args)
    calls = exp.tool_calls or []
    with_turn = [c.turn is not None for c in calls]
    if any(with_turn) and not all(with_turn):
        first = with_turn.index(False)
        raise CheckConfigError(
            f"tool_calls[{first}].turn",
            "a turn on every reference call or on none (some calls name their turn)",
        )
    compile_matching(exp.arg_matching)
    call_matchings = tuple(
        compile_matching(merge_matching(exp.arg_matching, c.match),
                         field=f"tool_calls[{i}].match")
        for i, c in enumerate(calls)
    )
    return {"config": exp, "call_matchings": call_matchings}


def _prepare_parameters(args: dict[str, Any]) -> dict[str, Any]:
    exp = _fields("parameters", args)
    matching = compile_matching(exp.arg_matching)
    params_mod.compile_patterns(exp.parameters)
    return {"parameters": exp.parameters, "matching": matching}


def _prepare_response_matches(args: dict[str, Any]) -> dict[str, Any]:
    exp = _fields("response_matches", args)
    response_format.compile_response_checks(exp.response_matches, None)
    return {"pattern": exp.response_matches}


def _prepare_json_schema(args: dict[str, Any]) -> dict[str, Any]:
    exp = _fields("response_json_schema", args)
    response_format.compile_response_checks(None, exp.response_json_schema)
    return {"schema": exp.response_json_schema}


@check("trajectory", prepare=_prepare_trajectory)
def trajectory(transcript: Transcript, expectations: Expectations, *, config: Expectations,
               call_matchings: Sequence[CompiledMatching]) -> list[CheckResult]:
    """The Vertex AI trajectory metrics and ADK's ``tool_trajectory_avg_score``."""
    return _trajectory_checks(transcript, config, call_matchings)


@check("single_tool_use", prepare=_taking("single_tool_use", "single_tool_use"))
def single_tool_use(transcript: Transcript, expectations: Expectations, *,
                    single_tool_use: list[str]) -> list[CheckResult]:
    """``trajectory_single_tool_use:<tool>``: 1 when the agent called that tool."""
    calls = transcript.tool_calls
    results = []
    for tool in single_tool_use:
        value = traj.single_tool_use(tool, calls)
        results.append(CheckResult(name=f"trajectory_single_tool_use:{tool}", value=value,
                                   passed=value == 1.0,
                                   details={"calls": sum(c.name == tool for c in calls)}))
    return results


@check("tool_order", prepare=_taking("tool_order", "tool_order"))
def tool_order(transcript: Transcript, expectations: Expectations, *,
               tool_order: list[str]) -> CheckResult:
    """``tool_order_score``: the share of the expected order found in sequence."""
    return _tool_order_check(tool_order, transcript.tool_calls)


@check("parameters", prepare=_prepare_parameters)
def parameters(transcript: Transcript, expectations: Expectations, *,
               parameters: list[ParameterExpectation],
               matching: CompiledMatching) -> CheckResult:
    """``parameter_accuracy``: partial credit for each call of an expected tool."""
    return _parameter_check(parameters, matching, transcript.tool_calls)


@check("forbidden_tools", prepare=_taking("forbidden_tools", "forbidden_tools"))
def forbidden_tools(transcript: Transcript, expectations: Expectations, *,
                    forbidden_tools: list[str]) -> CheckResult:
    """``forbidden_tools_avoided``: 1 when no forbidden tool was called."""
    return _forbidden_check(forbidden_tools, transcript.tool_calls)


@check("no_tool_calls", prepare=_taking("no_tool_calls"))
def no_tool_calls(transcript: Transcript, expectations: Expectations) -> CheckResult:
    """``no_tool_calls``: 1 when the agent called no tool."""
    return _no_calls_check(transcript.tool_calls)


@check("max_tool_calls", prepare=_taking("max_tool_calls", "max_tool_calls"))
def max_tool_calls(transcript: Transcript, expectations: Expectations, *,
                   max_tool_calls: int) -> CheckResult:
    """``max_tool_calls``: 1 when the calls made are within the budget."""
    return _max_calls_check(max_tool_calls, transcript.tool_calls)


@check("latency_budget", prepare=_taking("latency_budget", "latency_budget_s"))
def latency_budget(transcript: Transcript, expectations: Expectations, *,
                   latency_budget_s: float) -> CheckResult:
    """``latency_budget``: the share of user turns within the agent-time budget."""
    return _latency_check(latency_budget_s, transcript)


@check("response_match", prepare=lambda args: {"config": _fields("response_match", args)})
def response_match(transcript: Transcript, expectations: Expectations, *,
                   config: Expectations) -> CheckResult | list[CheckResult]:
    """ADK's ``response_match_score`` against the reference answer(s) (on an ADK scenario,
    ADK 2.13's, with ``response_match_score_referenced`` beside it)."""
    if config.reference_answer is not None:
        return _response_match_check(config.reference_answer, config.response_match_threshold,
                                     transcript.final_response)
    if config.adk_invocations is not None:
        return adk_scores.adk_response_results(transcript, config)
    return _per_turn_response_match_check(config, transcript)


@check("required_phrases", prepare=_taking("required_phrases", "required_phrases"))
def required_phrases(transcript: Transcript, expectations: Expectations, *,
                     required_phrases: list[str]) -> CheckResult:
    """``required_phrases``: the share of the phrases found in the final answer."""
    return _phrases_check(required_phrases, transcript.final_response)


@check("final_state", prepare=lambda args: {"config": _fields("final_state", args)})
def final_state(transcript: Transcript, expectations: Expectations, *,
                config: Expectations) -> CheckResult:
    """``final_state_match``: the tools' final state equals or contains the expected one."""
    return _final_state_check(config, transcript)


@check("response_matches", prepare=_prepare_response_matches)
def response_matches(transcript: Transcript, expectations: Expectations, *,
                     pattern: str) -> CheckResult:
    """``response_matches``: the final answer matches a regular expression."""
    return response_format.matches_check(pattern, transcript.final_response)


@check("response_json_schema", prepare=_prepare_json_schema)
def response_json_schema(transcript: Transcript, expectations: Expectations, *,
                         schema: dict[str, Any]) -> CheckResult:
    """``response_json_schema``: the final answer is JSON valid against a schema."""
    return response_format.json_schema_check(schema, transcript.final_response)


@check("response_max_chars", prepare=_taking("response_max_chars", "response_max_chars"))
def response_max_chars(transcript: Transcript, expectations: Expectations, *,
                       response_max_chars: int) -> CheckResult:
    """``response_max_chars``: the final answer has at most this many characters."""
    return response_format.max_chars_check(response_max_chars, transcript.final_response)


def _call_view(index: int, call: ToolCallRecord) -> dict[str, object]:
    view: dict[str, object] = {"index": index, "name": call.name, "turn": call.turn}
    if call.raw_arguments is not None:
        view["raw_arguments"] = call.raw_arguments
    else:
        view["args"] = call.arguments
    return view


def _trajectory_checks(
    transcript: Transcript, exp: Expectations, call_matchings: Sequence[CompiledMatching]
) -> list[CheckResult]:
    reference = exp.tool_calls or []
    calls = transcript.tool_calls
    compat, warnings = traj.compatibility(reference, calls, call_matchings)
    scores = traj.trajectory_scores(compat)
    findings = traj.diagnose(reference, calls, call_matchings, scores.pairs,
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
    # the Vertex AI views describe the sequence; the ADK score below is the trajectory's gate
    results = [
        CheckResult(name="trajectory_exact_match", value=scores.exact_match,
                    passed=scores.exact_match == 1.0, gating=False, details=counts),
        CheckResult(name="trajectory_in_order_match", value=scores.in_order_match,
                    passed=scores.in_order_match == 1.0, gating=False, details=counts),
        CheckResult(name="trajectory_any_order_match", value=scores.any_order_match,
                    passed=scores.any_order_match == 1.0, gating=False,
                    details=matching_details, findings=findings, warnings=warnings),
    ]
    for name, value in (("trajectory_precision", scores.precision),
                        ("trajectory_recall", scores.recall), ("trajectory_f1", scores.f1)):
        results.append(CheckResult(name=name, value=value, passed=value >= 1.0 - _EPS,
                                   gating=False, details=counts))

    if exp.adk_invocations is not None:  # made from an ADK eval case: ADK's own number
        return results + adk_scores.adk_trajectory_results(transcript, exp, compat)
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
        gating=threshold is not None,
        details={"match_type": exp.adk_trajectory_match, "per_turn": per_turn,
                 "threshold": threshold},
    ))
    return results


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
    parameters: list[ParameterExpectation], matching: CompiledMatching,
    calls: Sequence[ToolCallRecord],
) -> CheckResult:
    scores = params_mod.parameter_accuracy(parameters, calls, matching)
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
                       passed=None if threshold is None else ok, gating=threshold is not None,
                       details={"rouge1_precision": precision, "rouge1_recall": recall,
                                "threshold": threshold, "empty_response": not response.strip()},
                       findings=findings)


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
                       passed=None if threshold is None else ok, gating=threshold is not None,
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
