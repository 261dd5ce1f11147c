"""The run directory's files against their documentation and each other: the top-level keys
of `summary.json` and of a `samples.jsonl` line are the ones "Run outputs" in docs/reports.md lists,
and `harness stats runs/X/samples.jsonl` gives the figures `summary.json` gives."""

from __future__ import annotations

import asyncio
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import ModelUnavailableError
from harness.models.mock import register_mock, unregister_mock
from harness.models.request import ModelRequest
from harness.models.types import Message, T
from harness.runs.api import run_suite
from harness.runs.config import RunConfig
from tests.helpers.bound_mocks import ContextBound

ROOT = Path(__file__).resolve().parents[1]
REPORTS = (ROOT / "docs" / "reports.md").read_text(encoding="utf-8")

# Keys docs/reports.md documents as present only when asked for.
CONDITIONAL_SUMMARY_KEYS = {"adaptive", "gate", "shards"}
CONDITIONAL_SAMPLE_KEYS = {"judge_scores", "simulator_findings", "attribution", "rerun"}


def _run_outputs_bullet(name: str) -> str:
    """The text of the "Run outputs" bullet (docs/reports.md) for the file ``name``."""
    section = REPORTS[REPORTS.index("## Run outputs"):]
    section = section[:re.search(r"\n#{2,3} ", section[3:]).start() + 3]  # type: ignore[union-attr]
    match = re.search(rf"^- `{re.escape(name)}`(.*?)(?=^- |^\S|\Z)", section, flags=re.S | re.M)
    assert match is not None, f"docs/reports.md 'Run outputs' has no bullet for {name}"
    return match.group(1)


def _top_level_keys(bullet: str) -> set[str]:
    """Backticked names outside parentheses are top-level keys (what is inside a pair of
    parentheses describes a key); a leading parenthesis names the file's own identifying
    keys (``"schema": ...``, ``schema_version``)."""
    keys: set[str] = set()
    header = re.match(r"\s*\((.*?)\)", bullet)
    if header:
        for token in re.findall(r"`([^`]*)`", header.group(1)):
            named = re.match(r'"?([a-z_]+)"?(?::|$)', token)
            if named:
                keys.add(named.group(1))
        bullet = bullet[header.end():]
    depth, outside = 0, []
    for ch in bullet:
        depth += ch == "("
        if depth == 0:
            outside.append(ch)
        depth -= ch == ")" and depth > 0
    keys.update(t for t in re.findall(r"`([^`]*)`", "".join(outside))
                if re.fullmatch(r"[a-z_]+", t))
    return keys


def test_the_readme_parser_reads_the_documented_keys() -> None:
    summary = _top_level_keys(_run_outputs_bullet("summary.json"))
    samples = _top_level_keys(_run_outputs_bullet("samples.jsonl"))
    # Keys that live inside `score` (its `mean`, `notes`, ...) are not taken as top-level.
    assert {"schema", "schema_version", "config", "score", "usage"} <= summary
    assert not {"mean", "stderr", "bootstrap", "scenarios"} & summary
    assert {"scenario_id", "epoch", "score", "status"} <= samples
    assert not {"scored", "errored"} & samples


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL",
                 "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout


def _lines(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]


def test_summary_and_sample_keys_are_the_documented_ones(tmp_path: Path) -> None:
    documented = _top_level_keys(_run_outputs_bullet("summary.json"))
    documented_line = _top_level_keys(_run_outputs_bullet("samples.jsonl"))

    # A plain run: exactly the keys that are always there.
    plain = tmp_path / "plain"
    asyncio.run(run_suite(RunConfig(scenario_paths=[str(ROOT / "scenarios" / "weather.yaml")],
                                    offline=True, epochs=1, cache_mode="off",
                                    bootstrap_resamples=0), plain))
    summary = json.loads((plain / "summary.json").read_text())
    assert set(summary) == documented - CONDITIONAL_SUMMARY_KEYS, (
        f"undocumented: {sorted(set(summary) - documented)}; documented but missing: "
        f"{sorted(documented - CONDITIONAL_SUMMARY_KEYS - set(summary))}")
    for line in _lines(plain):
        failed = line["passed"] is False or line["status"] == "errored"
        assert set(line) == (documented_line - CONDITIONAL_SAMPLE_KEYS
                             | ({"attribution"} if failed else set()))

    # Everything asked for: adaptive sampling, a gate, repeated judging, and a simulated user
    # that misbehaves (its findings are listed only on the samples that have some).
    full = tmp_path / "full"
    code, _ = cli("run", str(ROOT / "scenarios"), "--offline", "--epochs", "2",
                  "--simulator", "mock:simulator-faulty",
                  "--judge-samples", "2", "--target-ci-width", "0.9", "--pilot-epochs", "2",
                  "--min-score", "0", "--cache-mode", "off", "--out", str(full), "--json")
    assert code == 0
    summary = json.loads((full / "summary.json").read_text())
    # `shards` needs --shard, which adaptive sampling refuses (tests/test_runs_shards.py)
    assert set(summary) == documented - {"shards"}, (
        f"undocumented: {sorted(set(summary) - documented)}; documented but missing: "
        f"{sorted(documented - {'shards'} - set(summary))}")
    lines = _lines(full)
    assert all(documented_line - CONDITIONAL_SAMPLE_KEYS <= set(x) <= documented_line
               for x in lines)
    # `rerun` needs --rerun-simulator-faults (tests/test_failure_attribution_runs.py)
    assert set().union(*(set(x) for x in lines)) == documented_line - {"rerun"}


