"""Adaptive sampling planner: pilot, freezing, Neyman proportions, budgets, and a simulated
suite where adaptive sampling reaches the target width with fewer samples than fixed
epochs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from harness.stats import (
    AdaptiveConfig,
    FixedDesignEstimate,
    InsufficientDataError,
    adaptive_savings,
    fixed_epochs_for_width,
    interval_width,
    plan_next_round,
)


def _draw(rng: np.random.Generator, p: float, k: int) -> list[float]:
    return [float(v) for v in (rng.random(k) < p)]


def _mixed_suite() -> dict[str, float]:
    # 16 settled scenarios, 8 nearly settled, 16 flaky: a realistic agent suite.
    probs = [0.0] * 8 + [1.0] * 8 + [0.05] * 4 + [0.95] * 4
    probs += list(np.linspace(0.3, 0.7, 16))
    return {f"s{i}": float(p) for i, p in enumerate(probs)}


def _run_adaptive(
    probs: dict[str, float], config: AdaptiveConfig, rng: np.random.Generator
) -> tuple[dict[str, list[float]], str]:
    scores: dict[str, list[float]] = {s: [] for s in probs}
    for _ in range(200):
        decision = plan_next_round(scores, config=config)
        if decision.stop:
            return scores, decision.reason
        for sid, extra in decision.allocations.items():
            scores[sid] += _draw(rng, probs[sid], extra)
    raise AssertionError("planner did not stop")


def _run_fixed(
    probs: dict[str, float], target: float, rng: np.random.Generator, start: int
) -> int:
    scores = {s: _draw(rng, p, start) for s, p in probs.items()}
    while interval_width(scores, basis="fixed_scenarios") > target:
        for s, p in probs.items():
            scores[s] += _draw(rng, p, 1)
    return sum(len(x) for x in scores.values())


def test_adaptive_reaches_width_with_fewer_samples_than_fixed_epochs() -> None:
    probs = _mixed_suite()
    target = 0.06
    config = AdaptiveConfig(target_width=target, width_basis="fixed_scenarios",
                            pilot_epochs=3)
    adaptive_used, fixed_used, estimated = [], [], []
    for seed in range(5):
        scores, reason = _run_adaptive(probs, config, np.random.default_rng(seed))
        assert reason == "target_reached"
        assert interval_width(scores, basis="fixed_scenarios") <= target
        adaptive_used.append(sum(len(x) for x in scores.values()))
        fixed_used.append(_run_fixed(probs, target, np.random.default_rng(100 + seed), 3))
        pilot = {s: x[:3] for s, x in scores.items()}
        est = fixed_epochs_for_width(pilot, target_width=target, basis="fixed_scenarios")
        assert est.achievable and est.samples is not None
        estimated.append(est.samples)
    assert all(a < f for a, f in zip(adaptive_used, fixed_used, strict=True)), (
        adaptive_used, fixed_used)
    # The saving is large here: over a third of the samples.
    assert np.mean(adaptive_used) < 0.67 * np.mean(fixed_used)
    saving = adaptive_savings(adaptive_used[0], fixed_epochs_for_width(
        {s: [1.0, 0.0, 1.0] if 0 < p < 1 else [p] * 3 for s, p in probs.items()},
        target_width=target, basis="fixed_scenarios"))
    assert saving.saved_samples is not None
    assert saving.saved_samples == saving.fixed_samples - adaptive_used[0]


def test_clustered_basis_stops_at_the_target() -> None:
    rng = np.random.default_rng(1)
    probs = {f"s{i}": float(p) for i, p in enumerate(rng.uniform(0.4, 0.6, 30))}
    config = AdaptiveConfig(target_width=0.2, width_basis="clustered")
    scores, reason = _run_adaptive(probs, config, rng)
    assert reason == "target_reached"
    assert interval_width(scores, basis="clustered") <= 0.2


def test_target_below_between_scenario_floor_asks_for_scenarios() -> None:
    # Half the scenarios always fail, half are coin flips: the scenario means differ a lot.
    scores = {f"a{i}": [0.0] * 3 for i in range(10)}
    scores |= {f"b{i}": [1.0, 0.0, 1.0] if i % 2 else [0.0, 1.0, 0.0] for i in range(10)}
    decision = plan_next_round(scores, config=AdaptiveConfig(target_width=0.05))
    assert decision.stop and decision.reason == "needs_more_scenarios"
    assert decision.floor_width is not None and decision.floor_width >= 0.05
    assert decision.current_width is not None and decision.current_width > 0.05


def test_pilot_first_and_budget() -> None:
    config = AdaptiveConfig(target_width=0.1, pilot_epochs=3, max_samples=7)
    d = plan_next_round({"a": [1.0], "b": [], "c": [0.0, 1.0]}, config=config)
    assert d.reason == "pilot" and not d.stop
    # 3 used, budget 7: 4 left for the 5 missing pilot epochs, given in order.
    assert d.allocations == {"a": 2, "b": 2}
    # 7 used, budget 7: the last missing pilot epochs cannot be run.
    spent = plan_next_round({"a": [1.0] * 3, "b": [0.0, 1.0], "c": [0.0, 1.0]}, config=config)
    assert spent.stop and spent.reason == "budget_exhausted" and spent.allocations == {}
    done = plan_next_round({"a": [1.0] * 3, "b": [0.0, 1.0, 1.0], "c": [0.0, 1.0, 0.0]},
                           config=AdaptiveConfig(target_width=0.01, max_samples=9))
    assert done.stop and done.reason == "budget_exhausted"


def test_coinciding_means_do_not_stop_the_run() -> None:
    # Every scenario mean is 2/3, so the observed clustered width is 0; the model width
    # (within-scenario noise) is not, and the run goes on.
    scores = {f"s{i}": [1.0, 0.0, 1.0] for i in range(10)}
    d = plan_next_round(scores, config=AdaptiveConfig(target_width=0.1))
    assert d.current_width is not None and d.current_width < 1e-12
    assert d.model_width is not None and d.model_width > 0.1
    assert not d.stop and d.allocations


def test_round_never_exceeds_budget_or_round_cap() -> None:
    scores = {f"s{i}": [1.0, 0.0, 1.0] for i in range(10)}
    d = plan_next_round(scores, config=AdaptiveConfig(target_width=0.01, max_samples=45))
    assert sum(d.allocations.values()) == 15
    d = plan_next_round(scores, config=AdaptiveConfig(target_width=0.01, max_round_size=4))
    assert sum(d.allocations.values()) == 4


def test_unanimous_scenarios_get_nothing() -> None:
    scores = {"pass": [1.0] * 3, "fail": [0.0] * 3, "flaky": [1.0, 0.0, 1.0],
              "flaky2": [0.0, 1.0, 0.0]}
    d = plan_next_round(scores, config=AdaptiveConfig(target_width=0.05,
                                                      width_basis="fixed_scenarios"))
    assert d.frozen == ["fail", "pass"]
    assert set(d.allocations) == {"flaky", "flaky2"}
    # Without freezing, the shrunk variance gives them some epochs (they are not starved).
    d = plan_next_round(scores, config=AdaptiveConfig(
        target_width=0.05, width_basis="fixed_scenarios", freeze_unanimous=False))
    assert d.allocations.get("pass", 0) > 0
    # Continuous scores that never pass but vary are not frozen.
    d = plan_next_round({"a": [0.2, 0.6, 0.4], "b": [0.5, 0.5, 0.5]},
                        config=AdaptiveConfig(target_width=0.01,
                                              width_basis="fixed_scenarios"))
    assert d.frozen == ["b"] and "a" in d.allocations


def test_allocation_is_neyman() -> None:
    # Known sds 0.1, 0.2, 0.4 (no shrinkage): final epochs should be proportional to sd.
    rng = np.random.default_rng(0)
    sds = {"a": 0.1, "b": 0.2, "c": 0.4}
    scores = {}
    for sid, sd in sds.items():
        x = rng.normal(0, 1, 2)
        x = (x - x.mean()) / x.std(ddof=1) * sd  # exactly this sd
        scores[sid] = list(0.5 + x)
    config = AdaptiveConfig(target_width=0.01, width_basis="fixed_scenarios", prior_df=0,
                            pilot_epochs=2, max_round_size=1400)
    d = plan_next_round(scores, config=config)
    final = np.array([2 + d.allocations.get(s, 0) for s in sds])
    assert sum(d.allocations.values()) == 1400
    assert final / final.sum() == pytest.approx(np.array([1, 2, 4]) / 7, abs=0.002)
    assert d.sd_estimates["c"] == pytest.approx(0.4)


def test_max_epochs_per_scenario() -> None:
    scores = {"a": [1.0, 0.0, 1.0], "b": [0.0, 1.0, 0.0]}
    d = plan_next_round(scores, config=AdaptiveConfig(
        target_width=0.001, width_basis="fixed_scenarios", max_epochs_per_scenario=5))
    assert d.allocations == {"a": 2, "b": 2}
    d = plan_next_round({"a": [1.0, 0.0] * 3, "b": [0.0, 1.0] * 3}, config=AdaptiveConfig(
        target_width=0.001, width_basis="fixed_scenarios", max_epochs_per_scenario=5))
    assert d.stop and d.reason == "nothing_to_sample"


def test_fixed_design_estimate() -> None:
    scores = {f"s{i}": [1.0, 0.0, 1.0, 0.0] for i in range(10)}
    est = fixed_epochs_for_width(scores, target_width=0.1, basis="fixed_scenarios",
                                 prior_df=0)
    # var 1/3 each: width(K) = 2 * 1.96 * sqrt(10 * (1/3) / K) / 10 <= 0.1 -> K = 52.
    assert est.epochs_per_scenario == 52 and est.samples == 520
    assert est.projected_width is not None and est.projected_width <= 0.1
    between = {f"a{i}": [0.0, 0.0] for i in range(5)} | {f"b{i}": [1.0, 1.0] for i in range(5)}
    assert not fixed_epochs_for_width(between, target_width=0.1).achievable


# 8 unanimous scenarios and 5 mixed ones; at a target of 0.45 every setting below gives a
# different number of epochs, so each default is pinned.
PILOT = ({f"pass{i}": [1.0] * 3 for i in range(4)} | {f"fail{i}": [0.0] * 3 for i in range(4)}
         | {"m1": [1.0, 0.0, 1.0], "m2": [0.0, 1.0, 0.0], "m3": [1.0, 1.0, 0.0],
            "m4": [0.5, 1.0, 0.0], "m5": [1.0, 0.0, 0.0, 1.0, 1.0]})
UNANIMOUS = {s for s in PILOT if not s.startswith("m")}


def _fixed_epochs_by_hand(scores: dict[str, list[float]], target: float, prior_df: float,
                          frozen: set[str]) -> int:
    """The module docstring's recipe, written out: shrunk variances (frozen scenarios at
    their observed 0), the between-scenario variance by moments, the clustered t width."""
    ss = {s: float(np.sum((np.array(x) - np.mean(x)) ** 2)) for s, x in scores.items()}
    pool = [s for s in scores if s not in frozen]
    pooled = sum(ss[s] for s in pool) / sum(len(scores[s]) - 1 for s in pool)
    var = {s: 0.0 if s in frozen else (ss[s] + prior_df * pooled) / (len(x) - 1 + prior_df)
           for s, x in scores.items()}
    c = len(scores)
    between = max(0.0, float(np.var([np.mean(x) for x in scores.values()], ddof=1))
                  - float(np.mean([var[s] / len(x) for s, x in scores.items()])))
    t = sps.t.ppf(0.975, c - 1)
    return next(k for k in range(1, 10_000)
                if 2 * t * np.sqrt((between + np.mean(list(var.values())) / k) / c) <= target)


def test_fixed_design_defaults_match_the_recipe() -> None:
    est = fixed_epochs_for_width(PILOT, target_width=0.45)
    expected = _fixed_epochs_by_hand(PILOT, 0.45, prior_df=4, frozen=UNANIMOUS)
    assert expected == 109 and est.achievable and est.width_basis == "clustered"
    assert (est.epochs_per_scenario, est.samples) == (expected, 13 * expected)
    # Not freezing, or another prior, changes the answer: the defaults are the ones above.
    assert fixed_epochs_for_width(PILOT, target_width=0.45, freeze_unanimous=False
                                  ).epochs_per_scenario == _fixed_epochs_by_hand(
        PILOT, 0.45, prior_df=4, frozen=set()) == 23
    assert fixed_epochs_for_width(PILOT, target_width=0.45, prior_df=1).epochs_per_scenario == (
        _fixed_epochs_by_hand(PILOT, 0.45, prior_df=1, frozen=UNANIMOUS)) == 100
    # Pass flags decide what is unanimous: pass3 passed only twice, so it is sampled.
    flags = {s: [v >= 1.0 for v in x] for s, x in PILOT.items()}
    flags["pass3"] = [True, False, True]
    assert fixed_epochs_for_width(PILOT, flags, target_width=0.45).epochs_per_scenario == (
        _fixed_epochs_by_hand(PILOT, 0.45, prior_df=4, frozen=UNANIMOUS - {"pass3"})) == 54


def test_fixed_design_at_exactly_the_target_width() -> None:
    est = fixed_epochs_for_width(PILOT, target_width=0.45)
    assert est.projected_width is not None and est.epochs_per_scenario is not None
    k, width = est.epochs_per_scenario, est.projected_width
    # The width reached at k epochs is enough at k epochs, even when k is the cap.
    assert fixed_epochs_for_width(PILOT, target_width=width).epochs_per_scenario == k
    capped = fixed_epochs_for_width(PILOT, target_width=width, max_epochs=k)
    assert capped.achievable and capped.epochs_per_scenario == k
    assert not fixed_epochs_for_width(PILOT, target_width=width, max_epochs=k - 1).achievable
    # One epoch can be enough.
    assert fixed_epochs_for_width(PILOT, target_width=10.0).epochs_per_scenario == 1
    two = fixed_epochs_for_width({"a": [1.0, 0.0], "b": [0.0, 0.0]}, target_width=10.0)
    assert two.samples == 2


def test_fixed_design_and_savings_refuse_bad_input() -> None:
    with pytest.raises(ValueError, match=r"^target_width must be positive, got 0$"):
        fixed_epochs_for_width(PILOT, target_width=0)
    with pytest.raises(InsufficientDataError,
                       match=r"^a fixed design needs at least 2 scenarios$"):
        fixed_epochs_for_width({"a": [1.0, 0.0]}, target_width=0.1)
    with pytest.raises(ValueError, match=r"^adaptive_samples must be non-negative$"):
        adaptive_savings(-1, fixed_epochs_for_width(PILOT, target_width=0.45))


def test_savings_against_an_unachievable_or_empty_fixed_design() -> None:
    est = fixed_epochs_for_width(PILOT, target_width=0.45)
    assert est.samples is not None
    nothing = adaptive_savings(0, est)
    assert (nothing.saved_samples, nothing.saved_fraction) == (est.samples, 1.0)
    unreachable = FixedDesignEstimate(target_width=0.01, achievable=False,
                                      epochs_per_scenario=None, samples=None,
                                      projected_width=None, width_basis="clustered")
    none = adaptive_savings(40, unreachable)
    assert (none.fixed_samples, none.saved_samples, none.saved_fraction) == (None, None, None)
    empty = unreachable.model_copy(update={"achievable": True, "samples": 0})
    assert adaptive_savings(0, empty).saved_fraction is None


def test_bad_input() -> None:
    with pytest.raises(InsufficientDataError):
        plan_next_round({"a": [1.0]}, config=AdaptiveConfig(target_width=0.1))
    with pytest.raises(ValueError):
        AdaptiveConfig(target_width=0)
    with pytest.raises(ValueError, match="line up"):
        plan_next_round({"a": [1.0], "b": [0.0]}, {"a": [True]},
                        config=AdaptiveConfig(target_width=0.1))


def _reference_round(scores: dict[str, list[float]], target: float, basis: str,
                     frozen: set[str], cap_epochs: int | None = None,
                     cap_round: int | None = None) -> dict[str, object]:
    """One round after the pilot, from the module docstring: prior 4 shrinkage, the floor
    with every sampled scenario at infinitely many epochs, greedy Neyman allocation by the
    largest var/(n(n+1)) (ties to the first id), stopping once the projection is on target."""
    c = len(scores)
    ss = {s: float(np.sum((np.array(x) - np.mean(x)) ** 2)) for s, x in scores.items()}
    pool = [s for s in scores if s not in frozen]
    pooled = sum(ss[s] for s in pool) / sum(len(scores[s]) - 1 for s in pool)
    var = {s: 0.0 if s in frozen else (ss[s] + 4 * pooled) / (len(x) - 1 + 4)
           for s, x in scores.items()}
    means = [np.mean(x) for x in scores.values()]
    between = max(0.0, float(np.var(means, ddof=1)) - float(np.mean(
        [var[s] / len(x) for s, x in scores.items()])))

    def width(n: dict[str, float]) -> float:
        within = sum(var[s] / n[s] for s in scores)
        if basis == "clustered":
            return float(2 * sps.t.ppf(0.975, c - 1) * math.sqrt((between + within / c) / c))
        return float(2 * sps.norm.ppf(0.975) * math.sqrt(within) / c)

    n = {s: float(len(x)) for s, x in scores.items()}
    capped = {s for s in scores if cap_epochs is not None and n[s] >= cap_epochs}
    active = [s for s in scores if s not in frozen and s not in capped and var[s] > 0]
    alloc: dict[str, int] = {}
    new = dict(n)
    projected = width(n)
    while (not alloc or projected > target) and sum(alloc.values()) < 10_000:
        if cap_round is not None and sum(alloc.values()) >= cap_round:
            break
        open_ = [s for s in active if cap_epochs is None or new[s] < cap_epochs]
        if not open_:
            break
        best = max(open_, key=lambda s: (var[s] / (new[s] * (new[s] + 1)), -sorted(
            scores).index(s)))
        new[best] += 1
        alloc[best] = alloc.get(best, 0) + 1
        projected = width(new)
    return {"model_width": width(n), "projected_width": projected, "allocations": alloc,
            "floor_width": width({s: math.inf if s in active else n[s] for s in scores}),
            "sd_estimates": {s: math.sqrt(v) for s, v in var.items()}}


ROUND = {"pass": [1.0] * 4, "fail": [0.0] * 3, "a": [1.0, 0.0, 1.0], "b": [0.0, 1.0, 0.0, 0.0],
         "c": [0.2, 0.9, 0.4], "d": [1.0, 1.0, 0.0, 1.0, 0.5], "e": [0.5, 0.6, 0.5]}


@pytest.mark.parametrize(("basis", "target", "cap_epochs", "cap_round"), [
    ("clustered", 0.55, None, None),
    ("fixed_scenarios", 0.2, None, None),
    ("fixed_scenarios", 0.05, 4, None),
    ("fixed_scenarios", 0.05, None, 7),
])
def test_a_round_matches_the_reference_planner(basis: str, target: float,
                                               cap_epochs: int | None,
                                               cap_round: int | None) -> None:
    config = AdaptiveConfig(target_width=target, width_basis=basis,  # type: ignore[arg-type]
                            max_epochs_per_scenario=cap_epochs, max_round_size=cap_round)
    d = plan_next_round(ROUND, config=config)
    ref = _reference_round(ROUND, target, basis, {"pass", "fail"}, cap_epochs, cap_round)
    assert not d.stop and d.reason == "continue" and d.frozen == ["fail", "pass"]
    assert d.allocations == ref["allocations"]
    for key in ("model_width", "projected_width", "floor_width"):
        assert getattr(d, key) == pytest.approx(ref[key], rel=1e-12), key
    assert d.sd_estimates == pytest.approx(ref["sd_estimates"], rel=1e-12)
    assert d.current_width == pytest.approx(interval_width(ROUND, basis=basis))  # type: ignore[arg-type]
    assert d.samples_used == 25 and d.width_basis == basis and d.confidence == 0.95


def test_a_round_reports_widths_at_its_confidence() -> None:
    d = plan_next_round(ROUND, config=AdaptiveConfig(target_width=0.05, confidence=0.8,
                                                     width_basis="fixed_scenarios"))
    assert d.confidence == 0.8
    assert d.current_width == pytest.approx(interval_width(ROUND, basis="fixed_scenarios",
                                                           confidence=0.8))


def test_the_pool_of_one_sampled_scenario_with_two_epochs() -> None:
    # One degree of freedom in the pool: the prior comes from that one scenario.
    scores = {"a": [1.0, 0.0], "b": [1.0, 1.0], "c": [0.0, 0.0]}
    assert fixed_epochs_for_width(scores, target_width=2.6).epochs_per_scenario == (
        _fixed_epochs_by_hand(scores, 2.6, prior_df=4, frozen={"b", "c"})) == 2


def test_interval_width_formulas() -> None:
    scores = {"a": [1.0, 0.0, 1.0], "b": [0.0, 1.0], "c": [1.0]}
    means = [2 / 3, 0.5, 1.0]
    clustered = 2 * sps.t.ppf(0.95, 2) * np.std(means, ddof=1) / math.sqrt(3)
    assert interval_width(scores, confidence=0.9) == pytest.approx(clustered)
    # A scenario with one epoch adds no variance to the fixed-scenario width.
    fixed = 2 * sps.norm.ppf(0.95) * math.sqrt(np.var([1, 0, 1], ddof=1) / 3 + 0.5 / 2) / 3
    assert interval_width(scores, basis="fixed_scenarios", confidence=0.9) == pytest.approx(fixed)
    with pytest.raises(InsufficientDataError,
                       match="^an interval width needs at least 2 scenarios, got 1$"):
        interval_width({"a": [1.0]})


def test_boundaries_of_the_stop_rules() -> None:
    fixed = AdaptiveConfig(target_width=0.2, width_basis="fixed_scenarios")
    d = plan_next_round(ROUND, config=fixed)
    assert d.model_width is not None and d.current_width is not None
    assert d.projected_width is not None
    # A target equal to the current widths is reached; the projected width is the model's.
    at = plan_next_round(ROUND, config=fixed.model_copy(
        update={"target_width": max(d.current_width, d.model_width)}))
    assert at.reason == "target_reached" and at.projected_width == at.model_width
    # A target equal to a round's projection is met by that round, not one epoch more.
    again = plan_next_round(ROUND, config=fixed.model_copy(
        update={"target_width": d.projected_width}))
    assert again.allocations == d.allocations
    # A target equal to the floor cannot be reached by epochs.
    clustered = plan_next_round(ROUND, config=AdaptiveConfig(target_width=0.55))
    assert clustered.floor_width is not None and clustered.reason == "continue"
    floor = plan_next_round(ROUND, config=AdaptiveConfig(target_width=clustered.floor_width))
    assert floor.reason == "needs_more_scenarios"


def test_round_caps_pilot_budget_flags_and_messages() -> None:
    # Budget and round size together: the smaller wins.
    both = plan_next_round(ROUND, config=AdaptiveConfig(
        target_width=0.01, width_basis="fixed_scenarios", max_samples=30, max_round_size=3))
    assert sum(both.allocations.values()) == 3
    budget = plan_next_round(ROUND, config=AdaptiveConfig(
        target_width=0.01, width_basis="fixed_scenarios", max_samples=27, max_round_size=3))
    assert sum(budget.allocations.values()) == 2
    # A pilot with room for one more sample gives it.
    pilot = plan_next_round({"a": [1.0, 0.0], "b": [0.0, 0.0, 1.0]},
                            config=AdaptiveConfig(target_width=0.1, max_samples=6))
    assert pilot.reason == "pilot" and pilot.allocations == {"a": 1}
    # A scenario at exactly the epoch cap gets nothing more.
    capped = plan_next_round(ROUND, config=AdaptiveConfig(
        target_width=0.01, width_basis="fixed_scenarios", max_epochs_per_scenario=5))
    assert "d" not in capped.allocations and capped.allocations
    # Pass flags decide what is frozen: "pass" failed once, so it is sampled.
    flags = {s: [v >= 1.0 for v in x] for s, x in ROUND.items()}
    flags["pass"] = [True, True, False, True]
    flagged = plan_next_round(ROUND, flags, config=AdaptiveConfig(target_width=0.05))
    assert flagged.frozen == ["fail"]
    # Unfrozen scenarios with no spread at all leave nothing to sample.
    flat = plan_next_round({"a": [0.0] * 3, "b": [1.0] * 3}, config=AdaptiveConfig(
        target_width=0.1, freeze_unanimous=False))
    assert flat.reason == "nothing_to_sample"
    with pytest.raises(InsufficientDataError,
                       match="^adaptive sampling needs at least 2 scenarios, got 1$"):
        plan_next_round({"a": [1.0]}, config=AdaptiveConfig(target_width=0.1))
    with pytest.raises(ValueError,
                       match="^pass flags must line up with the scores of every scenario$"):
        plan_next_round({"a": [1.0], "b": [0.0]}, {"a": [True], "b": []},
                        config=AdaptiveConfig(target_width=0.1))


def test_single_epoch_designs_without_freezing() -> None:
    # One epoch each: with freezing, each scenario is unanimous and keeps variance 0; without
    # it and with no prior, there is no within-scenario information at all (variance 0).
    single = {"a": [0.5], "b": [1.0], "c": [0.0]}
    frozen = fixed_epochs_for_width(single, target_width=3.0)
    thawed = fixed_epochs_for_width(single, target_width=3.0, freeze_unanimous=False,
                                    prior_df=0)
    assert frozen.projected_width == pytest.approx(thawed.projected_width)
    assert frozen.projected_width == pytest.approx(
        2 * sps.t.ppf(0.975, 2) * np.std([0.5, 1.0, 0.0], ddof=1) / math.sqrt(3))
