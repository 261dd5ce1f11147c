"""``harness pairwise`` in process on hand-made run stores: where each scenario's goal comes
from (run A's scenario files, else run B's, a handler that no longer imports being no reason to
lose it) and the note, word for word, that names the scenarios judged without one; the
selector applied to both runs; the error that names both runs; a rubric from ``rubric_dirs``;
how many comparisons run at once, the progress, the cache mode and the offline notice that
names each run; a judge at a local server (``base_url``, no key) and a missing key said once,
before any judging starts, unless a cache may answer. The end-to-end behaviour through real
runs is in tests/test_pairwise_runs.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from harness.errors import InputError, ModelConfigError
from harness.judging.pairwise_judge import PairwiseCriterion
from harness.models.hub import ModelHub
from harness.models.mock import register_mock, unregister_mock
from harness.models.request import ModelRequest
from harness.models.types import Message, T
from harness.runs.pairwise_runs import compare_runs_pairwise, judge_pairs
from harness.runs.pairwise_runs_report import SamplePair
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore
from harness.scenarios.selectors import ScenarioFilter
from harness.testing.replies import RecordedRequest, Reply
from harness.testing.server import LoopbackServer
from harness.transcript import Transcript
from tests.helpers.bound_mocks import ContextBound
from tests.helpers.judging_fakes import Call, ScriptedJudge

RUBRIC = "task_completion"

SUITE = """\
- id: alpha
  tags: [geo]
  user:
    goal: Learn the capital of France.
    opening_message: What is the capital of France?
  agent:
    model: mock:agent
- id: beta
  tags: [physics]
  user:
    goal: Learn the boiling point of water.
    opening_message: At what temperature does water boil?
  agent:
    model: mock:agent
"""

# A scenario whose tool handler module is gone since the run: its goal can still be read.
HANDLER_GONE = """\
- id: gamma
  user:
    goal: Book a table for two.
    opening_message: Book me a table.
  agent:
    model: mock:agent
  tools:
    - name: book
      description: Book a table.
      parameters: {type: object, properties: {}}
      handler: no_such_module_for_this_test:handle
"""

GOALS = {"alpha": "Learn the capital of France.", "beta": "Learn the boiling point of water.",
         "gamma": "Book a table for two."}


def _transcript(sid: str, epoch: int, answer: str) -> Transcript:
    return Transcript(scenario_id=sid, epoch=epoch, stop_reason="goal_met", messages=[
        Message(role="user", content=f"Question {epoch} of {sid}"),
        Message(role="assistant", content=f"{answer} answer {epoch} of {sid}")])


def _run(run_dir: Path, epochs: dict[str, int], answer: str, *,
         config: dict[str, Any] | None = None, scenario_paths: list[Path] | None = None,
         tags: dict[str, list[str]] | None = None) -> Path:
    """A run store holding ``epochs[sid]`` scored samples of each scenario, made offline by
    ``mock:agent``; its config names ``scenario_paths`` unless ``config`` is given."""
    if config is None:
        config = {"run": {"scenario_paths": [str(p) for p in scenario_paths or []]}}
    with RunStore.create(run_dir, config) as store:
        for sid, n in epochs.items():
            for epoch in range(n):
                store.write_sample(SampleRecord(
                    scenario_id=sid, epoch=epoch, status="scored", score=1.0, passed=True,
                    tags=(tags or {}).get(sid, []), transcript=_transcript(sid, epoch, answer),
                    models={"agent": ["mock:agent"]}, offline=True))
    return run_dir


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE, encoding="utf-8")
    return path


class Recorder(ContextBound):
    """``mock:recorder``: prefers the "good" answer, records every prompt it is shown and the
    most comparisons (distinct pairs) it was asked about at once."""

    prompts: ClassVar[list[str]] = []
    in_flight: ClassVar[dict[frozenset[str], int]] = {}
    peak: ClassVar[int] = 0

    def __init__(self, name: str) -> None:
        self.name = name

    async def chat(self, request: ModelRequest) -> Message:
        raise AssertionError("a judge is only asked for structured answers")

    async def structured(self, request: ModelRequest, response_model: type[T]) -> T:
        cls = type(self)
        cls.prompts.append(request.messages[-1].content)
        pair = frozenset((self.pair.first, self.pair.second))
        cls.in_flight[pair] = cls.in_flight.get(pair, 0) + 1
        cls.peak = max(cls.peak, len(cls.in_flight))
        try:
            await asyncio.sleep(0.005)
        finally:
            cls.in_flight[pair] -= 1
            if not cls.in_flight[pair]:
                del cls.in_flight[pair]
        verdict = "A" if "good answer" in self.pair.first else "B"
        return response_model.model_validate({"reasoning": "The good one.", "verdict": verdict})


@pytest.fixture
def recorder() -> Iterator[type[Recorder]]:
    Recorder.prompts, Recorder.in_flight, Recorder.peak = [], {}, 0
    register_mock("recorder", Recorder)
    yield Recorder
    unregister_mock("recorder")


def _prompts_of(recorder: type[Recorder], sid: str) -> list[str]:
    return [p for p in recorder.prompts if f"of {sid}" in p]


def _goal_notes(report: Any) -> list[str]:
    """The report's notes about scenarios judged without their goal."""
    return [n for n in report.notes if "judged without their goal" in n]


