"""From a stored conversation to a scenario: written as YAML, read back by the project's own
loader as the same scenario, valid for ``harness validate``, and passing its own reference
trajectory in an offline run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.errors import InputError, InputErrors
from harness.formats import load_scenarios
from harness.runs.store import RunStore
from harness.scenarios.from_transcript import scenario_from_transcript, write_scenario_yaml
from tests.helpers.cli import run_cli
from tests.helpers.labelled_runs import offline_run

MODEL_AGENT_SCENARIOS = ["weather-current-paris", "weather-forecast-tokyo",
                         "weather-no-tool-needed", "weather-service-retry",
                         "weather-two-turns-paris"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return offline_run(tmp_path_factory.mktemp("saved") / "run")


def test_saved_scenarios_load_validate_and_pass_their_own_reference_offline(
        run_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "saved"
    folder.mkdir()
    with RunStore.open(run_dir) as store:
        scenarios, rubrics = store.scenario_definitions(), set(store.rubrics())
        records = {sid: store.sample(sid, 1) for sid in MODEL_AGENT_SCENARIOS}
    written = {}
    for sid, record in records.items():
        assert record is not None
        saved = scenario_from_transcript(record.transcript, scenarios[sid],
                                         origin={"run": str(run_dir)}, known_rubrics=rubrics)
        written[sid] = (saved, write_scenario_yaml(saved, folder / f"{saved.id}.yaml",
                                                   known_rubrics=rubrics))
    for sid, (saved, path) in written.items():
        (loaded,) = load_scenarios([path])
        assert loaded.model_dump() == saved.model_dump() and loaded.source == path
        assert loaded.id == f"{sid}-epoch-1" and loaded.user.script
        assert loaded.metadata["saved_from"] == {"run": str(run_dir), "scenario_id": sid,
                                                 "epoch": 1}
        transcript = records[sid].transcript  # type: ignore[union-attr]
        assert loaded.user.script == [m.content for m in transcript.messages
                                      if m.role == "user"]
        assert [(c.name, c.args) for c in loaded.expectations.tool_calls or []] == [
            (c.name, c.arguments) for c in transcript.tool_calls]
    # The retried service: the injected error, then the answer, in that order.
    retry = written["weather-service-retry"][0].tool("get_weather")
    assert retry is not None and retry.sequence is not None
    assert "error" in retry.sequence[0].model_fields_set
    assert run_cli("validate", folder).returncode == 0
    out = tmp_path / "replayed"
    result = run_cli("run", folder, "--offline", "--epochs", "1", "--out", out, "--json")
    assert result.returncode in (0, 1), result.stderr
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(samples) == len(MODEL_AGENT_SCENARIOS)
    for sample in samples:
        assert sample["status"] == "scored"
        if sample["metrics"].get("trajectory_exact_match") is not None:
            assert sample["metrics"]["trajectory_exact_match"] == 1.0, sample["scenario_id"]


def test_a_saved_scenario_never_replaces_a_file_nor_is_written_invalid(
        run_dir: Path, tmp_path: Path) -> None:
    with RunStore.open(run_dir) as store:
        scenarios = store.scenario_definitions()
        record = store.sample("weather-current-paris", 0)
    assert record is not None
    saved = scenario_from_transcript(record.transcript, scenarios["weather-current-paris"])
    taken = tmp_path / "taken.yaml"
    taken.write_text("mine\n")
    with pytest.raises(InputError, match="exists already"):
        write_scenario_yaml(saved, taken)
    assert taken.read_text() == "mine\n"
    with pytest.raises(InputErrors, match="unknown rubric 'final_response_quality'"):
        scenario_from_transcript(record.transcript, scenarios["weather-current-paris"],
                                 known_rubrics={"safety"})
