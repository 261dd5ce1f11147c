"""What defines a run's judge, recorded with the run so that two runs' judge-based figures are
compared only when the same judge made them (``harness compare`` says so when not).

A judge is more than its model: the panel of models, their temperature, the version of the
judging prompts, and, for each scenario, the rubrics it is judged under exactly as the judge
reads them (a scenario's ``rubric_options`` threshold applied), with the samples per
criterion and how they are aggregated. :func:`judge_definition` builds that
(:class:`JudgeDefinition`) from the run's design and its loaded suite, the same resolution
the engine judges with (:func:`rubric_as_judged`); the store keeps it in its ``meta`` table
and ``summary.json`` carries it as ``judge``.

One run can hold samples of more than one judge: a resumed run whose rubric files or harness
changed in between, or a merge of shards run that way. Its record is then
``mixed``, each definition with the part of the run it judged, and never one of them
silently. A run written before judges were recorded has no record: readers say "not
recorded" rather than guess it from files that may have changed since.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.choices import AggregationMethod
from harness.json_values import STORED_DEPTH, load_json
from harness.judging.judge import JudgeSettings, settings_for_rubric
from harness.judging.prompts import PROMPT_VERSION, template_hash
from harness.judging.rubric import Rubric
from harness.runs.config import RunDesign

if TYPE_CHECKING:
    from harness.runs.store import RunStore
    from harness.scenarios.schema import Scenario

log = logging.getLogger(__name__)

JUDGE_KEY = "judge_definition"
"""The store's ``meta`` key of the record."""


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RubricJudging(_Part):
    """One rubric as a scenario is judged under it: its id, a hash of the rubric as the judge
    reads it (criteria, scales, target, threshold; ``samples`` and ``aggregation`` are apart),
    the hash of the prompt templates its target uses, and the judge samples per criterion and
    their aggregation as resolved (command line, scenario, rubric, default)."""

    rubric: str
    sha256: str = Field(description="of the rubric's canonical JSON, threshold applied")
    prompt_hash: str
    samples: int = Field(ge=1)
    aggregation: AggregationMethod


class JudgeDefinition(_Part):
    """What one judge is: ``models`` (several: a panel; none: judging was skipped), their
    ``temperature`` (``None``: the provider's default), the judging prompts' version, and for
    each scenario the rubrics it is judged under (indexes into ``rubrics``, where each
    distinct way of judging a rubric is listed once)."""

    models: list[str]
    temperature: float | None
    prompt_version: str
    rubrics: list[RubricJudging]
    scenarios: dict[str, list[int]]

    def scenario_rubrics(self, scenario_id: str) -> dict[str, RubricJudging] | None:
        """The rubrics ``scenario_id`` is judged under, by rubric id (empty: no judge
        touches its score), or ``None`` when the scenario is not in the record."""
        indexes = self.scenarios.get(scenario_id)
        if indexes is None:
            return None
        if not self.models:
            return {}
        return {self.rubrics[i].rubric: self.rubrics[i] for i in indexes}


class JudgePart(_Part):
    """One part of a run with a judge of its own: which part (``shard 1/2``, ``samples
    before the resume at ...``) and its definition (``None``: not recorded, a part written
    by an older harness)."""

    part: str
    definition: JudgeDefinition | None


class JudgeRecord(_Part):
    """A run's judge: ``definition`` when one judge made every sample; else ``mixed``, the
    parts of the run that different judges made (at least two)."""

    definition: JudgeDefinition | None = None
    mixed: list[JudgePart] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_or_mixed(self) -> JudgeRecord:
        if (self.definition is None) == (len(self.mixed) < 2):
            raise ValueError("a judge record holds one definition or at least two mixed parts")
        return self

    def parts(self) -> list[JudgePart]:
        """The record's parts (one, named ``the run``, when a single judge made it)."""
        return self.mixed or [JudgePart(part="the run", definition=self.definition)]


