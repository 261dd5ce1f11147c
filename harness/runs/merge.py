"""``harness merge``: the stores of a run's shards (``harness run --shard i/n``) combined into
one new run directory, as ``harness run`` writes one: ``run.sqlite``, ``summary.json``,
``samples.jsonl`` (the report page is the CLI's, as for a run).

The merged run is an ordinary run of the whole grid: its configuration is the shards' with
no shard, every sample is copied as stored, and its summary is computed from them as a
single run's is, so it equals the summary of one run with the same samples (docs/design.md,
"What a merge reconciles, and what 'identical summaries' means", lists the fields that say
how each invocation ran and are left out of that comparison). The shards' events are kept,
each tagged with its shard. A merge of some of the shards says which it holds and which are
missing, and ``harness run --resume OUT`` runs the missing samples.

Everything is checked before anything is written: the stores open and are intact, their
configurations agree in every field but :data:`INVOCATION_FIELDS`, no shard or sample is in
two of them, their samples parse, and ``out`` holds no run.
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path

from harness.errors import HarnessError
from harness.runs.config import RunConfig, RunDesign, RunExecution
from harness.runs.judge_record import (
    JudgePart,
    merged_judge_record,
    read_judge_record,
    write_judge_record,
)
from harness.runs.shards import Shard, coverage
from harness.runs.store import STORE_FILENAME, RunStore, StoreError
from harness.runs.summary import summarise, write_summary
from harness.runs.summary_model import RunSummary

# The fields that may differ between the shards of one run: the run's execution (how fast,
# how far each job went, what ran the episodes and where, where answers were looked up) and,
# the point of merging, the shard. The merged run keeps the first shard's values. Every
# field of the design but the shard must be equal.
INVOCATION_FIELDS = frozenset(RunExecution.model_fields) | {"shard"}

WHOLE_RUN = Shard(index=1, count=1)  # a run without --shard is the one shard of its grid


def merge_runs(run_dirs: list[Path], out: Path) -> RunSummary:
    """Merge the shard runs in ``run_dirs`` into a new run in ``out`` and return its
    summary (written to ``out/summary.json``, with ``samples.jsonl``).

    Raises :class:`~harness.runs.store.StoreError` (a missing, damaged or unreadable store;
    ``out`` holding a run) and :class:`~harness.errors.HarnessError` naming the field and the
    two values when two stores' configurations differ in a field that changes results, or
    naming the shard, sample or directory that two stores share; nothing is written then."""
    if (out / STORE_FILENAME).exists() or (out / "summary.json").exists():
        raise StoreError(f"{out} already holds a run; choose another --out directory for the "
                         "merged run")
    seen: dict[Path, Path] = {}
    for run_dir in run_dirs:
        if run_dir.resolve() in seen:
            raise HarnessError(f"{seen[run_dir.resolve()]} and {run_dir} are the same run "
                               "directory: each shard's run is merged once")
        seen[run_dir.resolve()] = run_dir
    with ExitStack() as stack:
        shards: list[tuple[Shard, Path, RunStore, RunConfig]] = []
        for run_dir in run_dirs:
            store = stack.enter_context(RunStore.open(run_dir))
            config = store.run_config()
            shards.append((config.design.shard or WHOLE_RUN, run_dir, store, config))
        shards.sort(key=lambda entry: entry[0].index)
        first_shard, first_dir, first_store, first = shards[0]
        grid = first_store.scenario_ids()
        if grid is not None and first_shard.count > len(grid) * first.design.epochs:
            # A store of a harness that did not bound the count: the merged run's list of
            # missing shards would grow with it.
            raise HarnessError(f"cannot merge {first_dir}: its shard {first_shard} splits a grid "
                               f"of {len(grid) * first.design.epochs} sample(s) into more "
                               "shards than samples")
        owner: dict[tuple[str, int], Path] = {}
        for shard, run_dir, store, config in shards[1:]:
            _check_same_run(first_dir, first, run_dir, config)
            if shard.count != first_shard.count:
                raise HarnessError(f"cannot merge {first_dir} and {run_dir}: their "
                                   f"configurations differ in shard ({first_shard} vs {shard}: "
                                   "shards of different splits)")
            _check_same_grid(first_dir, grid, run_dir, store.scenario_ids())
        holders: dict[Shard, Path] = {}
        for shard, run_dir, store, _config in shards:
            if shard in holders:
                raise HarnessError(f"cannot merge {holders[shard]} and {run_dir}: both hold "
                                   f"shard {shard}")
            holders[shard] = run_dir
            for key in store.finished_keys():
                if key in owner:
                    raise HarnessError(f"cannot merge {owner[key]} and {run_dir}: both hold the "
                                       f"sample {key[0]!r} epoch {key[1]}")
                owner[key] = run_dir
            for _record in store.iter_samples():  # every sample parses, or StoreError names it
                pass
        merged = first.with_design(shard=None)
        target = stack.enter_context(RunStore.create(out, {"run": merged.model_dump(mode="json")}))
        if grid is not None:
            target.record_scenarios(grid)
        target.copy_definitions(first_store)
        judge = merged_judge_record(
            [part for shard, _run_dir, store, _config in shards
             for part in _judge_parts(str(shard), store)])
        if judge is not None:
            write_judge_record(target, judge)
        for shard, _run_dir, store, _config in shards:
            target.copy_from(store, shard=str(shard))
        summary = summarise(
            target, merged, run_dir=out,
            scenarios_loaded=None if grid is None else len(grid),
            shards=coverage(first_shard.count, [s.index for s, *_ in shards], grid,
                            merged.design.epochs),
        )
        write_summary(out, summary)
        return summary


def _check_same_run(dir_a: Path, a: RunConfig, dir_b: Path, b: RunConfig) -> None:
    """Refuse two configurations whose designs differ in a field but the shard, naming the
    first such field and its two values."""
    values_a, values_b = a.model_dump(mode="json"), b.model_dump(mode="json")
    for field in RunDesign.model_fields:
        if field not in INVOCATION_FIELDS and values_a[field] != values_b[field]:
            raise HarnessError(
                f"cannot merge {dir_a} and {dir_b}: their configurations differ in {field} "
                f"({values_a[field]!r} vs {values_b[field]!r}); the shards of one run differ "
                f"only in {', '.join(sorted(INVOCATION_FIELDS))}")


def _check_same_grid(dir_a: Path, grid_a: list[str] | None, dir_b: Path,
                     grid_b: list[str] | None) -> None:
    """Refuse two stores whose scenarios differ (the same files, changed between the jobs)."""
    if grid_a is None or grid_b is None or set(grid_a) == set(grid_b):
        return
    only_a, only_b = sorted(set(grid_a) - set(grid_b)), sorted(set(grid_b) - set(grid_a))
    which = (f"{dir_a} has {only_a[0]!r}, which {dir_b} has not" if only_a
             else f"{dir_b} has {only_b[0]!r}, which {dir_a} has not")
    raise HarnessError(f"cannot merge {dir_a} and {dir_b}: their scenarios differ ({which}); "
                       "run every shard on the same scenario files")


def _judge_parts(shard: str, store: RunStore) -> list[JudgePart]:
    """A shard's judge, as parts of the merged run's record: one part (its definition, or
    ``None`` when not recorded), or each part of a shard that is itself mixed."""
    record = read_judge_record(store)
    if record is None:
        return [JudgePart(part=f"shard {shard}", definition=None)]
    if record.definition is not None:
        return [JudgePart(part=f"shard {shard}", definition=record.definition)]
    return [JudgePart(part=f"shard {shard}, {p.part}", definition=p.definition)
            for p in record.mixed]
