"""ADK's criteria on scenarios made from ADK eval cases, computed as google-adk 2.13 does.

An ADK user comparing the two tools on the same file must see the same number. A scenario
converted from an ADK eval case carries ``expectations.adk_invocations`` (the case's number
of invocations, i.e. recorded turns), and on it the ADK-named checks are ADK's:

- ``tool_trajectory_avg_score``: for each invocation, 1 when that turn's calls match that
  turn's reference calls under the match type (``EXACT``, ``IN_ORDER``, ``ANY_ORDER``), else
  0; the mean over the invocations. Every invocation counts, also when no reference call
  names any turn (one extra call in one of three turns gives EXACT 2/3, not 0). Arguments are
  compared as ADK compares them: Python ``==`` (so ``True == 1`` and ``1 == 1.0``), or not at
  all under ``ignore_args`` (``arg_matching.mode: ignore``); the other modes and overrides of
  ``arg_matching`` are the harness's and do not apply here. Under an equality, ADK's first-fit
  ``ANY_ORDER`` and our maximum matching agree.
- ``response_match_score``: for each invocation, the ROUGE-1 F of that turn's last agent
  message with text against its reference, the mean over the invocations. The reference is
  every text part of the recorded ``final_response``, thinking text (``thought: true``)
  included, as 2.13 reads it; an invocation with no reference text scores 0, as ADK compares
  the answer with empty text (so a case without any final response scores 0).
- When the conversation's turn count differs from the case's invocations, ADK 2.13 raises
  (``actual_invocations and expected_invocations must have the same length``): there is no
  ADK number, so both checks are unscored, with a reason naming both counts.

The harness's own definitions, better defined where they differ, are reported beside them,
informational (``gating`` false; ``passed`` says whether they meet the same threshold):

- ``tool_trajectory_avg_score_strict``: the same per-turn verdicts with the harness's argument
  matching (JSON types: ``true`` is not ``1``; the scenario's modes and overrides), over every
  turn either side reached, so a turn with reference calls the conversation never reached
  scores 0 rather than stopping the score;
- ``response_match_score_referenced``: the mean over the turns that have a reference answer,
  thinking text left out (a turn with nothing to compare with says nothing about the
  answer); unscored when no turn has one.

Scenarios without ``adk_invocations`` (ours) keep the harness's definitions under the ADK
names, as before (:mod:`harness.checks.builtins`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.checks import trajectory as traj
from harness.checks.response import rouge1, turn_responses
from harness.checks.result import CheckResult, Finding
from harness.checks.spec import Expectations, ExpectedToolCall, TurnAnswer
from harness.transcript import ToolCallRecord, Transcript

TRAJECTORY_STRICT = "tool_trajectory_avg_score_strict"
RESPONSE_REFERENCED = "response_match_score_referenced"


def adk_compatibility(
    reference: Sequence[ExpectedToolCall], actual: Sequence[ToolCallRecord], ignore_args: bool
) -> np.ndarray:
    """Which actual call equals which reference call as ADK 2.13 compares them: the same name
    and, unless ``ignore_args``, arguments equal under Python ``==``."""
    compat = np.zeros((len(reference), len(actual)), dtype=bool)
    for i, ref in enumerate(reference):
        for j, call in enumerate(actual):
            same_args = ignore_args or (call.raw_arguments is None and call.arguments == ref.args)
            compat[i, j] = call.name == ref.name and same_args
    return compat


def adk_reference_text(answer: TurnAnswer | None) -> str:
    """A turn's reference as google-adk 2.13 reads a ``final_response``: every text part,
    thoughts included, one per line ('' without a reference)."""
    if answer is None:
        return ""
    return "\n".join(t for t in (answer.thought, answer.answer) if t)


def _count_mismatch(name: str, transcript: Transcript, invocations: int) -> CheckResult | None:
    """The unscored result ADK's raising stands for, when the turn counts differ."""
    actual = transcript.user_turns
    if actual == invocations:
        return None
    return CheckResult.unscored(
        name,
        f"the conversation has {actual} invocation(s) (user turns) and the ADK eval case "
        f"{invocations}; google-adk 2.13 raises here (actual_invocations and "
        "expected_invocations must have the same length), so there is no ADK score",
        actual_invocations=actual, expected_invocations=invocations)