def rubric_as_judged(design: RunDesign, rubrics: Mapping[str, Rubric], scenario: Scenario,
                     rubric_id: str, base: JudgeSettings) -> tuple[Rubric, JudgeSettings]:
    """The rubric ``scenario`` names (its own inline one first) with the scenario's
    ``rubric_options`` threshold, and the settings it is judged with: samples and
    aggregation from the command line when given, else the scenario's options, else the
    rubric's own (:func:`~harness.judging.judge.settings_for_rubric`); ``base`` gives the
    rest. The one resolution the engine judges with and the record describes."""
    rubric = scenario.inline_rubric(rubric_id) or rubrics[rubric_id]
    options = scenario.rubric_options.get(rubric_id)
    if options is not None and options.threshold is not None:
        rubric = rubric.model_copy(update={"threshold": options.threshold})
    settings = settings_for_rubric(
        rubric, base, samples=design.judge_samples, method=design.judge_aggregation,
        scenario_samples=options.samples if options else None,
        scenario_method=options.aggregation if options else None,
    )
    return rubric, settings


def rubric_sha256(rubric: Rubric) -> str:
    """A hash of what the judge reads of ``rubric`` and what turns its answer into a
    verdict: the canonical JSON of every field but ``samples`` and ``aggregation`` (recorded
    apart), so a default written out or left unset hashes alike, and the file it came from
    does not count."""
    data = rubric.model_dump(mode="json", exclude={"samples", "aggregation"})
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def judge_definition(design: RunDesign, scenarios: Mapping[str, Scenario],
                     rubrics: Mapping[str, Rubric]) -> JudgeDefinition:
    """The judge of a run of ``scenarios`` under ``design`` with the loaded ``rubrics``."""
    base = JudgeSettings(temperature=design.judge_temperature)
    listed: dict[RubricJudging, int] = {}
    per_scenario: dict[str, list[int]] = {}
    for sid, scenario in scenarios.items():
        indexes = []
        for rid in scenario.rubrics if design.judges else []:
            rubric, settings = rubric_as_judged(design, rubrics, scenario, rid, base)
            entry = RubricJudging(rubric=rid, sha256=rubric_sha256(rubric),
                                  prompt_hash=template_hash(rubric.target),
                                  samples=settings.samples, aggregation=settings.method)
            indexes.append(listed.setdefault(entry, len(listed)))
        per_scenario[sid] = indexes
    return JudgeDefinition(models=list(design.judges), temperature=design.judge_temperature,
                           prompt_version=PROMPT_VERSION, rubrics=list(listed),
                           scenarios=per_scenario)


def read_judge_record(store: RunStore) -> JudgeRecord | None:
    """The record ``store`` holds, or ``None`` for a run written before judges were
    recorded. Raises :class:`~harness.runs.store.StoreError` when it does not parse."""
    from harness.runs.store import StoreError

    text = store.meta_value(JUDGE_KEY)
    if text is None:
        return None
    try:
        return JudgeRecord.model_validate(load_json(text, store.path, max_depth=STORED_DEPTH))
    except ValueError as err:
        raise StoreError(f"{store.path}: the recorded judge does not parse ({err})") from None


def record_judge(store: RunStore, definition: JudgeDefinition) -> JudgeRecord:
    """Record that ``definition`` judges the samples the run writes from now on, and return
    the run's record. A new run, or one whose judge is unchanged, holds ``definition``; a
    resumed run with samples judged otherwise (rubric files edited, another harness's
    prompts) becomes ``mixed``, and a warning says so. Raises
    :class:`~harness.runs.store.StoreError` when the write fails."""
    before = read_judge_record(store)
    has_samples = store.count() > 0
    if before is not None and before.definition == definition:
        return before
    if not has_samples:
        record = JudgeRecord(definition=definition)
    else:
        parts = [] if before is None else before.parts()
        if before is None:
            parts = [JudgePart(part="samples written before judges were recorded",
                               definition=None)]
        elif not before.mixed:
            parts = [JudgePart(part="samples before the resume", definition=before.definition)]
        stamp = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
        parts.append(JudgePart(part=f"samples from the resume at {stamp} UTC",
                               definition=definition))
        record = JudgeRecord(mixed=parts)
        log.warning("%s: the judge changed since this run's earlier samples (%s); its figures "
                    "now mix two judges (harness compare names what differs)", store.path,
                    "not recorded before" if before is None or before.mixed
                    else ", ".join(judge_differences(before.definition, definition)))
    write_judge_record(store, record)
    return record


def write_judge_record(store: RunStore, record: JudgeRecord) -> None:
    """Store ``record`` as the run's judge (``harness merge`` writes the merged one)."""
    store.record_meta(JUDGE_KEY, record.model_dump_json())


