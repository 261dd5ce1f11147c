"""`harness pairwise RUN_A RUN_B`: two runs' transcripts judged against each other in both
orders. A position-biased judge gives all ties and full inconsistency; a judge that prefers
run A gives B a win rate below 0.5 (checked against a direct clustered computation) and
--fail-on-regression exit 1; errored, unpaired and failed samples are counted apart; bad
input is one line and exit 2; the real openai SDK through the loopback server."""

from __future__ import annotations

import json
import math
import shutil
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest
from scipy import stats as sps
from typer.testing import CliRunner

from harness.cli import app
from harness.errors import ModelConfigError, ModelUnavailableError
from harness.judging.prompts import render_for_pairwise
from harness.models.mock import register_mock, unregister_mock
from harness.models.request import ModelRequest
from harness.models.types import Message, T
from harness.runs.pairwise_runs import compare_runs_pairwise
from harness.runs.pairwise_runs_report import combine_pair, majority_preference, pair_samples
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore
from harness.testing.replies import RecordedRequest, Reply
from harness.transcript import ErrorInfo, Transcript
from tests.helpers.bound_mocks import ContextBound
from tests.helpers.cli import CliResult, run_cli

ROOT = Path(__file__).resolve().parents[1]
WEATHER = ROOT / "scenarios" / "weather.yaml"
RUBRIC = "task_completion"
TEST_KEY = "sk-test-openai-0123456789abcdef"


