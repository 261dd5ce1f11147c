"""What two runs of the same samples must share, to the last digit: ``summary.json`` and every
stored sample without the fields that describe the invocation rather than the samples
(docs/design.md, "Identical summaries", lists them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.runs.store import RunStore

# Wall-clock readings: when a sample ran and how long its parts took.
TIMING_KEYS = frozenset({"started_at", "finished_at", "duration_s", "latency_s", "started_s"})
# Settings of the invocation that change how a run went, never what it computed.
INVOCATION_SETTINGS = ("workers", "shard")


def _without_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_without_timing(v) for v in value]
    return value


def comparable_summary(run_dir: Path) -> dict[str, Any]:
    """``run_dir/summary.json`` without its timings (every ``latency_s`` and duration, the
    ``latency`` section, each tool's ``latency``, the events' ``at``) and the invocation's
    settings (``config.workers``, ``config.shard``)."""
    summary: dict[str, Any] = json.loads((run_dir / "summary.json").read_text())
    summary.pop("latency", None)
    for figures in (summary.get("tools") or {}).values():
        figures.pop("latency", None)
    for event in summary["events"]:
        event.pop("at", None)
    for name in INVOCATION_SETTINGS:
        summary["config"].pop(name, None)
    return dict(_without_timing(summary))


def comparable_samples(run_dir: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """Every stored sample (transcript, checks, metrics, judgments, usage) without its
    timings, by (scenario id, epoch)."""
    with RunStore.open(run_dir) as store:
        return {(r.scenario_id, r.epoch): _without_timing(r.model_dump(mode="json"))
                for r in store.iter_samples()}
