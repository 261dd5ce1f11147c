"""One model of a run's results: `summary.json` is written from `RunSummary` and every reader
validates it into the same model, so what is read back equals what was written, a field added
to the model reaches the file and every reader at once, the model's JSON Schema describes a
real file, and the summaries earlier version-1 harnesses wrote still read."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import jsonschema
import pytest

import harness.runs.summary as summary_module
import harness.runs.summary_model as model_module
from harness.errors import InputError
from harness.runs.api import run_suite
from harness.runs.config import AdaptiveSettings, RunConfig
from harness.runs.gate import evaluate_gate
from harness.runs.shards import coverage
from harness.runs.summary import read_summary, write_summary
from harness.runs.summary_model import RunSummary
from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
WEATHER = ROOT / "scenarios" / "weather.yaml"
OLD = ROOT / "tests" / "data" / "run-summaries"


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunSummary]:
    """An offline run with everything a summary can hold: judge samples (the judge/agent
    noise split), adaptive sampling and, written afterwards as the CLI does, a gate."""
    run_dir = tmp_path_factory.mktemp("model") / "run"
    config = RunConfig(scenario_paths=[str(WEATHER)], offline=True, epochs=2, judge_samples=2,
                       cache_mode="off", bootstrap_resamples=0,
                       adaptive=AdaptiveSettings(target_width=0.9, pilot_epochs=2))
    summary = asyncio.run(run_suite(config, run_dir)).summary
    summary = summary.model_copy(update={"gate": evaluate_gate(summary.score, min_score=0.0)})
    write_summary(run_dir, summary)
    return run_dir, summary


def test_the_summary_read_back_is_the_summary_written(
        full_run: tuple[Path, RunSummary]) -> None:
    run_dir, written = full_run
    assert written.score is not None and written.score.judge_variance_components is not None
    assert written.adaptive is not None and written.adaptive.rounds
    assert written.gate is not None and written.gate.passed
    read = read_summary(run_dir)
    assert read == written
    assert read.model_dump_json() == written.model_dump_json()


def test_the_file_holds_every_field_and_only_asked_for_parts_may_be_absent(
        full_run: tuple[Path, RunSummary], tmp_path: Path) -> None:
    run_dir, written = full_run
    data = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    # every field but `shards`, which needs --shard or a merge, and adaptive sampling refuses
    assert set(data) == set(RunSummary.model_fields) - {"schema_", "shards"} | {"schema"}
    plain = written.model_copy(update={"gate": None, "adaptive": None})
    write_summary(tmp_path, plain)
    data = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert "gate" not in data and "adaptive" not in data and "shards" not in data
    assert data["stopped"] is None  # present even when nothing stopped the run
    assert read_summary(tmp_path) == plain
    sharded = plain.model_copy(update={"shards": coverage(2, [1], ["a", "b"], 2)})
    write_summary(tmp_path, sharded)
    data = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    assert data["shards"] == {"count": 2, "held": [1], "missing": [2], "grid_samples": 4,
                              "held_samples": 2}
    assert read_summary(tmp_path) == sharded


def test_a_field_added_to_the_model_reaches_the_file_and_every_reader(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class WithAField(RunSummary):
        added_later: str = "added once, in the model"

    # The writer and the readers name the same model; adding a field to it is all it takes.
    monkeypatch.setattr(summary_module, "RunSummary", WithAField)
    monkeypatch.setattr(model_module, "RunSummary", WithAField)
    run_dir = tmp_path / "run"
    done = run_cli("run", WEATHER, "--offline", "--epochs", "1", "--cache-mode", "off",
                   "--out", run_dir, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["added_later"] == "added once, in the model"
    on_disk = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert on_disk["added_later"] == "added once, in the model"
    read = read_summary(run_dir)
    assert isinstance(read, WithAField) and read.added_later == "added once, in the model"
    report = run_cli("report", run_dir, "--json")
    assert json.loads(report.stdout)["added_later"] == "added once, in the model"


def test_the_json_schema_of_the_model_validates_a_real_summary(
        full_run: tuple[Path, RunSummary]) -> None:
    run_dir, _ = full_run
    schema = RunSummary.model_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    data = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    validator.validate(data)
    for old in sorted(OLD.glob("*.json")):
        validator.validate(json.loads(old.read_text(encoding="utf-8")))
    # ... and it is a description, not a formality: it refuses what the model refuses.
    data["counts"]["surprise"] = 1
    with pytest.raises(jsonschema.ValidationError, match="surprise"):
        validator.validate(data)
    del data["counts"]["surprise"], data["score"]["pass_rate"]
    with pytest.raises(jsonschema.ValidationError, match="pass_rate"):
        validator.validate(data)


def test_summaries_written_by_the_first_version_1_harness_still_read(tmp_path: Path) -> None:
    # Written by harness 0.1.0 at commit bafb77a, before roles, the planned-sample counts,
    # clipped intervals, score ranges, design targets and per-scenario mean intervals.
    full = read_summary(OLD / "v1-first-adaptive-gate.json")
    assert full.roles == {} and full.counts.samples_planned is None
    assert full.score is not None and full.score.design_for_target is None
    assert full.score.score_range == (0.0, 1.0) and full.score.ci_clipped is False
    assert all(s.mean_ci_low is None for s in full.score.scenarios)
    assert full.adaptive is not None and full.adaptive.rounds
    assert full.gate is not None and full.gate.passed
    assert [e.kind for e in full.events] == ["adaptive_round"] * len(full.adaptive.rounds)
    stopped = read_summary(OLD / "v1-first-budget-stop.json")
    assert stopped.score is None and stopped.stopped is not None
    assert stopped.stopped.reason == "budget" and stopped.events[0].kind == "stopped"
    for name, shows in (("v1-first-adaptive-gate.json", "gate PASS"),
                        ("v1-first-budget-stop.json", "stopped early (budget)")):
        run_dir = tmp_path / name
        run_dir.mkdir()
        (run_dir / "summary.json").write_bytes((OLD / name).read_bytes())
        shown = run_cli("report", run_dir, columns=200)
        assert shown.returncode == 0, shown.stderr
        assert shows in shown.stdout


def test_an_adaptive_run_that_cannot_plan_says_why(tmp_path: Path) -> None:
    suite = tmp_path / "one.yaml"
    suite.write_text(json.dumps([{"id": "only", "user": {"goal": "g", "script": ["hi"]},
                                  "agent": {"model": "mock:agent"},
                                  "expectations": {"no_tool_calls": True}}]),
                     encoding="utf-8")
    config = RunConfig(scenario_paths=[str(suite)], offline=True, cache_mode="off",
                       adaptive=AdaptiveSettings(target_width=0.5, pilot_epochs=2))
    summary = asyncio.run(run_suite(config, tmp_path / "run")).summary
    assert summary.adaptive is not None
    assert summary.adaptive.stopped == "adaptive sampling needs at least 2 scenarios, got 1"
    assert summary.adaptive.rounds == [] and summary.adaptive.savings is None
    assert read_summary(tmp_path / "run") == summary


def test_an_unknown_key_is_refused_naming_it_and_who_wrote_the_file(
        full_run: tuple[Path, RunSummary], tmp_path: Path) -> None:
    run_dir, _ = full_run
    data = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    data["harness_version"] = "9.9.9"
    data["events"] = [{"at": 0.0, "kind": "rebalanced"}]
    data["counts"]["surprise"] = 1
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError) as raised:
        read_summary(path)
    message = str(raised.value)
    assert message.startswith(f"{path}: malformed run summary (written by harness 9.9.9)")
    assert "counts.surprise: extra inputs are not permitted" in message
    assert "events.0: input tag 'rebalanced' found using 'kind' does not match" in message


def test_a_problem_of_the_whole_summary_is_named_as_the_top_level(
        full_run: tuple[Path, RunSummary], tmp_path: Path) -> None:
    run_dir, _ = full_run
    data = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    data["offline"], data["notice"] = True, None
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError) as raised:
        read_summary(path)
    assert ("(top level): value error, an offline summary must carry its notice; nothing "
            "was changed") in str(raised.value)
