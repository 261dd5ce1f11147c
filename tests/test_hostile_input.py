"""Hostile input on the files the harness reads (issue 31): JSON nested a thousand levels and
numbers of thousands of digits, through every command that reads such a file, the pytest
plugin included, get one line naming the file, the line and the limit, and exit 2; before,
Python's parser printed a ``RecursionError`` or ``ValueError`` traceback. The readers' limits
themselves (harness.json_values) are tested here too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.json_values import (
    MAX_DEPTH,
    MAX_INTEGER_DIGITS,
    MAX_YAML_VALUES,
    STORED_DEPTH,
    check_json_limits,
    load_json,
    load_yaml,
)
from tests.helpers.cli import run_cli
from tests.helpers.hostile import HOSTILE_FILES, NESTED, PAYLOADS, HostileFile

pytest_plugins = ("pytester",)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# --- the JSON reader -----------------------------------------------------------------------


def test_nesting_up_to_the_limit_is_read_and_one_more_level_is_refused() -> None:
    assert load_json(_nested(MAX_DEPTH), "f.json") is not None
    with pytest.raises(InputError) as refused:
        load_json('{"a":\n  ' + _nested(MAX_DEPTH), "f.json")
    assert str(refused.value) == (f"f.json:2: JSON nested more than {MAX_DEPTH} levels deep at "
                                  f"column {MAX_DEPTH + 2}; refused before parsing")


def test_a_number_of_too_many_digits_is_refused_with_its_line() -> None:
    assert load_json("[" + "9" * MAX_INTEGER_DIGITS + "]", "f.json") == [
        int("9" * MAX_INTEGER_DIGITS)]
    with pytest.raises(InputError, match=rf"^f.json:3: a number of {MAX_INTEGER_DIGITS + 1} "
                                         rf"digits \(at most {MAX_INTEGER_DIGITS}\) at column 2"):
        load_json("[1,\n2,\n " + "9" * (MAX_INTEGER_DIGITS + 1) + "]", "f.json")


def test_brackets_and_digits_inside_strings_are_text_not_structure() -> None:
    text = json.dumps({"a": "[" * 500 + '\\"{{' + "]" * 20, "b": "7" * 9000})
    assert load_json(text, "f.json")["b"] == "7" * 9000


def test_a_jsonl_line_is_named_by_the_line_given_and_bytes_are_read_too() -> None:
    with pytest.raises(InputError, match=r"^data.jsonl:7: JSON nested more than 3 levels"):
        check_json_limits(b'{"a": [[[1]]]}', "data.jsonl", location=7, max_depth=3)
    check_json_limits(b'{"a": [[1]]}', "data.jsonl", location=7, max_depth=3)


def test_the_harness_reads_its_own_files_with_room_for_its_envelope() -> None:
    # an outside value at the limit, wrapped by a stored sample, still reads back
    assert MAX_DEPTH + 20 < STORED_DEPTH < 254  # pydantic's JSON parser stops at 254
    load_json(_nested(MAX_DEPTH + 20), "run.sqlite", max_depth=STORED_DEPTH)


# --- the YAML reader -----------------------------------------------------------------------


def test_yaml_nesting_counts_collections_as_json_does() -> None:
    assert load_yaml("a:\n  b: " + _nested(MAX_DEPTH - 2), "f.yaml")[1] is not None
    with pytest.raises(InputError, match=rf"^f.yaml:2: YAML nested more than {MAX_DEPTH} "):
        load_yaml("a:\n  b: " + _nested(MAX_DEPTH - 1), "f.yaml")


def test_a_yaml_integer_of_too_many_digits_is_refused_but_a_string_of_digits_is_not() -> None:
    with pytest.raises(InputError, match=r"^f.yaml:2: an integer of 4301 digits"):
        load_yaml("a: 1\nb: " + "9" * 4301 + "\n", "f.yaml")
    assert load_yaml('a: "' + "9" * 9000 + '"\n', "f.yaml")[1] == {"a": "9" * 9000}


def test_yaml_aliases_that_stand_for_too_many_values_are_refused_at_once() -> None:
    # nine levels of ten aliases each: a billion values in 11 lines
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    with pytest.raises(InputError, match=f"more than {MAX_YAML_VALUES:,} values"):
        load_yaml("\n".join(lines) + "\n", "laughs.yaml")


# --- every command that reads such a file --------------------------------------------------


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
@pytest.mark.parametrize("surface", sorted(HOSTILE_FILES))
def test_every_command_refuses_a_hostile_file_in_one_line(surface: str, payload: str,
                                                          tmp_path: Path) -> None:
    probe: HostileFile = HOSTILE_FILES[surface]
    culprit, line = probe.write(tmp_path, PAYLOADS[payload])
    done = run_cli(*probe.args(tmp_path), cwd=tmp_path, env={"OPENAI_API_KEY": "sk-test"})
    assert done.returncode == 2, done
    assert "Traceback" not in done.stdout + done.stderr
    said = [x for x in (done.stdout + done.stderr).splitlines()
            if culprit.name in x and "problem" not in x]
    assert len(said) == 1, done
    assert f"{culprit.name}:{line}" in said[0]
    assert ("nest" if payload == "nested" else "digits") in said[0]


def test_the_pytest_plugin_reports_a_nested_eval_set_as_one_collection_error(
        pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.mkdir("evals")
    HOSTILE_FILES["validate an eval set"].write(pytester.path / "evals", NESTED)
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    done = pytester.runpytest("--harness-scenarios", "evals", "-p", "no:cacheprovider")
    done.assert_outcomes(errors=1)  # a collection error stops the session, as for any file
    done.stdout.fnmatch_lines(["*d.evalset.json:*: JSON nested more than 100 levels deep*"])
    assert "RecursionError" not in done.stdout.str()