# -- harness stats on a run's samples.jsonl -------------------------------------------------

ALWAYS_ERRORS = "s5"


class Patchy(ContextBound):
    """Passes unless (epoch + scenario number) % 3 == 0; its model 'fails after retries' on
    epoch 1 of s4 and on every epoch of s5, so the run has errored samples and a scenario
    with nothing scored."""

    def __init__(self, name: str) -> None:
        pass

    async def chat(self, request: ModelRequest) -> Message:
        sid = str(self.scenario_id)
        if sid == ALWAYS_ERRORS or (sid == "s4" and request.sample_index == 1):
            raise ModelUnavailableError("503 after 3 attempts", model="mock:patchy")
        ok = (request.sample_index + int(sid[1:])) % 3 != 0
        return Message(role="assistant", content="DONE" if ok else "sorry")

    async def structured(self, request: ModelRequest, response_model: type[T]) -> T:
        raise AssertionError("not used")


@pytest.fixture
def patchy_run(tmp_path: Path) -> Iterator[Path]:
    register_mock("patchy", Patchy)
    suite = tmp_path / "suite.yaml"
    suite.write_text(json.dumps([
        {"id": f"s{i}", "user": {"goal": "g", "script": ["go"]},
         "agent": {"model": "mock:patchy"}, "expectations": {"required_phrases": ["DONE"]}}
        for i in range(6)]))
    yield suite
    unregister_mock("patchy")


async def test_stats_on_a_runs_samples_gives_the_summarys_figures(
        tmp_path: Path, patchy_run: Path) -> None:
    run_dir = tmp_path / "run"
    config = RunConfig(scenario_paths=[str(patchy_run)], epochs=4, cache_mode="off", seed=5,
                       bootstrap_resamples=300)
    summary = (await run_suite(config, run_dir)).summary
    assert summary.counts.errored == 5  # s4 epoch 1, and s5 x 4

    code, out = cli("stats", str(run_dir / "samples.jsonl"), "--json", "--seed", "5",
                    "--bootstrap-resamples", "300")
    assert code == 0
    stats = json.loads(out)
    assert summary.score is not None
    score = summary.score.model_dump(mode="json")  # as summary.json has it

    # The suite mean, computed here from the scored lines: mean of scenario means.
    per: dict[str, list[float]] = defaultdict(list)
    for x in _lines(run_dir):
        if x["status"] == "scored":
            per[x["scenario_id"]].append(x["score"])
    assert ALWAYS_ERRORS not in per and len(per["s4"]) == 3
    mean = float(np.mean([np.mean(v) for v in per.values()]))
    assert stats["mean"] == pytest.approx(mean) == score["mean"]

    for key in ("n_scenarios", "n_samples", "mean", "stderr", "ci_low", "ci_high",
                "pass_at_k", "pass_hat_k"):
        assert stats[key] == pytest.approx(score[key]), key
    assert (stats["n_scenarios"], stats["n_samples"]) == (5, 19)
    assert stats["pass_rate"]["value"] == pytest.approx(score["pass_rate"]["value"])
    # Five scenarios: too few for the cluster bootstrap, withheld by both alike.
    assert stats["bootstrap"] is None and score["bootstrap"] is None
    assert any("5 errored samples skipped" in note for note in stats["notes"])


async def test_stats_with_errors_as_failures_matches_a_run_made_with_that_policy(
        tmp_path: Path, patchy_run: Path) -> None:
    run_dir = tmp_path / "run"
    config = RunConfig(scenario_paths=[str(patchy_run)], epochs=4, cache_mode="off", seed=5,
                       bootstrap_resamples=300, error_policy="as_failures")
    summary = (await run_suite(config, run_dir)).summary
    assert summary.score is not None
    score = summary.score.model_dump(mode="json")  # as summary.json has it
    code, out = cli("stats", str(run_dir / "samples.jsonl"), "--json", "--seed", "5",
                    "--bootstrap-resamples", "300", "--errors-as-failures")
    assert code == 0
    stats = json.loads(out)
    # Independently: errored lines are zeros, the mean is the mean of scenario means.
    per: dict[str, list[float]] = defaultdict(list)
    for x in _lines(run_dir):
        per[x["scenario_id"]].append(x["score"] if x["status"] == "scored" else 0.0)
    assert len(per) == 6 and per[ALWAYS_ERRORS] == [0.0] * 4
    assert stats["mean"] == pytest.approx(float(np.mean([np.mean(v) for v in per.values()])))
    for key in ("n_scenarios", "n_samples", "mean", "stderr", "ci_low", "ci_high",
                "pass_at_k", "pass_hat_k"):
        assert stats[key] == pytest.approx(score[key]), key
    assert any("5 errored samples counted as failures" in note for note in stats["notes"])
    # without the flag the same file gives the other policy's figures
    code, out = cli("stats", str(run_dir / "samples.jsonl"), "--json")
    assert json.loads(out)["n_samples"] == 19
