"""Judge drift in ``harness compare``: whether the two runs' judges are the same over the
scenarios compared, what differs when not, which scenarios' differences a changed judge
touches, and, when both runs have human labels, each run's corrected figures (on the
reviewers' scale, whatever the judge) with their difference.

A judge-based difference between runs judged differently is a change of the agent and of
the judge together; :func:`judge_comparison` says so, and the verdict wording
(:func:`harness.runs.comparison.comparison_verdict`) does not call it the agent's regression
or improvement without that warning. Scores no judge touches (a scenario without rubrics in
either run: deterministic checks only) are not affected.

The corrected figures of the two runs are independent estimates (other samples, other
labels), so their difference's interval combines the two intervals by MOVER
(:func:`harness.stats.compare.difference_interval`, as a scenario's difference is), each
keeping its own t reference on its scenarios. Both runs sample the same scenarios, whose
shared difficulty makes the two estimates positively correlated; ignoring that makes the
interval conservative (wider), never too narrow. A paired correction would need the same
samples labelled in both runs, which two runs never have.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from harness.runs.corrected_figures import run_corrected_figures
from harness.runs.judge_record import (
    JudgeDefinition,
    JudgeRecord,
    judge_differences,
    read_judge_record,
)
from harness.runs.store import RunStore
from harness.stats.compare import difference_interval
from harness.stats.corrected import CorrectedEstimate, CorrectedFigures
from harness.wording import plural

NOT_RECORDED = "not recorded"
CORRECTED_DIFFERENCE_METHOD = (
    "candidate - baseline of the two runs' corrected figures, independent estimates (other "
    "samples, other labels): their intervals combined by MOVER (Zou & Donner 2008); the "
    "runs share their scenarios, so the interval is conservative")
WHAT_TO_DO = (
    "To compare the agents, judge both runs with one judge (re-run the baseline with the "
    "candidate's rubrics, judge models and settings; the response cache keeps the agent's "
    "answers), or label a random sample of each run's samples (harness view) and read the "
    "corrected figures.")


def _run_judge(record: JudgeRecord | None) -> dict[str, Any]:
    """One run's judge for the JSON: ``status`` (``recorded``, ``mixed``, ``not
    recorded``), its models, temperature and prompt version when one judge made it, and
    the parts of a mixed run."""
    if record is None:
        return {"status": NOT_RECORDED, "models": None, "temperature": None,
                "prompt_version": None, "parts": []}
    d = record.definition
    return {"status": "recorded" if d is not None else "mixed",
            "models": None if d is None else d.models,
            "temperature": None if d is None else d.temperature,
            "prompt_version": None if d is None else d.prompt_version,
            "parts": [p.part for p in record.mixed]}


def _judged(definition: JudgeDefinition | None, sid: str) -> bool:
    rubrics = None if definition is None else definition.scenario_rubrics(sid)
    return bool(rubrics)


def _scenario_changed(a: JudgeDefinition, b: JudgeDefinition, sid: str) -> bool:
    """Whether the judge of scenario ``sid`` differs between the runs (a scenario neither
    run judges never does)."""
    ra, rb = a.scenario_rubrics(sid), b.scenario_rubrics(sid)
    if ra is None or rb is None:  # scored, but not in a record: nothing vouches for it
        return True
    if not ra and not rb:
        return False
    if (a.models, a.temperature, a.prompt_version) != (b.models, b.temperature,
                                                      b.prompt_version):
        return True
    return ra != rb


def judge_comparison(baseline: JudgeRecord | None, candidate: JudgeRecord | None,
                     scenario_ids: list[str]) -> dict[str, Any]:
    """The two runs' judges over the compared ``scenario_ids``, as the comparison's
    ``judges`` field: ``baseline`` and ``candidate`` (:func:`_run_judge`), ``same``
    (``True``, ``False``, or ``None`` when a record is missing), ``differences`` (in words),
    ``changed_scenarios`` (the compared scenarios whose judge differs; all judged ones when
    a run is mixed), ``checks_only`` (compared scenarios no judge scores in either run) and
    ``warning`` (what to tell the user, or ``None``)."""
    out: dict[str, Any] = {"baseline": _run_judge(baseline), "candidate": _run_judge(candidate),
                           "same": None, "differences": [], "changed_scenarios": [],
                           "checks_only": [], "warning": None}
    missing = [which for which, r in (("baseline", baseline), ("candidate", candidate))
               if r is None]
    if missing:
        one = next((r for r in (baseline, candidate) if r is not None), None)
        if one is not None and one.definition is not None:
            out["checks_only"] = [s for s in scenario_ids if not _judged(one.definition, s)]
        out["warning"] = (
            f"judge {NOT_RECORDED} for the {' and the '.join(missing)} (a run written before "
            "judges were recorded): whether both runs were judged alike cannot be checked")
        return out
    assert baseline is not None and candidate is not None
    a, b = baseline.definition, candidate.definition
    if a is None or b is None:
        differences = [f"the {which} mixes judges ({', '.join(p.part for p in r.mixed)})"
                       for which, r in (("baseline", baseline), ("candidate", candidate))
                       if r.definition is None]
        if a is not None or b is not None:
            single = a if a is not None else b
            differences += [f"{p.part} against the other run: " + "; ".join(d)
                            for r in (baseline, candidate) for p in r.mixed
                            if (d := judge_differences(single, p.definition, scenario_ids))]
        judged_anywhere = [s for s in scenario_ids
                           if any(_judged(p.definition, s) for r in (baseline, candidate)
                                  for p in r.parts())]
        out.update(same=False, differences=differences, changed_scenarios=judged_anywhere,
                   checks_only=[s for s in scenario_ids if s not in judged_anywhere])
    else:
        differences = judge_differences(a, b, scenario_ids)
        unrecorded = [s for s in scenario_ids
                      if a.scenario_rubrics(s) is None or b.scenario_rubrics(s) is None]
        if unrecorded:
            differences.append(f"{plural(len(unrecorded), 'compared scenario')} missing from "
                               f"a run's judge record (first: {unrecorded[0]})")
        changed = [s for s in scenario_ids if _scenario_changed(a, b, s)]
        out.update(same=not changed, differences=differences if changed else [],
                   changed_scenarios=changed,
                   checks_only=[s for s in scenario_ids if s not in changed
                                and not _judged(a, s) and not _judged(b, s)])
    if out["same"] is False:
        out["warning"] = (
            f"the judges differ ({'; '.join(out['differences'])}) for "
            f"{plural(len(out['changed_scenarios']), 'compared scenario')}: their "
            "differences are the agent's and the judge's change together, not a regression "
            "or an improvement of the agent. " + WHAT_TO_DO)
    return out


def read_judges(baseline: Path, candidate: Path) -> tuple[JudgeRecord | None,
                                                         JudgeRecord | None]:
    """Both runs' judge records (``None``: not recorded)."""
    records = []
    for path in (baseline, candidate):
        with RunStore.open(path, read_only=True) as store:
            records.append(read_judge_record(store))
    return records[0], records[1]