def harness(*args: str) -> CliResult:
    return run_cli(*args)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``good`` (mock:agent, 4 epochs), ``flaky`` (mock:agent-flaky, 3 epochs) and ``echo``
    (mock:echo, an agent that only repeats the user, 2 epochs) on the weather scenarios."""
    base = tmp_path_factory.mktemp("pairwise-runs")
    made = {}
    for name, agent, epochs in (("good", "mock:agent", "4"), ("flaky", "mock:agent-flaky", "3"),
                                ("echo", "mock:echo", "2")):
        done = harness("run", str(WEATHER), "--offline", "--agent", agent, "--epochs", epochs,
                       "--cache-mode", "off", "--out", str(base / name), "--json")
        assert done.returncode == 0, done.stderr
        made[name] = base / name
    return made


def samples_of(run_dir: Path) -> list[SampleRecord]:
    with RunStore.open(run_dir) as store:
        return list(store.iter_samples())


def texts_of(run_dir: Path) -> set[str]:
    return {render_for_pairwise(s.transcript) for s in samples_of(run_dir)}


# --- a deterministic judge that knows which transcripts run A produced ----------------


class PrefersTexts(ContextBound):
    """Pairwise: prefers the response whose text is in ``favoured`` when the other is not;
    a tie otherwise. ``fail_when`` makes calls whose prompt contains that text fail."""

    favoured: ClassVar[set[str]] = set()
    fail_when: ClassVar[str | None] = None
    error: ClassVar[type[Exception]] = ModelUnavailableError

    def __init__(self, name: str) -> None:
        self.name = name

    async def chat(self, request: ModelRequest) -> Message:
        raise AssertionError("a judge is only asked for structured answers")

    async def structured(self, request: ModelRequest, response_model: type[T]) -> T:
        if self.fail_when is not None and self.fail_when in request.messages[-1].content:
            raise self.error("500 after 3 attempts", model=f"mock:{self.name}")
        first, second = self.pair.first in self.favoured, self.pair.second in self.favoured
        verdict = "A" if first and not second else "B" if second and not first else "tie"
        return response_model.model_validate({"reasoning": "Knows run A.", "verdict": verdict})


@pytest.fixture
def prefers_a(runs: dict[str, Path]) -> Iterator[type[PrefersTexts]]:
    """``mock:prefers-a``: prefers a transcript the good run produced over one it did not."""
    PrefersTexts.favoured = texts_of(runs["good"])
    PrefersTexts.fail_when, PrefersTexts.error = None, ModelUnavailableError
    register_mock("prefers", PrefersTexts)
    yield PrefersTexts
    unregister_mock("prefers")


def expected_b_scores(run_a: Path, run_b: Path, favoured: set[str]) -> dict[str, list[float]]:
    """Per scenario, the b_score each common (scenario, epoch) must get from PrefersTexts."""
    a = {(s.scenario_id, s.epoch): render_for_pairwise(s.transcript) for s in samples_of(run_a)}
    b = {(s.scenario_id, s.epoch): render_for_pairwise(s.transcript) for s in samples_of(run_b)}
    scores: dict[str, list[float]] = defaultdict(list)
    for key in sorted(a.keys() & b.keys()):
        fa, fb = a[key] in favoured, b[key] in favoured
        scores[key[0]].append(0.0 if fa and not fb else 1.0 if fb and not fa else 0.5)
    return scores


# --- the command -------------------------------------------------------------------------


def test_a_first_position_judge_gives_all_ties_and_full_inconsistency(
        runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "pairs.jsonl"
    done = harness("pairwise", str(runs["good"]), str(runs["flaky"]), "--judge",
                   "mock:judge-first", "--rubric", RUBRIC, "--samples", "2", "--json",
                   "--out", str(out), "--fail-on-regression")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    counts = report["counts"]
    # 6 scenarios; good has epochs 0-3, flaky 0-2: 18 pairs, 6 samples only in A
    assert counts["common_scenarios"] == 6 and counts["pairs"] == 18
    assert counts["only_in_a"] == 6 and counts["only_in_b"] == 0
    assert (report["wins_a"], report["wins_b"], report["ties"]) == (0, 0, 18)
    rate = report["inconsistency_rate"]
    assert (rate["value"], rate["k"], rate["n"]) == (1.0, 36, 36)
    assert report["first_position_rate"]["value"] == 1.0
    assert report["b_win_rate"]["value"] == 0.5
    assert report["significant_regression"] is False
    assert report["offline"] is True and report["notice"].startswith("OFFLINE:")
    assert "mock:judge-first" in report["notice"]
    assert report["rubric"]["id"] == RUBRIC and report["samples"] == 2
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 24
    skipped = [line for line in lines if line["status"] == "skipped"]
    assert {(s["epoch"], s["reason"]) for s in skipped} == {(3, "only_in_a")}
    judged = [line for line in lines if line["status"] != "skipped"]
    assert all(len(line["comparisons"]) == 2 and line["n_inconsistent"] == 2 for line in judged)
    text = harness("pairwise", str(runs["good"]), str(runs["flaky"]), "--offline", "--judge",
                   "mock:judge-first", "--rubric", RUBRIC)
    assert text.returncode == 0, text.stderr
    assert "OFFLINE" in text.stdout and "B win rate" in text.stdout
    assert "only in a" in text.stdout and "no significant difference" in text.stdout


async def test_a_judge_preferring_run_a_and_the_clustered_interval(
        runs: dict[str, Path], prefers_a: type[PrefersTexts]) -> None:
    result = await compare_runs_pairwise(runs["good"], runs["flaky"], ["mock:prefers-a"],
                                         RUBRIC, samples=2, cache_mode="off")
    report = result.report
    expected = expected_b_scores(runs["good"], runs["flaky"], prefers_a.favoured)
    flat = [x for v in expected.values() for x in v]
    # the flaky agent changed some transcripts, and only those can lose
    assert 0 < flat.count(0.0) < len(flat) and flat.count(1.0) == 0
    assert report.wins_a == flat.count(0.0) and report.ties == flat.count(0.5)
    assert report.wins_b == 0 and report.inconsistency_rate.value == 0.0
    # B's win rate: mean of scenario means, SE = sd(means)/sqrt(C), t on C-1 df
    means = np.array([np.mean(v) for _, v in sorted(expected.items())])
    c = len(means)
    se = float(np.std(means, ddof=1)) / math.sqrt(c)
    half = float(sps.t.ppf(0.975, c - 1)) * se
    rate = report.b_win_rate
    assert rate is not None and rate.n_clusters == c == 6 and rate.df == 5
    assert rate.value == pytest.approx(float(means.mean())) and rate.value < 0.5
    assert rate.stderr == pytest.approx(se)
    assert rate.ci_low == pytest.approx(max(0.0, means.mean() - half))
    assert rate.ci_high == pytest.approx(min(1.0, means.mean() + half))
    assert report.significant_regression is (rate.ci_high < 0.5)
    rows = {s.scenario_id: s for s in report.scenarios}
    for sid, scores in expected.items():
        assert rows[sid].b_win_rate == pytest.approx(float(np.mean(scores)))
        assert rows[sid].wins_a == scores.count(0.0) and rows[sid].pairs == len(scores)
        assert rows[sid].skipped == 1  # epoch 3 of the good run
    assert report.by_judge["mock:prefers-a"].n_pairs == 2 * len(flat)


def test_fail_on_regression_exits_1_only_when_b_is_significantly_worse(
        runs: dict[str, Path], prefers_a: type[PrefersTexts]) -> None:
    cli = CliRunner()
    worse = cli.invoke(app, ["pairwise", str(runs["good"]), str(runs["echo"]), "--offline",
                             "--judge", "mock:prefers-a", "--rubric", RUBRIC, "--json",
                             "--fail-on-regression"])
    assert worse.exit_code == 1, worse.output
    report = json.loads(worse.stdout)
    expected = expected_b_scores(runs["good"], runs["echo"], prefers_a.favoured)
    means = [float(np.mean(v)) for v in expected.values()]
    assert report["b_win_rate"]["value"] == pytest.approx(float(np.mean(means)))
    assert report["b_win_rate"]["ci_high"] < 0.5 and report["significant_regression"]
    better = cli.invoke(app, ["pairwise", str(runs["echo"]), str(runs["good"]), "--offline",
                              "--judge", "mock:prefers-a", "--rubric", RUBRIC, "--json",
                              "--fail-on-regression"])
    assert better.exit_code == 0, better.output
    assert json.loads(better.stdout)["significant_improvement"] is True
    same = cli.invoke(app, ["pairwise", str(runs["good"]), str(runs["good"]), "--offline",
                            "--judge", "mock:prefers-a", "--rubric", RUBRIC,
                            "--fail-on-regression"])
    assert same.exit_code == 0 and "no significant difference" in same.stdout


def test_errored_samples_are_counted_apart(runs: dict[str, Path], tmp_path: Path) -> None:
    broken = tmp_path / "flaky-broken"
    shutil.copytree(runs["flaky"], broken)
    with RunStore.open(broken) as store:
        first = next(store.iter_samples())
        store.write_sample(first.model_copy(update={
            "status": "errored", "score": None, "passed": None,
            "error": ErrorInfo(kind="agent_error", message="boom", role="agent")}))
    out = tmp_path / "pairs.jsonl"
    done = harness("pairwise", str(runs["good"]), str(broken), "--offline", "--rubric", RUBRIC,
                   "--json", "--out", str(out))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["counts"]["errored_in_b"] == 1 and report["counts"]["pairs"] == 17
    assert {"scenario_id": first.scenario_id, "epoch": first.epoch,
            "reason": "errored_in_b"} in report["skipped"]
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    mine = [line for line in lines
            if (line["scenario_id"], line["epoch"]) == (first.scenario_id, first.epoch)]
    assert mine == [{"scenario_id": first.scenario_id, "epoch": first.epoch,
                     "reason": "errored_in_b", "status": "skipped"}]
    assert any("errored in b" in note for note in report["notes"])


async def test_a_failed_judge_call_is_a_judge_error_never_a_verdict(
        runs: dict[str, Path], prefers_a: type[PrefersTexts]) -> None:
    prefers_a.fail_when = "weather and climate"  # the goal of weather-no-tool-needed
    result = await compare_runs_pairwise(runs["good"], runs["flaky"], ["mock:prefers-a"],
                                         RUBRIC, samples=2, cache_mode="off")
    report = result.report
    assert report.counts.judge_errors == 3 and report.counts.failed_comparisons == 6
    assert report.counts.decided == 15
    assert report.wins_a + report.wins_b + report.ties == 15
    assert {e.scenario_id for e in report.judge_errors} == {"weather-no-tool-needed"}
    assert all(e.error_type == "ModelUnavailableError" for e in report.judge_errors)
    row = next(s for s in report.scenarios if s.scenario_id == "weather-no-tool-needed")
    assert row.judge_errors == 3 and row.b_win_rate is None
    assert report.b_win_rate is not None and report.b_win_rate.n_clusters == 5
    assert any("left out of B's win rate" in n for n in report.notes)
    errored = [line for line in result.lines if line["status"] == "judge_error"]
    assert len(errored) == 3 and all(line["winner"] is None and line["b_score"] is None
                                     for line in errored)


async def test_a_configuration_failure_stops_the_comparison(
        runs: dict[str, Path], prefers_a: type[PrefersTexts]) -> None:
    prefers_a.fail_when, prefers_a.error = "Paris", ModelConfigError
    with pytest.raises(ModelConfigError, match="500 after 3 attempts"):
        await compare_runs_pairwise(runs["good"], runs["flaky"], ["mock:prefers-a"], RUBRIC,
                                    cache_mode="off")


@pytest.mark.parametrize(("options", "message"), [
    ({"judges": []}, "--judge: at least one judge model is needed"),
    ({"samples": 0}, "--samples: expected at least 1, got 0"),
    ({"concurrency": 0}, "--concurrency: expected at least 1, got 0"),
])
async def test_the_api_refuses_a_bad_option_naming_it(runs: dict[str, Path],
                                                       options: dict[str, object],
                                                       message: str) -> None:
    from harness.errors import InputError

    given: dict[str, object] = {"judges": ["mock:prefers-a"], "rubric_id": RUBRIC,
                                "cache_mode": "off", **options}
    with pytest.raises(InputError) as raised:
        await compare_runs_pairwise(runs["good"], runs["flaky"], **given)  # type: ignore[arg-type]
    assert str(raised.value) == message


async def test_by_default_one_sample_a_pair_and_the_cache_opened(
        runs: dict[str, Path], prefers_a: type[PrefersTexts], tmp_path: Path) -> None:
    from harness.judging.batch import resolve_rubrics
    from harness.judging.prompts import PROMPT_VERSION, template_hash

    cache = tmp_path / "cache.sqlite"
    first = await compare_runs_pairwise(runs["good"], runs["flaky"], ["mock:prefers-a"],
                                        RUBRIC, cache_path=cache, concurrency=1)
    report = first.report
    assert report.samples == 1
    assert report.by_judge["mock:prefers-a"].n_pairs == report.counts.comparisons == (
        report.counts.pairs)  # one comparison (both orders) a pair
    [rubric] = resolve_rubrics([RUBRIC], [])
    assert report.rubric == {"id": rubric.id, "version": rubric.version,
                             "target": rubric.target, "prompt_version": PROMPT_VERSION,
                             "prompt_hash": template_hash("pairwise")}
    assert (report.run_a, report.run_b) == (str(runs["good"]), str(runs["flaky"]))
    assert cache.is_file()  # the default mode opens the cache (mock judges are not cached)


# --- pure parts --------------------------------------------------------------------------


def _record(sid: str, epoch: int, status: str = "scored") -> SampleRecord:
    return SampleRecord(scenario_id=sid, epoch=epoch, status=status,  # type: ignore[arg-type]
                        transcript=Transcript(scenario_id=sid, epoch=epoch,
                                              stop_reason="goal_met"))


def test_pairing_names_every_sample_left_out() -> None:
    a = [_record("s1", 0), _record("s1", 1, "errored"), _record("s1", 2, "errored"),
         _record("s2", 0, "unscored"), _record("only-a", 0)]
    b = [_record("s1", 0), _record("s1", 1), _record("s1", 2, "errored"),
         _record("s2", 0, "errored"), _record("s2", 1), _record("only-b", 0)]
    pairing = pair_samples(a, b)
    assert [(p.scenario_id, p.epoch) for p in pairing.pairs] == [("s1", 0)]
    assert {(s.scenario_id, s.epoch, s.reason) for s in pairing.skipped} == {
        ("s1", 1, "errored_in_a"), ("s1", 2, "errored_in_both"), ("s2", 0, "errored_in_b"),
        ("s2", 1, "only_in_b"), ("only-a", 0, "only_in_a"), ("only-b", 0, "only_in_b")}
    assert pairing.common_scenarios == ["s1", "s2"]
    assert pairing.scenarios_only_in_a == ["only-a"]
    assert pairing.scenarios_only_in_b == ["only-b"]
    unscored = pair_samples([_record("s", 0, "unscored")], [_record("s", 0)])
    assert len(unscored.pairs) == 1  # finished without a score: still has a transcript


def test_majority_needs_more_than_half() -> None:
    assert majority_preference([]) is None
    assert majority_preference(["A", "A", "tie"]) == "A"
    assert majority_preference(["A", "tie"]) == "tie"
    assert majority_preference(["A", "B", "tie"]) == "tie"
    assert majority_preference(["B", "B", "A", "B"]) == "B"
    assert combine_pair("s", 0, ["mock:x"], []).status == "judge_error"


# --- bad input ---------------------------------------------------------------------------


def _bad(*args: str) -> str:
    done = harness("pairwise", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_bad_input_is_one_line_and_exit_2(runs: dict[str, Path], tmp_path: Path) -> None:
    good, flaky = str(runs["good"]), str(runs["flaky"])
    assert "no run store found" in _bad(str(tmp_path), flaky, "--offline", "--rubric", RUBRIC)
    assert "unknown rubric 'nope'" in _bad(good, flaky, "--offline", "--rubric", "nope")
    assert "--judge" in _bad(good, flaky, "--rubric", RUBRIC)
    assert "not an offline model" in _bad(good, flaky, "--offline", "--judge", "openai:gpt-4.1",
                                          "--rubric", RUBRIC)
    assert "--rubric" in _bad(good, flaky, "--offline")
    other = tmp_path / "other"
    with RunStore.open(runs["good"]) as store:
        config, record = store.config, next(store.iter_samples())
    with RunStore.create(other, config) as store:
        store.write_sample(record.model_copy(update={"scenario_id": "unrelated"}))
    assert "no scenario in common" in _bad(good, str(other), "--offline", "--rubric", RUBRIC)


# --- the real openai SDK through the loopback server --------------------------------------


def test_real_sdk_judge_through_the_loopback_server(runs: dict[str, Path], loopback,
                                                    tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)

    def responder(request: RecordedRequest) -> Reply:
        text = next(m["content"] for m in request.messages if m["role"] == "user")
        if "weather and climate" in text:
            return Reply.server_error(500)
        first = text.split("<response_a>\n")[1].split("\n</response_a>")[0]
        second = text.split("<response_b>\n")[1].split("\n</response_b>")[0]
        verdict = "A" if len(first) > len(second) else "B" if len(second) > len(first) else "tie"
        return Reply.json({"reasoning": "The longer one.", "verdict": verdict})

    loopback.set_responder(responder)
    config = tmp_path / "models.yaml"
    config.write_text(json.dumps({
        "openai": {"api_key": TEST_KEY, "base_url": loopback.openai_base_url},
        "retry": {"max_attempts": 2, "backoff_initial_s": 0.01, "backoff_max_s": 0.01,
                  "backoff_jitter_s": 0.0}}), encoding="utf-8")
    args = ["pairwise", str(runs["good"]), str(runs["flaky"]), "--judge", "openai:judge-model",
            "--rubric", RUBRIC, "--models-config", str(config), "--cache",
            str(tmp_path / "cache.sqlite"), "--json"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["offline"] is True  # the runs were made with mock: models
    # The runs' roles are offline, the judge is real: the notice says both (issue 11).
    offline, real = report["notice"].split("; REAL: ")
    assert offline.startswith("OFFLINE: the samples of") and "judges" not in offline
    assert real.startswith(f"the pairwise judges openai:judge-model "
                           f"({report['usage']['calls']} calls, $")
    assert report["judges"] == ["openai:judge-model"]
    assert report["by_judge"]["openai:judge-model"]["n_pairs"] == 18
    # weather-no-tool-needed: 3 pairs x 2 orders x 2 attempts, all 500
    assert report["counts"]["judge_errors"] == 3
    assert {e["error_type"] for e in report["judge_errors"]} == {"ModelUnavailableError"}
    assert report["counts"]["decided"] == 15
    assert report["inconsistency_rate"]["value"] == 0.0
    a = {(s.scenario_id, s.epoch): s.transcript for s in samples_of(runs["good"])}
    b = {(s.scenario_id, s.epoch): s.transcript for s in samples_of(runs["flaky"])}
    expected = defaultdict(list)
    for key in sorted(a.keys() & b.keys()):
        if key[0] == "weather-no-tool-needed":
            continue
        la, lb = len(render_for_pairwise(a[key])), len(render_for_pairwise(b[key]))
        expected[key[0]].append(1.0 if lb > la else 0.0 if la > lb else 0.5)
    rows = {s["scenario_id"]: s for s in report["scenarios"]}
    for sid, scores in expected.items():
        assert rows[sid]["b_win_rate"] == pytest.approx(float(np.mean(scores)))
    def is_failing(request: RecordedRequest) -> bool:
        return "weather and climate" in json.dumps(request.body)

    # both orders of 15 pairs (identical prompts may come from the cache), and the 3 failing
    # pairs (one comparison each) x 2 orders, each tried twice
    decided_requests = [r for r in loopback.requests if not is_failing(r)]
    distinct = {json.dumps(r.messages) for r in decided_requests}
    assert len(distinct) <= len(decided_requests) <= 15 * 2
    assert len([r for r in loopback.requests if is_failing(r)]) == 3 * 2 * 2
    # a re-run answers every decided comparison from the response cache
    before = len(loopback.requests)
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    new = loopback.requests[before:]
    assert len(new) == 3 * 2 * 2 and all(is_failing(r) for r in new)
    assert json.loads(again.stdout)["b_win_rate"] == report["b_win_rate"]
