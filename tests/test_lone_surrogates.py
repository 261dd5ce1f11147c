"""Text from outside may hold a lone UTF-16 surrogate (JSON's ``"\\ud800"`` escape, or a Python
agent or tool returning one). It cannot be encoded as UTF-8, so left in it broke the sample's
every later write: the sample became an ``internal_error``. It becomes U+FFFD on the way in."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from harness.cli import app
from harness.models.types import Message, ToolCall, without_lone_surrogates
from harness.transcript import ToolCallRecord

LONE = "\ud800"


def test_lone_halves_become_the_replacement_character_and_pairs_stay() -> None:
    value = {f"k{LONE}": [f"a{LONE}b", ("\udfff",)], "ok": "café 😀", "n": 3}
    assert without_lone_surrogates(value) == {"k\ufffd": ["a\ufffdb", ("\ufffd",)],
                                              "ok": "café 😀", "n": 3}
    clean = {"ok": "no change"}
    assert without_lone_surrogates(clean)["ok"] is clean["ok"]
    # JSON's escape of an astral character is a valid pair: it decodes to one code point
    assert without_lone_surrogates(json.loads('"\\ud83d\\ude00"')) == "😀"


def test_messages_tool_calls_and_records_are_scrubbed_on_the_way_in() -> None:
    message = Message(role="assistant", content=f"x{LONE}", tool_calls=(
        ToolCall(id="c", name="t", arguments={"q": LONE}),))
    assert message.content == "x\ufffd"
    assert message.tool_calls[0].arguments == {"q": "\ufffd"}
    record = ToolCallRecord(call_id="c", name="t", result={"r": [LONE]}, error=LONE)
    assert record.result == {"r": ["\ufffd"]} and record.error == "\ufffd"
    record.model_dump_json()  # raised PydanticSerializationError before


def test_a_run_whose_agent_and_tool_return_lone_surrogates_is_scored_and_reported(
    tmp_path: Path,
) -> None:
    (tmp_path / "surrogate_agent.py").write_text(
        "def answer(messages, toolbox):\n"
        "    result = toolbox.call('lookup', {})\n"
        "    return 'answer \\ud800 ' + str(result)\n"
        "\n"
        "def lookup(state, args):\n"
        "    return {'note': 'tool \\udc00 text'}\n",
        encoding="utf-8",
    )
    (tmp_path / "s.yaml").write_text(
        "id: lone-surrogates\n"
        "user: {goal: test, script: [hello]}\n"
        "agent: {callable: 'surrogate_agent:answer'}\n"
        "tools: [{name: lookup, handler: 'surrogate_agent:lookup'}]\n"
        "expectations: {reference_answer: answer text}\n"
        "rubrics: [final_response_quality]\n",
        encoding="utf-8",
    )
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "--offline",
                                      "--epochs", "2", "--out", str(out)])
    assert result.exit_code in (0, 1), result.output
    lines = [json.loads(x) for x in (out / "samples.jsonl").read_text("utf-8").splitlines()]
    assert [x["status"] for x in lines] == ["scored", "scored"], lines[0].get("error")
    page = (out / "report.html").read_text("utf-8")
    assert "answer \ufffd" in page and "tool \ufffd text" in page


def test_judge_verdicts_are_scrubbed_too() -> None:
    from harness.judging.grounding import LabelledSentence
    from harness.judging.verdicts import CriterionVerdict

    verdict = CriterionVerdict(criterion_id="c", score=1, normalised=1.0,
                               reasoning=f"r{LONE}", evidence=[LONE])
    assert verdict.reasoning == "r\ufffd" and verdict.evidence == ["\ufffd"]
    sentence = LabelledSentence(answer=1, sentence=LONE, reasoning="r", evidence=[],
                                label="supported")
    assert sentence.sentence == "\ufffd"
