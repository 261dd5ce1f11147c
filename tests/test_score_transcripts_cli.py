"""`harness score-transcripts FILE --json` (contract 4): output for the example file, and
bad input reported as one line naming file, line and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import InputError
from harness.formats.transcript_file import load_transcript_file
from tests.helpers.cli import run_cli
from tests.helpers.transcript_lines import transcript_line as _line

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "transcripts"
EXAMPLE = EXAMPLES / "seed_transcripts.jsonl"

# Per transcript, computed by hand (see examples/transcripts/README.md for the reasoning).
EXPECTED: dict[str, dict[str, float]] = {
    "T001": {"trajectory_exact_match": 1, "trajectory_in_order_match": 1,
             "trajectory_any_order_match": 1, "trajectory_precision": 1, "trajectory_recall": 1,
             "trajectory_f1": 1, "tool_trajectory_avg_score": 1,
             "trajectory_single_tool_use:get_weather": 1, "response_match_score": 0.6,
             "required_phrases": 1},
    "T002": {"trajectory_exact_match": 1, "trajectory_in_order_match": 1,
             "trajectory_any_order_match": 1, "trajectory_precision": 1, "trajectory_recall": 1,
             "trajectory_f1": 1, "tool_trajectory_avg_score": 1, "parameter_accuracy": 1},
    "T002-wrong-tool": {"trajectory_exact_match": 0, "trajectory_in_order_match": 0,
                        "trajectory_any_order_match": 0, "trajectory_precision": 0,
                        "trajectory_recall": 0, "trajectory_f1": 0,
                        "tool_trajectory_avg_score": 0, "parameter_accuracy": 0},
    "T003": {"trajectory_exact_match": 1, "trajectory_in_order_match": 1,
             "trajectory_any_order_match": 1, "trajectory_precision": 1, "trajectory_recall": 1,
             "trajectory_f1": 1, "tool_trajectory_avg_score": 1, "no_tool_calls": 1},
    "F001": {"trajectory_exact_match": 0, "trajectory_in_order_match": 1,
             "trajectory_any_order_match": 1, "trajectory_precision": 2 / 3,
             "trajectory_recall": 1, "trajectory_f1": 0.8, "tool_trajectory_avg_score": 0,
             "tool_order_score": 1, "max_tool_calls": 1},
    "T005-malformed-arguments": {"trajectory_exact_match": 0, "trajectory_in_order_match": 1,
                                 "trajectory_any_order_match": 1, "trajectory_precision": 0.5,
                                 "trajectory_recall": 1, "trajectory_f1": 2 / 3,
                                 "tool_trajectory_avg_score": 0},
}


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, ["score-transcripts", *args])


def test_example_file_json_matches_hand_computed_numbers() -> None:
    result = _run(str(EXAMPLE), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    rows = {row["id"]: row for row in out["transcripts"]}
    assert list(rows) == list(EXPECTED)
    for tid, metrics in EXPECTED.items():
        got = {k: rows[tid][k] for k in metrics}
        assert got == pytest.approx(metrics), tid
        assert [c["name"] for c in rows[tid]["checks"]] == list(metrics)
    summary = out["summary"]
    assert summary["n_transcripts"] == 6
    means = summary["metrics"]
    # 3 of 6 exact: Wilson 95% [0.1876, 0.8124] (statsmodels proportion_confint, method
    # "wilson"); parameter accuracy is 0.5 from two graded values, a t interval
    assert means["trajectory_exact_match"] == {"mean": 0.5, "n": 6, "method": "wilson",
                                               "ci_low": pytest.approx(0.18761, abs=1e-5),
                                               "ci_high": pytest.approx(0.81239, abs=1e-5)}
    assert means["trajectory_precision"]["mean"] == pytest.approx((1 + 1 + 0 + 1 + 2 / 3 + 0.5) / 6)
    assert means["trajectory_f1"]["mean"] == pytest.approx((3 + 0.8 + 2 / 3) / 6)
    assert {k: means["parameter_accuracy"][k] for k in ("mean", "n")} == {"mean": 0.5, "n": 2}
    assert means["response_match_score"] == {"mean": pytest.approx(0.6), "n": 1,
                                             "ci_low": None, "ci_high": None, "method": None}
    # the malformed call is a warning in the JSON (per transcript and overall) and on stderr
    assert len(rows["T005-malformed-arguments"]["warnings"]) == 1
    assert out["warnings"][0].startswith("line 6 (id T005-malformed-arguments): tool call 0")
    assert "warning:" in result.stderr and "not a JSON object" in result.stderr


def test_table_output() -> None:
    result = _run(str(EXAMPLE))
    assert result.exit_code == 0, result.output
    assert "T002-wrong-tool" in result.stdout.replace("\n", "") or "T002-wrong" in result.stdout
    assert "Summary over 6 transcripts" in result.stdout
    assert "trajectory_precision" in result.stdout and "0.69" in result.stdout


def _write(tmp_path: Path, *lines: Any) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("lines", "location", "fragment"),
    [
        (['{"id": "x", "messages": [}'], ":1: not valid JSON", "JSON"),
        (["[1, 2]"], ":1: a JSON object per line", "object"),
        ([_line(id=None)], ":1: id:", "required"),
        ([_line(messages=None)], ":1: messages:", "required"),
        ([_line(expected_tool_calls=None)], ":1: expected_tool_calls:", "required"),
        ([_line(messages="hi")], ":1: messages:", "valid list"),
        ([_line(messages=["hi"])], ":1: messages[0]:", "dictionary"),
        ([_line(), _line(id="y", messages=[{"role": "bot", "content": "hi"}])],
         ":2: messages[0].role:", "'bot'"),
        ([_line(messages=[{"content": "hi"}])], ":1: messages[0].role:", "None"),
        ([_line(messages=[{"role": "assistant", "tool_calls": "get_weather"}])],
         ":1: messages[0].tool_calls:", "a list"),
        ([_line(messages=[{"role": "assistant", "tool_calls": [{"id": "1"}]}])],
         ":1: messages[0].tool_calls[0].function:", "name"),
        ([_line(expected_tool_calls=[{"name": "a", "args": "x"}])],
         ":1: expected_tool_calls[0].args:", "dictionary"),
        ([_line(expected_tool_calls=[{"args": {}}])], ":1: expected_tool_calls[0].name:",
         "required"),
        ([_line(extra_key=1)], ":1: extra_key:", "unknown field"),
        ([_line(expectations={"forbiden_tools": ["x"]})], ":1: expectations.forbiden_tools:",
         "unknown field"),
        ([_line(expectations={"tool_calls": []})], ":1: expected_tool_calls:", "only once"),
        ([_line(reference_answer="a", expectations={"reference_answer": "b"})],
         ":1: reference_answer:", "only once"),
        ([_line(), "", _line()], ":3: id:", "also on line 1"),
        ([_line(expected_tool_calls=[{"name": "a", "match": {"overrides": {
            "city": {"matcher": "no_such_module_q:f"}}}}])],
         ":1: expected_tool_calls[0].match.overrides.city.matcher:", "does not import"),
        ([_line(expectations={"arg_matching": {"overrides": {"c": {"matcher": "math:nope"}}}})],
         ":1: expectations.arg_matching.overrides.c.matcher:", "no attribute"),
        ([""], ": at least one transcript", "no lines"),
    ],
)
def test_bad_input_names_line_and_field(tmp_path: Path, lines: list[Any], location: str,
                                        fragment: str) -> None:
    path = _write(tmp_path, *lines)
    with pytest.raises(InputError) as info:
        load_transcript_file(path)
    message = str(info.value)
    assert message.startswith(str(path) + location), message
    assert fragment in message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        load_transcript_file(tmp_path / "nope.jsonl")


def test_expectations_can_carry_the_reference_instead(tmp_path: Path) -> None:
    path = _write(tmp_path, _line(expected_tool_calls=None, expectations={
        "tool_calls": [], "no_tool_calls": True}, final_state={"a": 1}, metadata={"k": "v"}))
    records = load_transcript_file(path)
    assert records[0].transcript.final_state == {"a": 1}
    assert records[0].metadata == {"k": "v"}


def test_cli_bad_input_exits_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    path = _write(tmp_path, _line(messages=[{"role": "robot", "content": "x"}]))
    proc = run_cli("score-transcripts", str(path), "--json")
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "t.jsonl:1: messages[0].role" in lines[0]


def test_malformed_arguments_never_crash(tmp_path: Path) -> None:
    weird = ["{city: Paris", "[1, 2]", "null", "", "42"]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "weather?"}]
    for i, raw in enumerate(weird):
        messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": "get_weather", "arguments": raw}}]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "error"})
    path = _write(tmp_path, _line(messages=messages, expected_tool_calls=[
        {"name": "get_weather", "args": {"city": "Paris"}}]))
    result = _run(str(path), "--json")
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)["transcripts"][0]
    assert row["trajectory_recall"] == 0.0 and row["trajectory_precision"] == 0.0
    # every one but "" (no arguments at all) is not a JSON object: four warnings
    assert len(row["warnings"]) == 4


# --- tool definitions and the system prompt on a line ----------------------------------------

WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}},
                  "required": ["city"]}
TOOLS_IN_THREE_SHAPES = [
    {"name": "get_weather", "description": "Current weather for a city.",
     "parameters": WEATHER_SCHEMA},
    {"type": "function", "function": {"name": "get_forecast", "description": "Five-day forecast.",
                                      "parameters": WEATHER_SCHEMA, "strict": True}},
    {"name": "book_taxi", "description": "Book a taxi.",
     "input_schema": {"type": "object", "properties": {"to": {"type": "string"}}}},
]


def test_tools_and_system_prompt_reach_the_transcript_and_the_tool_use_judge(
        tmp_path: Path) -> None:
    from harness.formats.transcript_judging import context_for_record
    from harness.judging.prompts import build_judge_prompt
    from harness.judging.rubric import load_rubrics

    path = _write(tmp_path, _line(tools=TOOLS_IN_THREE_SHAPES,
                                  system_prompt="You are a travel desk. Never guess."))
    transcript = load_transcript_file(path)[0].transcript
    assert [(t.name, t.description) for t in transcript.tools] == [
        ("get_weather", "Current weather for a city."), ("get_forecast", "Five-day forecast."),
        ("book_taxi", "Book a taxi.")]
    assert transcript.tools[1].parameters == WEATHER_SCHEMA
    assert transcript.tools[2].parameters["properties"] == {"to": {"type": "string"}}
    assert transcript.system_prompt == "You are a travel desk. Never guess."
    record = load_transcript_file(path)[0]
    prompt = build_judge_prompt(load_rubrics()["tool_use_quality"], record.transcript,
                                context_for_record(record)).material
    assert "(no tool definitions were given)" not in prompt
    assert "- get_forecast: Five-day forecast." in prompt
    assert '"required": ["city"]' in prompt and "- book_taxi: Book a taxi." in prompt
    assert "You are a travel desk. Never guess." in prompt


def test_lines_without_tools_stay_valid_and_say_no_tools_were_given(tmp_path: Path) -> None:
    from harness.judging.prompts import build_judge_prompt
    from harness.judging.rubric import load_rubrics

    transcript = load_transcript_file(_write(tmp_path, _line()))[0].transcript
    assert transcript.tools == [] and transcript.system_prompt is None
    prompt = build_judge_prompt(load_rubrics()["tool_use_quality"], transcript).material
    assert "(no tool definitions were given)" in prompt


def test_a_system_message_still_gives_the_system_prompt(tmp_path: Path) -> None:
    line = _line(messages=[{"role": "developer", "content": "Be brief."},
                           {"role": "user", "content": "hi"}])
    assert load_transcript_file(_write(tmp_path, line))[0].transcript.system_prompt == (
        "Be brief.")


@pytest.mark.parametrize(
    ("tools", "location", "fragment"),
    [
        ("get_weather", ":1: tools:", "valid list"),
        (["get_weather"], ":1: tools[0]:", "an object"),
        ([{"description": "no name"}], ":1: tools[0].name:", "non-empty string"),
        ([{"name": "a"}, {"name": "b", "paramters": {}}], ":1: tools[1].paramters:",
         "not a key of our tool definitions"),
        ([{"type": "function", "function": {"name": "a", "params": {}}}],
         ":1: tools[0].function.params:", "OpenAI function"),
        ([{"type": "function", "function": "a"}], ":1: tools[0].function:", "an object"),
        ([{"type": "retrieval", "function": {"name": "a"}}], ":1: tools[0].type:",
         '"function"'),
        ([{"name": "a", "input_schema": []}], ":1: tools[0].input_schema:", "JSON Schema"),
        ([{"type": "web_search_20250305", "name": "web_search"}], ":1: tools[0].type:",
         "'web_search_20250305'"),
        ([{"name": "a", "parameters": "{}"}], ":1: tools[0].parameters:", "an object"),
        ([{"name": "a"}, {"type": "function", "function": {"name": "a"}}],
         ":1: tools[1].name:", "also defined at [0]"),
    ],
)
def test_bad_tool_definitions_name_line_and_field(tmp_path: Path, tools: Any, location: str,
                                                  fragment: str) -> None:
    path = _write(tmp_path, _line(tools=tools))
    with pytest.raises(InputError) as info:
        load_transcript_file(path)
    message = str(info.value)
    assert message.startswith(str(path) + location), message
    assert fragment in message


def test_system_prompt_given_twice_is_an_error(tmp_path: Path) -> None:
    line = _line(system_prompt="A", messages=[{"role": "system", "content": "B"},
                                               {"role": "user", "content": "hi"}])
    with pytest.raises(InputError, match=r":1: system_prompt: given only once \(messages\[0\]"):
        load_transcript_file(_write(tmp_path, line))
    with pytest.raises(InputError, match=r":1: system_prompt: .*a valid string"):
        load_transcript_file(_write(tmp_path, _line(system_prompt=["A"])))


def test_simulator_fidelity_on_imported_lines_is_unscored_with_the_reason(
        tmp_path: Path) -> None:
    path = _write(tmp_path, _line(metadata={"goal": "say hello"}), _line(id="y"))
    result = _run(str(path), "--json", "--judge", "mock:judge", "--rubric",
                  "simulator_fidelity", "--rubric", "final_response_quality")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    for row in out["transcripts"]:
        assert row["rubric:simulator_fidelity"] is None
        assert row["rubric:final_response_quality"] is not None
        fidelity = next(j for j in row["judgments"] if j["rubric_id"] == "simulator_fidelity")
        assert fidelity["status"] == "not_scored"
        assert fidelity["unscored_reason"].startswith("not applicable: simulator fidelity")
    assert out["summary"]["metrics"]["rubric:simulator_fidelity"] == {
        "mean": None, "n": 0, "ci_low": None, "ci_high": None, "method": None}
    assert out["summary"]["judges"]["judgments"]["not_scored"] == 2
    # one warning for the rubric, naming both transcripts, also on stderr
    warned = [w for w in out["warnings"] if "simulator_fidelity" in w]
    assert len(warned) == 1 and "2 transcript(s) (x, y)" in warned[0]
    assert "not applicable" in result.stderr


def test_the_per_turn_simulator_judge_on_imported_lines_is_unscored_with_the_reason(
        tmp_path: Path) -> None:
    # No user profile: nothing to judge the user's turns against, so no call and the
    # not-applicable reason of the target, not "no user turn" (the lines have one).
    from harness.judging.judge import NO_USER_PROFILE_FOR_TURNS

    path = _write(tmp_path, _line(), _line(id="y"))
    result = _run(str(path), "--json", "--judge", "mock:judge", "--samples", "2",
                  "--rubric", "simulator_turns")
    assert result.exit_code == 0, result.output
    for row in json.loads(result.stdout)["transcripts"]:
        turns = next(j for j in row["judgments"] if j["rubric_id"] == "simulator_turns")
        assert turns["status"] == "not_scored"
        assert turns["unscored_reason"] == NO_USER_PROFILE_FOR_TURNS
