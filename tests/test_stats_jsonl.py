"""Reading sample-score JSONL (contract 2) in detail: every error's exact line, field and
text, statuses skipped or read as failures, and the notes that say so. The CLI-level checks
(exit code 2, no traceback) are in test_stats_cli.py."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from harness.errors import InputError, InputErrors
from harness.stats.jsonl import _Reader, check_score_range, parse_sample_lines, read_sample_scores

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
    assert table.notes == ["2 errored samples skipped (status 'errored'): not scores",
                           "1 unscored sample skipped (status 'unscored'): not scores"]


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
        "1 unscored sample skipped (status 'unscored'): not scores",
        "2 errored samples counted as failures (score 0, not passed)"]
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


MAX_EPOCH = 2**63 - 1
MODELS = {"agent": ["openai:gpt-4.1"], "simulator": ["mock:sim"]}
USAGE = {"agent": {"calls": 3, "cached_calls": 1, "cost_usd": 0.5, "unpriced_calls": 0},
         "simulator": {"calls": 2}}  # a usage entry may leave fields out


def _roles(table: Any) -> dict[str, tuple[Any, ...]]:
    return {role: (r.offline, r.offline_models, r.real_models, r.calls, r.cached_calls,
                   r.cost_usd) for role, r in table.roles.items()}


ROLES = {"agent": (False, [], ["openai:gpt-4.1"], 6, 2, 1.0),
         "simulator": (True, ["mock:sim"], [], 4, 0, 0.0)}


@pytest.fixture
def slow(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The numbers of the lines read field by field (not by the fast path)."""
    numbers: list[int] = []
    real_slow = _Reader._slow

    def spy(self: _Reader, number: int, raw: str | bytes) -> None:
        numbers.append(number)
        real_slow(self, number, raw)

    monkeypatch.setattr(_Reader, "_slow", spy)
    return numbers


def test_well_formed_lines_of_every_shape_take_the_fast_path(slow: list[int]) -> None:
    # The module's promise: a well-formed line is taken by the orjson loop, never parsed a
    # second time. Each line below sits on an edge of what the fast path accepts.
    rows = [
        {"scenario_id": "a", "epoch": 0, "score": 0},  # epoch 0, int score at the bottom
        {"scenario_id": "a", "epoch": MAX_EPOCH, "score": 1.0},  # float score at the top
        {"scenario_id": "b", "epoch": 1, "score": 0.5, "passed": True, "offline": True,
         "status": "scored", "judge_scores": [1, 0.25], "run": "x"},  # a key of another export
        {"scenario_id": "b", "epoch": 2, "score": 1, "passed": False, "offline": False,
         "judge_scores": [0.75], "run": "x", "models": {"judge": ["mock:judge"]}},
        {"scenario_id": "c", "epoch": 0, "score": 0.25, "usage": USAGE},
        {"scenario_id": "c", "epoch": 1, "score": 0.25, "models": MODELS, "usage": USAGE},
    ]
    table = parse_sample_lines(_lines(*rows), SRC)
    assert slow == []
    assert table.scores == {"a": [0.0, 1.0], "b": [0.5, 1.0], "c": [0.25, 0.25]}
    assert table.passed == {"a": [False, True], "b": [True, False], "c": [False, False]}
    assert table.epochs == {"a": [0, MAX_EPOCH], "b": [1, 2], "c": [0, 1]}
    assert table.n_offline == 1 and table.n_samples == 6
    # judge_scores on 2 of 6 lines: kept apart from the scores, so only noted.
    assert table.notes == ["judge_scores on 2 of 6 samples: judge noise is separated only "
                           "when every sample has them"]
    # A role's usage is counted on the lines that name its models: the usage-only line
    # adds nothing.
    assert _roles(table) == {"agent": (False, [], ["openai:gpt-4.1"], 3, 1, 0.5),
                             "simulator": (True, ["mock:sim"], [], 2, 0, 0.0),
                             "judge": (True, ["mock:judge"], [], 0, 0, 0.0)}
    # A line the fast path cannot take still goes to the field-by-field checks.
    assert _problems({**OK, "judge_scores": ["x"]}) == [
        (SRC, 1, "judge_scores", "expected a non-empty list of finite numbers")]


