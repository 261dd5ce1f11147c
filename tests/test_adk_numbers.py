"""ADK's numbers on ADK's files: on a scenario converted from an ADK eval case, the ADK-named
checks equal google-adk's own evaluators on the same pair (fixtures of our own, inline), and
the harness's own definitions are reported beside them under their own names.

Each point of issue 29 has a fixed value that holds without ADK and a comparison with ADK's
evaluator (``TrajectoryEvaluator``, ``RougeEvaluator``), run when google-adk imports (the
``adk`` test extra) and skipped otherwise, unless ``HARNESS_REQUIRE_ADK=1`` forbids skipping.
"""

from __future__ import annotations

import json
import os
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from harness.checks.result import CheckReport, CheckResult
from harness.checks.run import run_checks
from harness.formats import load_scenarios
from harness.formats.adk.evalset import read_eval_set
from harness.formats.adk.export import export_eval_set
from harness.models.types import Message
from harness.scenarios.judge_context import reference_answer_of
from harness.scenarios.schema import Scenario
from harness.transcript import ToolCallRecord, Transcript

# One turn of what the agent did: its answer, and its calls as (name, args).
Turn = tuple[str, list[tuple[str, dict[str, Any]]]]


def _invocation(user: str, final: Any = None, calls: Any = ()) -> dict[str, Any]:
    inv: dict[str, Any] = {"user_content": {"role": "user", "parts": [{"text": user}]},
                           "intermediate_data": {"tool_uses": [
                               {"name": n, "args": a} for n, a in calls]}}
    if final is not None:
        inv["final_response"] = final if isinstance(final, dict) else {
            "role": "model", "parts": [{"text": final}]}
    return inv


def _eval_set(*conversation: dict[str, Any]) -> dict[str, Any]:
    return {"eval_set_id": "numbers", "eval_cases": [
        {"eval_id": "case", "conversation": list(conversation)}]}


def _load(tmp_path: Path, data: dict[str, Any], criteria: Any = None) -> Scenario:
    path = tmp_path / "numbers.evalset.json"
    path.write_text(json.dumps(data))
    if criteria is not None:
        (tmp_path / "test_config.json").write_text(json.dumps({"criteria": criteria}))
    return load_scenarios([path])[0]


def _transcript(turns: list[Turn]) -> Transcript:
    messages: list[Message] = []
    calls: list[ToolCallRecord] = []
    for turn, (answer, turn_calls) in enumerate(turns):
        messages.append(Message(role="user", content=f"user turn {turn}"))
        for name, args in turn_calls:
            calls.append(ToolCallRecord(call_id=f"c{len(calls)}", name=name, arguments=args,
                                        turn=turn))
        messages.append(Message(role="assistant", content=answer))
    return Transcript(scenario_id="case", messages=messages, tool_calls=calls,
                      stop_reason="script_finished")


def _checks(scenario: Scenario, turns: list[Turn]) -> CheckReport:
    return run_checks(_transcript(turns), scenario.expectations)


# --- google-adk as the oracle ----------------------------------------------------------------


def _adk() -> Any:
    """google-adk's evaluation package, imported only here (it takes seconds to import)."""
    try:
        from google.adk import evaluation  # noqa: F401
        from google.adk.evaluation import eval_case, eval_metrics, eval_set
        from google.adk.evaluation import final_response_match_v1 as rouge
        from google.adk.evaluation import trajectory_evaluator as trajectory
    except ImportError as err:
        why = (f"google-adk is not installed ({err}); python -m pip install -e '.[test,adk]' "
               "installs it")
        if os.environ.get("HARNESS_REQUIRE_ADK"):
            pytest.fail(why + "; HARNESS_REQUIRE_ADK forbids skipping")
        pytest.skip(why)

    class Adk:
        EvalSet = eval_set.EvalSet
        Invocation = eval_case.Invocation
        IntermediateData = eval_case.IntermediateData
        EvalMetric = eval_metrics.EvalMetric
        ToolTrajectoryCriterion = eval_metrics.ToolTrajectoryCriterion
        RougeEvaluator = rouge.RougeEvaluator
        rouge_1 = staticmethod(rouge._calculate_rouge_1_scores)
        TrajectoryEvaluator = trajectory.TrajectoryEvaluator

    return Adk