async def _compare(a: Path, b: Path, **options: Any) -> Any:
    options.setdefault("cache_mode", "off")
    return await compare_runs_pairwise(a, b, options.pop("judges", ["mock:recorder"]), RUBRIC,
                                       **options)


# --- the goal each scenario is judged with --------------------------------------------------


async def test_each_goal_comes_from_the_runs_scenario_files(
        tmp_path: Path, suite: Path, recorder: type[Recorder]) -> None:
    a = _run(tmp_path / "a", {"alpha": 2, "beta": 1}, "poor", scenario_paths=[suite])
    b = _run(tmp_path / "b", {"alpha": 2, "beta": 1}, "good", scenario_paths=[suite])
    report = (await _compare(a, b)).report
    assert _goal_notes(report) == []
    for sid in ("alpha", "beta"):
        prompts = _prompts_of(recorder, sid)
        assert prompts and all(GOALS[sid] in p for p in prompts)
        assert all(GOALS[other] not in p for p in prompts for other in GOALS if other != sid)
    assert (report.wins_a, report.wins_b, report.ties) == (0, 3, 0)


async def test_a_scenario_file_gone_from_run_a_is_read_from_run_b(
        tmp_path: Path, suite: Path, recorder: type[Recorder]) -> None:
    a = _run(tmp_path / "a", {"alpha": 1, "beta": 1}, "poor",
             scenario_paths=[tmp_path / "gone.yaml"])
    b = _run(tmp_path / "b", {"alpha": 1, "beta": 1}, "good", scenario_paths=[suite])
    report = (await _compare(a, b)).report
    assert _goal_notes(report) == []
    assert all(GOALS["alpha"] in p for p in _prompts_of(recorder, "alpha"))
    assert all(GOALS["beta"] in p for p in _prompts_of(recorder, "beta"))


async def test_a_tool_handler_that_no_longer_imports_keeps_the_goal(
        tmp_path: Path, recorder: type[Recorder]) -> None:
    path = tmp_path / "handler.yaml"
    path.write_text(HANDLER_GONE, encoding="utf-8")
    a = _run(tmp_path / "a", {"gamma": 1}, "poor", scenario_paths=[path])
    b = _run(tmp_path / "b", {"gamma": 1}, "good", scenario_paths=[path])
    report = (await _compare(a, b)).report
    assert _goal_notes(report) == []
    prompts = _prompts_of(recorder, "gamma")
    assert len(prompts) == 2 and all(GOALS["gamma"] in p for p in prompts)