def _verdict(value: float, threshold: float | None) -> bool | None:
    return None if threshold is None else value >= threshold  # exactly as ADK compares


def adk_trajectory_results(
    transcript: Transcript, exp: Expectations, strict_compat: np.ndarray
) -> list[CheckResult]:
    """``tool_trajectory_avg_score`` as ADK 2.13 computes it, and the harness's
    ``tool_trajectory_avg_score_strict`` (from ``strict_compat``, the harness's argument
    matching), for a scenario with ``adk_invocations``."""
    invocations = exp.adk_invocations
    assert invocations is not None
    reference = exp.tool_calls or []
    calls = transcript.tool_calls
    ref_turns = [r.turn or 0 for r in reference]
    act_turns = [c.turn for c in calls]
    threshold = exp.trajectory_threshold
    details = {"match_type": exp.adk_trajectory_match, "threshold": threshold}

    n_turns = max([invocations, transcript.user_turns, *(t + 1 for t in act_turns)])
    strict_turns = traj.adk_tool_trajectory(strict_compat, ref_turns, act_turns, n_turns,
                                            exp.adk_trajectory_match)
    strict_value = sum(strict_turns) / len(strict_turns)
    strict = CheckResult(name=TRAJECTORY_STRICT, value=strict_value,
                         passed=_verdict(strict_value, threshold), gating=False,
                         details={**details, "per_turn": strict_turns})

    adk = _count_mismatch("tool_trajectory_avg_score", transcript, invocations)
    if adk is None:
        ignore_args = exp.arg_matching.mode == "ignore"
        compat = adk_compatibility(reference, calls, ignore_args)
        per_turn = traj.adk_tool_trajectory(compat, ref_turns, act_turns, invocations,
                                            exp.adk_trajectory_match)
        value = sum(per_turn) / len(per_turn)
        adk = CheckResult(name="tool_trajectory_avg_score", value=value,
                          passed=_verdict(value, threshold), gating=threshold is not None,
                          details={**details, "per_turn": per_turn,
                                   "arguments": "ignored" if ignore_args else "python_equal"})
    return [adk, strict]


def _turn_score(turn: int, response: str, reference: str) -> dict[str, Any]:
    precision, recall, fmeasure = rouge1(response, reference)
    return {"turn": turn, "score": fmeasure, "rouge1_precision": precision,
            "rouge1_recall": recall, "empty_response": not response.strip()}


def _response_result(name: str, per_turn: list[dict[str, Any]], threshold: float | None,
                     gating: bool, what: str) -> CheckResult:
    value = sum(float(p["score"]) for p in per_turn) / len(per_turn)
    passed = _verdict(value, threshold)
    findings = [] if passed is not False or not gating else [Finding(
        kind="response_mismatch", subject="reference_answers",
        message=f"mean ROUGE-1 F {value:.3f} over {len(per_turn)} {what}, threshold "
        f"{threshold}",
    )]
    return CheckResult(name=name, value=value, passed=passed,
                       gating=gating and threshold is not None,
                       details={"threshold": threshold, "per_turn": per_turn},
                       findings=findings)


def adk_response_results(transcript: Transcript, exp: Expectations) -> list[CheckResult]:
    """``response_match_score`` as ADK 2.13 computes it, and the harness's
    ``response_match_score_referenced``, for a scenario with ``adk_invocations``."""
    invocations = exp.adk_invocations
    assert invocations is not None
    answers = {a.turn: a for a in exp.reference_answers or []}
    responses = turn_responses(transcript)
    threshold = exp.response_match_threshold

    referenced = [_turn_score(t, responses.get(t, ""), a.answer)
                  for t, a in sorted(answers.items()) if a.answer.strip()]
    strict = _response_result(RESPONSE_REFERENCED, referenced, threshold, False,
                              "turn(s) with a reference answer") if referenced \
        else CheckResult.unscored(RESPONSE_REFERENCED, "no turn has a reference answer")

    adk = _count_mismatch("response_match_score", transcript, invocations)
    if adk is None:
        per_turn = []
        for turn in range(invocations):
            reference = adk_reference_text(answers.get(turn))
            per_turn.append({**_turn_score(turn, responses.get(turn, ""), reference),
                             "no_reference": not reference.strip()})
        adk = _response_result("response_match_score", per_turn, threshold, True,
                               "invocation(s), those without a reference answer scoring 0")
    return [adk, strict]
