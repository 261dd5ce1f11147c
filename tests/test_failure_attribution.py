"""Each rule of the attribution of a failed sample, on hand-made records: the party, the
order in which the rules decide, and the evidence each one quotes."""

from __future__ import annotations

from typing import Any

import pytest

from harness.checks.result import CheckResult
from harness.runs.failure_attribution import DISRUPTIVE_KINDS, attribute
from harness.runs.sample import SampleRecord
from harness.simulation.user_checks import FINDING_KINDS, SimulatorFinding
from harness.transcript import ErrorInfo, ToolCallRecord, Transcript


def _check(name: str, passed: bool | None, **details: Any) -> dict[str, Any]:
    # dumped as the store keeps it (a usual gating is left out of the JSON)
    return CheckResult(name=name, value=1.0 if passed else 0.0, passed=passed,
                       details=details).model_dump(mode="json", exclude_none=True)


def _judgment(rubric_id: str, *, passed: bool, target: str = "final_response",
              pass_agreement: float | None = 1.0,
              members: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"rubric_id": rubric_id, "target": target, "passed": passed,
            "failed_criteria": [] if passed else ["correctness"],
            "disagreement": {"pass_agreement": pass_agreement}, "members": members or []}


def _record(*, passed: bool | None = False, status: str = "scored",
            checks: list[dict[str, Any]] | None = None,
            judgments: list[dict[str, Any]] | None = None,
            calls: list[ToolCallRecord] | None = None,
            findings: list[SimulatorFinding] | None = None, simulator: bool = True,
            error: ErrorInfo | None = None) -> SampleRecord:
    models = {"agent": "mock:agent", **({"simulator": "mock:simulator"} if simulator else {})}
    transcript = Transcript(scenario_id="s", epoch=1, stop_reason="goal_met",
                            tool_calls=calls or [], models=models)
    return SampleRecord(
        scenario_id="s", epoch=1, status=status, score=None if status != "scored" else 0.5,
        passed=passed, error=error, transcript=transcript,
        checks=[{"scenario_id": "s", "results": checks or []}], judgments=judgments or [],
        simulator_findings=findings or [])


PENDING = SimulatorFinding(kind="ended_while_agent_pending", turn=2,
                           evidence='ended while the agent asked: "Your order id?"')
PASSING_TRAJECTORY = [_check("tool_trajectory_avg_score", True)]
FAILING_TRAJECTORY = [_check("tool_trajectory_avg_score", False)]


def test_a_passed_or_unscored_sample_has_no_attribution() -> None:
    assert attribute(_record(passed=True)) is None
    assert attribute(_record(passed=None, status="unscored")) is None


@pytest.mark.parametrize(("error", "party"), [
    (ErrorInfo(kind="ModelUnavailableError", message="429 until retries ran out",
               role="agent"), "infrastructure"),
    (ErrorInfo(kind="StructuredOutputError", message="bad verdict", role="simulator"),
     "infrastructure"),
    (ErrorInfo(kind="judge_error", message="task: every judge sample failed", role="judge"),
     "infrastructure"),
    (ErrorInfo(kind="EpisodeTimeout", message="ran past 60 s", role="agent"), "infrastructure"),
    (ErrorInfo(kind="agent_unavailable", message="503", role="agent"), "infrastructure"),
    (ErrorInfo(kind="check_error", message="my_check raised"), "infrastructure"),
    (ErrorInfo(kind="ValueError", message="bad state", role="agent"), "agent"),
    (ErrorInfo(kind="agent_bad_reply", message="not JSON", role="agent"), "agent"),
    (ErrorInfo(kind="UnmockedTool", message="roll_die is not mocked", role="agent"), "tool"),
])
def test_an_errored_sample_is_the_infrastructure_s_unless_the_agent_itself_broke(
        error: ErrorInfo, party: str) -> None:
    found = attribute(_record(status="errored", passed=None, error=error))
    assert found is not None and found.party == party
    assert found.evidence == [f"{error.kind}: {error.message}"]
    assert error.kind in found.reason or found.party == "tool"


def _refused(name: str, error: str) -> ToolCallRecord:
    return ToolCallRecord(call_id="c0", name=name, arguments={"order_id": "A-1"},
                          is_error=True, error=error,
                          result={"error": f"{error}: order_id: 'A-1' does not match"})


def test_a_refused_call_the_reference_makes_is_the_mocked_tool_s_fault() -> None:
    checks = [_check("trajectory_any_order_match", True,
                     pairs=[{"reference": 0, "actual": 0, "name": "get_order"}]),
              *FAILING_TRAJECTORY]
    found = attribute(_record(checks=checks, calls=[_refused("get_order", "invalid_arguments")],
                              findings=[PENDING]))
    assert found is not None and found.party == "tool"  # before the simulator
    assert found.evidence == ["call 1 get_order matches reference call 1 of the scenario, and "
                              "the mock refused it (invalid_arguments): invalid_arguments: "
                              "order_id: 'A-1' does not match"]