NOTE = ("judged without their goal and reference answer (their scenario files are gone or no "
        "longer valid): ")


async def test_one_scenario_without_a_file_is_named_in_the_note(
        tmp_path: Path, suite: Path, recorder: type[Recorder]) -> None:
    a = _run(tmp_path / "a", {"alpha": 1, "delta": 1}, "poor", scenario_paths=[suite])
    b = _run(tmp_path / "b", {"alpha": 1, "delta": 1}, "good", scenario_paths=[suite])
    report = (await _compare(a, b)).report
    assert _goal_notes(report) == ["1 scenario was " + NOTE + "delta"]
    assert all(GOALS["alpha"] in p for p in _prompts_of(recorder, "alpha"))
    assert all("<goal>" not in p for p in _prompts_of(recorder, "delta"))


async def test_two_scenarios_without_a_file_in_either_run_are_named_in_the_note(
        tmp_path: Path, suite: Path, recorder: type[Recorder]) -> None:
    a = _run(tmp_path / "a", {"alpha": 1, "delta": 1, "epsilon": 1}, "poor",
             scenario_paths=[tmp_path / "gone.yaml"])
    b = _run(tmp_path / "b", {"alpha": 1, "delta": 1, "epsilon": 1}, "good",
             scenario_paths=[suite])
    report = (await _compare(a, b)).report
    assert _goal_notes(report) == ["2 scenarios were " + NOTE + "delta, epsilon"]
    assert all(GOALS["alpha"] in p for p in _prompts_of(recorder, "alpha"))


@pytest.mark.parametrize("config", [{}, {"run": {}}], ids=["no run section", "no paths"])
async def test_a_store_that_names_no_scenario_file_is_judged_without_goals(
        tmp_path: Path, recorder: type[Recorder], config: dict[str, Any]) -> None:
    a = _run(tmp_path / "a", {"alpha": 1, "beta": 1}, "poor", config=config)
    b = _run(tmp_path / "b", {"alpha": 1, "beta": 1}, "good", config=config)
    report = (await _compare(a, b)).report
    assert _goal_notes(report) == ["2 scenarios were " + NOTE + "alpha, beta"]
    assert report.wins_b == 2 and len(recorder.prompts) == 4


# --- which samples are compared --------------------------------------------------------------


async def test_the_selector_keeps_the_same_scenarios_of_both_runs(
        tmp_path: Path, recorder: type[Recorder]) -> None:
    tags = {"alpha": ["geo"], "beta": ["physics"]}
    a = _run(tmp_path / "a", {"alpha": 2, "beta": 3}, "poor", tags=tags)
    b = _run(tmp_path / "b", {"alpha": 2, "beta": 3}, "good", tags=tags)
    report = (await _compare(a, b, selector=ScenarioFilter(tags=["geo"]))).report
    counts = report.counts
    assert (counts.common_scenarios, counts.pairs) == (1, 2)
    assert (counts.only_in_a, counts.only_in_b) == (0, 0)
    assert [s.scenario_id for s in report.scenarios] == ["alpha"]
    assert report.wins_b == 2


async def test_a_tag_selector_on_a_store_without_tags_names_the_run(
        tmp_path: Path, recorder: type[Recorder]) -> None:
    a = _run(tmp_path / "a", {"alpha": 1}, "poor")
    b = _run(tmp_path / "b", {"alpha": 1}, "good")
    with pytest.raises(InputError) as raised:
        await _compare(a, b, selector=ScenarioFilter(tags=["geo"]))
    assert str(raised.value).startswith(f"{a}: no stored sample has a tag")


async def test_runs_with_no_scenario_in_common_are_refused_naming_both(
        tmp_path: Path, recorder: type[Recorder]) -> None:
    a = _run(tmp_path / "a", {"alpha": 1}, "poor")
    b = _run(tmp_path / "b", {"beta": 1}, "good")
    with pytest.raises(InputError) as raised:
        await _compare(a, b)
    assert str(raised.value) == (f"{a} and {b}: the runs have no scenario in common, so there "
                                 "is nothing to compare")
    assert recorder.prompts == []


