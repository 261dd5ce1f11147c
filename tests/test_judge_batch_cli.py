"""``harness run --judge-batch`` and ``harness batches`` end to end: the judges of the example
suite through the loopback server's batch APIs, against the same run judged live; a run killed
after submitting, finished by ``--resume`` without sending anything twice; the options that
do not go together."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.models.batch_journal import BatchJournal
from harness.testing.batches import BatchFaults
from harness.testing.hub import loopback_environ
from harness.testing.server import LoopbackServer
from harness.testing.verdicts import varied_verdicts
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
    loopback.set_responder(varied_verdicts)
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
        # Killed once every batch the server accepted is journalled and no more come: a kill
        # between the two (one SQLite commit) is the one gap, documented in docs/design.md.
        deadline, journal, steady = time.monotonic() + 60, run_dir / "batches.sqlite", 0
        while time.monotonic() < deadline and steady < 5:
            sent = sum(loopback.batches.submissions.values())
            journalled = (sum(b.requests for b in BatchJournal(journal).batches())
                          if journal.exists() else 0)
            steady = steady + 1 if sent >= 22 and journalled == sent else 0
            time.sleep(0.1)
        if steady < 5:
            pytest.fail("the first process's batches did not settle within 60 s")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    sent_before = sum(loopback.batches.submissions.values())
    assert BatchJournal(run_dir / "batches.sqlite").open_batches()
    checked = run_cli("batches", run_dir, "--check", "--json", cwd=tmp_path,
                      env=loopback_environ(loopback))
    assert checked.returncode == 0, checked.stderr
    listed = json.loads(checked.stdout)
    assert listed and {b["provider_state"] for b in listed} == {"in_progress"}
    assert sum(b["waiting"] for b in listed) == sent_before
    waiting = run_cli("batches", run_dir, cwd=tmp_path)
    assert f"{sent_before} judge requests still wait" in " ".join(waiting.stdout.split())

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


def test_pairwise_with_batched_judges_gives_the_live_verdicts_and_a_rerun_sends_nothing(
        tmp_path: Path, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in loopback_environ(loopback).items():
        monkeypatch.setenv(name, value)
    loopback.set_responder(varied_verdicts)
    for name, agent in (("a", "mock:agent"), ("b", "mock:agent-flaky")):
        assert run_cli("run", EXAMPLES, "--offline", "--agent", agent, "--epochs", "1",
                       "--no-judge", "--out", tmp_path / name, cwd=tmp_path).returncode in (0, 1)

    def pairwise(*extra: str) -> dict:
        done = run_cli("pairwise", tmp_path / "a", tmp_path / "b", "--judge", JUDGE,
                       "--rubric", "final_response_quality", "--models-config",
                       _models_yaml(tmp_path), "--json", *extra, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout)

    live = pairwise("--cache-mode", "off")
    assert loopback.batches.batch_count == 0
    batched = pairwise("--judge-batch", "--cache", str(tmp_path / "cache.db"))
    assert loopback.batches.batch_count == 1  # every comparison in one batch
    drop = ("usage", "notice")  # the notice names the cost
    assert {k: v for k, v in batched.items() if k not in drop} == {
        k: v for k, v in live.items() if k not in drop}
    # half, or less: where both runs' transcripts are the same, the two orders of a pair ask
    # the same request, which the batch sends once
    assert 0 < batched["usage"]["cost_usd"] <= 0.5 * live["usage"]["cost_usd"] + 1e-12
    assert (tmp_path / "cache.db.batches.sqlite").is_file()
    again = pairwise("--judge-batch", "--cache", str(tmp_path / "cache.db"))
    assert loopback.batches.batch_count == 1 and again["usage"]["cost_usd"] == 0


def test_a_calibration_study_with_batched_judges_agrees_with_the_live_one(
        tmp_path: Path, loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in loopback_environ(loopback).items():
        monkeypatch.setenv(name, value)
    loopback.set_responder(varied_verdicts)
    items = ROOT / "examples" / "calibration" / "pointwise_items.jsonl"

    def study(name: str, *extra: str) -> dict:
        done = run_cli("calibrate", items, "--judge", JUDGE, "--rubric",
                       "final_response_quality", "--resamples", "50", "--out", tmp_path / name,
                       "--models-config", _models_yaml(tmp_path), "--json", *extra,
                       cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout)

    live = study("live", "--cache-mode", "off")
    batched = study("batched", "--judge-batch", "--cache", str(tmp_path / "cache.db"))
    assert loopback.batches.batch_count == 1
    assert (tmp_path / "batched" / "batches.sqlite").is_file()
    assert batched["n_records"] == live["n_records"] > 0
    for figure in ("spearman", "cohen_kappa", "krippendorff_alpha", "mean_bias"):
        assert batched[figure] == live[figure], figure