def test_lines_read_field_by_field_keep_every_field(slow: list[int]) -> None:
    # orjson refuses NaN, the standard library does not: such a line (here in a key of
    # another export) is read by the field-by-field checks, and must come out the same as
    # on the fast path.
    big = {"run": math.nan}
    rows = [
        {"scenario_id": "a", "epoch": MAX_EPOCH, "score": 1, "passed": False, **big,
         "judge_scores": [1, 0.5], "models": MODELS, "usage": USAGE, "offline": True},
        {"scenario_id": "a", "epoch": 0, "score": 0, "passed": True, **big,
         "judge_scores": [0]},
        {"scenario_id": "b", "epoch": 0, "score": 0, **big, "judge_scores": [0.25],
         "models": MODELS, "usage": USAGE},
        {"scenario_id": "b", "epoch": 1, "score": 1, **big, "judge_scores": [1.0]},
    ]
    table = parse_sample_lines(_lines(*rows), SRC)
    assert slow == [1, 2, 3, 4]
    assert table.scores == {"a": [0.0, 1.0], "b": [0.0, 1.0]}
    assert table.passed == {"a": [True, False], "b": [False, True]}
    assert table.epochs == {"a": [0, MAX_EPOCH], "b": [0, 1]}
    assert table.judge_scores == {"a": [[0.0], [1.0, 0.5]], "b": [[0.25], [1.0]]}
    assert table.n_offline == 1 and table.notes == []
    assert _roles(table) == ROLES


def test_errored_lines_read_as_failures_keep_their_models() -> None:
    rows = [{"scenario_id": "a", "epoch": 0, "status": "errored", "models": MODELS,
             "usage": USAGE, "passed": True, "score": 1},
            {"scenario_id": "a", "epoch": 1, "score": 1, "models": MODELS, "usage": USAGE}]
    table = parse_sample_lines(_lines(*rows), SRC, errors_as_failures=True)
    assert table.passed == {"a": [False, True]} and table.scores == {"a": [0.0, 1.0]}
    assert _roles(table) == ROLES
    assert table.notes == ["1 errored sample counted as failures (score 0, not passed)"]


MODELS_EXPECTED = ("expected an object of role -> list of model names, as a run's "
                   "samples.jsonl writes")
USAGE_EXPECTED = ("expected an object of role -> {calls, cached_calls, cost_usd, ...} "
                  "numbers, as a run's samples.jsonl writes")


@pytest.mark.parametrize(("extra", "field", "expected"), [
    ({"models": ["openai:gpt-4.1"]}, "models", MODELS_EXPECTED),
    ({"models": {"agent": "openai:gpt-4.1"}}, "models", MODELS_EXPECTED),
    ({"models": {"agent": ["openai:gpt-4.1", 3]}}, "models", MODELS_EXPECTED),
    ({"models": {"agent": ["openai:gpt-4.1"]}, "usage": [1]}, "usage", USAGE_EXPECTED),
    ({"usage": {"agent": "3 calls"}}, "usage", USAGE_EXPECTED),
    ({"usage": {"agent": {"calls": "3"}}}, "usage", USAGE_EXPECTED),
    ({"usage": {"agent": {"calls": 1, "unpriced_calls": True}}}, "usage", USAGE_EXPECTED),
    ({"epoch": MAX_EPOCH + 1}, "epoch", f"expected an integer below 2^63, got {MAX_EPOCH + 1}"),
    ({"judge_scores": ["x"]}, "judge_scores", "expected a non-empty list of finite numbers"),
])
def test_models_usage_and_epoch_limits_are_checked(
        extra: dict[str, Any], field: str, expected: str) -> None:
    assert _problems({**OK, **extra}) == [(SRC, 1, field, expected)]


def test_a_duplicate_in_a_later_scenario_is_found() -> None:
    rows = [OK, {"scenario_id": "b", "epoch": 0, "score": 1},
            {"scenario_id": "b", "epoch": 2, "score": 1},
            {"scenario_id": "b", "epoch": 0, "score": 0}]
    assert _problems(*rows) == [
        (SRC, 4, "epoch", "duplicate sample: scenario 'b' epoch 0 already on line 2")]


def test_a_declared_score_range_is_kept_and_must_be_a_range() -> None:
    table = parse_sample_lines(_lines({**OK, "score": 10}, {**OK, "epoch": 1, "score": 2}),
                               SRC, score_range=(2.0, 10.0))
    assert table.score_range == (2.0, 10.0) and table.passed == {"a": [True, False]}
    check_score_range((0.0, 1e-9))  # any width above zero
    with pytest.raises(InputError) as info:
        check_score_range((1.0, 1.0))
    assert (info.value.source, info.value.field, info.value.expected) == (
        "command line", "--score-range", "expected LOW:HIGH with LOW < HIGH, got 1:1")


def test_a_score_on_the_pass_threshold_passes_without_a_flag() -> None:
    table = parse_sample_lines(_lines({**OK, "score": 1 - 1e-6},
                                      {**OK, "epoch": 1, "score": 0.9999985}), SRC)
    assert table.passed == {"a": [True, False]}