async def test_a_rubric_is_found_in_the_rubric_dirs(
        tmp_path: Path, recorder: type[Recorder]) -> None:
    rubrics = tmp_path / "rubrics"
    rubrics.mkdir()
    (rubrics / "politeness.yaml").write_text(
        "id: politeness\nversion: 3\ndescription: Whether the agent is polite.\n"
        "target: conversation\nthreshold: 0.5\ncriteria:\n  - id: polite\n"
        "    question: Was the agent courteous to the user throughout?\n    scale: binary\n",
        encoding="utf-8")
    a = _run(tmp_path / "a", {"alpha": 1}, "poor")
    b = _run(tmp_path / "b", {"alpha": 1}, "good")
    result = await compare_runs_pairwise(a, b, ["mock:recorder"], "politeness",
                                         rubric_dirs=[rubrics], cache_mode="off")
    assert (result.report.rubric["id"], result.report.rubric["version"]) == ("politeness", 3)
    assert all("Was the agent courteous to the user throughout?" in p
               for p in recorder.prompts) and len(recorder.prompts) == 2


# --- how the comparisons run ------------------------------------------------------------------


async def test_eight_comparisons_at_once_by_default_and_the_concurrency_given(
        tmp_path: Path, recorder: type[Recorder]) -> None:
    a = _run(tmp_path / "a", {"alpha": 12}, "poor")
    b = _run(tmp_path / "b", {"alpha": 12}, "good")
    await _compare(a, b)
    assert recorder.peak == 8
    recorder.peak = 0
    await _compare(a, b, concurrency=1)
    assert recorder.peak == 1
    recorder.peak = 0
    await _compare(a, b, concurrency=3)
    assert recorder.peak == 3


async def test_progress_counts_every_comparison(
        tmp_path: Path, recorder: type[Recorder]) -> None:
    a = _run(tmp_path / "a", {"alpha": 2, "beta": 1}, "poor")
    b = _run(tmp_path / "b", {"alpha": 2, "beta": 1}, "good")
    seen: list[tuple[int, int]] = []
    await _compare(a, b, samples=2, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(k, 6) for k in range(7)]  # 3 pairs x 2 samples


async def test_cache_mode_off_writes_no_cache(tmp_path: Path, recorder: type[Recorder]) -> None:
    a = _run(tmp_path / "a", {"alpha": 1}, "poor")
    b = _run(tmp_path / "b", {"alpha": 1}, "good")
    cache = tmp_path / "cache.sqlite"
    await _compare(a, b, cache_path=cache, cache_mode="off")
    assert not cache.exists()
    await _compare(a, b, cache_path=cache, cache_mode="read-write")
    assert cache.is_file()


async def test_the_offline_notice_names_each_run(
        tmp_path: Path, recorder: type[Recorder]) -> None:
    a = _run(tmp_path / "a", {"alpha": 1}, "poor")
    b = _run(tmp_path / "b", {"alpha": 1}, "good")
    report = (await _compare(a, b)).report
    assert report.notice is not None
    assert f"the samples of {a} (agent mock:agent)" in report.notice
    assert f"the samples of {b} (agent mock:agent)" in report.notice


async def test_a_base_url_is_not_given_to_a_mock_judge(
        tmp_path: Path, recorder: type[Recorder]) -> None:
    a = _run(tmp_path / "a", {"alpha": 1}, "poor")
    b = _run(tmp_path / "b", {"alpha": 1}, "good")
    report = (await _compare(a, b, base_url="http://127.0.0.1:9/v1")).report
    assert report.wins_b == 1 and report.judges == ["mock:recorder"]


# --- real judges: a local server, a missing key, a cache that answers --------------------------


