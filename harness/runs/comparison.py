"""``harness compare BASELINE CANDIDATE``: two run directories' stored scores compared
scenario by scenario (:func:`harness.stats.compare.compare_runs`), with which models made
each run and the offline notice that says so. The terminal table, the ``--json`` output and
the HTML page are all made from the dict :func:`compare_run_dirs` returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.choices import PairedTest
from harness.models.provenance import RoleModels, roles_notice
from harness.runs.judge_drift import (
    corrected_comparison,
    corrected_verdict,
    judge_comparison,
    read_judges,
)
from harness.runs.store import RunStore
from harness.runs.summary import scores_by_scenario
from harness.scenarios.selectors import ScenarioFilter, select_stored
from harness.stats.compare import compare_runs
from harness.stats.summary import offline_notice
from harness.wording import plural


def comparison_notice(notices: dict[str, str | None]) -> str | None:
    """One notice for two runs: their notice when both have the same; else what differs
    said once per run, and what both notices say (their closing sentence, the callables
    neither run's harness saw) said once."""
    given = {which: notice for which, notice in notices.items() if notice}
    if not given:
        return None
    if len(given) == len(notices) and len(set(given.values())) == 1:
        return next(iter(given.values()))
    parts = {which: _notice_parts(notice) for which, notice in given.items()}
    shared = [part for part in next(iter(parts.values()))
              if len(given) == len(notices) and all(part in ps for ps in parts.values())]
    own = "; ".join(f"{which}: " + "; ".join(part for part in ps if part not in shared)
                    for which, ps in parts.items())
    head = ("OFFLINE models in both runs" if len(given) == len(notices)
            else f"OFFLINE models in the {next(iter(given))} only")
    return f"{head}. {own}" + "".join(f". {part[:1].upper()}{part[1:]}" for part in shared) + "."


def _notice_parts(notice: str) -> list[str]:
    """A notice's clauses (split at "; " and ". "), without their closing full stops."""
    return [clause.rstrip(".") for sentence in notice.split(". ")
            for clause in sentence.split("; ") if clause.rstrip(".")]


def comparison_verdict(data: dict[str, Any]) -> dict[str, Any]:
    """What the comparison concludes, in words the terminal and the HTML page both print:
    ``outcome`` (``regression``, ``improvement`` or ``none``), ``headline`` (the suite-level
    test's verdict), ``scenarios`` (how many scenarios moved beyond their own interval) and
    ``reconcile`` (why the two can differ, when they do; else ``None``); with the runs'
    ``judges`` in ``data`` (:func:`harness.runs.judge_drift.judge_comparison`), also
    ``judge_changed``, ``judge`` (its warning) and ``corrected`` (the difference on the
    reviewers' scale when both runs have human labels, else ``None``), and when the judges
    differ the headline says so before its figures.

    Both are right and answer different questions. The suite test asks whether the mean
    over scenarios changed: it pools every scenario's difference, so small changes in the
    same direction add up. A scenario's own interval rests on its epochs alone (each run's
    mean with its interval, combined), so it is far wider, and at 95% for each of C
    scenarios about 0.05 C would lie beyond 0 by chance alone (they are not adjusted for
    multiplicity)."""
    test = "paired t test" if data["verdict_test"] == "t" else "paired permutation test"
    p = data["t_test" if data["verdict_test"] == "t" else "permutation_test"]["p_value"]
    alpha, n = data["alpha"], data["n_scenarios"]
    p_text = "<0.001" if p < 0.0005 else f"{p:.3f}"
    rows = data["scenarios"]
    down = sum(1 for r in rows if r["ci_high"] is not None and r["ci_high"] < 0)
    up = sum(1 for r in rows if r["ci_low"] is not None and r["ci_low"] > 0)
    with_interval = sum(1 for r in rows if r["ci_low"] is not None)
    if data["significant_regression"]:
        outcome, headline = "regression", (
            f"significant regression: the candidate's mean over {plural(n, 'scenario')} is "
            f"lower ({test}, p = {p_text} < alpha = {alpha:g})")
    elif data["significant_improvement"]:
        outcome, headline = "improvement", (
            f"significant improvement: the candidate's mean over {plural(n, 'scenario')} is "
            f"higher ({test}, p = {p_text} < alpha = {alpha:g})")
    else:
        outcome, headline = "none", (
            f"no significant difference in the mean over {plural(n, 'scenario')} ({test}, "
            f"p = {p_text}, alpha = {alpha:g})")
    level = f"{1 - alpha:.0%}"
    scenarios = (f"Per scenario, {down} regressed and {up} improved beyond their own {level} "
                 f"interval (of {plural(with_interval, 'scenario')} with one).")
    if not with_interval:
        scenarios = ("Per scenario, no interval (a run with a single epoch), so no scenario "
                     "is called a regression or an improvement on its own.")
    headline, scenarios = _with_judge(data, outcome, headline, scenarios)
    reconcile = None
    moved = {"regression": down, "improvement": up}.get(outcome)
    if moved == 0 and with_interval:
        reconcile = (
            "Both hold: the suite test pools every scenario's difference, so small changes "
            "in the same direction add up; a scenario's own interval rests on its epochs "
            "alone and is far wider.")
    elif outcome == "none" and down + up:
        reconcile = (
            f"The suite's mean did not change significantly; at {level} for each of "
            f"{plural(with_interval, 'scenario')} about {alpha * with_interval:.1f} "
            "would lie beyond 0 by chance alone (the per-scenario intervals are not adjusted "
            "for multiplicity): read those scenarios' transcripts before trusting them.")
    verdict: dict[str, Any] = {"outcome": outcome, "headline": headline, "scenarios": scenarios,
               "reconcile": reconcile}
    judges = data.get("judges")
    if judges is not None:  # a comparison of run directories, whose judges are known
        verdict.update(judge_changed=judges["same"] is False, judge=judges["warning"],
                       corrected=corrected_verdict(data.get("corrected")))
    return verdict


def _with_judge(data: dict[str, Any], outcome: str, headline: str,
                scenarios: str) -> tuple[str, str]:
    """The headline and the per-scenario line when the runs' judges differ: the change is
    the agent's and the judge's together, and the headline says so before its figures."""
    judges = data.get("judges") or {}
    if judges.get("same") is not False:
        return headline, scenarios
    changed, n = len(judges["changed_scenarios"]), data["n_scenarios"]
    lead = {"regression": "significant regression of the judge-based mean, with a changed "
                          "judge (not the agent's alone)",
            "improvement": "significant improvement of the judge-based mean, with a changed "
                           "judge (not the agent's alone)",
            "none": ""}[outcome]
    if outcome == "none":
        headline += (", but the judge changed, and a change of the judge could hide one of "
                     "the agent")
    else:
        headline = lead + ": " + headline.split(": ", 1)[-1]
    checks = len(judges["checks_only"])
    scenarios += (f" The judge changed for {changed} of the {n} compared scenarios"
                  + (f"; {plural(checks, 'scenario')} scored by checks alone "
                     f"{'is' if checks == 1 else 'are'} not affected" if checks else "")
                  + ".")
    return headline, scenarios


def compare_run_dirs(baseline: Path, candidate: Path, *, alpha: float = 0.05,
                     test: PairedTest = "t", seed: int = 0,
                     selector: ScenarioFilter | None = None) -> dict[str, Any]:
    """The paired comparison of two run directories as a JSON-ready dict: the fields of
    :class:`~harness.stats.compare.PairedComparison` plus ``offline`` and
    ``offline_samples`` (per run), ``roles`` (per run and role, the models used) and
    ``notice`` (the offline notice, or ``None``) and ``selection`` (``selector``, or ``None``
    when it keeps everything). Each run's scores are read under its own
    error policy. ``selector`` (``--tag``, ``--exclude-tag``, ``-k``) keeps the scenarios it
    selects in each run.

    Raises :class:`~harness.runs.store.StoreError` for a directory that is not a readable
    run store, and :class:`~harness.stats.estimate.InsufficientDataError` with fewer than 2
    scenarios in common.
    """
    runs = []
    offline: dict[str, int] = {}
    roles: dict[str, dict[str, RoleModels]] = {}
    notices: dict[str, str | None] = {}
    for which, path in (("baseline", baseline), ("candidate", candidate)):
        with RunStore.open(path, read_only=True) as store:
            policy = store.config.get("run", {}).get("error_policy", "exclude")
            scores, passed = scores_by_scenario(store, policy)
            if selector is not None and selector.active:
                keep = select_stored(store.scenario_tags(), selector, path)
                scores = {sid: xs for sid, xs in scores.items() if sid in keep}
                passed = {sid: xs for sid, xs in passed.items() if sid in keep}
            runs.append((scores, passed))
            offline[which], roles[which] = store.offline_count(), store.model_roles()
            # Samples stored before roles were recorded say only whether they were offline.
            notices[which] = (roles_notice(roles[which])
                              or offline_notice(offline[which], store.count()))
    (base_scores, base_passed), (cand_scores, cand_passed) = runs
    result = compare_runs(base_scores, cand_scores, base_passed, cand_passed, alpha=alpha,
                          test=test, seed=seed)
    data = result.model_dump(mode="json")
    data["offline"] = {which: n > 0 for which, n in offline.items()}
    data["offline_samples"] = offline
    data["roles"] = {which: {role: r.model_dump(mode="json") for role, r in by_role.items()}
                     for which, by_role in roles.items()}
    data["notice"] = comparison_notice(notices)
    compared = [row["scenario_id"] for row in data["scenarios"]]
    data["judges"] = judge_comparison(*read_judges(baseline, candidate), compared)
    changed = set(data["judges"]["changed_scenarios"])
    for row in data["scenarios"]:
        row["judge_changed"] = row["scenario_id"] in changed
    data["corrected"] = corrected_comparison(baseline, candidate, compared,
                                             confidence=1.0 - alpha)
    data["verdict"] = comparison_verdict(data)
    data["selection"] = (selector.model_dump(mode="json")
                         if selector is not None and selector.active else None)
    return data
