"""The runner end to end: offline suites, resume, budgets, error policies, adaptive sampling,
fault injection through the loopback server with the real SDKs, and secrets."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness.errors import HarnessError, InputErrors, ModelConfigError, ModelUnavailableError
from harness.models.base import MockBehaviour
from harness.models.mock import register_mock, unregister_mock
from harness.models.request import ModelRequest
from harness.models.types import Message, T
from harness.runs.api import resume_run, run_suite
from harness.runs.config import AdaptiveSettings, RunConfig
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore
from harness.simulation.offline import MockAgent
from harness.testing.server import FaultInjection, LoopbackServer
from tests.helpers.bound_mocks import ContextBound

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"
WEATHER = SCENARIOS / "weather.yaml"


def offline(**overrides: Any) -> RunConfig:
    fields: dict[str, Any] = {"scenario_paths": [str(SCENARIOS)], "offline": True,
                              "agent": "mock:agent-flaky", "epochs": 3, "cache_mode": "off",
                              "bootstrap_resamples": 200}
    fields.update(overrides)
    return RunConfig(**fields)


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_offline_suite_end_to_end(tmp_path: Path) -> None:
    result = await run_suite(offline(), tmp_path / "run")
    summary = result.summary
    n_scenarios = summary.counts.scenarios
    assert n_scenarios >= 10
    assert summary.counts.samples == 3 * n_scenarios
    assert summary.offline is True and "OFFLINE" in summary.notice

    lines = read_lines(tmp_path / "run" / "samples.jsonl")
    assert len(lines) == 3 * n_scenarios
    # The suite mean is the mean of scenario means, computed here independently.
    per: dict[str, list[float]] = defaultdict(list)
    for line in lines:
        assert line["status"] == "scored"
        per[line["scenario_id"]].append(line["score"])
    means = [float(np.mean(v)) for v in per.values()]
    score = summary.score
    assert score.mean == pytest.approx(np.mean(means))
    assert score.stderr == pytest.approx(np.std(means, ddof=1) / np.sqrt(len(means)))
    assert score.ci_low < score.mean < score.ci_high
    # The flaky mock agent makes some scenarios flaky, so intervals have real width.
    assert score.flaky_scenarios
    assert set(summary.metrics) >= {"trajectory_recall", "rubric:task_completion"}
    written = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert written["score"]["mean"] == score.mean


async def test_a_run_that_dies_midway_resumes_without_repeating_or_losing(
        tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    seen: list[tuple[str, int]] = []

    def crash_after_seven(record: SampleRecord) -> None:
        seen.append((record.scenario_id, record.epoch))
        if len(seen) == 7:
            raise RuntimeError("the machine went away")

    with pytest.raises(RuntimeError, match="went away"):
        await run_suite(offline(concurrency=2), run_dir, on_sample=crash_after_seven)
    with RunStore.open(run_dir) as store:
        before = {(s.scenario_id, s.epoch): s.finished_at for s in store.iter_samples()}
    assert len(before) >= 7

    resumed: list[tuple[str, int]] = []
    result = await resume_run(run_dir, on_sample=lambda r: resumed.append(
        (r.scenario_id, r.epoch)))
    n_total = result.summary.counts.scenarios * 3
    assert not set(resumed) & set(before), "a finished sample ran again"
    assert len(resumed) == len(set(resumed)) == n_total - len(before)
    with RunStore.open(run_dir) as store:
        after = {(s.scenario_id, s.epoch): s.finished_at for s in store.iter_samples()}
    assert len(after) == n_total
    assert all(after[k] == t for k, t in before.items())
    assert [e.kind for e in result.summary.events] == ["resumed"]


async def test_call_budget_stops_cleanly_and_resume_finishes(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    result = await run_suite(offline(max_calls=40, concurrency=1), run_dir)
    stopped = result.summary.stopped
    assert stopped.reason == "budget" and "40 model calls" in stopped.message
    kept = result.summary.counts.samples
    assert 0 < kept < 3 * result.summary.counts.scenarios
    assert result.summary.counts.errored == 0, "a budget stop is not a sample error"

    final = await resume_run(run_dir, overrides={"max_calls": 100_000})
    assert final.summary.stopped is None
    assert final.summary.counts.samples == 3 * final.summary.counts.scenarios


class HeldUntilStopped(ContextBound):
    """An agent whose reply in scenario `slow` is held until the runner has stopped, while
    scenario `spender` (started once `slow`'s call is under way) uses up the call budget."""

    def __init__(self, runner_box: dict[str, Any]) -> None:
        self.box = runner_box
        self.slow_started = asyncio.Event()

    async def chat(self, request: ModelRequest) -> Message:
        if self.scenario_id == "slow":
            self.slow_started.set()
            for _ in range(1000):  # at most 10 s
                if self.box["runner"].state.stopped:
                    break
                await asyncio.sleep(0.01)
        else:
            await self.slow_started.wait()
        return Message(role="assistant", content="done")

    async def structured(self, request: ModelRequest, response_model: type[T]) -> T:
        raise AssertionError("not used")


async def test_a_sample_finishing_after_a_budget_stop_is_kept(tmp_path: Path) -> None:
    box: dict[str, Any] = {}
    behaviour = HeldUntilStopped(box)
    register_mock("held", lambda name: behaviour)
    try:
        (tmp_path / "s.yaml").write_text(
            "- id: slow\n"
            "  user: {goal: g, script: [hello]}\n"
            "  agent: {model: 'mock:held'}\n"
            "  expectations: {no_tool_calls: true}\n"
            "- id: spender\n"
            "  user: {goal: g, script: [one, two, three]}\n"
            "  agent: {model: 'mock:held'}\n"
        )
        # Two calls allowed: slow's (held open) and spender's first; spender's second stops
        # the run while slow's sample is still in flight. Its model call was made and paid
        # for, so its sample is stored when it finishes.
        config = RunConfig(scenario_paths=[str(tmp_path / "s.yaml")], epochs=1, concurrency=2,
                           max_calls=2, cache_mode="off", bootstrap_resamples=0)
        result = await run_suite(config, tmp_path / "run",
                                 on_start=lambda runner: box.update(runner=runner))
        assert result.summary.stopped.reason == "budget"
        with RunStore.open(tmp_path / "run") as store:
            stored = {(s.scenario_id, s.epoch): s.status for s in store.iter_samples()}
        assert stored == {("slow", 0): "scored"}
        assert result.state.finished == 1
    finally:
        unregister_mock("held")


class FailingOddEpochs(MockBehaviour):
    """The offline agent, except that its model 'fails after retries' on odd epochs."""

    def __init__(self, name: str) -> None:
        self.inner: MockBehaviour = MockAgent("agent")

    def bind(self, context: object) -> MockBehaviour:
        bound = FailingOddEpochs("failing")
        bound.inner = self.inner.bind(context)
        return bound

    async def chat(self, request: ModelRequest) -> Message:
        if request.sample_index % 2:
            raise ModelUnavailableError("503 after 5 attempts", model="mock:failing")
        return await self.inner.chat(request)

    async def structured(self, request: ModelRequest, response_model: type[T]) -> T:
        raise AssertionError("not used")


@pytest.fixture
def failing_agent() -> Iterator[str]:
    register_mock("failing", FailingOddEpochs)
    yield "mock:failing"
    unregister_mock("failing")


@pytest.mark.parametrize("policy", ["exclude", "as_failures"])
async def test_errored_samples_follow_the_stated_policy(
        tmp_path: Path, failing_agent: str, policy: str) -> None:
    config = offline(scenario_paths=[str(WEATHER)], agent=failing_agent, epochs=4,
                     error_policy=policy)
    summary = (await run_suite(config, tmp_path / "run")).summary
    lines = read_lines(tmp_path / "run" / "samples.jsonl")
    errored = [x for x in lines if x["status"] == "errored"]
    assert errored and all(x["epoch"] % 2 == 1 for x in errored)
    assert all(x["score"] is None and x["error"]["kind"] == "ModelUnavailableError"
               for x in errored)
    assert summary.counts.errored == len(errored) == summary.error_policy.errored_samples
    assert summary.error_policy.policy == policy
    per: dict[str, list[float]] = defaultdict(list)
    for x in lines:
        if x["status"] == "scored":
            per[x["scenario_id"]].append(x["score"])
        elif policy == "as_failures" and x["status"] == "errored":
            per[x["scenario_id"]].append(0.0)
    assert summary.score.mean == pytest.approx(np.mean([np.mean(v) for v in per.values()]))
    assert summary.score.n_samples == sum(len(v) for v in per.values())


async def test_adaptive_sampling_reaches_the_width_and_reports_savings(tmp_path: Path) -> None:
    config = offline(adaptive=AdaptiveSettings(target_width=0.08, pilot_epochs=3,
                                               max_epochs_per_scenario=30))
    summary = (await run_suite(config, tmp_path / "run")).summary
    adaptive = summary.adaptive
    assert adaptive.rounds and adaptive.final_reason in {
        "target_reached", "budget_exhausted", "needs_more_scenarios", "nothing_to_sample"}
    if adaptive.final_reason == "target_reached":
        assert summary.score.ci_high - summary.score.ci_low <= 0.08 + 1e-9
    with RunStore.open(tmp_path / "run") as store:
        rows = store.score_rows()
    epochs: dict[str, int] = defaultdict(int)
    for sid, *_ in rows:
        epochs[sid] += 1
    assert min(epochs.values()) >= 3
    assert adaptive.samples_used == len(rows)
    # Unanimous scenarios get no epochs beyond the pilot; the rest get more than it.
    scenarios = {s.scenario_id: s for s in summary.score.scenarios}
    for sid, n in epochs.items():
        if n > 3:
            assert scenarios[sid].flaky or scenarios[sid].sd > 0
    savings = adaptive.savings
    assert savings.adaptive_samples == len(rows)
    assert savings.model_calls_per_sample > 0


async def test_a_hung_agent_is_an_errored_sample_and_the_run_goes_on(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "sleepy_agents_run.py").write_text(
        "import asyncio\n"
        "async def answer(messages, toolbox):\n"
        "    if messages[-1].content == 'hang':\n"
        "        await asyncio.Event().wait()\n"
        "    return 'fine'\n"
    )
    (suite / "s.yaml").write_text(
        "- id: answers\n"
        "  user: {goal: g, script: [hello]}\n"
        "  agent: {callable: sleepy_agents_run:answer}\n"
        "  expectations: {no_tool_calls: true}\n"
        "- id: hangs\n"
        "  user: {goal: g, script: [hang]}\n"
        "  agent: {callable: sleepy_agents_run:answer}\n"
        "  expectations: {no_tool_calls: true}\n"
    )
    config = RunConfig(scenario_paths=[str(suite)], epochs=2, concurrency=4,
                       episode_timeout_s=0.2, cache_mode="off", bootstrap_resamples=0)
    result = await run_suite(config, tmp_path / "run")
    lines = read_lines(tmp_path / "run" / "samples.jsonl")
    status = {(x["scenario_id"], x["epoch"]): x["status"] for x in lines}
    assert status == {("answers", 0): "scored", ("answers", 1): "scored",
                      ("hangs", 0): "errored", ("hangs", 1): "errored"}
    hung = [x for x in lines if x["scenario_id"] == "hangs"]
    assert all(x["score"] is None and x["error"]["kind"] == "EpisodeTimeout" for x in hung)
    assert result.summary.counts.errored == 2
    assert result.summary.score.n_samples == 2  # errors excluded, not zero scores

    # A stalled run can be resumed with a timeout; other settings stay as stored.
    again = await resume_run(tmp_path / "run", retry_errors=True,
                             overrides={"episode_timeout_s": 0.1})
    assert again.summary.counts.errored == 2
    with pytest.raises(HarnessError, match="only"):
        await resume_run(tmp_path / "run", overrides={"epochs": 9})


async def test_retry_errors_reruns_the_errored_samples_and_only_them(tmp_path: Path) -> None:
    # The agent fails until the file `mended` exists beside it: a retried sample can succeed,
    # so whether it was re-run shows in its status.
    suite = tmp_path / "suite"
    suite.mkdir()
    # A module name of this test's own: a second run of the test in one process (mutmut runs
    # the tests several times in one) must not import the first run's module, already mended.
    module = f"mending_agent_{uuid.uuid4().hex}"
    (suite / f"{module}.py").write_text(
        "from pathlib import Path\n"
        "async def answer(messages, toolbox):\n"
        "    if not Path(__file__).with_name('mended').exists():\n"
        "        raise RuntimeError('upstream down')\n"
        "    return 'fine'\n"
        "async def steady(messages, toolbox):\n"
        "    return 'fine'\n"
    )
    (suite / "s.yaml").write_text(
        "- id: mends\n"
        "  user: {goal: g, script: [hello]}\n"
        f"  agent: {{callable: {module}:answer}}\n"
        "  expectations: {no_tool_calls: true}\n"
        "- id: steady\n"
        "  user: {goal: g, script: [hello]}\n"
        f"  agent: {{callable: {module}:steady}}\n"
        "  expectations: {no_tool_calls: true}\n"
    )
    run_dir = tmp_path / "run"
    config = RunConfig(scenario_paths=[str(suite)], epochs=2, cache_mode="off",
                       bootstrap_resamples=0)
    first = await run_suite(config, run_dir)
    assert first.summary.counts.errored == 2

    def statuses() -> dict[tuple[str, int], tuple[str, float]]:
        with RunStore.open(run_dir) as store:
            return {(s.scenario_id, s.epoch): (s.status, s.finished_at)
                    for s in store.iter_samples()}

    before = statuses()
    assert {k: v[0] for k, v in before.items()} == {
        ("mends", 0): "errored", ("mends", 1): "errored",
        ("steady", 0): "scored", ("steady", 1): "scored"}
    (suite / "mended").write_text("")

    rerun: list[tuple[str, int]] = []
    plain = await resume_run(run_dir, on_sample=lambda r: rerun.append((r.scenario_id, r.epoch)))
    assert rerun == [] and statuses() == before, "a plain resume re-ran a stored sample"
    assert plain.summary.counts.errored == 2

    retried = await resume_run(run_dir, retry_errors=True,
                               on_sample=lambda r: rerun.append((r.scenario_id, r.epoch)))
    assert sorted(rerun) == [("mends", 0), ("mends", 1)]
    after = statuses()
    assert after[("mends", 0)][0] == after[("mends", 1)][0] == "scored"
    assert after[("steady", 0)] == before[("steady", 0)]
    assert after[("steady", 1)] == before[("steady", 1)]
    assert retried.summary.counts.errored == 0
    assert retried.summary.counts.samples == 4


async def test_bad_input_is_refused_before_anything_runs(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: x\nuser: {goal: g, opening_mesage: hi}\nagent: {model: mock:agent}\n")
    with pytest.raises(HarnessError) as info:
        await run_suite(RunConfig(scenario_paths=[str(bad), str(WEATHER)], offline=True),
                        tmp_path / "run")
    assert "bad.yaml:2: user.opening_mesage: unknown key" in str(info.value)
    assert not (tmp_path / "run").exists()


async def test_scenarios_with_rubrics_need_a_judge_or_no_judge(tmp_path: Path) -> None:
    config = RunConfig(scenario_paths=[str(WEATHER)], agent="mock:agent",
                       simulator="mock:simulator", cache_mode="off")
    with pytest.raises(InputErrors, match="--judge MODEL, --no-judge"):
        await run_suite(config, tmp_path / "run")
    result = await run_suite(config.model_copy(update={"no_judge": True, "epochs": 1}),
                             tmp_path / "run2")
    assert not [m for m in result.summary.metrics if m.startswith("rubric:")]


def write_models_yaml(path: Path, *, timeout_s: float = 5.0, attempts: int = 3) -> Path:
    path.write_text(
        f"timeout_s: {timeout_s}\n"
        f"retry: {{max_attempts: {attempts}, backoff_initial_s: 0.01, backoff_max_s: 0.01, "
        "backoff_jitter_s: 0}\n"
    )
    return path


async def test_missing_key_stops_before_any_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 loopback: LoopbackServer) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    config = offline(scenario_paths=[str(WEATHER)], agent="openai:gpt-4o", cache_mode="off")
    with pytest.raises(ModelConfigError, match="no OPENAI_API_KEY set"):
        await run_suite(config, tmp_path / "run")
    assert not (tmp_path / "run").exists()
    assert loopback.request_count == 0


async def test_a_refused_key_stops_the_run_and_keeps_no_bogus_samples(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loopback: LoopbackServer) -> None:
    from harness.testing.replies import Reply

    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-for-the-test")
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.openai_base_url)
    loopback.enqueue(Reply.unauthorized(), times=1000)
    config = offline(scenario_paths=[str(WEATHER)], agent="openai:gpt-4o", epochs=2,
                     models_config=str(write_models_yaml(tmp_path / "m.yaml")))
    summary = (await run_suite(config, tmp_path / "run")).summary
    assert summary.stopped.reason == "model_configuration"
    assert "401" in summary.stopped.message or "refused" in summary.stopped.message
    assert summary.counts.errored == 0
    assert "sk-wrong-key-for-the-test" not in summary.model_dump_json()