def merged_judge_record(parts: list[JudgePart]) -> JudgeRecord | None:
    """The judge of a run merged from ``parts`` (each shard's definition, ``None`` when not
    recorded): the one definition when every part has the same, ``None`` when no part
    recorded one, else ``mixed`` with each part named."""
    definitions = [p.definition for p in parts]
    if all(d is None for d in definitions):
        return None
    if len(set(map(_key, definitions))) == 1:
        return JudgeRecord(definition=definitions[0])
    return JudgeRecord(mixed=parts)


def mixed_judge_notes(record: JudgeRecord | None) -> list[str]:
    """The summary's note for a run whose samples different judges made (none otherwise)."""
    if record is None or not record.mixed:
        return []
    first = record.mixed[0]
    others = []
    for part in record.mixed[1:]:
        differs = judge_differences(first.definition, part.definition)
        others.append(f"{part.part}: " + ("; ".join(differs) if differs else "the same judge"))
    return [f"mixed judges: the samples of this run were judged by {len(record.mixed)} "
            f"different judges; against {first.part}, " + "; ".join(others)
            + ". Its judge-based figures mix them: re-run the parts judged otherwise, or "
            "compare them apart"]


def _key(definition: JudgeDefinition | None) -> str:
    return "" if definition is None else definition.model_dump_json()


def judge_differences(a: JudgeDefinition | None, b: JudgeDefinition | None,
                      scenario_ids: list[str] | None = None) -> list[str]:
    """What differs between two judges, in words (empty when they are the same), over
    ``scenario_ids`` (default: the scenarios both record): ``model``, ``temperature``,
    ``prompt version``, and per rubric its text, samples and aggregation, each naming the
    two values and how many of the scenarios it touches."""
    if a is None or b is None:
        return [] if a is b else ["one judge not recorded"]
    out = []
    if a.models != b.models:
        out.append(f"model: {_models(a.models)} vs {_models(b.models)}")
    if a.temperature != b.temperature:
        out.append(f"temperature: {_temperature(a.temperature)} vs "
                   f"{_temperature(b.temperature)}")
    if a.prompt_version != b.prompt_version:
        out.append(f"prompt version: {a.prompt_version} vs {b.prompt_version}")
    ids = scenario_ids if scenario_ids is not None else [s for s in a.scenarios
                                                          if s in b.scenarios]
    out.extend(_rubric_differences(a, b, ids, prompts_differ=a.prompt_version
                                   != b.prompt_version))
    return out


def _rubric_differences(a: JudgeDefinition, b: JudgeDefinition, ids: list[str], *,
                        prompts_differ: bool) -> list[str]:
    # (what differs, value in a, value in b) -> rubric ids, scenarios
    found: dict[tuple[str, str, str], tuple[list[str], set[str]]] = {}

    def note(what: str, vx: str, vy: str, rid: str, sid: str) -> None:
        rids, sids = found.setdefault((what, vx, vy), ([], set()))
        if rid not in rids:
            rids.append(rid)
        sids.add(sid)

    for sid in ids:
        ra, rb = a.scenario_rubrics(sid), b.scenario_rubrics(sid)
        if ra is None or rb is None:
            continue
        for rid in list(dict.fromkeys([*ra, *rb])):
            x, y = ra.get(rid), rb.get(rid)
            if x is None or y is None:
                note("rubrics", "judged" if x else "not judged", "judged" if y else "not judged",
                     rid, sid)
                continue
            if x.sha256 != y.sha256:
                note("rubric text", "", "", rid, sid)
            if x.prompt_hash != y.prompt_hash and not prompts_differ:
                note("prompt templates (same version)", "", "", rid, sid)
            if x.samples != y.samples:
                note("samples", str(x.samples), str(y.samples), rid, sid)
            if x.aggregation != y.aggregation:
                note("aggregation", x.aggregation, y.aggregation, rid, sid)
    out = []
    for (what, vx, vy), (rids, sids) in found.items():
        values = f": {vx} vs {vy}" if vx or vy else ""
        out.append(f"{what}{values} of {', '.join(rids)} (in {len(sids)} of {len(ids)} "
                   "scenarios)")
    return out


def _models(models: list[str]) -> str:
    if not models:
        return "no judge"
    return models[0] if len(models) == 1 else "panel " + " + ".join(models)


def _temperature(value: float | None) -> str:
    return "provider default" if value is None else f"{value:g}"
