"""A small fixed store with hand-made timings and tool calls, for the latency and per-tool
figures' tests (the figures they expect are worked out by hand in those tests).

``s1`` has reference calls ``search(q=a)``, ``book(id=1)`` and a parameter expectation for
``book`` (``id`` = 1); ``s2`` has no reference; both offer ``search`` and ``book``.

- ``s1`` epoch 0: ``search(q=a)`` 0.1 s, ``search(q=a)`` 0.3 s (turn 0), ``book(id=1)``
  0.2 s (turn 1); agent steps 1.0 s and 0.5 s in turn 0, 2.0 s in turn 1; simulator 0.25 s;
  episode 4.0 s.
- ``s1`` epoch 1: ``search(q=a)`` 0.5 s, ``book`` with malformed arguments (error
  ``invalid_arguments``) 0.0 s, both in turn 0; one agent step 1.5 s; episode 3.0 s.
- ``s2`` epoch 0: ``search(q=x)`` 0.4 s (error ``injected``); one agent step 0.6 s; episode
  2.0 s.
- ``s2`` epoch 1: no call; one agent step 0.9 s; episode 1.0 s.
- ``s2`` epoch 2: errored (``agent_error``) after 9.0 s, with a ``search`` call of 7.0 s
  and an agent step of 2.0 s: it counts in the latency, not in the per-tool table.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.checks.run import run_checks
from harness.checks.spec import Expectations
from harness.models.types import ToolSpec
from harness.runs.config import RunConfig
from harness.runs.sample import SampleRecord
from harness.runs.scoring import build_sample
from harness.runs.store import RunStore
from harness.runs.summary import summarise, write_summary
from harness.runs.summary_model import RunSummary
from harness.transcript import ErrorInfo, StepRecord, ToolCallRecord, Transcript

TOOLS = [ToolSpec(name=n, description=n, parameters={"type": "object"})
         for n in ("search", "book")]
EXPECTATIONS = {
    "s1": Expectations.model_validate({
        "tool_calls": [{"name": "search", "args": {"q": "a"}},
                       {"name": "book", "args": {"id": 1}}],
        "parameters": [{"tool": "book", "required": {"id": 1}}]}),
    "s2": Expectations.model_validate({"required_phrases": ["ok"]}),
}


def tool_call(name: str, args: dict[str, Any] | None, latency: float, turn: int = 0,
          error: str | None = None) -> ToolCallRecord:
    raw = None if args is not None else "{bad"
    return ToolCallRecord(call_id=f"c{latency}", name=name, arguments=args or {},
                          raw_arguments=raw, turn=turn, latency_s=latency, error=error,
                          is_error=error is not None)


def agent_step(turn: int, latency: float) -> StepRecord:
    return StepRecord(role="agent", turn=turn, model="mock:a", latency_s=latency)


def make_sample(sid: str, epoch: int, calls: list[ToolCallRecord], steps: list[StepRecord],
                duration: float, *, errored: bool = False,
                tools: Sequence[ToolSpec] = TOOLS) -> SampleRecord:
    """One sample of scenario ``sid`` (checked against :data:`EXPECTATIONS`, or none);
    ``finished_at - started_at`` is 50 s longer than the conversation (judging, say)."""
    transcript = Transcript(
        scenario_id=sid, epoch=epoch, tools=list(tools), tool_calls=calls, steps=steps,
        stop_reason="agent_error" if errored else "goal_met", duration_s=duration,
        error=ErrorInfo(kind="agent_error", message="500") if errored else None)
    checks = run_checks(transcript, EXPECTATIONS.get(sid, Expectations()))
    return build_sample(transcript, checks, [],
                        started_at=100.0, finished_at=100.0 + duration + 50.0)


def records() -> list[SampleRecord]:
    """The samples of the module docstring."""
    sim = StepRecord(role="simulator", turn=0, model="mock:s", latency_s=0.25)
    return [
        make_sample("s1", 0, [tool_call("search", {"q": "a"}, 0.1),
                              tool_call("search", {"q": "a"}, 0.3),
                              tool_call("book", {"id": 1}, 0.2, turn=1)],
                    [sim, agent_step(0, 1.0), agent_step(0, 0.5), agent_step(1, 2.0)], 4.0),
        make_sample("s1", 1, [tool_call("search", {"q": "a"}, 0.5),
                              tool_call("book", None, 0.0, error="invalid_arguments")],
                    [agent_step(0, 1.5)], 3.0),
        make_sample("s2", 0, [tool_call("search", {"q": "x"}, 0.4, error="injected")],
                    [agent_step(0, 0.6)], 2.0),
        make_sample("s2", 1, [], [agent_step(0, 0.9)], 1.0),
        make_sample("s2", 2, [tool_call("search", {"q": "x"}, 7.0)], [agent_step(0, 2.0)], 9.0,
                    errored=True),
    ]


def fixed_run(run_dir: Path, extra: Sequence[SampleRecord] = ()) -> RunSummary:
    """The store of the module docstring in ``run_dir`` (with the ``extra`` samples),
    summarised (``summary.json`` and ``samples.jsonl`` written); returns the summary."""
    config = RunConfig(scenario_paths=["fixed.yaml"], epochs=3)
    with RunStore.create(run_dir, config.model_dump(mode="json")) as store:
        for record in [*records(), *extra]:
            store.write_sample(record)
        summary = summarise(store, config, run_dir=run_dir)
    write_summary(run_dir, summary)
    return summary
