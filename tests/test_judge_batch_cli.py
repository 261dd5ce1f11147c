"""``harness run --judge-batch`` and ``harness batches`` end to end: the judges of the example
suite through the loopback server's batch APIs, against the same run judged live; a run killed
after submitting, finished by ``--resume`` without sending anything twice; the options that
do not go together."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from harness.models.batch_journal import BatchJournal
from harness.models.schema_example import example_from_schema
from harness.testing.batches import BatchFaults
from harness.testing.hub import loopback_environ
from harness.testing.replies import RecordedRequest, Reply
from harness.testing.server import LoopbackServer
from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "scenarios"
JUDGE = "openai:gpt-4.1-mini"


def _models_yaml(tmp_path: Path, *, poll: float = 0.02) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(f"batch: {{poll_interval_s: {poll}, max_wait_s: 0.05}}\n"
                    "retry: {max_attempts: 2, backoff_initial_s: 0.01, backoff_max_s: 0.01, "
                    "backoff_jitter_s: 0}\n")
    return path


def _run(tmp_path: Path, name: str, *extra: str) -> dict:
    done = run_cli("run", EXAMPLES, "--offline", "--judge", JUDGE, "--epochs", "2",
                   "--models-config", _models_yaml(tmp_path), "--cache", tmp_path / f"{name}.db",
                   "--out", tmp_path / name, "--json", *extra, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    return json.loads(done.stdout)


def _varied(schema: dict[str, Any], defs: dict[str, Any], seed: str) -> Any:
    """A value valid against ``schema`` whose enum choices (a criterion's score) follow from
    ``seed``, so that verdicts differ from prompt to prompt and repeat for the same one."""
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    if schema.get("enum"):
        digest = int(hashlib.sha256(seed.encode()).hexdigest(), 16)
        return schema["enum"][digest % len(schema["enum"])]
    if schema.get("type") == "object":
        return {name: _varied(sub, defs, f"{seed}/{name}")
                for name, sub in schema.get("properties", {}).items()
                if name in schema.get("required", [])}
    return example_from_schema({**schema, "$defs": defs})


def _judge(request: RecordedRequest) -> Reply | None:
    """The judge's verdicts, a function of its prompt (OpenAI tools mode)."""
    tools = request.body.get("tools") or []
    if not tools:
        return None
    function = tools[0]["function"]
    schema = function["parameters"]
    seed = json.dumps(request.body["messages"], sort_keys=True)
    return Reply.tool_call(function["name"], _varied(schema, schema.get("$defs", {}), seed))


def _judge_scores(run_dir: Path) -> dict[tuple[str, int], dict[str, float]]:
    out = {}
    for line in (run_dir / "samples.jsonl").read_text().splitlines():
        record = json.loads(line)
        out[(record["scenario_id"], record["epoch"])] = {
            name: value for name, value in record["metrics"].items()
            if name.startswith("rubric:")}
    return out


def test_a_batched_run_scores_as_the_live_one_at_half_the_judge_cost(
        tmp_path: Path, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in loopback_environ(loopback).items():
        monkeypatch.setenv(name, value)
    loopback.set_responder(_judge)
    live = _run(tmp_path, "live")
    live_requests = loopback.request_count
    assert live_requests and loopback.batches.batch_count == 0
    batched = _run(tmp_path, "batched", "--judge-batch")
    assert loopback.batches.batch_count >= 1
    assert loopback.request_count == live_requests  # no judge request went live

    scores = _judge_scores(tmp_path / "live")
    assert len({v for by_rubric in scores.values() for v in by_rubric.values()}) > 2
    assert _judge_scores(tmp_path / "batched") == scores
    assert batched["counts"] == live["counts"]
    live_judge = live["usage"]["by_role"]["judge"]
    judge = batched["usage"]["by_role"]["judge"]
    assert judge["batched_calls"] == judge["calls"] == live_judge["calls"]
    assert (judge["input_tokens"], judge["output_tokens"]) == (
        live_judge["input_tokens"], live_judge["output_tokens"])
    # Identical judge requests (the same transcript in both epochs) are paid for once, so
    # the batched run costs at most half of the live one.
    assert 0 < judge["cost_usd"] <= 0.5 * live_judge["cost_usd"] + 1e-12
    assert judge["batch_saved_usd"] == pytest.approx(judge["cost_usd"])

    listed = run_cli("batches", tmp_path / "batched", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "every request has its result" in listed.stdout
    assert max(len(line) for line in listed.stdout.splitlines()) <= 80
    report = (tmp_path / "batched" / "report.html").read_text()
    assert "batch saved" in report


def test_a_run_killed_after_submitting_is_finished_by_resume_paying_nothing_twice(
        tmp_path: Path, loopback: LoopbackServer) -> None:
    loopback.batches.faults = BatchFaults(delay_s=3600)  # nothing comes back to the first
    env = {**os.environ, **loopback_environ(loopback), "COLUMNS": "80"}
    run_dir = tmp_path / "run"
    first = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", str(EXAMPLES), "--offline", "--judge", JUDGE,
         "--epochs", "2", "--judge-batch", "--models-config", str(_models_yaml(tmp_path)),
         "--cache", str(tmp_path / "cache.db"), "--out", str(run_dir)],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            journal = run_dir / "batches.sqlite"
            if journal.exists() and sum(b.requests for b in BatchJournal(journal).batches()) \
                    >= 22:
                break
            time.sleep(0.1)
        else:
            pytest.fail("the first process sent no batch within 60 s")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    sent_before = sum(loopback.batches.submissions.values())
    assert BatchJournal(run_dir / "batches.sqlite").open_batches()

    loopback.batches.faults = BatchFaults()  # the batches have finished meanwhile
    done = run_cli("run", "--resume", run_dir, "--json", cwd=tmp_path,
                   env=loopback_environ(loopback))
    assert done.returncode in (0, 1), done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert summary["counts"]["samples"] == 22
    assert max(loopback.batches.submissions.values()) == 1  # no request sent twice
    assert sum(loopback.batches.submissions.values()) >= sent_before
    assert BatchJournal(run_dir / "batches.sqlite").open_batches() == []
    scores = [value for by_rubric in _judge_scores(run_dir).values()
              for value in by_rubric.values()]
    assert len(scores) >= 22 and all(value is not None for value in scores)


@pytest.mark.parametrize(("args", "message"), [
    (["--workers", "2"], "drop --workers and --executor ray"),
    (["--cache-mode", "off"], "--judge-batch needs the response cache"),
])
def test_judge_batch_refuses_what_it_cannot_collect(tmp_path: Path, args: list[str],
                                                    message: str) -> None:
    done = run_cli("run", EXAMPLES, "--offline", "--judge-batch", "--out", tmp_path / "run",
                   *args, cwd=tmp_path)
    assert done.returncode == 2
    assert message in " ".join(done.stderr.split())
    assert not (tmp_path / "run").exists()


def test_batches_of_a_run_that_sent_none_says_so(tmp_path: Path) -> None:
    assert run_cli("run", EXAMPLES, "--offline", "--epochs", "1", "--out", tmp_path / "run",
                   cwd=tmp_path).returncode in (0, 1)
    done = run_cli("batches", tmp_path / "run", cwd=tmp_path)
    assert done.returncode == 2
    assert "sent no judge batches" in done.stderr and "--judge-batch" in done.stderr
