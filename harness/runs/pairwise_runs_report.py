"""The pure half of ``harness pairwise``: pairing two runs' samples, combining a pair's
comparisons into its verdict, and the report (:class:`PairwiseRunReport`, the command's JSON).
The judging itself is :mod:`harness.runs.pairwise_runs`.

Every ``(scenario_id, epoch)`` sample stored and not errored in both runs is a *pair*. A
sample in one run only, or errored in either, is counted and listed by reason, never silently
dropped.

How a pair's verdict is formed: for each judge, the majority of the winners of its decided
samples (each sample a comparison asked in both orders, a winner only when the orders agree);
then the majority of the judges' verdicts, each judge one vote however many samples it took
(as rubric panels are combined). A label wins only with more than half of the votes;
otherwise the pair is a tie. A comparison that failed after retries or re-asks is recorded as
an error of its pair, never a verdict; a pair with no decided comparison at all is a *judge
error*, reported apart and left out of every rate.

The figures: wins for A, wins for B and ties (pairs); the inconsistency rate over comparisons
(the two orders disagreed) with a Wilson interval (:func:`summarise_pairwise`); B's win rate
(B win = 1, tie = 0.5, A win = 0) as the mean of per-scenario means with the standard error
clustered by scenario and a t interval on C - 1 degrees of freedom
(:func:`harness.stats.estimate.mean_of_cluster_means`); and the same per scenario, its
interval the one a run summary gives a scenario's mean over its epochs (here over its decided
pairs: a t interval on n - 1 df cut at [0, 1], or the no-spread interval for n when every
pair had the same outcome; none with a single decided pair).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from harness.judging.pairwise_judge import (
    PairwiseResult,
    PairwiseSummary,
    Preference,
    Proportion,
    summarise_pairwise,
)
from harness.models.base import ModelSpec
from harness.models.provenance import RoleCollector, RoleModels
from harness.runs.sample import SampleRecord
from harness.scenarios.selectors import ScenarioFilter
from harness.stats.bounded import mean_intervals
from harness.stats.estimate import Estimate, mean_of_cluster_means
from harness.transcript import Transcript
from harness.wording import plural

SCHEMA_VERSION = 1
CONFIDENCE = 0.95  # the Wilson intervals of summarise_pairwise are 95% too
AGGREGATION = (
    "per pair: each judge's decided samples by majority, then the judges' verdicts by "
    "majority (one vote per judge); no label with more than half of the votes is a tie"
)
WIN_RATE_METHOD = ("B win = 1, tie = 0.5, A win = 0; mean of scenario means; SE clustered by "
                   "scenario; t interval on C-1 df")
SkipReason = Literal["only_in_a", "only_in_b", "errored_in_a", "errored_in_b",
                     "errored_in_both"]
PairStatus = Literal["decided", "judge_error"]


# --- pairing -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SamplePair:
    """The two transcripts of one (scenario, epoch)."""

    scenario_id: str
    epoch: int
    a: Transcript
    b: Transcript

    @property
    def pair_id(self) -> str:
        return f"{self.scenario_id}#{self.epoch}"


class SkippedSample(BaseModel):
    """A sample that could not be paired: in one run only, or errored in one or both."""

    model_config = ConfigDict(extra="forbid")

    scenario_id: str
    epoch: int
    reason: SkipReason


@dataclass
class RunPairing:
    """What two runs have in common: the pairs to judge, the samples left out (with why),
    and the scenarios found in only one run."""

    pairs: list[SamplePair]
    skipped: list[SkippedSample]
    common_scenarios: list[str]
    scenarios_only_in_a: list[str]
    scenarios_only_in_b: list[str]


def pair_samples(samples_a: Iterable[SampleRecord],
                 samples_b: Iterable[SampleRecord]) -> RunPairing:
    """Pair two runs' samples by ``(scenario_id, epoch)`` (pure). A sample in one run only
    is ``only_in_a``/``only_in_b``; a key present in both whose sample errored in either run
    is ``errored_in_a``/``errored_in_b``/``errored_in_both``. ``unscored`` samples finished
    and have transcripts, so they are paired."""
    by_a = {(s.scenario_id, s.epoch): s for s in samples_a}
    by_b = {(s.scenario_id, s.epoch): s for s in samples_b}
    pairs: list[SamplePair] = []
    skipped: list[SkippedSample] = []
    for key in sorted(by_a.keys() | by_b.keys()):
        a, b = by_a.get(key), by_b.get(key)
        reason: SkipReason | None = None
        if a is None:
            reason = "only_in_b"
        elif b is None:
            reason = "only_in_a"
        elif a.errored and b.errored:
            reason = "errored_in_both"
        elif a.errored:
            reason = "errored_in_a"
        elif b.errored:
            reason = "errored_in_b"
        if reason is not None:
            skipped.append(SkippedSample(scenario_id=key[0], epoch=key[1], reason=reason))
            continue
        assert a is not None and b is not None
        pairs.append(SamplePair(key[0], key[1], a.transcript, b.transcript))
    scen_a = {k[0] for k in by_a}
    scen_b = {k[0] for k in by_b}
    return RunPairing(pairs=pairs, skipped=skipped, common_scenarios=sorted(scen_a & scen_b),
                      scenarios_only_in_a=sorted(scen_a - scen_b),
                      scenarios_only_in_b=sorted(scen_b - scen_a))


# --- one pair's verdict --------------------------------------------------------------------


def majority_preference(votes: Sequence[Preference]) -> Preference | None:
    """The label with more than half of ``votes``; ``"tie"`` when none has; ``None`` for no
    votes."""
    if not votes:
        return None
    label, count = Counter(votes).most_common(1)[0]
    return label if count * 2 > len(votes) else "tie"


B_SCORE: dict[str, float] = {"B": 1.0, "tie": 0.5, "A": 0.0}


class JudgeVote(BaseModel):
    """One judge's verdict on a pair: the majority of its decided samples (``None`` when
    every sample failed)."""

    model_config = ConfigDict(extra="forbid")

    judge_model: str
    winner: Preference | None
    sample_winners: list[Preference]
    n_failed: int


class PairOutcome(BaseModel):
    """One pair judged: its verdict, each judge's vote, and every comparison (both orders,
    reasoning, errors). ``b_score`` is 1 when B won, 0.5 for a tie, 0 when A won, ``None``
    for a judge error."""

    model_config = ConfigDict(extra="forbid")

    scenario_id: str
    epoch: int
    status: PairStatus
    winner: Preference | None
    b_score: float | None
    votes: list[JudgeVote]
    n_comparisons: int
    n_inconsistent: int
    n_failed: int
    comparisons: list[PairwiseResult]


def combine_pair(scenario_id: str, epoch: int, judges: Sequence[str],
                 results: Sequence[PairwiseResult]) -> PairOutcome:
    """A pair's verdict from its comparisons (pure; see the module docstring)."""
    votes: list[JudgeVote] = []
    for judge in judges:
        mine = [r for r in results if r.judge_model == judge]
        winners = [r.winner for r in mine if r.status == "decided" and r.winner is not None]
        votes.append(JudgeVote(judge_model=judge, winner=majority_preference(winners),
                               sample_winners=winners,
                               n_failed=sum(1 for r in mine if r.status != "decided")))
    winner = majority_preference([v.winner for v in votes if v.winner is not None])
    decided = [r for r in results if r.status == "decided"]
    return PairOutcome(
        scenario_id=scenario_id, epoch=epoch,
        status="judge_error" if winner is None else "decided",
        winner=winner, b_score=None if winner is None else B_SCORE[winner], votes=votes,
        n_comparisons=len(results),
        n_inconsistent=sum(1 for r in decided if r.consistent is False),
        n_failed=len(results) - len(decided), comparisons=list(results),
    )


