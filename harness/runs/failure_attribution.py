"""Who a failed sample's failure belongs to, read from the stored sample alone (no model
call, no scenario file): the same record gives the same attribution today and in a year.

A passed or unscored sample has none. For the others the first rule that holds decides, in
this order (docs/simulated-users.md, "Who failed: attribution", says why):

1. **infrastructure**: the sample errored because a model call, a service or the harness
   failed (retries ran out, a judge failed, the time limit, a check of one's own raised);
   **agent** when the error is the agent's own (a Python agent raised, an HTTP agent sent an
   answer that is not one); **tool** when an ADK agent called a tool the scenario does not
   mock.
2. **tool**: the agent made a call the scenario's own reference holds (the trajectory check
   paired them) and the mocked tool refused it as ``invalid_arguments`` or ``unknown_tool``:
   the mock's schema or tool list disagrees with the scenario, which the agent cannot fix. An
   error the scenario injected is meant, never the tool's fault.
3. **simulator**: a simulator model played the user and the simulator checks found it doing
   what takes the success out of the agent's hands (:data:`DISRUPTIVE_KINDS`: it walked out
   while the agent was asking or acting, contradicted or invented a fact, spoke as the
   assistant, skipped a plan step, changed the opening). Revealing a fact early or thanking
   twice makes the task no harder and does not count. A scripted user's turns are the
   scenario author's, never a simulator's fault.
4. **judge**: every gating check passed and every failing rubric that counts is disputed:
   its votes split on the pass verdict (samples of one judge, or the judges of a panel), or
   it is a ``tool_use`` rubric failing while the deterministic trajectory check of the same
   calls passed.
5. **agent**: everything else, with the failing checks and criteria as evidence.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from harness.checks.result import CheckResult
from harness.errors import ModelError
from harness.judging.rubric import judges_the_simulator
from harness.runs.attribution import Attribution
from harness.runs.sample import SampleRecord
from harness.simulation.user_checks import FindingKind

DISRUPTIVE_KINDS: frozenset[FindingKind] = frozenset({
    "ended_while_agent_pending", "fact_contradicted", "unknown_fact_invented",
    "role_confusion", "plan_step_skipped", "opening_mismatch",
})
"""Simulator findings that can make an agent fail through no fault of its own."""

# Tool refusals that say the mock disagrees with the scenario's reference, when they answer a
# call the reference holds.
_MOCK_REFUSALS = frozenset({"invalid_arguments", "unknown_tool"})
# Errors of the agent under test itself, as opposed to its model provider or the network:
# an HTTP agent's answer that is not a reply (harness.simulation.http_agent.FAULT_KINDS).
_AGENT_FAULTS = frozenset({"agent_http_error", "agent_bad_reply", "agent_response_too_large",
                           "agent_redirect_refused", "agent_reply_missing",
                           "agent_unexpected_tool_calls"})
# Model errors, by the class name a transcript records (ModelError and its subclasses).
_MODEL_ERRORS = frozenset({"ModelError", *(c.__name__ for c in ModelError.__subclasses__())})
_INFRASTRUCTURE_KINDS = frozenset({"judge_error", "internal_error", "check_error",
                                   "EpisodeTimeout", "agent_unreachable", "agent_unavailable",
                                   "agent_auth_refused", "agent_config"})
MAX_EVIDENCE = 5  # lines of evidence kept per sample; the record holds the rest


def attribute(record: SampleRecord) -> Attribution | None:
    """The party ``record``'s failure belongs to (module docstring: the rules), or ``None``
    for a passed or unscored sample."""
    if record.status == "errored":
        return _errored(record)
    if record.status != "scored" or record.passed is not False:
        return None
    for rule in (_tool, _simulator, _judge):
        found = rule(record)
        if found is not None:
            return found
    return _agent(record)


def _errored(record: SampleRecord) -> Attribution:
    error = record.error
    kind = "" if error is None else error.kind
    message = "" if error is None else error.message
    role = None if error is None else error.role
    evidence = [f"{kind}: {message}" if message else kind]
    if kind == "UnmockedTool":  # an ADK agent's tool the scenario does not mock
        return Attribution(party="tool", evidence=evidence,
                           reason="the scenario does not mock a tool the agent called")
    if kind in _AGENT_FAULTS or (role == "agent" and kind not in _MODEL_ERRORS
                                 and kind not in _INFRASTRUCTURE_KINDS):
        return Attribution(party="agent", evidence=evidence,
                           reason=f"the agent under test failed ({kind})")
    where = f" of the {role}" if role else ""
    return Attribution(party="infrastructure", evidence=evidence,
                       reason=f"the sample errored: a call{where} failed ({kind})")


def _tool(record: SampleRecord) -> Attribution | None:
    calls = record.transcript.tool_calls
    evidence = []
    for pair in _trajectory_pairs(record):
        j = pair.get("actual")
        if not isinstance(j, int) or not 0 <= j < len(calls):
            continue
        call = calls[j]
        if call.error in _MOCK_REFUSALS:
            evidence.append(f"call {j + 1} {call.name} matches reference call "
                            f"{pair.get('reference', 0) + 1} of the scenario, and the mock "
                            f"refused it ({call.error}): {_result_text(call.result)}")
    if not evidence:
        return None
    return Attribution(party="tool", evidence=evidence[:MAX_EVIDENCE],
                       reason="the mocked tool refused a call the scenario's own reference "
                       "makes (its schema or tools disagree with the scenario)")


def _simulator(record: SampleRecord) -> Attribution | None:
    if "simulator" not in record.transcript.models:
        return None  # a scripted user: its turns are the scenario's
    found = [f for f in record.simulator_findings if f.kind in DISRUPTIVE_KINDS]
    if not found:
        return None
    kinds = ", ".join(dict.fromkeys(f.kind for f in found))
    return Attribution(
        party="simulator", reason=f"the simulated user broke its profile ({kinds})",
        evidence=[f"user turn {f.turn}, {f.kind}: {f.evidence}"
                  for f in found[:MAX_EVIDENCE]])


def _judge(record: SampleRecord) -> Attribution | None:
    if _failing_checks(record):
        return None  # a deterministic check failed: not a matter of opinion
    failing = [j for j in record.judgments
               if not judges_the_simulator(j.get("target")) and j.get("passed") is False]
    if not failing:
        return None
    trajectory_passed = _trajectory_gate_passed(record)
    evidence = []
    for judgment in failing:
        why = _dispute(judgment, trajectory_passed)
        if why is None:
            return None  # one undisputed failing rubric: the agent's
        evidence.append(f"{judgment.get('rubric_id')}: {why}")
    return Attribution(party="judge", evidence=evidence[:MAX_EVIDENCE],
                       reason="every check passed and each failing rubric is disputed")


def _dispute(judgment: dict[str, Any], trajectory_passed: bool) -> str | None:
    """Why a failing rubric's verdict is in doubt, or ``None`` when it is not."""
    if judgment.get("target") == "tool_use" and trajectory_passed:
        return "fails the tool use while the trajectory check of the same calls passed"
    members = judgment.get("members") or []
    verdicts = {m.get("passed") for m in members if m.get("passed") is not None}
    if len(verdicts) > 1:
        against = [str(m.get("judge_models", ["?"])[0]) for m in members
                   if m.get("passed") is True]
        return f"the panel is split (passed by {', '.join(against)})"
    agreement = (judgment.get("disagreement") or {}).get("pass_agreement")
    if isinstance(agreement, (int, float)) and agreement < 1:
        return f"its judge samples are split on the verdict ({agreement:.0%} agree)"
    return None


