"""Rubric files: the built-in ones load and match the exported JSON Schema; bad rubrics fail
with an error naming the file and the field; unknown rubric ids are caught up front."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from harness.errors import InputError, InputErrors
from harness.judging.rubric import (
    BUILTIN_RUBRICS_DIR,
    UnknownRubricError,
    check_rubric_ids,
    get_rubric,
    load_rubric_file,
    load_rubrics,
    parse_rubric,
    rubric_json_schema,
)

BUILTIN_IDS = {"final_response_quality", "tool_use_quality", "task_completion",
               "groundedness", "safety", "simulator_fidelity", "simulator_turns",
               "final_response_match", "hallucinations", "hallucinations_intermediate",
               "response_coherence", "trajectory_quality"}

GOOD = {
    "id": "helpfulness",
    "target": "final_response",
    "threshold": 0.6,
    "criteria": [
        {"id": "answers_question", "question": "Does it answer the question?", "scale": "binary"},
        {"id": "detail", "question": "Is the detail right?", "scale": "ordinal_1_5",
         "weight": 2, "threshold": 4},
    ],
}


def write(tmp_path: Path, data: object, name: str = "r.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_builtin_rubrics_load_with_the_expected_ids() -> None:
    rubrics = load_rubrics()
    assert set(rubrics) == BUILTIN_IDS
    targets = {r.id: r.target for r in rubrics.values()}
    assert targets["tool_use_quality"] == "tool_use"
    assert targets["simulator_fidelity"] == "simulator_fidelity"
    assert targets["simulator_turns"] == "user_turn"
    assert targets["task_completion"] == "conversation"
    for rubric in rubrics.values():
        assert rubric.source is not None and Path(rubric.source).parent == BUILTIN_RUBRICS_DIR


def test_builtin_rubric_files_validate_against_the_exported_json_schema() -> None:
    schema = rubric_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    for path in sorted(BUILTIN_RUBRICS_DIR.glob("*.yaml")):
        jsonschema.validate(yaml.safe_load(path.read_text(encoding="utf-8")), schema)


def test_committed_rubric_schema_matches_the_generated_one() -> None:
    # schemas/rubric.schema.json is what editors load; a rubric model change must regenerate
    # it (`harness schema --out schemas`), or this fails.
    from harness.scenarios.export import schema_documents

    committed = Path(__file__).resolve().parents[1] / "schemas" / "rubric.schema.json"
    assert committed.read_text(encoding="utf-8") == schema_documents()["rubric.schema.json"]


def test_json_schema_rejects_a_misspelt_key() -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**GOOD, "treshold": 0.5}, rubric_json_schema())


def test_a_good_rubric_file_loads(tmp_path: Path) -> None:
    rubric = load_rubric_file(write(tmp_path, GOOD))
    assert rubric.id == "helpfulness" and rubric.version == 1
    detail = rubric.criterion("detail")
    assert rubric.scale_of(detail).values == (1, 2, 3, 4, 5)
    # a criterion threshold of 4 on 1..5 is 0.75 normalised; the others use the rubric's
    assert rubric.criterion_threshold(detail) == pytest.approx(0.75)
    assert rubric.criterion_threshold(rubric.criterion("answers_question")) == 0.6


def test_a_labelled_scale_of_the_rubric_own(tmp_path: Path) -> None:
    data = {**GOOD, "scales": {"stars": {"levels": [
        {"value": 3, "label": "three"}, {"value": 1, "label": "one"},
        {"value": 2, "label": "two", "meaning": "middling"}]}},
        "criteria": [{"id": "c", "question": "q", "scale": "stars", "levels": {3: "great"}}]}
    rubric = load_rubric_file(write(tmp_path, data))
    scale = rubric.scale_of("c")
    assert scale.values == (1, 2, 3)  # sorted
    assert scale.normalise(2) == 0.5
    assert rubric.level_meanings(rubric.criterion("c")) == [
        (1, "one", ""), (2, "two", "middling"), (3, "three", "great")]


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"criteria": []}, "criteria", "at least one criterion"),
        ({"criteria": [{"id": "a", "question": "q"}, {"id": "b", "question": "q"},
                       {"id": "a", "question": "q2"}]},
         "criteria[2].id", "duplicate criterion id 'a'"),
        ({"criteria": [{"id": "a", "question": "q", "scale": "ordinal_1_10"}]},
         "criteria[0].scale", "unknown scale 'ordinal_1_10'"),
        ({"threshold": 4}, "threshold", "outside [0, 1]"),
        ({"threshold": -0.1}, "threshold", "outside [0, 1]"),
        ({"criteria": [{"id": "a", "question": "q", "scale": "binary", "threshold": 2}]},
         "criteria[0].threshold", "outside the criterion's scale [0, 1]"),
        ({"criteria": [{"id": "a", "question": "q", "levels": {7: "x"}}]},
         "criteria[0].levels.7", "not on the criterion's scale"),
        ({"treshold": 0.5}, "treshold", "unknown field"),
        ({"criteria": [{"id": "a", "question": "q", "wieght": 2}]},
         "criteria[0].wieght", "unknown field"),
        ({"target": "everything"}, "target", "final_response"),
        ({"criteria": [{"id": "Bad Id", "question": "q"}]}, "criteria[0].id", "pattern"),
        ({"criteria": [{"id": "a", "question": "q"}, {"id": "json", "question": "q"}]},
         "criteria[1].id", "'json' is reserved"),
        ({"criteria": [{"id": "model_fit", "question": "q"}]}, "criteria[0].id",
         "'model_fit' is reserved"),
        ({"criteria": [{"id": "a", "question": "q", "weight": 0}]}, "criteria[0].weight",
         "greater than 0"),
        ({"scales": {"binary": {"levels": [{"value": 0, "label": "a"},
                                           {"value": 1, "label": "b"}]}}},
         "scales.binary", "redefines a built-in scale"),
        ({"scales": {"one": {"levels": [{"value": 0, "label": "a"}]}}},
         "scales.one.levels", "at least 2"),
    ],
)
def test_bad_rubric_names_file_and_field(
    tmp_path: Path, change: dict[str, object], field: str, message: str
) -> None:
    data = {**GOOD, **change}
    if "threshold" not in change and "treshold" in change:
        del data["threshold"]
    path = write(tmp_path, data, "bad.yaml")
    with pytest.raises(InputError) as info:
        load_rubric_file(path)
    err = info.value
    assert err.source == str(path)
    assert err.field == field
    assert message in str(err)


def test_missing_required_field_is_named(tmp_path: Path) -> None:
    data = {k: v for k, v in GOOD.items() if k != "target"}
    with pytest.raises(InputError) as info:
        load_rubric_file(write(tmp_path, data))
    assert info.value.field == "target" and "required" in str(info.value)


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("id: x\ntarget: final_response\ncriteria: [\n  {id: a\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_rubric_file(path)
    assert str(path) in str(info.value) and "not valid YAML" in str(info.value)
    assert isinstance(info.value.location, int)


def test_a_file_that_is_not_a_mapping(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(InputError, match="must be a mapping"):
        load_rubric_file(path)


def test_python_construction_reports_the_same_problems() -> None:
    with pytest.raises(InputError, match=r"criteria\[1\].id: duplicate"):
        parse_rubric({**GOOD, "criteria": [{"id": "a", "question": "q"}] * 2}, "inline")


def test_user_rubrics_load_beside_the_builtin_ones(tmp_path: Path) -> None:
    write(tmp_path, GOOD, "mine.yaml")
    rubrics = load_rubrics([tmp_path])
    assert set(rubrics) == BUILTIN_IDS | {"helpfulness"}
    assert set(load_rubrics([tmp_path], builtin=False)) == {"helpfulness"}
    # the built-in directory given again is not a duplicate
    assert set(load_rubrics([BUILTIN_RUBRICS_DIR])) == BUILTIN_IDS


def test_a_duplicate_rubric_id_names_both_files(tmp_path: Path) -> None:
    write(tmp_path, {**GOOD, "id": "safety"}, "my_safety.yaml")
    with pytest.raises(InputError) as info:
        load_rubrics([tmp_path])
    assert "my_safety.yaml" in str(info.value)
    assert "safety.yaml" in str(info.value).split("already defined in")[1]


def test_every_bad_file_is_reported_at_once(tmp_path: Path) -> None:
    write(tmp_path, {**GOOD, "criteria": []}, "a.yaml")
    write(tmp_path, {**GOOD, "id": "other", "threshold": 9}, "b.yaml")
    write(tmp_path, {**GOOD, "id": "fine"}, "c.yaml")
    with pytest.raises(InputErrors) as info:
        load_rubrics([tmp_path], builtin=False)
    assert [Path(e.source).name for e in info.value.errors] == ["a.yaml", "b.yaml"]


def test_a_missing_rubric_path_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such rubric file or directory"):
        load_rubrics([tmp_path / "nope"])


def test_unknown_rubric_id_lists_the_known_ones() -> None:
    rubrics = load_rubrics()
    with pytest.raises(UnknownRubricError) as info:
        get_rubric(rubrics, "tone_of_voice", source="scenarios/refund.yaml", field="rubrics[1]")
    message = str(info.value)
    assert message.startswith("scenarios/refund.yaml: rubrics[1]: unknown rubric 'tone_of_voice'")
    assert "final_response_quality" in message and "safety" in message


def test_check_rubric_ids_reports_every_unknown_id() -> None:
    rubrics = load_rubrics()
    check_rubric_ids([("a.yaml", "rubrics[0]", "safety")], rubrics)  # all known: no error
    with pytest.raises(UnknownRubricError):
        check_rubric_ids([("a.yaml", "rubrics[0]", "safety"),
                          ("a.yaml", "rubrics[1]", "nope")], rubrics)
    with pytest.raises(InputErrors) as info:
        check_rubric_ids([("a.yaml", "rubrics[0]", "nope"),
                          ("b.yaml", "rubrics[2]", "missing")], rubrics)
    assert [(e.source, e.field) for e in info.value.errors] == [
        ("a.yaml", "rubrics[0]"), ("b.yaml", "rubrics[2]")]
