"""`harness run --resume`, `report` and `compare` from the command line: options a resumed run
cannot honour are refused by name; summaries and stores from another version are clear errors
that change nothing; the report shows each scenario's interval, the variance split, the design
for a target difference and why judge noise was not separated; offline runs say so."""

from __future__ import annotations

import json
import math
import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from scipy import stats as sps

from harness.runs.config import RunConfig
from harness.runs.store import STORE_FILENAME
from harness.runs.summary import _Collector, _judge_scores
from tests.helpers.cli import CliResult, run_cli

ROOT = Path(__file__).resolve().parents[1]
WEATHER = ROOT / "scenarios" / "weather.yaml"


def harness(*args: str) -> CliResult:
    return run_cli(*args, columns=250)  # wide enough that table cells do not wrap


def _make_run(out: Path, *extra: str) -> Path:
    done = harness("run", str(WEATHER), "--offline", "--epochs", "2", "--cache-mode", "off",
                   "--out", str(out), "--json", *extra)
    assert done.returncode == 0, done.stderr
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("runs_more")
    return {"once": _make_run(base / "once"),
            "twice": _make_run(base / "twice", "--judge-samples", "2")}


def _copy(run: Path, tmp_path: Path) -> Path:
    target = tmp_path / run.name
    shutil.copytree(run, target)
    return target


def _snapshot(run: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run.iterdir()) if p.is_file()}


# -- 1. --resume refuses what it cannot change ---------------------------------------------