# --- the report ----------------------------------------------------------------------------


class ScenarioPairwise(BaseModel):
    """One scenario's pairs."""

    model_config = ConfigDict(extra="forbid")

    scenario_id: str
    pairs: int
    decided: int
    wins_a: int
    wins_b: int
    ties: int
    judge_errors: int
    skipped: int
    b_win_rate: float | None
    b_win_rate_ci_low: float | None = None
    b_win_rate_ci_high: float | None = None
    comparisons: int
    inconsistent_comparisons: int


class PairwiseCounts(BaseModel):
    """Where every sample of both runs went."""

    model_config = ConfigDict(extra="forbid")

    common_scenarios: int
    pairs: int
    decided: int
    judge_errors: int
    only_in_a: int
    only_in_b: int
    errored_in_a: int
    errored_in_b: int
    errored_in_both: int
    comparisons: int
    failed_comparisons: int


class PairError(BaseModel):
    """A comparison that failed after retries or re-asks (an error, never a verdict)."""

    model_config = ConfigDict(extra="forbid")

    scenario_id: str
    epoch: int
    judge_model: str
    sample_index: int
    error_type: str | None
    message: str | None


class PairwiseRunReport(BaseModel):
    """The JSON ``harness pairwise --json`` prints (keys documented in docs/statistics.md)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["pairwise_runs"] = "pairwise_runs"
    schema_version: int = SCHEMA_VERSION
    run_a: str
    run_b: str
    rubric: dict[str, Any]
    judges: list[str]
    samples: int
    aggregation: str = AGGREGATION
    offline: bool
    notice: str | None
    counts: PairwiseCounts
    wins_a: int
    wins_b: int
    ties: int
    b_win_rate: Estimate | None
    significant_regression: bool
    significant_improvement: bool
    inconsistency_rate: Proportion
    first_position_rate: Proportion
    by_judge: dict[str, PairwiseSummary]
    scenarios: list[ScenarioPairwise]
    scenarios_only_in_a: list[str]
    scenarios_only_in_b: list[str]
    skipped: list[SkippedSample]
    judge_errors: list[PairError]
    usage: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)
    selection: ScenarioFilter | None = Field(
        default=None, description="the --tag, --exclude-tag and -k that chose the scenarios "
        "compared; null when all were")


def b_win_rate(outcomes: Sequence[PairOutcome], confidence: float = CONFIDENCE
               ) -> Estimate | None:
    """B's win rate over the decided pairs, each scenario counting once (pure). ``None``
    when no pair was decided; no interval (``ci_low`` ``None``) with one scenario."""
    by_scenario: dict[str, list[float]] = defaultdict(list)
    for o in outcomes:
        if o.b_score is not None:
            by_scenario[o.scenario_id].append(o.b_score)
    if not by_scenario:
        return None
    means = [sum(v) / len(v) for _, v in sorted(by_scenario.items())]
    return mean_of_cluster_means(means, confidence=confidence,
                                 n=sum(len(v) for v in by_scenario.values()),
                                 method=WIN_RATE_METHOD, bounds=(0.0, 1.0))


def scenario_win_rate_interval(b_scores: Sequence[float], confidence: float = CONFIDENCE
                               ) -> tuple[float, float] | None:
    """The interval of one scenario's B win rate from its decided pairs' ``b_scores`` (1, 0.5
    or 0), as a run summary computes a scenario's mean interval over epochs; ``None`` with
    fewer than 2 pairs."""
    n = len(b_scores)
    if n < 2:
        return None
    x = np.asarray(b_scores, dtype=float)
    spread = bool(np.ptp(x) > 0)
    mean = float(x.mean()) if spread else float(x[0])
    stderr = float(x.std(ddof=1)) / math.sqrt(n) if spread else 0.0
    iv = mean_intervals(np.array([mean]), np.array([stderr]), np.array([spread]),
                        np.array([n]), confidence=confidence)
    return float(iv.low[0]), float(iv.high[0])


def _scenario_rows(pairing: RunPairing, outcomes: Sequence[PairOutcome]
                   ) -> list[ScenarioPairwise]:
    skipped = Counter(s.scenario_id for s in pairing.skipped)
    by_scenario: dict[str, list[PairOutcome]] = defaultdict(list)
    for o in outcomes:
        by_scenario[o.scenario_id].append(o)
    rows = []
    for sid in pairing.common_scenarios:
        mine = by_scenario.get(sid, [])
        scores = [o.b_score for o in mine if o.b_score is not None]
        interval = scenario_win_rate_interval(scores)
        rows.append(ScenarioPairwise(
            scenario_id=sid, pairs=len(mine), decided=len(scores),
            wins_a=sum(1 for o in mine if o.winner == "A"),
            wins_b=sum(1 for o in mine if o.winner == "B"),
            ties=sum(1 for o in mine if o.winner == "tie"),
            judge_errors=sum(1 for o in mine if o.status == "judge_error"),
            skipped=skipped.get(sid, 0),
            b_win_rate=sum(scores) / len(scores) if scores else None,
            b_win_rate_ci_low=None if interval is None else interval[0],
            b_win_rate_ci_high=None if interval is None else interval[1],
            comparisons=sum(o.n_comparisons for o in mine),
            inconsistent_comparisons=sum(o.n_inconsistent for o in mine),
        ))
    return rows


def summarise_runs_pairwise(
    pairing: RunPairing,
    outcomes: Sequence[PairOutcome],
    *,
    run_a: str,
    run_b: str,
    rubric: dict[str, Any],
    judges: Sequence[str],
    samples: int,
    run_roles: Mapping[str, RunRoles] | None = None,
    usage: dict[str, Any] | None = None,
    notes: Sequence[str] = (),
    selection: ScenarioFilter | None = None,
) -> PairwiseRunReport:
    """The report from judged pairs (pure). ``run_roles`` says, per run, which models made
    its samples (see :func:`pairwise_notice`); ``usage`` is the judges' calls and cost."""
    comparisons = [r for o in outcomes for r in o.comparisons]
    overall = summarise_pairwise(comparisons)
    reasons = Counter(s.reason for s in pairing.skipped)
    decided = [o for o in outcomes if o.status == "decided"]
    rate = b_win_rate(outcomes)
    notice = pairwise_notice(judges, usage or {}, run_roles or {})
    all_notes = list(notes)
    if rate is not None and rate.ci_low is None:
        all_notes.append("B's win rate has no interval: it needs decided pairs in at least "
                         "2 scenarios")
    rows = _scenario_rows(pairing, outcomes)
    undecided = [r.scenario_id for r in rows if r.decided == 0]
    if undecided:
        one = len(undecided) == 1
        all_notes.append(f"{plural(len(undecided), 'common scenario')} "
                         f"{'has' if one else 'have'} no decided pair and "
                         f"{'is' if one else 'are'} "
                         f"left out of B's win rate: {', '.join(undecided)}")
    if reasons:
        all_notes.append("samples not compared: " + ", ".join(
            f"{n} {reason.replace('_', ' ')}" for reason, n in sorted(reasons.items())))
    if overall.n_errors:
        all_notes.append(f"{plural(overall.n_errors, 'comparison')} failed after retries or "
                         "re-asks; they are errors, never verdicts (see judge_errors)")
    return PairwiseRunReport(
        run_a=run_a, run_b=run_b, rubric=rubric, judges=list(judges), samples=samples,
        offline=notice is not None, notice=notice,
        counts=PairwiseCounts(
            common_scenarios=len(pairing.common_scenarios), pairs=len(outcomes),
            decided=len(decided), judge_errors=len(outcomes) - len(decided),
            only_in_a=reasons["only_in_a"], only_in_b=reasons["only_in_b"],
            errored_in_a=reasons["errored_in_a"], errored_in_b=reasons["errored_in_b"],
            errored_in_both=reasons["errored_in_both"], comparisons=overall.n_pairs,
            failed_comparisons=overall.n_errors),
        wins_a=sum(1 for o in decided if o.winner == "A"),
        wins_b=sum(1 for o in decided if o.winner == "B"),
        ties=sum(1 for o in decided if o.winner == "tie"),
        b_win_rate=rate,
        significant_regression=rate is not None and rate.ci_high is not None
        and rate.ci_high < 0.5,
        significant_improvement=rate is not None and rate.ci_low is not None
        and rate.ci_low > 0.5,
        inconsistency_rate=overall.inconsistency_rate,
        first_position_rate=overall.first_position_rate,
        by_judge={j: summarise_pairwise([r for r in comparisons if r.judge_model == j])
                  for j in judges},
        scenarios=rows,
        scenarios_only_in_a=pairing.scenarios_only_in_a,
        scenarios_only_in_b=pairing.scenarios_only_in_b,
        skipped=pairing.skipped,
        judge_errors=[PairError(scenario_id=o.scenario_id, epoch=o.epoch,
                                judge_model=r.judge_model, sample_index=r.sample_index,
                                error_type=r.error_type, message=r.message)
                      for o in outcomes for r in o.comparisons if r.status != "decided"],
        usage=usage or {}, notes=all_notes,
        selection=selection if selection is not None and selection.active else None,
    )


