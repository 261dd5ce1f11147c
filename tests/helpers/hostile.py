"""A run directory whose every outside string is an attack on an HTML page: script tags, an
``onerror`` handler, a ``javascript:`` link, ``</textarea>`` and ``</script>`` inside what
becomes embedded JSON. Each attack sets ``window.__pwned`` or opens a dialog if it runs, so a
browser test can tell that nothing ran."""

from __future__ import annotations

from pathlib import Path

from harness.runs.config import RunConfig
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore
from harness.runs.summary import summarise, write_summary
from harness.transcript import ErrorInfo, ToolCallRecord, Transcript

PWN = "window.__pwned=1;alert(1)"
HOSTILE = {
    "scenario": f'<img src=x onerror="{PWN}">',
    "user": f"<script>{PWN}</script> hello </textarea><b>bold?</b>",
    "agent": f'[click me](javascript:{PWN}) <a href="javascript:{PWN}">link</a>',
    "tool": f"</script><script>{PWN}</script>",
    "reasoning": f"<svg onload=\"{PWN}\"></svg> looks fine",
    "error": f"server said: <iframe src=\"javascript:{PWN}\"></iframe>",
    "tag": "<u>tag</u>",
}


def _record(epoch: int, *, errored: bool = False) -> SampleRecord:
    sid = HOSTILE["scenario"]
    messages = [
        {"role": "user", "content": HOSTILE["user"]},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "name": "lookup", "arguments": {"q": HOSTILE["tool"]}}]},
        {"role": "tool", "content": '{"note": "x"}', "tool_call_id": "c1", "name": "lookup"},
        {"role": "assistant", "content": HOSTILE["agent"]},
    ]
    transcript = Transcript(
        scenario_id=sid, epoch=epoch, messages=messages,  # type: ignore[arg-type]
        tool_calls=[ToolCallRecord(call_id="c1", name="lookup", arguments={"q": HOSTILE["tool"]},
                                   result={"note": HOSTILE["tool"]}, turn=0)],
        stop_reason="agent_error" if errored else "goal_met",
    )
    if errored:
        return SampleRecord(scenario_id=sid, epoch=epoch, status="errored", tags=[HOSTILE["tag"]],
                            error=ErrorInfo(kind="model_error", message=HOSTILE["error"],
                                            role="agent"),
                            transcript=transcript, started_at=1.0, finished_at=2.0)
    finding = {"kind": "missing_phrase", "subject": HOSTILE["agent"], "message": HOSTILE["user"]}
    checks = [{"scenario_id": sid, "epoch": epoch, "warnings": [], "error": None, "results": [
        {"name": "required_phrases", "value": 0.0, "passed": False,
         "details": {"missing": [HOSTILE["tool"]]}, "findings": [finding],
         "unscored_reason": None}]}]
    verdict = {"criterion_id": "c", "turn": None, "reasoning": HOSTILE["reasoning"],
               "evidence": [HOSTILE["tool"]], "unverified_evidence": [], "score": 1,
               "normalised": 0.0}
    judgments = [{"rubric_id": "r", "score": 0.0, "passed": False, "status": "scored",
                  "failed_criteria": ["c"], "unscored_reason": None, "error": None,
                  "criteria": [{"criterion_id": "c", "value": 0.0, "passed": False,
                                "votes": [0.0]}],
                  "judgments": [{"judge_model": "mock:judge", "sample_index": 0,
                                 "verdicts": [verdict]}]}]
    return SampleRecord(scenario_id=sid, epoch=epoch, status="scored", score=0.0, passed=False,
                        tags=[HOSTILE["tag"]], metrics={"required_phrases": 0.0},
                        transcript=transcript, checks=checks, judgments=judgments,
                        started_at=1.0, finished_at=2.5)


def hostile_run(run_dir: Path) -> Path:
    """A run directory (store and summary) holding two scored samples and an errored one of
    the hostile scenario, and one ordinary scenario so the suite has figures."""
    config = RunConfig(scenario_paths=["hostile.yaml"], offline=True, epochs=2)
    with RunStore.create(run_dir, config.model_dump(mode="json")) as store:
        for record in (_record(0), _record(1), _record(2, errored=True)):
            store.write_sample(record)
        for epoch, score in enumerate((1.0, 0.5)):
            store.write_sample(SampleRecord(
                scenario_id="plain", epoch=epoch, status="scored", score=score,
                passed=score == 1.0, transcript=Transcript(scenario_id="plain", epoch=epoch,
                                                           stop_reason="goal_met")))
        write_summary(run_dir, summarise(store, config, run_dir=run_dir))
    return run_dir
