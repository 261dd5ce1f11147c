"""Scenario files: loading, every bad-input case named by file, line and field, and the
example scenarios."""

from __future__ import annotations

import copy
import json
import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from harness.errors import InputError, InputErrors
from harness.scenarios import load_scenarios, parse_scenario, validate_paths
from harness.scenarios.export import scenario_file_schema, stale_schemas

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "scenarios"

MINIMAL: dict[str, Any] = {
    "id": "s1",
    "user": {"goal": "know the weather", "opening_message": "Weather in Paris?"},
    "agent": {"model": "mock:agent", "system_prompt": "You are a weather bot."},
    "tools": [
        {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
            "returns": {"temp_c": 18},
        }
    ],
    "expectations": {"tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}}]},
}


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def variant(**changes: Any) -> dict[str, Any]:
    """MINIMAL with dotted-path changes applied (a value of ... deletes the key)."""
    data = copy.deepcopy(MINIMAL)
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node: Any = data
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if value is ...:
            del node[last]
        else:
            node[last] = value
    return data


def errors_for(tmp_path: Path, data: Any, name: str = "s.yaml") -> list[InputError]:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return validate_paths([path]).errors


def one_error(tmp_path: Path, data: Any) -> str:
    errors = errors_for(tmp_path, data)
    assert len(errors) == 1, [str(e) for e in errors]
    return str(errors[0])


# --- good files ----------------------------------------------------------------------------


def test_minimal_scenario_loads_with_defaults(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(MINIMAL))
    (scenario,) = load_scenarios([path])
    assert scenario.id == "s1" and scenario.source == path.resolve()
    assert scenario.limits.max_user_turns == 10
    assert [t.name for t in scenario.agent_tools()] == ["get_weather"]


def test_a_list_file_shares_blocks_through_anchors(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "many.yml",
        """
        - id: a
          user: {goal: g, script: [hi]}
          agent: &agent {model: "mock:agent"}
          tools: &tools
            - {name: t, returns: 1}
        - id: b
          user: {goal: g, script: [hello]}
          agent: *agent
          tools: *tools
        """,
    )
    first, second = load_scenarios([path])
    assert (first.id, second.id) == ("a", "b")
    assert second.tools[0].name == "t" and second.agent.model == "mock:agent"


def test_yaml_on_off_and_dates_stay_strings(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "s.yaml",
        """
        id: home
        user: {goal: g, script: [hi]}
        agent: {model: "mock:agent"}
        state: {lamp: {status: ON, backup: off, since: 2024-05-01, flag: true}}
        """,
    )
    (scenario,) = load_scenarios([path])
    assert scenario.state == {
        "lamp": {"status": "ON", "backup": "off", "since": "2024-05-01", "flag": True}
    }


def test_directories_are_searched_recursively_in_order(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name, sid in (("b.yaml", "b"), ("a.yml", "a"), ("sub/c.yaml", "c")):
        (tmp_path / name).write_text(yaml.safe_dump({**MINIMAL, "id": sid}))
    (tmp_path / "notes.txt").write_text("not a scenario")
    assert [s.id for s in load_scenarios([tmp_path])] == ["a", "b", "c"]


def test_parse_scenario_from_a_mapping() -> None:
    assert parse_scenario(MINIMAL).id == "s1"
    with pytest.raises(InputError, match=r"<scenario>: user.goal: required field is missing"):
        parse_scenario(variant(user__goal=...))


# --- the bad-input cases: one line each, naming file, line and field -------------------------


def test_misspelt_key_names_file_line_field_and_suggests(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "s.yaml",
        """
        id: s1
        user: {goal: g, script: [hi]}
        agent:
          model: "mock:agent"
          sytem_prompt: You are helpful.
        """,
    )
    (error,) = validate_paths([path]).errors
    assert str(error) == (
        f"{path}:5: agent.sytem_prompt: unknown key 'sytem_prompt'; did you mean "
        "'system_prompt'? (expected one of: model, callable, system_prompt, tools, params, http, "
        "adk, real_tools)"
    )
    assert "\n" not in str(error)


def test_missing_required_field(tmp_path: Path) -> None:
    # safe_dump writes `id:` on line 1 and `user:` on line 2: the line of the incomplete block
    assert one_error(tmp_path, variant(user__goal=...)) == (
        f"{tmp_path / 's.yaml'}:2: user.goal: required field is missing"
    )


def test_tool_schema_that_is_not_json_schema(tmp_path: Path) -> None:
    bad = variant()
    bad["tools"][0]["parameters"]["properties"]["city"]["type"] = "strng"
    message = one_error(tmp_path, bad)
    assert "tools[0].parameters: not a valid JSON Schema (at properties/city/type)" in message
    not_object = variant()
    not_object["tools"][0]["parameters"] = {"type": "string"}
    assert "must have type: object" in one_error(tmp_path, not_object)


def test_references_to_unknown_tools(tmp_path: Path) -> None:
    bad = variant(
        expectations={
            "tool_calls": [{"name": "get_wether", "args": {}}],
            "tool_order": ["get_weather", "nope"],
            "parameters": [{"tool": "ghost"}],
            "forbidden_tools": ["delete_everything"],
        }
    )
    bad["agent"]["tools"] = ["get_weather", "missing"]
    messages = [str(e) for e in errors_for(tmp_path, bad)]
    assert any("agent.tools[1]: unknown tool 'missing'" in m for m in messages)
    assert any("expectations.tool_calls[0].name: unknown tool 'get_wether'" in m for m in messages)
    assert any("expectations.tool_order[1]: unknown tool 'nope'" in m for m in messages)
    assert any("expectations.parameters[0].tool: unknown tool 'ghost'" in m for m in messages)
    # a misspelt forbidden tool would be "avoided" by every agent
    assert any("expectations.forbidden_tools[0]: unknown tool 'delete_everything'" in m
               for m in messages)
    assert len(messages) == 5


def test_expectation_on_a_tool_the_agent_cannot_see(tmp_path: Path) -> None:
    bad = variant()
    bad["tools"].append({"name": "other", "returns": 1})
    bad["agent"]["tools"] = ["other"]
    assert "tool 'get_weather' is not offered to the agent" in one_error(tmp_path, bad)


def test_python_agent_that_does_not_import(tmp_path: Path) -> None:
    message = one_error(tmp_path, variant(agent={"callable": "no_such_pkg.agent:run"}))
    assert "agent.callable:" in message and "module 'no_such_pkg.agent' does not import" in message
    assert "is not of the form 'package.module:function'" in one_error(
        tmp_path, variant(agent={"callable": "no_colon_here"})
    )


def test_python_agent_resolved_from_the_scenario_directory(tmp_path: Path) -> None:
    (tmp_path / "myagents_loading").mkdir()
    (tmp_path / "myagents_loading" / "__init__.py").write_text("")
    (tmp_path / "myagents_loading" / "bot.py").write_text(
        "def reply(messages, toolbox):\n    return 'hi'\n\ndef wrong(messages):\n    return ''\n"
    )
    assert errors_for(tmp_path, variant(agent={"callable": "myagents_loading.bot:reply"})) == []
    assert "has no attribute 'nope'" in one_error(
        tmp_path, variant(agent={"callable": "myagents_loading.bot:nope"})
    )
    assert "must accept 2 positional arguments" in one_error(
        tmp_path, variant(agent={"callable": "myagents_loading.bot:wrong"})
    )


def test_answer_blocks_must_be_unambiguous(tmp_path: Path) -> None:
    def with_tool(**fields: Any) -> dict[str, Any]:
        data = variant()
        data["tools"][0] = {"name": "get_weather", **fields}
        return data

    assert "use only one of returns, error, sequence, handler (found returns, error)" in one_error(
        tmp_path, with_tool(returns=1, error="x")
    )
    assert "expected one of returns, error, sequence, handler" in one_error(tmp_path, with_tool())
    assert "needs a 'default' answer" in one_error(
        tmp_path, with_tool(rules=[{"when": {}, "returns": 1}])
    )
    assert "after_sequence applies only with a sequence" in one_error(
        tmp_path, with_tool(returns=1, after_sequence="cycle")
    )
    assert "set_state needs a top-level 'state'" in one_error(
        tmp_path, with_tool(returns=1, set_state={"a": 1})
    )
    assert "unknown matcher operator '$regx'" in one_error(
        tmp_path,
        with_tool(rules=[{"when": {"q": {"$regx": "a"}}, "returns": 1}], default={"returns": 0}),
    )


def test_templates_are_checked_against_arguments_and_state(tmp_path: Path) -> None:
    bad = variant()
    bad["tools"][0]["returns"] = {"city": "${args.cty}"}
    assert "tools[0].returns: '${args.cty}' names argument 'cty'" in one_error(tmp_path, bad)
    bad["tools"][0]["returns"] = "${state.x}"
    assert "declares no 'state'" in one_error(tmp_path, bad)


def test_user_and_limits_consistency(tmp_path: Path) -> None:
    too_long = variant(user={"goal": "g", "script": ["a", "b", "c"]}, limits={"max_user_turns": 2})
    assert "user.script: 3 scripted turns, but limits.max_user_turns is 2" in one_error(
        tmp_path, too_long
    )
    both = variant(user={"goal": "g", "script": ["a"], "opening_message": "hi"})
    assert "a scripted user has no opening_message" in one_error(tmp_path, both)
    late = variant(limits={"max_user_turns": 2})
    late["expectations"]["tool_calls"][0]["turn"] = 2
    assert "expectations.tool_calls[0].turn: turn 2 cannot happen" in one_error(tmp_path, late)


def test_agent_takes_a_model_or_a_callable_not_both(tmp_path: Path) -> None:
    both = variant(agent={"model": "mock:agent", "callable": "pkg.mod:fn"})
    assert "not model and callable together" in one_error(tmp_path, both)
    assert "unknown provider 'gpt'" in one_error(tmp_path, variant(agent={"model": "gpt:4"}))


def test_unknown_rubric_ids_when_the_registry_is_given(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(variant(rubrics=["task_completion", "tone"])))
    assert validate_paths([path]).errors == []  # no registry given: not checked
    (error,) = validate_paths([path], known_rubrics={"task_completion", "safety"}).errors
    assert "rubrics[1]: unknown rubric 'tone'; known rubrics: safety, task_completion" in str(error)


def test_yaml_errors_duplicate_keys_and_odd_documents(tmp_path: Path) -> None:
    broken = write(tmp_path, "broken.yaml", "id: s1\nuser: [unclosed\n")
    (error,) = validate_paths([broken]).errors
    assert str(error).startswith(f"{broken}:") and "not valid YAML" in str(error)
    dup = write(tmp_path, "dup.yaml", yaml.safe_dump(MINIMAL) + "id: again\n")
    assert any(str(e).endswith("id: duplicate key 'id'") for e in validate_paths([dup]).errors)
    empty = write(tmp_path, "empty.yaml", "# nothing\n")
    assert "empty file" in str(validate_paths([empty]).errors[0])
    scalar = write(tmp_path, "scalar.yaml", "just text\n")
    assert "expected a scenario (a mapping) or a list" in str(validate_paths([scalar]).errors[0])


def test_every_problem_in_every_file_is_reported(tmp_path: Path) -> None:
    errors_for(tmp_path, variant(user__goal=...), "a.yaml")
    errors_for(tmp_path, [variant(agent={"model": "gpt:4"}), {**variant(), "id": "ok", "extra": 1}],
               "b.yaml")
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({**MINIMAL, "id": "fine"}))
    with pytest.raises(InputErrors) as caught:
        load_scenarios([tmp_path, tmp_path / "missing.yaml"])
    lines = str(caught.value).splitlines()
    assert len(lines) == len(caught.value.errors) == 4
    assert any("a.yaml" in line and "user.goal" in line for line in lines)
    assert any("b.yaml:" in line and "[0].agent" in line for line in lines)
    assert any("b.yaml:" in line and "[1].extra: unknown key 'extra'" in line for line in lines)
    assert any("missing.yaml: no such file or directory" in line for line in lines)


def test_field_errors_do_not_hide_the_checks_that_span_fields(tmp_path: Path) -> None:
    bad = variant(user__opening_mesage="hi", agent={"callable": "nope_mod_xyz:fn"})
    bad["expectations"]["tool_calls"].append({"name": "ghost"})
    messages = [str(e) for e in errors_for(tmp_path, bad)]
    assert any("user.opening_mesage: unknown key" in m for m in messages)
    assert any("agent.callable:" in m and "does not import" in m for m in messages)
    assert any("expectations.tool_calls[1].name: unknown tool 'ghost'" in m for m in messages)
    assert len(messages) == 3
    # A field that is itself wrong is reported once, not again by the later checks.
    wrong = variant(tools__0__parameters={"type": "objekt"})
    wrong["expectations"]["tool_calls"].append({"name": "ghost"})
    messages = [str(e) for e in errors_for(tmp_path, wrong)]
    assert sum("tools[0].parameters" in m for m in messages) == 1
    # A missing required field leaves nothing to check across fields; it alone is reported.
    assert len(errors_for(tmp_path, variant(user__goal=...))) == 1


def test_duplicate_ids_across_files(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(MINIMAL))
    (tmp_path / "b.yaml").write_text(yaml.safe_dump(MINIMAL))
    with pytest.raises(InputError, match=r"b\.yaml:1: id: duplicate scenario id 's1' \(first in"):
        load_scenarios([tmp_path])
    # The report keeps the first and only the first: a duplicate is an error, not a second
    # scenario (`harness validate` and anything reading the report see one).
    report = validate_paths([tmp_path])
    assert [(s.id, s.source) for s in report.scenarios] == [("s1", tmp_path / "a.yaml")]
    assert [str(e) for e in report.errors] == [
        f"{tmp_path / 'b.yaml'}:1: id: duplicate scenario id 's1' (first in "
        f"{tmp_path / 'a.yaml'}:1); ids must be unique across the suite"]


def test_paths_that_hold_no_scenarios(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no scenario files"):
        load_scenarios([tmp_path])
    with pytest.raises(InputError, match="no scenario paths given"):
        load_scenarios([])


# --- the examples and the JSON Schema ------------------------------------------------------


def test_every_example_scenario_validates() -> None:
    report = validate_paths(
        [EXAMPLES],
        known_rubrics={
            "final_response_quality",
            "tool_use_quality",
            "task_completion",
            "groundedness",
            "safety",
            "simulator_fidelity",
        },
    )
    assert report.errors == []
    ids = {s.id for s in report.scenarios}
    assert {
        "weather-current-paris",
        "weather-forecast-tokyo",
        "weather-no-tool-needed",
        "files-action-items",
        "home-living-room-lights-off",
        "support-cancel-pending-order",
        "support-refuse-shipped-order",
    } <= ids
    assert all(s.rubrics and s.expectations != type(s.expectations)() for s in report.scenarios)


def test_committed_json_schema_is_up_to_date() -> None:
    assert stale_schemas(ROOT / "schemas") == [], "run `harness schema` and commit schemas/"


def test_json_schema_accepts_the_examples_and_rejects_a_misspelt_key() -> None:
    schema = scenario_file_schema()
    validator = jsonschema.Draft202012Validator(schema)
    for path in sorted(EXAMPLES.glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        # YAML 1.1 turns ON/OFF into booleans in plain PyYAML; the examples quote them.
        assert list(validator.iter_errors(json.loads(json.dumps(data, default=str)))) == [], path
    assert not validator.is_valid({**MINIMAL, "tols": []})
    assert not validator.is_valid(variant(user__goal=...))