def _agent(record: SampleRecord) -> Attribution:
    evidence = [f"check {r.name} failed" + _first_finding(r) for r in _failing_checks(record)]
    for judgment in record.judgments:
        if judges_the_simulator(judgment.get("target")) or judgment.get("passed") is not False:
            continue
        criteria = ", ".join(judgment.get("failed_criteria") or []) or "its score"
        evidence.append(f"rubric {judgment.get('rubric_id')} failed on {criteria}")
    injected = [c for c in record.transcript.tool_calls if c.error == "injected"]
    if injected:
        evidence.append(f"{len(injected)} tool error(s) the scenario injected on purpose "
                        f"({', '.join(dict.fromkeys(c.name for c in injected))})")
    return Attribution(party="agent", evidence=evidence[:MAX_EVIDENCE],
                       reason="the agent failed a check or a rubric, and no other party "
                       "explains it")


def _check_results(record: SampleRecord) -> Iterable[CheckResult]:
    # through the model: stored JSON leaves out a gating that is the check's usual one
    for report in record.checks:
        for result in report.get("results") or []:
            yield CheckResult.model_validate(result)


def _failing_checks(record: SampleRecord) -> list[CheckResult]:
    return [r for r in _check_results(record) if r.gating and r.passed is False]


def _trajectory_pairs(record: SampleRecord) -> list[dict[str, Any]]:
    for result in _check_results(record):
        if result.name == "trajectory_any_order_match":
            return list(result.details.get("pairs") or [])
    return []


def _trajectory_gate_passed(record: SampleRecord) -> bool:
    return any(r.name == "tool_trajectory_avg_score" and r.gating and r.passed is True
               for r in _check_results(record))


def _first_finding(result: CheckResult) -> str:
    return f": {result.findings[0].message}" if result.findings else ""


def _result_text(result: Any) -> str:
    error = result.get("error") if isinstance(result, dict) else None
    return error if isinstance(error, str) else str(result)