def _verdict(request: RecordedRequest) -> Reply:
    content = next(m["content"] for m in request.messages if m["role"] == "user")
    text = content if isinstance(content, str) else "".join(
        block.get("text", "") for block in content)  # Anthropic's content blocks
    shown_a = text.split("<response_a>")[1].split("</response_a>")[0]
    return Reply.json({"reasoning": "The good one.",
                       "verdict": "A" if "good answer" in shown_a else "B"})


async def test_a_judge_at_a_local_server_needs_no_key(
        tmp_path: Path, loopback: LoopbackServer) -> None:
    loopback.set_responder(_verdict)
    a = _run(tmp_path / "a", {"alpha": 2}, "poor")
    b = _run(tmp_path / "b", {"alpha": 2}, "good")
    hub = ModelHub(environ={})  # no key, no base URL but the one given
    try:
        report = (await _compare(a, b, judges=["openai:local-judge"], hub=hub,
                                 base_url=loopback.openai_base_url)).report
    finally:
        await hub.aclose()
    assert report.judges == ["openai:local-judge"]
    assert (report.wins_b, report.counts.judge_errors) == (2, 0)
    assert len(loopback.requests) == 4  # 2 pairs, both orders


KEY_MISSING = ("anthropic:judge-x: no ANTHROPIC_API_KEY set; export ANTHROPIC_API_KEY or set "
               "anthropic.api_key in the models config")


@pytest.mark.parametrize(("cached", "mode"), [(False, "read-write"), (True, "refresh")],
                         ids=["no cache", "refresh"])
async def test_a_missing_key_is_said_once_before_any_judging_starts(
        tmp_path: Path, loopback: LoopbackServer, make_hub: Callable[..., ModelHub],
        cached: bool, mode: str) -> None:
    loopback.set_responder(_verdict)
    a = _run(tmp_path / "a", {"alpha": 2}, "poor")
    b = _run(tmp_path / "b", {"alpha": 2}, "good")
    hub = make_hub(keys=False, cache_path=tmp_path / "cache.sqlite" if cached else None,
                   cache_mode=mode)
    seen: list[tuple[int, int]] = []
    with pytest.raises(ModelConfigError) as raised:
        await _compare(a, b, judges=["anthropic:judge-x"], hub=hub,
                       progress=lambda done, total: seen.append((done, total)))
    assert str(raised.value) == KEY_MISSING
    assert seen == [] and loopback.requests == []


async def test_a_cache_answers_a_repeated_comparison_without_a_key(
        tmp_path: Path, loopback: LoopbackServer, make_hub: Callable[..., ModelHub]) -> None:
    loopback.set_responder(_verdict)
    a = _run(tmp_path / "a", {"alpha": 2}, "poor")
    b = _run(tmp_path / "b", {"alpha": 2}, "good")
    cache = tmp_path / "cache.sqlite"
    warm = make_hub(cache_path=cache)
    first = (await _compare(a, b, judges=["anthropic:judge-x"], hub=warm)).report
    await warm.aclose()
    assert first.wins_b == 2 and len(loopback.requests) == 4
    again = (await _compare(a, b, judges=["anthropic:judge-x"],
                            hub=make_hub(keys=False, cache_path=cache))).report
    assert again.wins_b == 2 and len(loopback.requests) == 4  # no new request


# --- judge_pairs --------------------------------------------------------------------------------


async def test_a_single_configuration_failure_is_raised_as_itself() -> None:
    def refuse(call: Call) -> object:
        raise ModelConfigError("no OPENAI_API_KEY set", model="openai:j")

    judge = ScriptedJudge(name="fake:j", script=refuse)  # type: ignore[arg-type]
    pair = SamplePair("s", 0, _transcript("s", 0, "poor"), _transcript("s", 0, "good"))
    criterion = PairwiseCriterion(id="helpful", question="Which answer helps more?")
    with pytest.raises(ModelConfigError) as raised:
        await judge_pairs([pair], [judge], criterion)
    assert str(raised.value) == "openai:j: no OPENAI_API_KEY set"
