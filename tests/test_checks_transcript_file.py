"""Reading a contract-4 transcript file: every error message whole (file, line, field and
what was expected), and every key of a scored row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InputError
from harness.formats.transcript_file import load_transcript_file, score_records
from tests.helpers.transcript_lines import transcript_line as _line

FIELDS = ("id, messages, expected_tool_calls, expectations, reference_answer, final_state, "
          "tools, system_prompt, metadata, user")


def _write(tmp_path: Path, *lines: dict[str, Any]) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _user(text: str = "hi") -> dict[str, Any]:
    return {"role": "user", "content": text}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (_line(id=None), "id: required field is missing"),
        (_line(id=None, messages=None),
         "id: required field is missing (and 1 more problem on this line)"),
        (_line(id=None, messages=None, expected_tool_calls=[{"args": {}}]),
         "id: required field is missing (and 2 more problems on this line)"),
        (_line(id=""), "id: string should have at least 1 character"),
        (_line(extra_key=1), f"extra_key: unknown field (allowed: {FIELDS})"),
        (_line(expectations={"forbiden_tools": ["x"]}),
         "expectations.forbiden_tools: unknown field"),
        (_line(messages=[_user(), {"role": "bot"}]),
         "messages[1].role: one of system, developer, user, assistant, tool, function "
         "(got 'bot')"),
        (_line(messages=[_user(), {"role": "user", "content": 5}]),
         "messages[1].content: a string, a list of parts or null"),
        # the first message has no tool calls: the ones after it are still checked
        (_line(messages=[_user(), {"role": "assistant", "tool_calls": "x"}]),
         "messages[1].tool_calls: a list of tool calls"),
        (_line(messages=[_user(), {"role": "assistant", "tool_calls": ["x"]}]),
         'messages[1].tool_calls[0].function: an object with a string "name" (and "arguments")'),
        (_line(messages=[{"role": "assistant", "tool_calls": [{"function": {"name": 1}}]}]),
         'messages[0].tool_calls[0].function: an object with a string "name" (and "arguments")'),
        (_line(messages=[{"role": "assistant", "function_call": "x"}]),
         "messages: OpenAI chat-format messages ('str' object has no attribute 'get')"),
        (_line(expectations={"tool_calls": []}),
         "expected_tool_calls: given only once (expectations.tool_calls is also set)"),
        (_line(expected_tool_calls=None),
         "expected_tool_calls: required: a list of {name, args} ([] when no tool call is "
         "expected)"),
        (_line(reference_answer="a", expectations={"reference_answer": "b"}),
         "reference_answer: given only once (expectations.reference_answer is also set)"),
        (_line(system_prompt="s", messages=[_user(), {"role": "developer", "content": "d"}]),
         "system_prompt: given only once (messages[1] is also a system prompt)"),
        (_line(expected_tool_calls=[{"name": "a", "turn": 0}, {"name": "b"}]),
         "expected_tool_calls[1].turn: a turn on every reference call or on none (some calls "
         "name their turn)"),
        (_line(expected_tool_calls=None,
               expectations={"tool_calls": [{"name": "a", "turn": 0}, {"name": "b"}]}),
         "expectations.tool_calls[1].turn: a turn on every reference call or on none (some "
         "calls name their turn)"),
    ],
)
def test_bad_line_message(tmp_path: Path, line: dict[str, Any], message: str) -> None:
    path = _write(tmp_path, line)
    with pytest.raises(InputError) as raised:
        load_transcript_file(path)
    assert str(raised.value) == f"{path}:1: {message}"
    assert (raised.value.source, raised.value.location) == (str(path), 1)


def test_a_missing_file_says_what_it_should_be(tmp_path: Path) -> None:
    path = tmp_path / "nope.jsonl"
    with pytest.raises(InputError) as raised:
        load_transcript_file(path)
    assert str(raised.value) == f"{path}: file not found; expected a JSONL file of transcripts"


def test_a_scored_row_has_its_line_checks_and_metadata(tmp_path: Path) -> None:
    path = _write(tmp_path, _line(id="a", metadata={"team": "x"}),
                  _line(id="b", messages=[_user(), {"role": "assistant", "content": None,
                                                    "tool_calls": [{"id": "1", "function": {
                                                        "name": "t", "arguments": "{x"}}]}]))
    out = score_records(load_transcript_file(path))
    first, second = out["transcripts"]
    exact = {"name": "trajectory_exact_match", "value": 1.0, "passed": True,
             "details": {"reference_calls": 0, "actual_calls": 0, "matched": 0},
             "findings": [], "unscored_reason": None}
    assert (first["id"], first["line"], first["passed"], first["warnings"]) == ("a", 1, True, [])
    assert first["checks"][0] == exact
    assert first["metadata"] == {"team": "x"}
    assert (second["line"], second["passed"]) == (2, False)
    assert "metadata" not in second
    assert out["warnings"] == [f"line 2 (id b): {w}" for w in second["warnings"]]
    assert len(second["warnings"]) == 1


def test_summary_intervals_match_statsmodels_and_scipy() -> None:
    """Each metric's interval treats transcripts as independent units: Wilson for 0/1
    metrics (statsmodels), t on n-1 df cut at [0, 1] for the rest (scipy), the no-spread
    interval when all values agree, none from one value."""
    import numpy as np
    import scipy.stats as sps
    from statsmodels.stats.proportion import proportion_confint

    from harness.formats.transcript_file import summarise_metrics

    rows = [{"binary": b, "graded": g, "same": 1.0, "one": o}
            for b, g, o in zip([1, 0, 1, 1, 0, 1], [0.2, 0.9, 0.55, 0.7, 0.35, 0.8],
                               [0.5, None, None, None, None, None], strict=True)]
    summary = summarise_metrics(rows)
    low, high = proportion_confint(4, 6, alpha=0.05, method="wilson")
    assert summary["binary"]["method"] == "wilson"
    assert summary["binary"]["ci_low"] == pytest.approx(low)
    assert summary["binary"]["ci_high"] == pytest.approx(high)
    graded = np.array([0.2, 0.9, 0.55, 0.7, 0.35, 0.8])
    t_low, t_high = sps.t.interval(0.95, 5, loc=graded.mean(), scale=sps.sem(graded))
    assert summary["graded"]["method"] == "t"
    assert summary["graded"]["ci_low"] == pytest.approx(max(t_low, 0.0))
    assert summary["graded"]["ci_high"] == pytest.approx(min(t_high, 1.0))
    # six transcripts all at 1: the exact one-sided bound (0.025 ** (1/6)), not a zero width
    assert summary["same"]["method"] == "top"
    assert summary["same"]["ci_low"] == pytest.approx(0.025 ** (1 / 6))
    assert summary["same"]["ci_high"] == 1.0
    assert summary["one"] == {"mean": 0.5, "n": 1, "ci_low": None, "ci_high": None,
                              "method": None}
