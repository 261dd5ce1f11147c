"""Hostile input on the files the harness reads (issue 31): JSON nested a thousand levels and
numbers of thousands of digits, through every command that reads such a file, the pytest
plugin included, get one line naming the file, the line and the limit, and exit 2; before,
Python's parser printed a ``RecursionError`` or ``ValueError`` traceback. The readers' limits
themselves (harness.json_values) are tested here too."""

from __future__ import annotations

import json
import random
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from aiohttp import web

from harness.errors import InputError
from harness.formats import load_scenarios
from harness.json_values import (
    MAX_DEPTH,
    MAX_INTEGER_DIGITS,
    MAX_YAML_VALUES,
    STORED_DEPTH,
    _structure,
    check_json_limits,
    load_json,
    load_yaml,
)
from harness.safe_text import BIDI_CONTROLS
from tests.helpers.browser import OpenedPage
from tests.helpers.cli import run_cli
from tests.helpers.hostile import HOSTILE_FILES, NESTED, PAYLOADS, HostileFile
from tests.helpers.http_agents import Seen, fake_agent, run_args, samples, scenario, write_suite

pytest_plugins = ("pytester",)
Opener = Callable[..., OpenedPage]


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


# --- test_config.json and eval sets that cannot be read, and a second export ---------------

ADK = Path(__file__).resolve().parent / "data" / "adk"


def _dice(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    evalset = folder / "dice.evalset.json"
    shutil.copy(ADK / "dice" / "dice.evalset.json", evalset)
    return evalset


@pytest.mark.parametrize("kind", ["directory", "loop", "nowhere"])
@pytest.mark.parametrize("command", ["validate", "run", "import"])
def test_a_test_config_json_that_cannot_be_read_is_named_not_ignored(
        kind: str, command: str, tmp_path: Path) -> None:
    evalset = _dice(tmp_path / "set")
    config = evalset.parent / "test_config.json"
    if kind == "directory":
        config.mkdir()
    else:
        config.symlink_to(config.name if kind == "loop" else "missing.json")
    args = {"validate": ["validate", evalset],
            "run": ["run", evalset, "--offline", "--epochs", "1", "--out", tmp_path / "r"],
            "import": ["import", "adk", evalset, "--out", tmp_path / "yaml"]}[command]
    done = run_cli(*args)
    assert done.returncode == 2
    [said] = [x for x in (done.stdout + done.stderr).splitlines() if "test_config.json" in x]
    assert ("is a directory" if kind == "directory" else "loops or leads nowhere") in said
    assert not (tmp_path / "r" / "summary.json").exists()


def test_links_named_like_eval_sets_that_lead_nowhere_are_named_in_a_folder(
        tmp_path: Path) -> None:
    evalset = _dice(tmp_path / "set")
    (evalset.parent / "loop.evalset.json").symlink_to("loop.evalset.json")
    (evalset.parent / "gone.evalset.json").symlink_to("gone.json")
    done = run_cli("validate", evalset.parent)
    assert done.returncode == 2
    for name in ("loop.evalset.json", "gone.evalset.json"):
        assert f"{name}: a symbolic link that loops or leads nowhere" in done.stderr


def test_a_second_export_into_a_folder_keeps_the_first_ones_criteria(tmp_path: Path) -> None:
    yaml_dir = tmp_path / "yaml"
    assert run_cli("import", "adk", ADK / "travel" / "travel.evalset.json",
                   ADK / "dice" / "dice.evalset.json", "--out", yaml_dir).returncode == 0
    out = tmp_path / "adk"
    first = run_cli("export", "adk", yaml_dir / "travel.yaml", "--out",
                    out / "travel.evalset.json")
    assert first.returncode == 0, first.stderr
    config = (out / "test_config.json").read_text(encoding="utf-8")
    assert "safety_v1" in config
    again = run_cli("export", "adk", yaml_dir / "travel.yaml", "--out",
                    out / "travel.evalset.json")
    assert again.returncode == 0, again.stderr  # the same criteria: written again
    second = run_cli("export", "adk", yaml_dir / "dice.yaml", "--out", out / "dice.evalset.json")
    assert second.returncode == 2
    assert "test_config.json: holds other criteria, and ADK applies it to every eval set in " \
           "the folder (travel.evalset.json); export into another folder" in second.stderr
    assert (out / "test_config.json").read_text(encoding="utf-8") == config
    assert not (out / "dice.evalset.json").exists()


# --- Vertex cells ----------------------------------------------------------------------------


@pytest.mark.parametrize("column", ["prompt", "response", "reference"])
def test_a_vertex_jsonl_cell_over_the_csv_limit_is_refused_before_scoring(
        column: str, tmp_path: Path) -> None:
    row = {"predicted_trajectory": [], "reference_trajectory": [], "response": "ok",
           "reference": "ok"}
    data = tmp_path / "v.jsonl"
    data.write_text(json.dumps(row) + "\n" + json.dumps({**row, column: "word " * 2_000_000})
                    + "\n", encoding="utf-8")
    started = time.perf_counter()
    done = run_cli("score-transcripts", data)
    assert time.perf_counter() - started < 30  # two such cells were scored for minutes
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"error: {data}:2: {column}: a cell of at most 131,072 characters, as a CSV cell "
        "(this one has 10,000,000); refused before scoring")


