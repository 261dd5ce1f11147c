"""Reading sample-score JSONL (contract 2) in detail: every error's exact line, field and
text, statuses skipped or read as failures, and the notes that say so. The CLI-level checks
(exit code 2, no traceback) are in test_stats_cli.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InputError, InputErrors
from harness.stats.jsonl import parse_sample_lines, read_sample_scores

SRC = "scores.jsonl"


def _lines(*rows: Any) -> list[str]:
    return [row if isinstance(row, str) else json.dumps(row) for row in rows]


def _problems(*rows: Any, **options: Any) -> list[tuple[str, int | str | None, str | None, str]]:
    with pytest.raises((InputError, InputErrors)) as info:
        parse_sample_lines(_lines(*rows), SRC, **options)
    errors = info.value.errors if isinstance(info.value, InputErrors) else [info.value]
    return [(e.source, e.location, e.field, e.expected) for e in errors]


OK = {"scenario_id": "a", "epoch": 0, "score": 1}

BAD = [
    ("not json", ['{"scenario_id": "a", '],
     [(1, None, "not valid JSON (Expecting property name enclosed in double quotes)")]),
    ("not an object", ["[1, 2]"], [(1, None, "expected a JSON object, got list")]),
    ("no scenario_id", [{"epoch": 0, "score": 1}],
     [(1, "scenario_id", "missing; expected a non-empty string")]),
    ("scenario_id null", [{"scenario_id": None, "epoch": 0, "score": 1}],
     [(1, "scenario_id", "expected a non-empty string, got null")]),
    ("scenario_id number", [{"scenario_id": 3, "epoch": 0, "score": 1}],
     [(1, "scenario_id", "expected a non-empty string, got 3")]),
    ("no epoch", [{"scenario_id": "a", "score": 1}],
     [(1, "epoch", "missing; expected an integer >= 0")]),
    ("epoch bool", [{"scenario_id": "a", "epoch": True, "score": 1}],
     [(1, "epoch", "expected an integer >= 0, got true")]),
    ("no score", [{"scenario_id": "a", "epoch": 0}], [(1, "score", "missing; expected a number")]),
    ("score infinite", ['{"scenario_id": "a", "epoch": 0, "score": Infinity}'],
     [(1, "score", "expected a finite number, got Infinity")]),
    ("passed number", [{**OK, "passed": 1}], [(1, "passed", "expected true or false, got 1")]),
    ("judge_scores empty", [{**OK, "judge_scores": []}],
     [(1, "judge_scores", "expected a non-empty list of finite numbers")]),
    ("judge_scores not a list", [{**OK, "judge_scores": 0.5}],
     [(1, "judge_scores", "expected a non-empty list of finite numbers")]),
    ("judge_scores with a string", [{**OK, "judge_scores": [1, "x"]}],
     [(1, "judge_scores", "expected a non-empty list of finite numbers")]),
    ("offline string", [{**OK, "offline": "yes"}],
     [(1, "offline", 'expected true or false, got "yes"')]),
    ("misspelt key", [{**OK, "pased": True}],
     [(1, "pased", "unknown field; did you mean 'passed'?")]),
    ("unknown status", [{**OK, "status": "done"}],
     [(1, "status", 'expected one of scored, errored, unscored, got "done"')]),
    ("duplicate", [OK, "", {"scenario_id": "b", "epoch": 0, "score": 1}, {**OK, "score": 0}],
     [(4, "epoch", "duplicate sample: scenario 'a' epoch 0 already on line 1")]),
    ("several on one line", [{"scenario_id": "", "epoch": 0.5}],
     [(1, "scenario_id", 'expected a non-empty string, got ""'),
      (1, "epoch", "expected an integer >= 0, got 0.5"),
      (1, "score", "missing; expected a number")]),
    ("empty", [], [(None, None, "no samples: the file is empty; expected one JSON object per "
                    "line with scenario_id, epoch and score")]),
    ("only skipped", [{**OK, "status": "unscored"}, {**OK, "epoch": 1, "status": "errored"}],
     [(None, None, "no scored samples: every line has status errored or unscored")]),
]


@pytest.mark.parametrize(("rows", "expected"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_each_problem_names_its_line_field_and_what_was_expected(
        rows: list[Any], expected: list[tuple[int | None, str | None, str]]) -> None:
    assert _problems(*rows) == [(SRC, *e) for e in expected]


def test_a_close_key_is_ignored_when_the_real_one_is_there_or_it_is_not_close() -> None:
    # "scores" is close to "score", which is present; "status_code" and "offline_run" are
    # only loosely like "status" and "offline" (below the 0.8 similarity cut-off).
    table = parse_sample_lines(_lines({**OK, "scores": [1], "status_code": 200,
                                       "offline_run": 1}), SRC)
    assert table.scores == {"a": [1.0]} and table.notes == []


def test_problems_past_twenty_are_counted_not_listed() -> None:
    problems = _problems(*["x"] * 23, OK)
    assert len(problems) == 21
    assert problems[:20] == [(SRC, i, None, "not valid JSON (Expecting value)")
                             for i in range(1, 21)]
    assert problems[20] == (SRC, None, None, "... and 3 more problems not shown")


def test_statuses_skipped_and_counted_in_the_notes() -> None:
    table = parse_sample_lines(_lines(
        {**OK, "status": "scored", "offline": True},
        {"scenario_id": "a", "epoch": 1, "status": "errored", "score": None},
        {"scenario_id": "b", "epoch": 0, "status": "unscored", "score": None},
        {"scenario_id": "b", "epoch": 1, "status": "errored"},
        {"scenario_id": "b", "epoch": 2, "score": 0.25, "passed": True},
    ), SRC)
    assert table.scores == {"a": [1.0], "b": [0.25]}
    assert table.passed == {"a": [True], "b": [True]}
    assert table.n_samples == 2 and table.n_offline == 1
    assert table.notes == ["2 errored sample(s) skipped (status 'errored'): not scores",
                           "1 unscored sample(s) skipped (status 'unscored'): not scores"]


def test_errors_as_failures_reads_errored_lines_as_score_zero_not_passed() -> None:
    rows = [
        {"scenario_id": "a", "epoch": 0, "status": "errored", "score": None, "passed": None,
         "error": {"kind": "agent_error"}, "offline": True},
        {"scenario_id": "a", "epoch": 1, "status": "errored"},
        {"scenario_id": "a", "epoch": 2, "status": "unscored", "score": None},
        {"scenario_id": "b", "epoch": 0, "score": 1.0},
    ]
    table = parse_sample_lines(_lines(*rows), SRC, errors_as_failures=True)
    assert table.scores == {"a": [0.0, 0.0], "b": [1.0]}
    assert table.passed == {"a": [False, False], "b": [True]}
    assert table.epochs == {"a": [0, 1], "b": [0]}
    assert table.n_samples == 3 and table.n_offline == 1
    assert table.notes == [
        "1 unscored sample(s) skipped (status 'unscored'): not scores",
        "2 errored sample(s) counted as failures (score 0, not passed)"]
    # An errored line still needs its id and epoch.
    assert _problems({"epoch": 0, "status": "errored"}, errors_as_failures=True) == [
        (SRC, 1, "scenario_id", "missing; expected a non-empty string")]
    # Without the policy the same lines are skipped.
    plain = parse_sample_lines(_lines(*rows), SRC)
    assert plain.scores == {"b": [1.0]}


def test_judge_scores_only_when_every_line_has_them() -> None:
    both = parse_sample_lines(_lines({**OK, "judge_scores": [1, 0.5]},
                                     {**OK, "epoch": 1, "judge_scores": [0]}), SRC)
    assert both.judge_scores == {"a": [[1.0, 0.5], [0.0]]} and both.notes == []
    some = parse_sample_lines(_lines({**OK, "judge_scores": [1]}, {**OK, "epoch": 1}), SRC)
    assert some.judge_scores is None
    assert some.notes == ["judge_scores on 1 of 2 samples: judge noise is separated only when "
                          "every sample has them"]


def test_reading_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({**OK, "status": "errored", "score": None}) + "\n"
                    + json.dumps({**OK, "epoch": 1}) + "\n", encoding="utf-8")
    assert read_sample_scores(path).scores == {"a": [1.0]}
    as_failures = read_sample_scores(path, errors_as_failures=True)
    assert as_failures.scores == {"a": [0.0, 1.0]} and as_failures.source == str(path)

    def expect(target: Path, message: str, line: int | None = None) -> None:
        with pytest.raises(InputError) as info:
            read_sample_scores(target)
        assert (info.value.source, info.value.field, info.value.expected,
                info.value.location) == (str(target), None, message, line)

    what = "a JSONL file of sample scores"
    expect(tmp_path / "nope.jsonl", f"file not found; expected {what}")
    expect(tmp_path, f"is a directory; expected {what}")
    binary = tmp_path / "b.jsonl"
    binary.write_bytes(b'{"a": 1}\n\xff')
    expect(binary, f"not UTF-8 text (byte 0xff at column 1); expected {what}, encoded as UTF-8",
           line=2)

    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "open", refuse)  # root may read anything: simulate it
    expect(path, f"permission denied; cannot read {what}")
