"""The JSON Schema of a run's stored configuration (the flat ``config`` of summary.json): a
stored configuration validates against it, a misspelt or missing field does not, and it
says what it describes. A user validating stored runs with this schema would otherwise
accept a config a run cannot be resumed from."""

from __future__ import annotations

import jsonschema
import pytest

from harness.runs.config import RunConfig, RunDesign, RunExecution


@pytest.fixture(scope="module")
def schema() -> dict[str, object]:
    return RunConfig.model_json_schema()


def test_a_stored_configuration_validates(schema: dict[str, object]) -> None:
    stored = RunConfig(scenario_paths=["x.yaml"], offline=True, epochs=3,
                       max_calls=10).model_dump(mode="json")
    jsonschema.validate(stored, schema)
    # Every field of both parts is described, once.
    assert set(schema["properties"]) == (  # type: ignore[call-overload]
        set(RunDesign.model_fields) | set(RunExecution.model_fields))


def test_a_misspelt_field_is_refused(schema: dict[str, object]) -> None:
    stored = RunConfig(scenario_paths=["x.yaml"]).model_dump(mode="json")
    with pytest.raises(jsonschema.ValidationError, match="'epoch' was unexpected"):
        jsonschema.validate({**stored, "epoch": 3}, schema)


def test_the_scenarios_are_required(schema: dict[str, object]) -> None:
    stored = RunConfig(scenario_paths=["x.yaml"]).model_dump(mode="json")
    del stored["scenario_paths"]
    with pytest.raises(jsonschema.ValidationError,
                       match="'scenario_paths' is a required property"):
        jsonschema.validate(stored, schema)


def test_a_wrong_type_is_refused(schema: dict[str, object]) -> None:
    stored = RunConfig(scenario_paths=["x.yaml"]).model_dump(mode="json")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**stored, "epochs": "five"}, schema)


def test_it_names_what_it_describes(schema: dict[str, object]) -> None:
    assert schema["title"] == "RunConfig"
    assert schema["type"] == "object"
    assert schema["description"] == ("A run's design and its execution (stored with the "
                                     "run, as one flat mapping).")