def test_a_refused_call_the_reference_does_not_make_is_the_agent_s() -> None:
    checks = [_check("trajectory_any_order_match", False, pairs=[]), *FAILING_TRAJECTORY]
    found = attribute(_record(checks=checks, calls=[_refused("get_order", "invalid_arguments")],
                              simulator=False))
    assert found is not None and found.party == "agent"


def test_an_injected_error_is_meant_and_the_failure_stays_the_agent_s() -> None:
    checks = [_check("trajectory_any_order_match", True,
                     pairs=[{"reference": 0, "actual": 0, "name": "get_order"}]),
              *FAILING_TRAJECTORY]
    found = attribute(_record(checks=checks, calls=[_refused("get_order", "injected")]))
    assert found is not None and found.party == "agent"
    assert found.evidence[-1] == ("1 tool error(s) the scenario injected on purpose "
                                  "(get_order)")


@pytest.mark.parametrize("kind", FINDING_KINDS)
def test_a_simulator_finding_blames_the_simulator_only_when_it_takes_the_task_away(
        kind: str) -> None:
    finding = SimulatorFinding(kind=kind, turn=1, evidence="quoted")
    found = attribute(_record(checks=FAILING_TRAJECTORY, findings=[finding]))
    assert found is not None
    assert found.party == ("simulator" if kind in DISRUPTIVE_KINDS else "agent")
    if found.party == "simulator":
        assert found.evidence == [f"user turn 1, {kind}: quoted"]


def test_a_scripted_user_is_never_the_simulator_s_fault() -> None:
    found = attribute(_record(checks=FAILING_TRAJECTORY, findings=[PENDING], simulator=False))
    assert found is not None and found.party == "agent"


def test_split_judge_samples_with_every_check_passing_blame_the_judge() -> None:
    found = attribute(_record(checks=PASSING_TRAJECTORY, judgments=[
        _judgment("quality", passed=False, pass_agreement=0.6)]))
    assert found is not None and found.party == "judge"
    assert found.evidence == ["quality: its judge samples are split on the verdict (60% agree)"]


def test_a_split_panel_blames_the_judge_and_names_who_passed_it() -> None:
    members = [{"judge_models": ["mock:judge-strict"], "passed": False},
               {"judge_models": ["mock:judge-lenient"], "passed": True}]
    found = attribute(_record(checks=PASSING_TRAJECTORY, judgments=[
        _judgment("quality", passed=False, pass_agreement=None, members=members)]))
    assert found is not None and found.party == "judge"
    assert found.evidence == ["quality: the panel is split (passed by mock:judge-lenient)"]


def test_a_tool_use_rubric_against_a_passing_trajectory_blames_the_judge() -> None:
    found = attribute(_record(checks=PASSING_TRAJECTORY, judgments=[
        _judgment("tools", passed=False, target="tool_use")]))
    assert found is not None and found.party == "judge"
    assert "trajectory check of the same calls passed" in found.evidence[0]


def test_the_judge_is_blamed_only_when_every_failing_rubric_is_disputed() -> None:
    judgments = [_judgment("split", passed=False, pass_agreement=0.5),
                 _judgment("sure", passed=False, pass_agreement=1.0)]
    found = attribute(_record(checks=PASSING_TRAJECTORY, judgments=judgments))
    assert found is not None and found.party == "agent"
    assert found.evidence == ["rubric split failed on correctness",
                              "rubric sure failed on correctness"]


def test_a_failing_check_keeps_the_failure_the_agent_s_whatever_the_judges_say() -> None:
    found = attribute(_record(checks=FAILING_TRAJECTORY, judgments=[
        _judgment("split", passed=False, pass_agreement=0.5)]))
    assert found is not None and found.party == "agent"
    assert found.evidence[0] == "check tool_trajectory_avg_score failed"


def test_a_descriptive_view_failing_is_not_evidence_against_the_agent() -> None:
    # trajectory_exact_match does not gate: a tool_use rubric failing beside it is disputed
    checks = [_check("trajectory_exact_match", False), *PASSING_TRAJECTORY]
    found = attribute(_record(checks=checks, judgments=[
        _judgment("tools", passed=False, target="tool_use")]))
    assert found is not None and found.party == "judge"


def test_a_rubric_of_the_simulated_user_never_blames_anyone() -> None:
    judgments = [_judgment("simulator_turns", passed=False, target="user_turn"),
                 _judgment("quality", passed=False, pass_agreement=0.5)]
    found = attribute(_record(checks=PASSING_TRAJECTORY, judgments=judgments))
    assert found is not None and found.party == "judge"
    assert [e.split(":")[0] for e in found.evidence] == ["quality"]