def _adk_invocations(adk: Any, turns: list[Turn]) -> list[Any]:
    """What the agent did, as ADK's actual invocations."""
    return [adk.Invocation.model_validate({
        "user_content": {"role": "user", "parts": [{"text": f"user turn {i}"}]},
        "final_response": {"role": "model", "parts": [{"text": answer}]},
        "intermediate_data": {"tool_uses": [{"name": n, "args": a} for n, a in calls]},
    }) for i, (answer, calls) in enumerate(turns)]


def _adk_trajectory(data: dict[str, Any], turns: list[Turn], match_type: str = "EXACT") -> Any:
    adk = _adk()
    expected = adk.EvalSet.model_validate(data).eval_cases[0].conversation
    criterion = adk.ToolTrajectoryCriterion(threshold=1.0, match_type=match_type)
    evaluator = adk.TrajectoryEvaluator(eval_metric=adk.EvalMetric(
        metric_name="tool_trajectory_avg_score", criterion=criterion))
    return evaluator.evaluate_invocations(_adk_invocations(adk, turns), expected)


def _adk_rouge(data: dict[str, Any], turns: list[Turn]) -> Any:
    adk = _adk()
    expected = adk.EvalSet.model_validate(data).eval_cases[0].conversation
    evaluator = adk.RougeEvaluator(adk.EvalMetric(metric_name="response_match_score",
                                                  threshold=0.8))
    return evaluator.evaluate_invocations(_adk_invocations(adk, turns), expected)


def _value(result: CheckResult) -> float:
    assert result.value is not None, result.unscored_reason
    return result.value


# --- turns with no reference answer ------------------------------------------------------------

NO_REFERENCE_IN_TURN_1 = _eval_set(
    _invocation("What is 2 + 2?", "It is 4."),
    _invocation("Thanks!"),  # ADK's fixtures often leave a closing turn without an answer
)
PERFECT = [("It is 4.", []), ("You are welcome.", [])]


def test_a_turn_without_a_reference_answer_scores_zero_as_in_adk(tmp_path: Path) -> None:
    scenario = _load(tmp_path, NO_REFERENCE_IN_TURN_1)
    report = _checks(scenario, PERFECT)
    adk_named = report.get("response_match_score")
    # ADK compares turn 1's answer with empty text: (1 + 0) / 2, failing its default 0.8
    assert (_value(adk_named), adk_named.passed, adk_named.gating) == (0.5, False, True)
    assert [t["no_reference"] for t in adk_named.details["per_turn"]] == [False, True]
    ours = report.get("response_match_score_referenced")
    assert (ours.value, ours.passed, ours.gating) == (1.0, True, False)  # reported, not gating
    assert report.passed is False


def test_response_match_score_equals_adk_on_turns_without_a_reference(tmp_path: Path) -> None:
    scenario = _load(tmp_path, NO_REFERENCE_IN_TURN_1)
    for turns in (PERFECT, [("Four.", []), ("Bye.", [])], [("", []), ("4", [])]):
        theirs = _adk_rouge(NO_REFERENCE_IN_TURN_1, turns)
        ours = _checks(scenario, turns).get("response_match_score")
        assert ours.value == theirs.overall_score
        assert [t["score"] for t in ours.details["per_turn"]] == [
            r.score for r in theirs.per_invocation_results]


