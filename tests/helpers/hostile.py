"""A run directory whose every outside string is an attack on an HTML page: script tags, an
``onerror`` handler, a ``javascript:`` link, ``</textarea>`` and ``</script>`` inside what
becomes embedded JSON. Each attack sets ``window.__pwned`` or opens a dialog if it runs, so a
browser test can tell that nothing ran.

Below them, the hostile files: for every surface that reads JSON or YAML, a file with a hole
where text no Python parser takes is put (:data:`HOSTILE_FILES`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from harness.runs.config import RunConfig
from harness.runs.sample import SampleRecord
from harness.runs.store import RunStore
from harness.runs.summary import summarise, write_summary
from harness.simulation.user_checks import SimulatorFinding
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
    "finding": f'speaks as the assistant: "<img src=y onerror="{PWN}">"',
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
                        simulator_findings=[SimulatorFinding(kind="role_confusion", turn=0,
                                                             evidence=HOSTILE["finding"])],
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


# --- Files no parser of Python's takes: every reader of JSON and YAML must refuse them in one
# line (issue 31). A surface that reads a new kind of file gets a row in HOSTILE_FILES.

NESTED = "[" * 1000 + "]" * 1000  # past Python's recursion limit
LONG_NUMBER = "9" * 5000  # past Python's 4,300 digits for an int
PAYLOADS = {"nested": NESTED, "long number": LONG_NUMBER}
_HOLE = '"@HOLE@"'
DICE = Path(__file__).resolve().parents[1] / "data" / "adk" / "dice" / "dice.evalset.json"


@dataclass(frozen=True)
class HostileFile:
    """A file of one surface with a hole for the payload: ``files`` (name -> text holding
    ``"@HOLE@"`` once, in the file named ``culprit``) and the command that reads it (``{dir}``
    is the folder the files are written to)."""

    files: dict[str, str]
    culprit: str
    command: tuple[str, ...]

    def write(self, folder: Path, payload: str) -> tuple[Path, int]:
        """Write the files into ``folder`` with ``payload`` in the hole; return the culprit
        and the line of the hole."""
        for name, text in self.files.items():
            (folder / name).write_text(text.replace(_HOLE, payload), encoding="utf-8")
        text = self.files[self.culprit]
        return folder / self.culprit, text[:text.index(_HOLE)].count("\n") + 1

    def args(self, folder: Path) -> list[str]:
        return [part.replace("{dir}", str(folder)) for part in self.command]


def _eval_set() -> str:
    data = json.loads(DICE.read_text(encoding="utf-8"))
    data["evalCases"][1]["sessionInput"]["state"] = {"sides": "@HOLE@"}
    return json.dumps(data, indent=1)


_SCENARIO = ("- id: a\n  user: {goal: g, script: [hi]}\n  agent: {model: 'mock:echo'}\n"
             "  tags: [x]\n")
_VERTEX = {"predicted_trajectory": [], "reference_trajectory": [], "response": "ok"}
_CONFIG = '{\n  "criteria": {\n    "tool_trajectory_avg_score": "@HOLE@"\n  }\n}\n'
HOSTILE_FILES: dict[str, HostileFile] = {
    "validate an eval set": HostileFile(
        {"d.evalset.json": _eval_set()}, "d.evalset.json",
        ("validate", "{dir}/d.evalset.json")),
    "import an eval set": HostileFile(
        {"d.evalset.json": _eval_set()}, "d.evalset.json",
        ("import", "adk", "{dir}/d.evalset.json", "--out", "{dir}/out")),
    "run an eval set": HostileFile(
        {"d.evalset.json": _eval_set()}, "d.evalset.json",
        ("run", "{dir}/d.evalset.json", "--offline", "--epochs", "1", "--out", "{dir}/run")),
    "validate beside a test_config.json": HostileFile(
        {"d.evalset.json": DICE.read_text(encoding="utf-8"), "test_config.json": _CONFIG},
        "test_config.json", ("validate", "{dir}/d.evalset.json")),
    "import beside a test_config.json": HostileFile(
        {"d.evalset.json": DICE.read_text(encoding="utf-8"), "test_config.json": _CONFIG},
        "test_config.json", ("import", "adk", "{dir}/d.evalset.json", "--out", "{dir}/out")),
    "validate a scenario YAML": HostileFile(
        {"s.yaml": _SCENARIO.replace("[x]", _HOLE)}, "s.yaml", ("validate", "{dir}/s.yaml")),
    "run with a models YAML": HostileFile(
        {"s.yaml": _SCENARIO, "m.yaml": f"openai:\n  timeout: {_HOLE}\n"}, "m.yaml",
        ("run", "{dir}/s.yaml", "--models-config", "{dir}/m.yaml", "--epochs", "1",
         "--out", "{dir}/run")),
    "run with a rubric YAML": HostileFile(
        {"s.yaml": _SCENARIO, "r.yaml": f"id: r\ncriteria: {_HOLE}\n"}, "r.yaml",
        ("run", "{dir}/s.yaml", "--rubrics", "{dir}/r.yaml", "--epochs", "1",
         "--out", "{dir}/run")),
    "score transcripts (JSONL)": HostileFile(
        {"t.jsonl": '{"id": "a", "messages": [], "expected_tool_calls": []}\n'
                    '{"id": "b", "messages": "@HOLE@"}\n'},
        "t.jsonl", ("score-transcripts", "{dir}/t.jsonl")),
    "score a Vertex dataset (JSONL)": HostileFile(
        {"v.jsonl": json.dumps(_VERTEX) + "\n" + json.dumps(
            {**_VERTEX, "predicted_trajectory": "@HOLE@"}) + "\n"},
        "v.jsonl", ("score-transcripts", "{dir}/v.jsonl")),
    "stats of sample scores": HostileFile(
        {"s.jsonl": '{"scenario_id": "a", "epoch": 0, "score": 1}\n'
                    '{"scenario_id": "a", "epoch": 1, "score": "@HOLE@"}\n'},
        "s.jsonl", ("stats", "{dir}/s.jsonl")),
    "calibrate on judgments (JSONL)": HostileFile(
        {"j.jsonl": '{"item_id": "a", "human": 1, "judge": 1}\n'
                    '{"item_id": "b", "human": "@HOLE@", "judge": 1}\n'},
        "j.jsonl", ("calibrate", "--judgments", "{dir}/j.jsonl")),
    "report of a summary.json": HostileFile(
        {"summary.json": '{\n "schema_version": "@HOLE@"\n}\n'}, "summary.json",
        ("report", "{dir}")),
}