def test_a_vertex_cell_at_the_limit_is_scored(tmp_path: Path) -> None:
    row = {"predicted_trajectory": [], "reference_trajectory": [],
           "response": ("word " * 30_000)[:131_072], "reference": "word word"}
    data = tmp_path / "v.jsonl"
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    done = run_cli("score-transcripts", data, "--json")
    assert done.returncode == 0, done.stderr


# --- an HTTP agent's reply -----------------------------------------------------------------


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_an_http_agents_reply_past_a_limit_is_a_bad_reply_not_an_internal_error(
        payload: str, tmp_path: Path) -> None:
    async def hostile(seen: Seen) -> web.StreamResponse:
        return web.Response(text='{"reply": "hi", "x": ' + PAYLOADS[payload] + "}",
                            content_type="application/json")

    agent = {"url": "${env:BASE}/chat", "protocol": "json",
             "request": {"m": "${messages}"}, "reply_path": "reply"}
    suite = write_suite(tmp_path, [scenario("hostile", agent)])
    with fake_agent(hostile) as server:
        done = run_cli(*run_args(suite, tmp_path / "run"), env={"BASE": server.url})
    assert done.returncode == 4, done.stderr  # nothing scored
    [sample] = samples(tmp_path / "run").values()
    error = sample["transcript"]["error"]
    assert error["kind"] == "agent_bad_reply", error
    assert ("nested more than 100 levels" if payload == "nested" else "digits") in (
        error["message"])


# --- bidirectional controls in outside text ------------------------------------------------

BIDI_TEXT = "pay \u202eredro\u202c now \u2066x\u2069"


def test_imported_yaml_keeps_bidirectional_controls_as_escapes_that_read_back(
        tmp_path: Path) -> None:
    data = json.loads((ADK / "travel" / "travel.evalset.json").read_text(encoding="utf-8"))
    data["eval_cases"][0]["conversation_scenario"]["starting_prompt"] = BIDI_TEXT
    evalset = tmp_path / "travel.evalset.json"
    evalset.write_text(json.dumps(data), encoding="utf-8")
    assert run_cli("import", "adk", evalset, "--out", tmp_path / "yaml").returncode == 0
    text = (tmp_path / "yaml" / "travel.yaml").read_text(encoding="utf-8")
    assert not BIDI_CONTROLS.intersection(text)
    assert 'opening_message: "pay \\u202eredro\\u202c now \\u2066x\\u2069"' in text
    [first, _] = load_scenarios([tmp_path / "yaml" / "travel.yaml"])
    assert first.user.opening_message == BIDI_TEXT


def test_the_html_report_shows_bidirectional_controls_as_escapes(
        tmp_path: Path, open_report: Opener) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text(f"- id: bidi\n  user: {{goal: g, script: [{json.dumps(BIDI_TEXT)}]}}\n"
                     "  agent: {model: 'mock:echo'}\n"
                     "  expectations: {required_phrases: [pay]}\n", encoding="utf-8")
    done = run_cli("run", suite, "--epochs", "1", "--out", tmp_path / "run")
    assert done.returncode == 0, done.stderr
    page_file = tmp_path / "run" / "report.html"
    assert not BIDI_CONTROLS.intersection(page_file.read_text(encoding="utf-8"))
    opened = open_report(page_file)
    page = opened.page
    page.locator('#sample-table tr[data-scenario="bidi"]').first.locator("a").click()
    drill = page.locator("#drill")
    drill.wait_for(state="visible")
    shown = drill.inner_text()
    assert "pay \\u202eredro\\u202c now \\u2066x\\u2069" in shown
    assert not BIDI_CONTROLS.intersection(shown)
    opened.screenshot(tmp_path / "bidi.png")


def test_the_quick_measure_of_nesting_agrees_with_a_scan_token_by_token() -> None:
    # strings full of brackets, quotes and backslashes, nested at random: the fast path
    # (harness.json_values._structure) must find exactly the brackets outside strings
    rng = random.Random(31)
    pieces = ['a"b', "\\", "[", "]", "{}", 'x\\"y', '\\\\"', '"', "é[", "\\n]", ""]

    def value(depth: int) -> object:
        roll = rng.random()
        if depth > 6 or roll < 0.3:
            return rng.choice(pieces)
        if roll < 0.6:
            return [value(depth + 1) for _ in range(rng.randint(0, 3))]
        return {rng.choice(pieces): value(depth + 1) for _ in range(rng.randint(0, 3))}

    for _ in range(2000):
        text = json.dumps(value(0), ensure_ascii=rng.random() < 0.5)
        outside = re.sub(r'"(?:[^"\\]|\\.)*"', "", text)
        expected = "".join(c for c in outside if c in "[]{}").encode()
        assert _structure(text.encode("utf-8")) == expected, text