def test_a_case_without_any_final_response_scores_zero_under_adks_defaults(
    tmp_path: Path,
) -> None:
    data = _eval_set(_invocation("Turn the lamp off", None, [("set", {"on": False})]))
    scenario = _load(tmp_path, data)  # no test_config.json: ADK's defaults
    report = _checks(scenario, [("Done.", [("set", {"on": False})])])
    result = report.get("response_match_score")
    assert (result.value, result.passed) == (0.0, False)
    assert result.value == _adk_rouge(data, [("Done.", [("set", {"on": False})])]).overall_score
    assert report.get("response_match_score_referenced").unscored_reason == \
        "no turn has a reference answer"


def test_a_config_without_response_match_adds_no_check_to_a_case_without_answers(
    tmp_path: Path,
) -> None:
    data = _eval_set(_invocation("Turn the lamp off", None, [("set", {"on": False})]))
    scenario = _load(tmp_path, data, criteria={"tool_trajectory_avg_score": 1.0})
    names = _checks(scenario, [("Done.", [("set", {"on": False})])]).metrics()
    assert "response_match_score" not in names  # ADK computes only the criteria it is given


# --- no expected call in any turn, one extra call -------------------------------------------------

NO_CALLS = _eval_set(*(_invocation(f"question {i}", f"answer {i}") for i in range(3)))
ONE_EXTRA_CALL = [("answer 0", []), ("answer 1", [("lookup", {"q": "x"})]), ("answer 2", [])]


@pytest.mark.parametrize(("match_type", "score"), [
    ("EXACT", 2 / 3), ("IN_ORDER", 1.0), ("ANY_ORDER", 1.0)])
