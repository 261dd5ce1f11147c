"""What "identical summaries" leaves out (docs/design.md, "What a merge reconciles, and what
'identical summaries' means"): the fields about an invocation rather than its samples. Every
other field of ``summary.json`` and of a ``samples.jsonl`` line is compared to the last
digit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.runs.merge import INVOCATION_FIELDS
from harness.runs.store import RunStore

# Wall-clock measurements: they differ between two runs of the same samples.
TIMINGS = frozenset({"latency_s", "duration_s", "started_s", "started_at", "finished_at"})


def comparable_summary(run_dir: Path) -> dict[str, Any]:
    """``run_dir/summary.json`` without the invocation's fields: the configuration's
    :data:`~harness.runs.merge.INVOCATION_FIELDS`, ``shards``, the durations (``latency``,
    each tool's ``latency``, each role's ``usage.by_role.*.latency_s``) and each event's
    time (``at``) and shard tag."""
    summary = json.loads((run_dir / "summary.json").read_text())
    for field in INVOCATION_FIELDS:
        summary["config"].pop(field, None)  # left out at its default: not stored
    summary.pop("shards", None)
    summary.pop("latency")
    for figures in (summary["tools"] or {}).values():
        figures.pop("latency")
    for usage in summary["usage"]["by_role"].values():
        usage.pop("latency_s")
    for event in summary["events"]:
        event.pop("at")
        event.pop("shard", None)
    return summary


def untimed(value: Any) -> Any:
    """``value`` (parsed JSON) without the :data:`TIMINGS` keys, at any depth."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def comparable_samples(run_dir: Path) -> list[dict[str, Any]]:
    """``run_dir/samples.jsonl``'s lines without their durations, in file order."""
    return [untimed(json.loads(line))
            for line in (run_dir / "samples.jsonl").read_text().splitlines()]


def comparable_records(run_dir: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """Every stored sample (transcript, checks, metrics, judgments, usage) without its
    durations, by (scenario id, epoch): the store's order depends on which sample finished
    first, so two runs are compared sample by sample."""
    with RunStore.open(run_dir) as store:
        return {(r.scenario_id, r.epoch): untimed(r.model_dump(mode="json"))
                for r in store.iter_samples()}