@dataclass(frozen=True)
class RunRoles:
    """Which models made a run's samples: each role's (from the samples' ``models``) and
    whether any sample was offline (samples stored before roles were recorded say only
    that)."""

    roles: Mapping[str, RoleModels]
    any_offline: bool

    @classmethod
    def of(cls, records: Sequence[SampleRecord]) -> RunRoles:
        collector = RoleCollector()
        for record in records:
            for role, names in record.models.items():
                usage = record.usage.get(role)
                collector.add(role, names, None if usage is None else usage.model_dump())
        return cls(collector.roles(), any(r.offline for r in records))


def pairwise_notice(judges: Sequence[str], judge_usage: Mapping[str, Any],
                    run_roles: Mapping[str, RunRoles]) -> str | None:
    """The offline notice of a pairwise comparison: which of its models were offline
    (``mock:`` judges, the roles that made either run's samples) and which real, the judges'
    calls and cost with them; ``None`` when no model was offline."""
    judge_kinds = {j: ModelSpec.parse(j).is_offline for j in judges}
    offline = [f"the pairwise judges {', '.join(j for j, off in judge_kinds.items() if off)}"
               ] if any(judge_kinds.values()) else []
    real = [f"the pairwise judges {', '.join(j for j, off in judge_kinds.items() if not off)} "
            f"({judge_usage.get('calls', 0)} calls, ${judge_usage.get('cost_usd', 0.0):.4f})"
            ] if not all(judge_kinds.values()) else []
    for run, made in run_roles.items():
        mock = "; ".join(f"{role} {', '.join(r.offline_models)}"
                         for role, r in made.roles.items() if r.offline_models)
        if mock or made.any_offline:
            offline.append(f"the samples of {run}" + (f" ({mock})" if mock else ""))
        models = "; ".join(f"{role} {', '.join(r.real_models)}"
                           for role, r in made.roles.items() if r.real_models)
        if models:
            real.append(f"the samples of {run} ({models})")
    if not offline:
        return None
    return ("OFFLINE: " + "; ".join(offline) + " come from mock: models; "
            + ("REAL: " + "; ".join(real) if real else "no real model was called")
            + ". Figures that depend on an offline model say nothing about a real agent or "
            "judge.")


def jsonl_lines(pairing: RunPairing, outcomes: Sequence[PairOutcome]) -> list[dict[str, Any]]:
    """One ``--out`` line per (scenario, epoch) of either run, in key order: judged pairs
    (``status`` ``decided`` or ``judge_error``, with votes and comparisons) and samples not
    compared (``status`` ``skipped`` with ``reason``)."""
    lines: list[tuple[tuple[str, int], dict[str, Any]]] = [
        ((o.scenario_id, o.epoch), o.model_dump(mode="json")) for o in outcomes]
    lines += [((s.scenario_id, s.epoch), {**s.model_dump(mode="json"), "status": "skipped"})
              for s in pairing.skipped]
    return [line for _, line in sorted(lines, key=lambda item: item[0])]


__all__ = [
    "SCHEMA_VERSION",
    "JudgeVote",
    "PairOutcome",
    "PairwiseCounts",
    "PairwiseRunReport",
    "RunPairing",
    "RunRoles",
    "SamplePair",
    "ScenarioPairwise",
    "SkippedSample",
    "b_win_rate",
    "combine_pair",
    "jsonl_lines",
    "majority_preference",
    "pair_samples",
    "pairwise_notice",
    "scenario_win_rate_interval",
    "summarise_runs_pairwise",
]