def test_no_expected_call_is_scored_per_invocation_as_in_adk(
    tmp_path: Path, match_type: str, score: float
) -> None:
    criteria = {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": match_type}}
    scenario = _load(tmp_path, NO_CALLS, criteria)
    result = _checks(scenario, ONE_EXTRA_CALL).get("tool_trajectory_avg_score")
    assert _value(result) == pytest.approx(score)  # not the whole conversation as one (0)
    theirs = _adk_trajectory(NO_CALLS, ONE_EXTRA_CALL, match_type)
    assert result.value == theirs.overall_score
    assert result.details["per_turn"] == [r.score for r in theirs.per_invocation_results]


# --- True against 1 in tool arguments ------------------------------------------------------------

BOOLEAN_ARGS = _eval_set(
    _invocation("Lamp on", "On.", [("set_lamp", {"on": True, "level": 1})]),
    _invocation("Kettle on", "On.", [("set_kettle", {"on": True})]),
)
INTEGER_ARGS = [("On.", [("set_lamp", {"on": 1, "level": 1.0})]),
                ("On.", [("set_kettle", {"on": True})])]


def test_arguments_compare_as_adk_compares_them_and_ours_stay_typed(tmp_path: Path) -> None:
    scenario = _load(tmp_path, BOOLEAN_ARGS)
    report = _checks(scenario, INTEGER_ARGS)
    adk_named = report.get("tool_trajectory_avg_score")
    assert (adk_named.value, adk_named.passed) == (1.0, True)  # Python: True == 1, 1 == 1.0
    assert adk_named.details["arguments"] == "python_equal"
    strict = report.get("tool_trajectory_avg_score_strict")
    assert (strict.value, strict.passed, strict.gating) == (0.5, False, False)  # true != 1
    assert strict.details["per_turn"] == [0.0, 1.0]
    assert report.get("trajectory_exact_match").value == 0.0  # the Vertex views stay ours
    assert adk_named.value == _adk_trajectory(BOOLEAN_ARGS, INTEGER_ARGS).overall_score


# --- thinking text in a reference answer ---------------------------------------------------------

THOUGHT = "The user wants the forecast, so I should look it up before answering."
WITH_THOUGHT = _eval_set(_invocation("Weather in Paris?", {"role": "model", "parts": [
    {"text": THOUGHT, "thought": True}, {"text": "Sunny and 18 degrees in Paris."}]}))
EXACT_ANSWER = [("Sunny and 18 degrees in Paris.", [])]


def test_adks_criterion_reads_the_thinking_text_and_the_judges_do_not(tmp_path: Path) -> None:
    scenario = _load(tmp_path, WITH_THOUGHT)
    answer = (scenario.expectations.reference_answers or [])[0]
    assert (answer.answer, answer.thought) == ("Sunny and 18 degrees in Paris.", THOUGHT)
    assert reference_answer_of(scenario) == "Sunny and 18 degrees in Paris."  # the judges'
    report = _checks(scenario, EXACT_ANSWER)
    # sunni and 18 degre in pari (6) against those and the thought's 13 tokens (the user
    # want the forecast so i should look it up befor answer): P 1, R 6/19, F 12/25
    adk_named = report.get("response_match_score")
    assert _value(adk_named) == pytest.approx(2 * (6 / 19) / (1 + 6 / 19))
    assert report.get("response_match_score_referenced").value == 1.0


def test_the_thinking_text_scores_as_google_adk_2_13_reads_it(tmp_path: Path) -> None:
    adk = _adk()
    scenario = _load(tmp_path, WITH_THOUGHT)
    report = _checks(scenario, EXACT_ANSWER)
    # 2.13 joins every text part of the reference, thoughts included
    reference = "\n".join([THOUGHT, "Sunny and 18 degrees in Paris."])
    assert report.get("response_match_score").value == adk.rouge_1(EXACT_ANSWER[0][0],
                                                                   reference).fmeasure
    theirs = _adk_rouge(WITH_THOUGHT, EXACT_ANSWER).overall_score
    if version("google-adk").startswith("2.13."):
        assert report.get("response_match_score").value == theirs
    else:  # later releases leave thoughts out, as response_match_score_referenced does
        assert report.get("response_match_score_referenced").value == theirs


def test_a_reference_of_thinking_text_alone_is_adks_reference(tmp_path: Path) -> None:
    data = _eval_set(_invocation("Hi", "Hello!"), _invocation("Hm?", {
        "role": "model", "parts": [{"text": "I am not sure what to say.", "thought": True}]}))
    scenario = _load(tmp_path, data)
    assert reference_answer_of(scenario) == "Hello!"  # the judges read the last answer text
    report = _checks(scenario, [("Hello!", []), ("I am not sure.", [])])
    per_turn = report.get("response_match_score").details["per_turn"]
    # i am not sure (4) against i am not sure what to say (7): P 1, R 4/7, F 8/11
    assert per_turn[1]["no_reference"] is False
    assert per_turn[1]["score"] == pytest.approx(8 / 11)
    referenced = report.get("response_match_score_referenced").details["per_turn"]
    assert [t["turn"] for t in referenced] == [0]  # no answer text in turn 1: left out


# --- invocation counts that differ ---------------------------------------------------------------

TWO_TURNS = _eval_set(_invocation("Lamp on", "On.", [("set_lamp", {"on": True})]),
                      _invocation("Kettle on", "On.", [("set_kettle", {"on": True})]))


def test_a_turn_count_mismatch_is_unscored_where_adk_raises(tmp_path: Path) -> None:
    scenario = _load(tmp_path, TWO_TURNS)
    stopped = [("On.", [("set_lamp", {"on": True})])]  # the conversation stopped after turn 0
    report = _checks(scenario, stopped)
    for name in ("tool_trajectory_avg_score", "response_match_score"):
        result = report.get(name)
        assert result.value is None and result.passed is None
        assert "1 invocation(s)" in (result.unscored_reason or "")
        assert "ADK eval case 2" in (result.unscored_reason or "")
        assert result.details == {"actual_invocations": 1, "expected_invocations": 2}
    # ours go on scoring: the unreached turn with a reference scores 0
    assert report.get("tool_trajectory_avg_score_strict").details["per_turn"] == [1.0, 0.0]
    assert report.get("response_match_score_referenced").value == 0.5


def test_google_adk_raises_on_the_same_mismatch() -> None:
    stopped = [("On.", [("set_lamp", {"on": True})])]
    with pytest.raises(ValueError, match="must have the same length; got 1 and 2"):
        _adk_trajectory(TWO_TURNS, stopped)
    with pytest.raises(ValueError, match="must have the same length; got 1 and 2"):
        _adk_rouge(TWO_TURNS, stopped)


# --- scenarios not from ADK files keep their numbers ---------------------------------------------


def test_our_own_scenarios_keep_the_harness_definitions_under_the_adk_names() -> None:
    from harness.checks.spec import Expectations, ExpectedToolCall, TurnAnswer

    exp = Expectations(tool_calls=[ExpectedToolCall(name="set_lamp", args={"on": True},
                                                    turn=0)],
                       reference_answers=[TurnAnswer(turn=0, answer="On.")])
    report = run_checks(_transcript([("On.", [("set_lamp", {"on": 1})]), ("Bye.", [])]), exp)
    assert report.get("tool_trajectory_avg_score").details["per_turn"] == [0.0, 1.0]
    assert report.get("response_match_score").value == 1.0  # turn 1 has no reference: left out
    names = report.metrics()
    assert "tool_trajectory_avg_score_strict" not in names
    assert "response_match_score_referenced" not in names


# --- round trips ---------------------------------------------------------------------------------


def test_a_final_response_without_text_survives_export_and_reimport(tmp_path: Path) -> None:
    finals = [{"role": "model", "parts": [{"text": ""}]},
              {"role": "model", "parts": [{"function_call": {"name": "f", "args": {}}}]},
              {"role": "model", "parts": [{"text": "hmm", "thought": True}]},
              {"role": "model", "parts": [{"text": "Done."}, {"text": "why", "thought": True}]}]
    data = _eval_set(*(_invocation(f"turn {i}", f) for i, f in enumerate(finals)),
                     _invocation("no final response at all"))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _load(tmp_path / "a", data)
    exported = export_eval_set([first], "numbers").eval_set
    written = [inv.get("final_response") for inv in exported["eval_cases"][0]["conversation"]]
    assert written == [*finals, None]
    again = _load(tmp_path / "b", exported)
    assert again.metadata == first.metadata
    assert again.expectations == first.expectations
    reread = read_eval_set(tmp_path / "b" / "numbers.evalset.json")
    assert reread.eval_cases[0].conversation is not None


def test_an_edited_script_must_keep_one_invocation_per_turn(tmp_path: Path) -> None:
    from harness.errors import InputError
    from harness.formats.adk.loading import adk_scenario_mappings
    from harness.scenarios.loading import parse_scenario

    path = tmp_path / "numbers.evalset.json"
    path.write_text(json.dumps(TWO_TURNS))
    data = adk_scenario_mappings(path)[0]
    data["user"]["script"].append("and one more thing")
    with pytest.raises(InputError, match="adk_invocations is 2 but user.script has 3 turn"):
        parse_scenario(data, source=tmp_path / "edited.yaml", base_dir=tmp_path)


# --- random eval cases against google-adk ------------------------------------------------------

_CALLS = [("lamp", {"on": True}), ("lamp", {"on": 1}), ("lamp", {"on": 1.0}),
          ("lamp", {"on": False}), ("lamp", {"on": "1"}), ("kettle", {}),
          ("kettle", {"level": [1, True]}), ("kettle", {"level": [1, 1]})]
_WORDS = ["the", "lamp", "is", "on", "off", "kettle", "boiling", "done", "ok"]


def _random_case(rng: Any) -> tuple[dict[str, Any], list[Turn]]:
    """A random eval case (calls, answers or none, thoughts) and a random agent's turns."""
    def calls() -> list[tuple[str, dict[str, Any]]]:
        return [_CALLS[rng.randrange(len(_CALLS))] for _ in range(rng.randrange(3))]

    def text() -> str:
        return " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(5)))

    invocations = []
    for i in range(rng.randint(1, 3)):
        kind = rng.randrange(4)
        final: Any = None if kind == 0 else text() if kind < 3 else {"role": "model", "parts": [
            {"text": text() or "hm", "thought": True}, {"text": text()}]}
        invocations.append(_invocation(f"turn {i}", final, calls()))
    turns = [(text(), calls()) for _ in invocations]
    return _eval_set(*invocations), turns


def test_random_cases_score_as_google_adk_scores_them(tmp_path: Path) -> None:
    import random

    adk = _adk()
    rng = random.Random(29)
    for k in range(150):
        data, turns = _random_case(rng)
        match_type = ("EXACT", "IN_ORDER", "ANY_ORDER")[k % 3]
        folder = tmp_path / str(k)
        folder.mkdir()
        criteria = {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": match_type},
                    "response_match_score": 0.8}
        report = _checks(_load(folder, data, criteria), turns)
        theirs = _adk_trajectory(data, turns, match_type)
        assert report.get("tool_trajectory_avg_score").value == theirs.overall_score, (
            data, turns)
        expected = adk.EvalSet.model_validate(data).eval_cases[0].conversation
        per_turn = report.get("response_match_score").details["per_turn"]
        for ours, actual, reference in zip(per_turn, _adk_invocations(adk, turns), expected,
                                           strict=True):
            # 2.13 reads every text part of the reference, thoughts included
            parts = reference.final_response.parts if reference.final_response else []
            text = "\n".join(p.text for p in parts or [] if p.text)
            assert ours["score"] == adk.rouge_1(actual.final_response.parts[0].text,
                                                text).fmeasure
        thoughts = any(p.thought for r in expected if r.final_response
                       for p in r.final_response.parts or [])
        if not thoughts or version("google-adk").startswith("2.13."):
            assert report.get("response_match_score").value == \
                _adk_rouge(data, turns).overall_score


def test_a_second_response_match_on_an_adk_scenario_is_named_at_load(tmp_path: Path) -> None:
    from harness.errors import InputError
    from harness.formats.adk.loading import adk_scenario_mappings
    from harness.scenarios.loading import parse_scenario

    path = tmp_path / "numbers.evalset.json"
    path.write_text(json.dumps(TWO_TURNS))
    data = adk_scenario_mappings(path)[0]
    data["checks"] = [{"use": "response_match", "name": "my_rouge",
                       "args": {"reference_answers": [{"turn": 0, "answer": "On."}],
                                "adk_invocations": 2}}]
    with pytest.raises(InputError, match="already runs from expectations.reference_answers"):
        parse_scenario(data, source=tmp_path / "edited.yaml", base_dir=tmp_path)


def test_the_command_line_round_trip_keeps_textless_final_responses(tmp_path: Path) -> None:
    from tests.helpers.cli import run_cli

    finals = [{"role": "model", "parts": [{"text": ""}]},
              {"role": "model", "parts": [{"text": "hmm", "thought": True}]}]
    source = tmp_path / "src" / "numbers.evalset.json"
    source.parent.mkdir()
    source.write_text(json.dumps(_eval_set(*(_invocation(f"turn {i}", f)
                                             for i, f in enumerate(finals)))))
    assert run_cli("import", "adk", source, "--out", tmp_path / "yaml").returncode == 0
    out = tmp_path / "adk" / "numbers.evalset.json"
    exported = run_cli("export", "adk", tmp_path / "yaml", "--out", out)
    assert exported.returncode == 0, exported.stderr
    written = json.loads(out.read_text())["eval_cases"][0]["conversation"]
    assert [inv["final_response"] for inv in written] == finals
    assert run_cli("import", "adk", out, "--out", tmp_path / "again").returncode == 0
    first, again = (load_scenarios([tmp_path / d / "numbers.yaml"])[0] for d in ("yaml", "again"))
    assert again.metadata == first.metadata
    assert again.expectations.adk_invocations == 2
