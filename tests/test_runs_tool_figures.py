"""The per-tool table (harness/runs/tool_figures.py) on the small fixed store of
tests/helpers/latency_runs.py, worked out by hand; precision and recall per tool against the
trajectory matching run on one tool's calls alone; intervals against scipy."""

from __future__ import annotations

from pathlib import Path

import pytest
import scipy.stats

from harness.checks import trajectory as traj
from harness.checks.run import prepare_expectations, run_checks
from harness.checks.spec import Expectations
from harness.runs.latency import spread
from harness.runs.scoring import build_sample
from harness.runs.tool_figures import ToolCollector
from harness.transcript import ToolCallRecord, Transcript
from tests.helpers.latency_runs import TOOLS, fixed_run


def test_the_fixed_store_by_hand(tmp_path: Path) -> None:
    tools = fixed_run(tmp_path).tools
    assert list(tools) == ["book", "search"]
    search, book = tools["search"], tools["book"]
    # the errored sample (s2 epoch 2, a 7 s search) is not in the table
    assert (search.calls, search.episodes, search.episodes_calling) == (4, 4, 3)
    assert search.latency == spread([0.1, 0.3, 0.5, 0.4])
    assert search.latency.median == pytest.approx(0.35)
    # share: s1 called it in both epochs (1.0), s2 in one of two (0.5): mean of the means
    assert search.share_of_episodes is not None
    assert search.share_of_episodes.value == pytest.approx(0.75)
    assert (search.share_of_episodes.n, search.share_of_episodes.n_clusters) == (4, 2)
    # only s1 has a reference: epoch 0 called search twice, one matched (1/2), epoch 1 once
    # (1/1); both found the one reference search (recall 1, 1). One scenario: no interval.
    assert search.precision is not None and search.recall is not None
    assert search.precision.value == pytest.approx(0.75)
    assert search.precision.ci_low is None and search.precision.n == 2
    assert search.recall.value == pytest.approx(1.0)
    assert search.parameter_accuracy is None  # no parameter expectation for search
    assert (search.invalid_arguments, search.invalid_argument_rate) == (0, 0.0)
    assert (search.errors, search.error_rate, search.errors_by_kind) == (
        1, 0.25, {"injected": 1})

    assert (book.calls, book.episodes, book.episodes_calling) == (2, 4, 2)
    assert book.share_of_episodes is not None
    assert book.share_of_episodes.value == pytest.approx(0.5)
    # s1 epoch 0 matched its one call; epoch 1's call had malformed arguments (matches
    # nothing, parameter score 0)
    assert book.precision is not None and book.recall is not None
    assert book.parameter_accuracy is not None
    assert (book.precision.value, book.recall.value, book.parameter_accuracy.value) == (
        pytest.approx(0.5), pytest.approx(0.5), pytest.approx(0.5))
    assert (book.invalid_arguments, book.invalid_argument_rate) == (1, 0.5)
    assert (book.errors, book.errors_by_kind) == (1, {"invalid_arguments": 1})
    assert book.latency.median == pytest.approx(0.1)


def test_the_share_interval_is_clustered_by_scenario(tmp_path: Path) -> None:
    share = fixed_run(tmp_path).tools["search"].share_of_episodes
    assert share is not None and "clustered by scenario" in share.method
    # scenario means 1.0 and 0.5: a t interval on 1 df around 0.75 with SE sd/sqrt(2),
    # cut at [0, 1]
    low, high = scipy.stats.t.interval(0.95, df=1, loc=0.75, scale=0.25)
    assert share.stderr == pytest.approx(0.25)
    assert (share.ci_low, share.ci_high) == (pytest.approx(max(0.0, low)),
                                             pytest.approx(min(1.0, high)))
    assert share.clipped


def _call(name: str, **args: object) -> ToolCallRecord:
    return ToolCallRecord(call_id=f"{name}{args}", name=name, arguments=dict(args))


@pytest.mark.parametrize("mode", ["exact", "subset"])
def test_precision_and_recall_per_tool_are_the_matching_of_that_tool_alone(mode: str) -> None:
    reference = [{"name": "search", "args": {"q": "a"}}, {"name": "search", "args": {"q": "b"}},
                 {"name": "book", "args": {"id": 1}}, {"name": "search", "args": {}}]
    calls = [_call("search", q="b"), _call("search", q="a", page=2), _call("search", q="a"),
             _call("book", id=2), _call("search", q="c")]
    expectations = Expectations.model_validate({"tool_calls": reference,
                                                "arg_matching": {"mode": mode}})
    transcript = Transcript(scenario_id="s", tools=TOOLS, tool_calls=calls,
                            stop_reason="goal_met", duration_s=1.0)
    collector = ToolCollector()
    collector.add(build_sample(transcript, run_checks(transcript, expectations), [],
                               started_at=0.0, finished_at=1.0))
    tools = collector.tools(0.95)
    [trajectory] = prepare_expectations(expectations).checks
    assert trajectory.kwargs is not None
    call_matchings = trajectory.kwargs["call_matchings"]
    found = {}
    for name in ("search", "book"):
        ref, matchings = zip(*[(r, m) for r, m in zip(expectations.tool_calls or [],
                                                      call_matchings, strict=True)
                               if r.name == name], strict=True)
        compat, _ = traj.compatibility(ref, [c for c in calls if c.name == name], matchings)
        alone = traj.trajectory_scores(compat)
        precision, recall = tools[name].precision, tools[name].recall
        assert precision is not None and recall is not None
        assert precision.value == pytest.approx(alone.precision), name
        assert recall.value == pytest.approx(alone.recall), name
        found[name] = (precision.value, recall.value)
    # exact: q=b and q=a match, page=2 and q=c do not, {} matches no call exactly;
    # subset: {} matches any search and page=2 is extra, so every reference search is found
    want = (2 / 4, 2 / 3) if mode == "exact" else (3 / 4, 1.0)
    assert found["search"] == (pytest.approx(want[0]), pytest.approx(want[1]))
    assert found["book"] == (0.0, 0.0)  # id 2 against id 1


def test_an_episode_that_neither_called_nor_expected_a_tool_says_nothing_about_it() -> None:
    transcript = Transcript(scenario_id="s1", tools=TOOLS, tool_calls=[_call("search", q="a")],
                            stop_reason="goal_met", duration_s=1.0)
    collector = ToolCollector()
    expectations = Expectations.model_validate(
        {"tool_calls": [{"name": "search", "args": {"q": "a"}}]})
    collector.add(build_sample(transcript, run_checks(transcript, expectations), [],
                               started_at=0.0, finished_at=1.0))
    book = collector.tools(0.95)["book"]
    assert (book.calls, book.episodes, book.episodes_calling) == (0, 1, 0)
    assert book.precision is None and book.recall is None
    assert book.invalid_argument_rate is None and book.latency.n == 0
