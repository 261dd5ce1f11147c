"""The pure report of ``harness pairwise`` (``harness.runs.pairwise_runs_report``): every
field of :func:`summarise_runs_pairwise` on judged pairs built by hand, against figures
computed here from the table of intended verdicts (scipy's t quantile, statsmodels' Wilson
interval), its notes and offline notice word for word, and the ``--out`` lines' order."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from harness.judging.pairwise_judge import OrderVerdict, PairwiseResult
from harness.models.provenance import RoleModels
from harness.runs.pairwise_runs_report import (
    AGGREGATION,
    SCHEMA_VERSION,
    PairOutcome,
    PairwiseRunReport,
    RunPairing,
    RunRoles,
    b_win_rate,
    combine_pair,
    jsonl_lines,
    pair_samples,
    pairwise_notice,
    scenario_win_rate_interval,
    summarise_runs_pairwise,
)
from harness.runs.sample import SampleRecord
from harness.scenarios.selectors import ScenarioFilter
from harness.transcript import Transcript, UsageTotals

J1, J2 = "mock:j1", "openai:gpt-x"
_FLIP = {"A": "B", "B": "A", "tie": "tie"}


def _result(pair_id: str, judge: str, winner: str | None, *, sample: int = 0,
            said_first: str = "A") -> PairwiseResult:
    """One comparison. ``winner`` ``None`` is a failed one; ``"inconsistent"`` is a tie
    whose two orders disagreed. ``said_first`` is what the judge said, by position, in the
    original order (the swapped order's positional answer follows from the verdict)."""
    if winner is None:
        return PairwiseResult(pair_id=pair_id, criterion_id="better", judge_model=judge,
                              prompt_version="1", prompt_hash="h", sample_index=sample,
                              status="judge_error", error_type="ModelUnavailableError",
                              message=f"{judge} failed on {pair_id}")
    consistent = winner != "inconsistent"
    first = winner if consistent else said_first
    second_verdict = first if consistent else _FLIP[first]
    orders = [OrderVerdict(swapped=False, said=first, verdict=first, reasoning="r"),
              OrderVerdict(swapped=True, said=_FLIP[second_verdict], verdict=second_verdict,
                           reasoning="r")]
    return PairwiseResult(pair_id=pair_id, criterion_id="better", judge_model=judge,
                          prompt_version="1", prompt_hash="h", sample_index=sample,
                          status="decided", orders=orders,
                          winner=first if consistent else "tie", consistent=consistent)


def _record(sid: str, epoch: int, status: str = "scored") -> SampleRecord:
    return SampleRecord(scenario_id=sid, epoch=epoch, status=status,
                        transcript=Transcript(scenario_id=sid, epoch=epoch,
                                              stop_reason="goal_met"))


# (scenario, epoch) -> per judge, the winners of its samples (None: a failed comparison)
JUDGED: dict[tuple[str, int], dict[str, list[str | None]]] = {
    ("s1", 0): {J1: ["B"], J2: ["B"]},                   # B
    ("s1", 1): {J1: ["B"], J2: ["A"]},                   # one vote each: tie
    ("s1", 2): {J1: ["B", "B"], J2: [None]},             # j2 failed: B on j1's vote
    ("s2", 0): {J1: ["B"], J2: ["B"]},                   # B
    ("s2", 1): {J1: ["B", "inconsistent", "B"], J2: ["B"]},  # B (j1: 2 of 3)
    ("s3", 0): {J1: [None], J2: [None]},                 # no verdict: judge error
    ("s4", 0): {J1: ["A"], J2: ["B"]},                   # tie
    ("s4", 1): {J1: ["inconsistent"], J2: ["tie"]},      # tie
}
EXPECTED_WINNER = {("s1", 0): "B", ("s1", 1): "tie", ("s1", 2): "B", ("s2", 0): "B",
                   ("s2", 1): "B", ("s3", 0): None, ("s4", 0): "tie", ("s4", 1): "tie"}
B_SCORE = {"A": 0.0, "tie": 0.5, "B": 1.0}


def _results(key: tuple[str, int]) -> list[PairwiseResult]:
    pair_id = f"{key[0]}#{key[1]}"
    out = []
    for judge, winners in JUDGED[key].items():
        for index, winner in enumerate(winners):
            # j2 answers "B" first in the original order, so first-position rates differ
            said = "A" if judge == J1 else "B"
            out.append(_result(pair_id, judge, winner, sample=index, said_first=said))
    return out


def _winners(key: tuple[str, int]) -> list[str | None]:
    return [w for winners in JUDGED[key].values() for w in winners]


def _outcomes() -> list[PairOutcome]:
    return [combine_pair(sid, epoch, [J1, J2], _results((sid, epoch)))
            for sid, epoch in JUDGED]


def _pairing() -> RunPairing:
    """The judged pairs, and one sample left out for each reason: s5 is in both runs with
    no sample that could be paired."""
    a = [_record(sid, epoch) for sid, epoch in JUDGED] + [
        _record("s1", 3), _record("s2", 2), _record("only-a", 0), _record("s4", 2, "errored"),
        _record("s5", 0, "errored"), _record("s5", 1)]
    b = [_record(sid, epoch) for sid, epoch in JUDGED] + [
        _record("s2", 2, "errored"), _record("s4", 2), _record("s4", 3),
        _record("s5", 0, "errored"), _record("s5", 1, "errored")]
    return pair_samples(a, b)


def _t_interval(values: Sequence[float]) -> tuple[float, float]:
    """The t interval of a mean over ``values`` on n - 1 df, cut at [0, 1] (scipy)."""
    x = np.asarray(values, dtype=float)
    half = sps.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return max(0.0, x.mean() - half), min(1.0, x.mean() + half)


def _report(**extra: Any) -> PairwiseRunReport:
    return summarise_runs_pairwise(
        _pairing(), _outcomes(), run_a="runs/a", run_b="runs/b",
        rubric={"id": "better"}, judges=[J1, J2], samples=3, **extra)


def test_each_pair_gets_the_verdict_of_the_judges_majority() -> None:
    outcomes = {(o.scenario_id, o.epoch): o for o in _outcomes()}
    for key, winner in EXPECTED_WINNER.items():
        outcome = outcomes[key]
        assert outcome.winner == winner, key
        assert outcome.status == ("judge_error" if winner is None else "decided")
        assert outcome.b_score == (None if winner is None else B_SCORE[winner])
        results = _results(key)
        assert outcome.n_comparisons == len(results)
        assert outcome.n_failed == sum(1 for w in _winners(key) if w is None)
        assert outcome.n_inconsistent == sum(
            1 for w in _winners(key) if w == "inconsistent")
    s1_2 = outcomes[("s1", 2)]
    assert [(v.judge_model, v.winner, v.sample_winners, v.n_failed) for v in s1_2.votes] == [
        (J1, "B", ["B", "B"], 0), (J2, None, [], 1)]
    s2_1 = outcomes[("s2", 1)]
    assert s2_1.votes[0].sample_winners == ["B", "tie", "B"]
    assert s2_1.votes[0].winner == "B"


def test_every_count_of_the_report() -> None:
    report = _report()
    decided = {k: w for k, w in EXPECTED_WINNER.items() if w is not None}
    assert (report.kind, report.schema_version, report.aggregation) == (
        "pairwise_runs", SCHEMA_VERSION, AGGREGATION)
    assert (report.run_a, report.run_b, report.rubric, report.judges, report.samples) == (
        "runs/a", "runs/b", {"id": "better"}, [J1, J2], 3)
    assert report.wins_a == sum(1 for w in decided.values() if w == "A") == 0
    assert report.wins_b == sum(1 for w in decided.values() if w == "B") == 4
    assert report.ties == sum(1 for w in decided.values() if w == "tie") == 3
    all_results = [r for key in JUDGED for r in _results(key)]
    failed = [r for r in all_results if r.status != "decided"]
    assert report.counts.model_dump() == {
        "common_scenarios": 5, "pairs": 8, "decided": 7, "judge_errors": 1,
        "only_in_a": 2, "only_in_b": 1, "errored_in_a": 1, "errored_in_b": 2,
        "errored_in_both": 1, "comparisons": len(all_results),
        "failed_comparisons": len(failed)}
    assert report.scenarios_only_in_a == ["only-a"]
    assert report.scenarios_only_in_b == []
    assert [(s.scenario_id, s.epoch, s.reason) for s in report.skipped] == [
        ("only-a", 0, "only_in_a"), ("s1", 3, "only_in_a"), ("s2", 2, "errored_in_b"),
        ("s4", 2, "errored_in_a"), ("s4", 3, "only_in_b"), ("s5", 0, "errored_in_both"),
        ("s5", 1, "errored_in_b")]
    assert [(e.scenario_id, e.epoch, e.judge_model, e.sample_index, e.error_type, e.message)
            for e in report.judge_errors] == [
        ("s1", 2, J2, 0, "ModelUnavailableError", f"{J2} failed on s1#2"),
        ("s3", 0, J1, 0, "ModelUnavailableError", f"{J1} failed on s3#0"),
        ("s3", 0, J2, 0, "ModelUnavailableError", f"{J2} failed on s3#0")]


def test_scenario_rows_and_their_intervals() -> None:
    rows = {r.scenario_id: r for r in _report().scenarios}
    assert list(rows) == ["s1", "s2", "s3", "s4", "s5"]
    s1 = rows["s1"]
    assert (s1.pairs, s1.decided, s1.wins_a, s1.wins_b, s1.ties, s1.judge_errors,
            s1.skipped, s1.comparisons, s1.inconsistent_comparisons) == (3, 3, 0, 2, 1, 0, 1,
                                                                         7, 0)
    assert s1.b_win_rate == pytest.approx(2.5 / 3)
    assert (s1.b_win_rate_ci_low, s1.b_win_rate_ci_high) == pytest.approx(
        _t_interval([1.0, 0.5, 1.0]))
    s2 = rows["s2"]
    assert (s2.pairs, s2.decided, s2.wins_b, s2.ties, s2.skipped, s2.comparisons,
            s2.inconsistent_comparisons) == (2, 2, 2, 0, 1, 6, 1)
    # every pair won by B: the exact one-sided bound for 2 units, (alpha/2)^(1/2)
    assert s2.b_win_rate == 1.0
    assert (s2.b_win_rate_ci_low, s2.b_win_rate_ci_high) == pytest.approx((0.025 ** 0.5, 1.0))
    s3 = rows["s3"]
    assert (s3.pairs, s3.decided, s3.judge_errors, s3.skipped, s3.comparisons, s3.b_win_rate,
            s3.b_win_rate_ci_low, s3.b_win_rate_ci_high) == (1, 0, 1, 0, 2, None, None, None)
    # in both runs, but no sample could be paired
    s5 = rows["s5"]
    assert (s5.pairs, s5.decided, s5.judge_errors, s5.skipped, s5.comparisons,
            s5.b_win_rate) == (0, 0, 0, 2, 0, None)
    s4 = rows["s4"]
    assert (s4.decided, s4.wins_a, s4.wins_b, s4.ties, s4.skipped,
            s4.inconsistent_comparisons) == (2, 0, 0, 2, 2, 1)
    # two ties: no spread inside the range, the Wilson interval for 2 units (statsmodels)
    assert s4.b_win_rate == 0.5
    assert (s4.b_win_rate_ci_low, s4.b_win_rate_ci_high) == pytest.approx(
        proportion_confint(1, 2, alpha=0.05, method="wilson"))
    assert scenario_win_rate_interval([1.0]) is None
    assert scenario_win_rate_interval([0.0, 0.0]) == pytest.approx((0.0, 1 - 0.025 ** 0.5))
    assert scenario_win_rate_interval([0.0, 1.0, 1.0], confidence=0.9) == pytest.approx(
        (max(0.0, 2 / 3 - sps.t.ppf(0.95, 2) * np.std([0, 1, 1], ddof=1) / math.sqrt(3)),
         1.0))


def test_b_win_rate_is_the_mean_of_scenario_means_with_a_t_interval() -> None:
    report = _report()
    means = [2.5 / 3, 1.0, 0.5]  # s1, s2, s4; s3 has no decided pair
    rate = report.b_win_rate
    assert rate is not None
    assert rate.value == pytest.approx(np.mean(means))
    assert rate.stderr == pytest.approx(np.std(means, ddof=1) / math.sqrt(3))
    assert (rate.ci_low, rate.ci_high) == pytest.approx(_t_interval(means))
    assert (rate.n, rate.n_clusters, rate.df, rate.confidence) == (7, 3, 2, 0.95)
    assert rate.clipped == (_t_interval(means)[1] == 1.0)
    assert rate.method == ("B win = 1, tie = 0.5, A win = 0; mean of scenario means; SE "
                           "clustered by scenario; t interval on C-1 df"
                           + ("; clipped to the range [0, 1]" if rate.clipped else ""))
    assert not report.significant_regression and not report.significant_improvement
    assert b_win_rate([]) is None
    at_90 = b_win_rate(_outcomes(), confidence=0.9)
    assert at_90 is not None and at_90.confidence == 0.9
    half = sps.t.ppf(0.95, 2) * np.std(means, ddof=1) / math.sqrt(3)
    assert (at_90.ci_low, at_90.ci_high) == pytest.approx(
        (np.mean(means) - half, min(1.0, np.mean(means) + half)))
    one = b_win_rate([o for o in _outcomes() if o.scenario_id == "s1"])
    assert one is not None and one.value == pytest.approx(2.5 / 3) and one.ci_low is None


@pytest.mark.parametrize("winner", ["A", "B"])
def test_a_significant_change_is_flagged_one_way(winner: str) -> None:
    outcomes = [combine_pair(f"s{i}", e, [J1], [_result(f"s{i}#{e}", J1, w)])
                for i in range(6)
                for e, w in enumerate([winner] * 3 + ["tie" if i == 5 else winner])]
    records = [_record(o.scenario_id, o.epoch) for o in outcomes]
    report = summarise_runs_pairwise(pair_samples(records, records), outcomes, run_a="a",
                                     run_b="b", rubric={}, judges=[J1], samples=1)
    rate = report.b_win_rate
    assert rate is not None and rate.ci_low is not None and rate.ci_high is not None
    means = [B_SCORE[winner]] * 5 + [(3 * B_SCORE[winner] + 0.5) / 4]
    low, high = _t_interval(means)
    assert (rate.ci_low, rate.ci_high) == pytest.approx((low, high))
    assert report.significant_improvement == (winner == "B") == (low > 0.5)
    assert report.significant_regression == (winner == "A") == (high < 0.5)


def test_notes_say_what_was_left_out_word_for_word() -> None:
    report = _report(notes=["given first"])
    assert report.notes == [
        "given first",
        "2 common scenarios have no decided pair and are left out of B's win rate: s3, s5",
        "samples not compared: 1 errored in a, 2 errored in b, 1 errored in both, 2 only in "
        "a, 1 only in b",
        "3 comparisons failed after retries or re-asks; they are errors, never verdicts "
        "(see judge_errors)"]
    # one undecided scenario, one decided scenario: the singular, and no interval
    outcomes = [o for o in _outcomes() if o.scenario_id in ("s1", "s3")]
    records = [_record(o.scenario_id, o.epoch) for o in outcomes]
    other = summarise_runs_pairwise(pair_samples(records, records), outcomes, run_a="a",
                                    run_b="b", rubric={}, judges=[J1, J2], samples=1)
    assert other.notes == [
        "B's win rate has no interval: it needs decided pairs in at least 2 scenarios",
        "1 common scenario has no decided pair and is left out of B's win rate: s3",
        "3 comparisons failed after retries or re-asks; they are errors, never verdicts "
        "(see judge_errors)"]
    # nothing left out: no notes at all
    clean = [o for o in _outcomes() if o.scenario_id in ("s2", "s4")]
    records = [_record(o.scenario_id, o.epoch) for o in clean]
    assert summarise_runs_pairwise(pair_samples(records, records), clean, run_a="a",
                                   run_b="b", rubric={}, judges=[J1, J2],
                                   samples=1).notes == []


def test_per_judge_figures_and_the_position_rates() -> None:
    report = _report()
    for judge in (J1, J2):
        mine = [r for key in JUDGED for r in _results(key) if r.judge_model == judge]
        decided = [r for r in mine if r.status == "decided"]
        summary = report.by_judge[judge]
        assert (summary.n_pairs, summary.n_errors, summary.n_decided) == (
            len(mine), len(mine) - len(decided), len(decided))
        assert (summary.wins_a, summary.wins_b, summary.ties) == tuple(
            sum(1 for r in decided if r.winner == w) for w in ("A", "B", "tie"))
        inconsistent = sum(1 for r in decided if not r.consistent)
        assert (summary.inconsistency_rate.k, summary.inconsistency_rate.n) == (
            inconsistent, len(decided))
    overall = [r for key in JUDGED for r in _results(key) if r.status == "decided"]
    said_a = sum(1 for r in overall for o in r.orders if o.said == "A")
    rate = report.first_position_rate
    assert (rate.k, rate.n) == (said_a, 2 * len(overall))
    assert (rate.ci_low, rate.ci_high) == pytest.approx(
        proportion_confint(said_a, 2 * len(overall), alpha=0.05, method="wilson"))
    inconsistency = report.inconsistency_rate
    assert (inconsistency.k, inconsistency.n) == (2, len(overall))


def test_selection_is_kept_only_when_it_drops_something() -> None:
    assert _report().selection is None
    assert _report(selection=ScenarioFilter()).selection is None
    chosen = ScenarioFilter(tags=["weather"])
    assert _report(selection=chosen).selection == chosen
    assert _report(usage={"calls": 3}).usage == {"calls": 3}
    assert _report().usage == {}


def _roles(**roles: RoleModels) -> dict[str, RoleModels]:
    return dict(roles)


def test_the_offline_notice_names_every_mock_and_every_real_model() -> None:
    runs = {
        "runs/a": RunRoles(_roles(agent=RoleModels(offline=True, offline_models=["mock:agent"]),
                                  simulator=RoleModels(offline=True,
                                                       offline_models=["mock:simulator"])),
                           any_offline=True),
        "runs/b": RunRoles(_roles(agent=RoleModels(offline=False,
                                                   real_models=["openai:gpt-4.1"])),
                           any_offline=False),
    }
    assert pairwise_notice([J1, J2], {"calls": 7, "cost_usd": 0.01234}, runs) == (
        "OFFLINE: the pairwise judges mock:j1; the samples of runs/a (agent mock:agent; "
        "simulator mock:simulator) come from mock: models; REAL: the pairwise judges "
        "openai:gpt-x (7 calls, $0.0123); the samples of runs/b (agent openai:gpt-4.1). "
        "Figures that depend on an offline model say nothing about a real agent or judge.")
    # everything real: no notice; a judge with no usage counts zero calls
    assert pairwise_notice([J2], {}, {"runs/b": runs["runs/b"]}) is None
    # everything offline; a store from before roles were recorded says only "offline"
    legacy = {"old": RunRoles({}, any_offline=True)}
    assert pairwise_notice([J1], {}, legacy) == (
        "OFFLINE: the pairwise judges mock:j1; the samples of old come from mock: models; "
        "no real model was called. Figures that depend on an offline model say nothing about "
        "a real agent or judge.")
    # several judges of each kind, several roles and models: each list said in full
    two = {"runs/b": RunRoles(_roles(
        agent=RoleModels(offline=False, real_models=["openai:gpt-4.1", "openai:gpt-5"]),
        simulator=RoleModels(offline=False, offline_models=["mock:simulator", "mock:user"],
                             real_models=["openai:gpt-4.1-mini"])), any_offline=True)}
    assert pairwise_notice(["mock:j1", "mock:j2", "openai:a", "openai:b"], {}, two) == (
        "OFFLINE: the pairwise judges mock:j1, mock:j2; the samples of runs/b (simulator "
        "mock:simulator, mock:user) come from mock: models; REAL: the pairwise judges "
        "openai:a, openai:b (0 calls, $0.0000); the samples of runs/b (agent openai:gpt-4.1, "
        "openai:gpt-5; simulator openai:gpt-4.1-mini). Figures that depend on an offline "
        "model say nothing about a real agent or judge.")
    assert pairwise_notice([J2], {}, legacy) == (
        "OFFLINE: the samples of old come from mock: models; REAL: the pairwise judges "
        "openai:gpt-x (0 calls, $0.0000). Figures that depend on an offline model say "
        "nothing about a real agent or judge.")
    report = _report(run_roles=runs, usage={"calls": 7, "cost_usd": 0.01234})
    assert report.offline and report.notice == pairwise_notice(
        [J1, J2], {"calls": 7, "cost_usd": 0.01234}, runs)
    real = summarise_runs_pairwise(_pairing(), _outcomes(), run_a="a", run_b="b", rubric={},
                                   judges=[J2], samples=1)
    assert not real.offline and real.notice is None


def test_run_roles_of_stored_samples() -> None:
    mock = _record("s", 0)
    mock.models = {"agent": ["mock:agent"]}
    mock.usage = {"agent": UsageTotals(calls=2, cost_usd=0.0)}
    mock.offline = True
    real = _record("s", 1)
    real.models = {"agent": ["openai:gpt-4.1"], "judge": ["openai:gpt-4.1-mini"]}
    real.usage = {"agent": UsageTotals(calls=3, cost_usd=0.5)}
    roles = RunRoles.of([mock, real])
    assert roles.any_offline
    assert roles.roles["agent"].offline_models == ["mock:agent"]
    assert roles.roles["agent"].real_models == ["openai:gpt-4.1"]
    assert roles.roles["agent"].calls == 5
    assert roles.roles["agent"].cost_usd == pytest.approx(0.5)
    assert roles.roles["judge"].real_models == ["openai:gpt-4.1-mini"]
    assert roles.roles["judge"].calls == 0
    assert not RunRoles.of([real]).any_offline


def test_out_lines_come_in_key_order_with_the_skipped_samples() -> None:
    lines = jsonl_lines(_pairing(), _outcomes())
    assert [(line["scenario_id"], line["epoch"], line["status"]) for line in lines] == [
        ("only-a", 0, "skipped"), ("s1", 0, "decided"), ("s1", 1, "decided"),
        ("s1", 2, "decided"), ("s1", 3, "skipped"), ("s2", 0, "decided"),
        ("s2", 1, "decided"), ("s2", 2, "skipped"), ("s3", 0, "judge_error"),
        ("s4", 0, "decided"), ("s4", 1, "decided"), ("s4", 2, "skipped"),
        ("s4", 3, "skipped"), ("s5", 0, "skipped"), ("s5", 1, "skipped")]
    assert lines[0] == {"scenario_id": "only-a", "epoch": 0, "reason": "only_in_a",
                        "status": "skipped"}
    assert lines[1]["winner"] == "B" and lines[1]["b_score"] == 1.0
    assert len(lines[1]["comparisons"]) == 2