def _run_corrected(path: Path, keep: Collection[str], confidence: float
                   ) -> tuple[CorrectedFigures | None, int]:
    with RunStore.open(path, read_only=True) as store:
        labels = [lb for lb in store.labels() if lb.scenario_id in keep]
        if not labels:
            return None, 0
        design = store.run_config().design
        figures = run_corrected_figures(store, error_policy=design.error_policy,
                                        confidence=confidence, seed=design.seed,
                                        labels=labels, scenarios=keep)
        return figures, len(labels)


def _estimate(est: CorrectedEstimate | None) -> dict[str, Any] | None:
    return None if est is None else est.model_dump(mode="json")


def _difference(a: CorrectedEstimate | None, b: CorrectedEstimate | None
                ) -> dict[str, Any] | None:
    if (a is None or b is None or a.value is None or b.value is None or a.ci_low is None
            or a.ci_high is None or b.ci_low is None or b.ci_high is None):
        return None
    low, high = difference_interval(a.value, a.ci_low, a.ci_high, b.value, b.ci_low, b.ci_high)
    return {"value": b.value - a.value, "ci_low": low, "ci_high": high,
            "confidence": b.confidence, "method": CORRECTED_DIFFERENCE_METHOD}


def corrected_comparison(baseline: Path, candidate: Path, scenario_ids: list[str], *,
                         confidence: float) -> dict[str, Any] | None:
    """Each run's corrected mean score and pass rate over the compared ``scenario_ids``
    (from its stored random human labels) and their difference (candidate - baseline) with
    an interval: the comparison's ``corrected`` field. ``None`` when neither run has labels
    of those scenarios; a run without is ``None`` and ``note`` says what is missing."""
    runs = {which: _run_corrected(path, set(scenario_ids), confidence)
            for which, path in (("baseline", baseline), ("candidate", candidate))}
    if all(figures is None for figures, _n in runs.values()):
        return None
    out: dict[str, Any] = {}
    for which in ("baseline", "candidate"):
        figures, n_labels = runs[which]
        out[which] = None if figures is None else {
            "n_labels": n_labels, "n_labelled_samples": max(
                (e.n_labelled for e in (figures.mean, figures.pass_rate) if e is not None),
                default=0),
            "mean": _estimate(figures.mean),
            "pass_rate": _estimate(figures.pass_rate), "notes": figures.notes}
    a, b = runs["baseline"][0], runs["candidate"][0]
    out["difference"] = {
        "mean": _difference(None if a is None else a.mean, None if b is None else b.mean),
        "pass_rate": _difference(None if a is None else a.pass_rate,
                                 None if b is None else b.pass_rate)}
    lacking = [which for which in ("baseline", "candidate") if out[which] is None]
    out["note"] = None
    if lacking:
        out["note"] = (f"only the {'candidate' if lacking == ['baseline'] else 'baseline'} has "
                       f"human labels of the compared scenarios: label a random sample of the "
                       f"{lacking[0]}'s samples (harness view) to compare the runs on the "
                       "reviewers' scale")
    elif out["difference"]["mean"] is None and out["difference"]["pass_rate"] is None:
        out["note"] = ("no difference on the reviewers' scale: a run's corrected figures are "
                       "withheld or it has no random labels (see each run's notes)")
    return out


def corrected_verdict(corrected: dict[str, Any] | None) -> str | None:
    """The verdict's line on the reviewers' scale: the corrected mean score's difference and
    whether its interval excludes 0; ``None`` without one."""
    d = None if not corrected else corrected["difference"]["mean"]
    if d is None:
        return None
    level = f"{d['confidence']:.0%}"
    where = ("lower" if d["ci_high"] < 0 else "higher" if d["ci_low"] > 0 else None)
    interval = f"{d['value']:+.3f} [{d['ci_low']:+.3f}, {d['ci_high']:+.3f}]"
    if where is None:
        return (f"On the reviewers' scale (corrected by human labels), no clear difference: "
                f"candidate - baseline {interval}, {level} interval including 0.")
    return (f"On the reviewers' scale (corrected by human labels), the candidate's mean score "
            f"is {where}: candidate - baseline {interval}, {level} interval.")