async def test_random_faults_leave_every_sample_scored_or_errored(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loopback: LoopbackServer) -> None:
    key = "sk-loopback-secret-0042"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.openai_base_url)
    loopback.set_faults(FaultInjection(rate_429=0.15, rate_500=0.15, rate_timeout=0.05,
                                       retry_after=0.0, timeout_delay=1.0, seed=7))
    config = RunConfig(
        scenario_paths=[str(WEATHER)], agent="openai:loop-agent", simulator="mock:simulator",
        judges=["openai:loop-judge"], epochs=4, concurrency=6, bootstrap_resamples=100,
        cache_path=str(tmp_path / "cache.sqlite"),
        models_config=str(write_models_yaml(tmp_path / "m.yaml", timeout_s=0.3, attempts=2)),
    )
    summary = (await run_suite(config, tmp_path / "run")).summary
    assert summary.stopped is None
    n = summary.counts.scenarios * 4
    with RunStore.open(tmp_path / "run") as store:
        rows = store.score_rows()
    assert len(rows) == n and len({(r[0], r[1]) for r in rows}) == n
    statuses = {r[2] for r in rows}
    assert statuses <= {"scored", "errored", "unscored"} and "errored" in statuses
    kinds = set(summary.counts.errors_by_kind)
    assert kinds <= {"ModelUnavailableError", "StructuredOutputError", "judge_error"}
    assert summary.counts.errored + summary.counts.scored + summary.counts.unscored == n
    # The key is in no file the run wrote, nor in the cache.
    for path in [*(tmp_path / "run").iterdir(), tmp_path / "cache.sqlite"]:
        assert key.encode() not in path.read_bytes(), path


async def test_rerun_from_cache_makes_no_model_calls(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loopback: LoopbackServer) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-cache")
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.openai_base_url)
    config = RunConfig(
        scenario_paths=[str(WEATHER)], agent="openai:loop-agent", simulator="mock:simulator",
        judges=["openai:loop-judge"], epochs=2, bootstrap_resamples=100,
        cache_path=str(tmp_path / "cache.sqlite"),
        models_config=str(write_models_yaml(tmp_path / "m.yaml")),
    )
    first = await run_suite(config, tmp_path / "a")
    made = loopback.request_count
    assert made > 0
    second = await run_suite(config.model_copy(update={"cache_mode": "replay"}), tmp_path / "b")
    assert loopback.request_count == made, "a cached re-run sent requests"
    assert second.summary.score.mean == first.summary.score.mean
    assert second.ledger["total"]["cached_calls"] == second.ledger["total"]["calls"] - \
        second.ledger["by_role"]["simulator"]["calls"]