@pytest.mark.parametrize(("args", "named"), [
    (["--epochs", "9", "--agent", "mock:agent-flaky"], ["--epochs", "--agent"]),
    (["--epochs", "5"], ["--epochs"]),  # the default value, but given: still refused
    (["--no-offline"], ["--offline/--no-offline"]),
    (["--judge-samples", "3", "--errors-as-failures"], ["--judge-samples",
                                                        "--errors-as-failures"]),
    (["--cache-mode", "off", "--seed", "3"], ["--cache-mode", "--seed"]),
    (["--out", "elsewhere"], ["--out"]),
])
def test_resume_refuses_options_it_cannot_change_and_changes_nothing(
        runs: dict[str, Path], tmp_path: Path, args: list[str], named: list[str]) -> None:
    run = _copy(runs["once"], tmp_path)
    before = _snapshot(run)
    args = [str(tmp_path / a) if a == "elsewhere" else a for a in args]
    done = harness("run", "--resume", str(run), *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    for name in named:
        assert name in done.stderr
    assert "--concurrency" in done.stderr  # says what may be given instead
    assert _snapshot(run) == before
    assert not (tmp_path / "elsewhere").exists()


def test_resume_accepts_the_options_it_may_change(runs: dict[str, Path],
                                                  tmp_path: Path) -> None:
    run = _copy(runs["once"], tmp_path)
    before = json.loads((run / "summary.json").read_text())
    done = harness("run", "--resume", str(run), "--concurrency", "2", "--max-calls", "10000",
                   "--max-cost", "5", "--episode-timeout", "30", "--retry-errors", "--json",
                   "--min-score", "0", "--gate-on", "lower-bound")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["counts"]["samples"] == before["counts"]["samples"]  # nothing repeated
    assert summary["score"]["mean"] == before["score"]["mean"]
    assert summary["gate"]["passed"] is True
    resumed = [e for e in summary["events"] if e["kind"] == "resumed"]
    assert resumed and resumed[-1]["overrides"]["concurrency"] == 2
    assert resumed[-1]["overrides"]["max_calls"] == 10000
    assert resumed[-1]["overrides"]["episode_timeout_s"] == 30


@pytest.mark.parametrize(("args", "named"), [
    (["--retry-errors"], "--retry-errors applies only with --resume"),
    (["--pilot-epochs", "3"], "--pilot-epochs applies only with --target-ci-width"),
    (["--pilot-epochs", "3", "--max-epochs", "9"], "--pilot-epochs, --max-epochs apply"),
])
def test_a_new_run_refuses_options_it_would_ignore(tmp_path: Path, args: list[str],
                                                   named: str) -> None:
    done = harness("run", str(WEATHER), "--offline", "--out", str(tmp_path / "r"), *args)
    assert done.returncode == 2 and named in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r").exists()


# -- 2. summaries and stores from another version ------------------------------------------

def _edited_summary(run: Path, tmp_path: Path, edit: Any) -> Path:
    data = json.loads((run / "summary.json").read_text())
    data = edit(data)
    path = tmp_path / "summary.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _version_2(d: dict[str, Any]) -> dict[str, Any]:
    d["schema_version"] = 2
    del d["score"]["pass_rate"]  # the kind of change a new version makes
    return d


def _drop(*keys: str) -> Any:
    def edit(d: dict[str, Any]) -> dict[str, Any]:
        obj = d
        for key in keys[:-1]:
            obj = obj[int(key)] if isinstance(obj, list) else obj[key]
        del obj[keys[-1]]
        return d
    return edit


def _set(value: Any, *keys: str) -> Any:
    def edit(d: dict[str, Any]) -> dict[str, Any]:
        obj = d
        for key in keys[:-1]:
            obj = obj[int(key)] if isinstance(obj, list) else obj[key]
        obj[keys[-1]] = value
        return d
    return edit


@pytest.mark.parametrize(("edit", "expected"), [
    (_version_2, ["schema_version", "expected 1, got 2", "harness 0.1.0"]),
    (_set(None, "schema_version"), ["schema_version", "expected 1, got None"]),
    (_set("other", "schema"), ["schema", "not a harness run summary"]),
    (_drop("score", "pass_rate"), ["malformed run summary", "score.pass_rate: field required"]),
    (_drop("score", "scenarios", "0", "pass_hat_k"),
     ["score.scenarios.0.pass_hat_k: field required"]),
    (_set({}, "score", "scenarios", "0", "pass_hat_k"), ["score.scenarios.0.pass_hat_k"]),
    (_set("many", "counts", "scored"), ["counts.scored"]),
    (_set({"passed": "maybe"}, "gate"), ["gate.passed"]),
    (_set(None, "notice"), ["an offline summary must carry its notice"]),
    (lambda d: [d], ["expected a JSON object"]),
])
def test_report_on_a_summary_it_cannot_read_is_a_clear_error(
        runs: dict[str, Path], tmp_path: Path, edit: Any, expected: list[str]) -> None:
    path = _edited_summary(runs["once"], tmp_path, edit)
    before = path.read_bytes()
    for extra in ([], ["--json"]):
        done = harness("report", str(path), *extra)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "Traceback" not in done.stderr and done.stdout == ""
        assert str(path) in done.stderr
        for text in expected:
            assert text in done.stderr
    assert path.read_bytes() == before


def test_report_on_truncated_json_names_the_file(runs: dict[str, Path], tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    path.write_bytes((runs["once"] / "summary.json").read_bytes()[:200])
    done = harness("report", str(tmp_path))
    assert done.returncode == 2 and f"{path}: not valid JSON" in done.stderr


def test_a_store_from_another_version_is_refused_by_resume_and_compare(
        runs: dict[str, Path], tmp_path: Path) -> None:
    run = _copy(runs["once"], tmp_path)
    db = sqlite3.connect(run / STORE_FILENAME)
    with db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    before = _snapshot(run)
    for args in (["run", "--resume", str(run)], ["compare", str(run), str(runs["once"])]):
        done = harness(*args)
        assert done.returncode == 2, done.stderr
        assert "store schema version 99" in done.stderr and "nothing was changed" in done.stderr
        assert "Traceback" not in done.stderr
    # The read-only check may leave SQLite's empty -wal/-shm side files; every file that was
    # there is unchanged.
    after = _snapshot(run)
    assert {name: after[name] for name in before} == before


# -- 3-5. what the report shows ---------------------------------------------------------------

def test_report_target_mdd_matches_the_formula_and_writes_nothing(
        runs: dict[str, Path]) -> None:
    run = runs["twice"]
    before = _snapshot(run)
    done = harness("report", str(run), "--json", "--target-mdd", "0.05")
    assert done.returncode == 0, done.stderr
    score = json.loads(done.stdout)["score"]
    power, design = score["power"], score["design_for_target"]
    z = sps.norm.ppf(0.975) + sps.norm.ppf(0.8)
    b, w, c, k = (power["between_variance"], power["within_variance"], power["n_scenarios"],
                  power["epochs"])

    def mdd(cc: int, kk: float) -> float:
        return float(z * math.sqrt((2 * b + 2 * w / kk) / cc))

    assert design["target_difference"] == 0.05 and design["target_source"] == "given"
    need_c = next(cc for cc in range(2, 100_000) if mdd(cc, k) <= 0.05)
    assert design["scenarios_with_current_epochs"]["n_scenarios"] == need_c
    by_epochs = design["epochs_with_current_scenarios"]
    if by_epochs["achievable"]:
        need_k = next(kk for kk in range(1, 100_000) if mdd(c, kk) <= 0.05)
        assert by_epochs["epochs"] == need_k
    else:
        assert z * math.sqrt(2 * b / c) > 0.05
    stored = json.loads((run / "summary.json").read_text())["score"]["design_for_target"]
    assert stored["target_source"] == "half the current minimum detectable difference"
    assert stored["target_difference"] == pytest.approx(
        power["minimum_detectable_difference"] / 2)
    text = harness("report", str(run), "--target-mdd", "0.05").stdout
    assert "to detect 0.050:" in text and f"{need_c} scenarios at 2 epochs" in text
    assert _snapshot(run) == before
    bad = harness("report", str(run), "--target-mdd", "-1")
    assert bad.returncode == 2 and "--target-mdd" in bad.stderr


def test_report_shows_each_scenario_with_its_interval_and_n_and_the_variance_split(
        runs: dict[str, Path]) -> None:
    summary = json.loads((runs["twice"] / "summary.json").read_text())
    text = harness("report", str(runs["twice"])).stdout
    for s in summary["score"]["scenarios"]:
        assert s["mean_ci_low"] is not None
        row = next(line for line in text.splitlines() if s["scenario_id"] in line)
        assert re.search(rf"\s{s['mean']:.3f}\s+\[{s['mean_ci_low']:.3f}, "
                         rf"{s['mean_ci_high']:.3f}\]\s", row)
        # every scenario has the same epoch count, so the table's title says it once
        assert f"Scenarios ({s['n_epochs']} epochs each;" in text
    vc = summary["score"]["variance_components"]
    jv = summary["score"]["judge_variance_components"]
    assert jv is not None  # judged twice: judge noise is separated
    assert "Variance components" in text
    assert re.search(rf"between scenarios\s*│\s*{vc['between']:.4f}\s*│", text)
    assert re.search(rf"of which judge\s*│\s*{jv['judge']:.4f}\s*│", text)
    assert not any("judge noise" in n for n in summary["notes"])


def test_a_run_judged_once_says_why_judge_noise_is_not_separated(
        runs: dict[str, Path]) -> None:
    summary = json.loads((runs["once"] / "summary.json").read_text())
    assert summary["score"]["judge_variance_components"] is None
    assert any("--judge-samples 2 or more" in n for n in summary["notes"])
    text = harness("report", str(runs["once"])).stdout
    assert "note: judge noise: not separated" in text
    assert "of which judge" not in text and "between scenarios" in text


def _collector(policy: str, judge_samples: int, rows: list[tuple[str, float, list[float]]],
               errored: int = 0) -> tuple[_Collector, RunConfig]:
    config = RunConfig(scenario_paths=["x"], judge_samples=judge_samples,
                       error_policy=policy)  # type: ignore[arg-type]
    c = _Collector(config)
    for sid, score, judged in rows:
        c.scores[sid].append(score)
        c.judge_scores[sid].append(judged)
    for _ in range(errored):
        c.scores["a"].append(0.0)
    return c, config


def test_judge_noise_notes_name_the_reason() -> None:
    rows = [("a", 0.5, [0.4, 0.6]), ("b", 0.7, [0.7, 0.7])]
    c, config = _collector("exclude", 2, rows)
    judge, note = _judge_scores(c, config, dict(c.scores))
    assert note is None and judge == {"a": [[0.4, 0.6]], "b": [[0.7, 0.7]]}

    c, config = _collector("as_failures", 2, rows, errored=1)
    judge, note = _judge_scores(c, config, dict(c.scores))
    assert judge is None and note is not None
    assert "1 errored samples count as failures" in note

    c, config = _collector("exclude", 2, [("a", 0.5, [0.4, 0.6]), ("b", 0.7, [])])
    judge, note = _judge_scores(c, config, dict(c.scores))
    assert judge is None and note is not None and "1 of 2 scored samples" in note

    c, config = _collector("exclude", 1, rows)
    assert "--judge-samples 2" in str(_judge_scores(c, config, dict(c.scores))[1])


# -- 6. offline notice on compare ------------------------------------------------------------

def test_compare_of_offline_runs_says_so(runs: dict[str, Path], tmp_path: Path) -> None:
    done = harness("compare", str(runs["once"]), str(runs["twice"]), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["offline"] == {"baseline": True, "candidate": True}
    n = json.loads((runs["once"] / "summary.json").read_text())["counts"]["samples"]
    assert data["offline_samples"] == {"baseline": n, "candidate": n}
    # weather.yaml has a Python agent beside the mock: ones: the notice names the roles.
    assert data["notice"].startswith("OFFLINE roles: agent (mock:agent), simulator")
    assert data["roles"]["baseline"]["agent"]["callables"] == [
        "python:example_agents.weather_bot:answer"]
    text = harness("compare", str(runs["once"]), str(runs["twice"])).stdout
    assert "OFFLINE" in text.splitlines()[1]  # the first thing printed, in its panel

    # The same runs with their samples marked as made by real models: no notice.
    real = [_copy(runs[name], tmp_path) for name in ("once", "twice")]
    for run in real:
        db = sqlite3.connect(run / STORE_FILENAME)
        with db:
            db.execute("UPDATE samples SET record = json_set(record, '$.offline', json('false'), "
                       "'$.models', json('{\"agent\": [\"openai:gpt-4.1\"]}'))")
        db.close()
    data = json.loads(harness("compare", str(real[0]), str(real[1]), "--json").stdout)
    assert data["offline"] == {"baseline": False, "candidate": False}
    assert data["roles"]["baseline"]["agent"]["real_models"] == ["openai:gpt-4.1"]
    assert data["notice"] is None
    assert "OFFLINE" not in harness("compare", str(real[0]), str(real[1])).stdout


@pytest.mark.parametrize(("variance", "why"), [
    ({"between": 0.0, "within": 0.0}, "every score in the run is the same"),
    (None, "it needs scored samples from at least 2 scenarios"),
])
def test_report_target_mdd_says_why_there_is_no_design_power(
        runs: dict[str, Path], tmp_path: Path, variance: dict[str, float] | None,
        why: str) -> None:
    run = tmp_path / "run"
    shutil.copytree(runs["once"], run)
    summary = json.loads((run / "summary.json").read_text())
    summary["score"]["power"] = None
    summary["score"]["variance_components"] = (
        None if variance is None else {**summary["score"]["variance_components"], **variance})
    (run / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    done = harness("report", str(run), "--target-mdd", "0.1")
    assert done.returncode == 2
    assert f"no design power in this run ({why}" in done.stderr
