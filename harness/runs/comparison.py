"""``harness compare BASELINE CANDIDATE``: two run directories' stored scores compared
scenario by scenario (:func:`harness.stats.compare.compare_runs`), with which models made
each run and the offline notice that says so. The terminal table, the ``--json`` output and
the HTML page are all made from the dict :func:`compare_run_dirs` returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.choices import PairedTest
from harness.models.provenance import RoleModels, roles_notice
from harness.runs.store import RunStore
from harness.runs.summary import scores_by_scenario
from harness.scenarios.selectors import ScenarioFilter, select_stored
from harness.stats.compare import compare_runs
from harness.stats.summary import offline_notice


def comparison_notice(notices: dict[str, str | None]) -> str | None:
    """One notice for two runs: their notice when both have the same, else each run's."""
    given = {which: notice for which, notice in notices.items() if notice}
    if not given:
        return None
    if len(given) == len(notices) and len(set(given.values())) == 1:
        return next(iter(given.values()))
    return "OFFLINE models in " + " and ".join(given) + ": " + " | ".join(
        f"{which}: {notice}" for which, notice in given.items())


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
        with RunStore.open(path) as store:
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
    data["selection"] = (selector.model_dump(mode="json")
                         if selector is not None and selector.active else None)
    return data
