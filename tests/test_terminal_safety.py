"""Issue 11: outside text never reaches the terminal raw. Ids, required phrases, file names and
model servers' error text carrying an OSC title change, a screen clear, the 8-bit CSI, a
bidirectional override, rich markup and an emoji code are shown visibly and literally in every
table, warning and error line the commands print, and the JSON output escapes them. Each test
runs the real entry point in-process."""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli import main
from harness.testing.replies import Reply
from harness.testing.server import LoopbackServer
from tests.helpers.cli import run_cli

PAYLOAD = "\x1b]2;PWNED\x1b\\" "\x1b[2J" "\x9b31m" "[red]x[/red]" "\u202e" ":thumbs_up:"
# How it must read on the terminal: each control as its escape, markup and emoji code literal.
SHOWN = "\\x1b]2;PWNED\\x1b\\" "\\x1b[2J" "\\x9b31m" "[red]x[/red]" "\\u202e" ":thumbs_up:"
# Anything that acts on a terminal or reorders text (newlines are ours: tables, lines).
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")

Harness = Callable[..., tuple[int, str, str]]


def assert_shown_safely(text: str) -> None:
    found = RAW.search(text)
    assert found is None, f"raw {found.group()!r} in output"
    assert SHOWN in text


@pytest.fixture
def harness(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Harness:
    """``harness(*args) -> (exit code, stdout, stderr)`` through :func:`main`, on a wide,
    uncoloured console (so cells are not folded and the only escapes would be the payload's),
    in ``tmp_path``, with no real key or service reachable."""
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                 "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)

    def run(*args: str) -> tuple[int, str, str]:
        done = run_cli(*args, cwd=tmp_path, columns=400)
        return done.returncode, done.stdout, done.stderr

    return run


def _scores(tmp_path: Path) -> Path:
    path = tmp_path / "scores.jsonl"
    path.write_text("".join(json.dumps({"scenario_id": sid, "epoch": e, "score": x}) + "\n"
                            for sid, xs in ((PAYLOAD, [1.0, 0.0, 1.0]), ("plain", [1, 1, 0]))
                            for e, x in enumerate(xs)), encoding="utf-8")
    return path


def _transcripts(tmp_path: Path) -> Path:
    """A transcript whose id and tool name are the payload, with arguments that are not JSON
    (a warning naming both)."""
    call = {"id": "c1", "type": "function", "function": {"name": PAYLOAD, "arguments": "{no"}}
    line = {"id": PAYLOAD, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "x"},
        {"role": "assistant", "content": "done"},
    ], "expected_tool_calls": [{"name": "get_weather", "args": {}}]}
    path = tmp_path / "transcripts.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    return path


def test_stats_table(harness: Harness, tmp_path: Path) -> None:
    code, out, _ = harness("stats", str(_scores(tmp_path)), "--bootstrap-resamples", "0")
    assert code == 0
    assert_shown_safely(out)


@pytest.mark.parametrize("command", ["stats", "score-transcripts"])
def test_json_output_escapes_every_control_and_keeps_the_value(
        harness: Harness, tmp_path: Path, command: str) -> None:
    path = _scores(tmp_path) if command == "stats" else _transcripts(tmp_path)
    code, out, _ = harness(command, str(path), "--json")
    assert code == 0
    assert RAW.search(out) is None and "\u202e" not in out
    data = json.loads(out)
    rows = data["scenarios"] if command == "stats" else data["transcripts"]
    assert PAYLOAD in {row.get("scenario_id", row.get("id")) for row in rows}


def test_score_transcripts_table_and_warnings(harness: Harness, tmp_path: Path) -> None:
    code, out, err = harness("score-transcripts", str(_transcripts(tmp_path)))
    assert code == 0
    assert_shown_safely(out)
    assert_shown_safely(err)
    assert f"warning: line 1 (id {SHOWN}): tool call 0 ({SHOWN}, turn" in err


def test_score_transcripts_stops_with_a_servers_error_text_shown_safely(
        harness: Harness, tmp_path: Path, loopback: LoopbackServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-terminal-safety")
    loopback.set_responder(lambda request: Reply.error(400, message=PAYLOAD))
    code, _, err = harness("score-transcripts", str(_transcripts(tmp_path)), "--judge",
                           "openai:m", "--judge-base-url", loopback.openai_base_url,
                           "--rubric", "final_response_quality")
    assert code == 2  # a rejected request stops the command, as it stops a run
    assert_shown_safely(err)
    assert f"the server said: {SHOWN}" in err


def test_calibrate_table_heading_and_off_scale_warnings(harness: Harness, tmp_path: Path) -> None:
    path = tmp_path / "judgments.jsonl"
    rows = [{"item_id": f"i{k}", "human": h, "judge": j, "judge_id": PAYLOAD}
            for k, (h, j) in enumerate([(1, 2), (2, 2), (3, 4), (4, 4), (5, 5), (2, 1)])]
    rows.append({"item_id": PAYLOAD, "human": 9, "judge": 3, "judge_id": PAYLOAD})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code, out, _ = harness("calibrate", "--judgments", str(path), "--scale", "1:5",
                           "--resamples", "0")
    assert code == 0
    assert_shown_safely(out)
    assert f"{SHOWN} vs people" in out
    code, _, err = harness("calibrate", "--judgments", str(path), "--scale", "1:5",
                           "--resamples", "0", "--json")
    assert code == 0
    # the warning quotes the item id as a Python literal: escaped, and the markup literal
    assert RAW.search(err) is None
    assert err.startswith("warning: ") and "[red]x[/red]" in err
    assert "(item '\\x1b]2;PWNED\\x1b\\\\\\x1b[2J\\x9b31m[red]x[/red]" in err


def _suite(tmp_path: Path) -> Path:
    """Two scenarios run by a Python agent: one misses a required phrase (the payload) and
    calls a tool named by the payload, the other raises an error carrying the payload."""
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "terminal_safety_agent.py").write_text(
        f"PAYLOAD = {PAYLOAD!r}\n"
        "def answer(messages, toolbox):\n"
        "    if 'boom' in messages[-1].content:\n"
        "        raise RuntimeError(PAYLOAD)\n"
        "    toolbox.call(PAYLOAD)\n"
        "    return 'hello'\n", encoding="utf-8")
    agent = "agent: {callable: 'terminal_safety_agent:answer'}\n"
    (folder / "quiet.yaml").write_text(
        "id: quiet\nuser: {goal: g, script: [hello]}\n" + agent
        # a JSON string is a YAML double-quoted scalar: the escapes reach the phrase
        + f"expectations: {{required_phrases: [{json.dumps(PAYLOAD)}]}}\n", encoding="utf-8")
    (folder / "boom.yaml").write_text("id: boom\nuser: {goal: g, script: [boom]}\n" + agent,
                                      encoding="utf-8")
    return folder


def test_run_and_report_errors_table_and_failure_analysis(harness: Harness,
                                                          tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    code, out, _ = harness("run", str(_suite(tmp_path)), "--epochs", "1", "--cache-mode", "off",
                           "--out", str(run_dir))
    assert code == 0
    code, again, _ = harness("report", str(run_dir))
    assert code == 0
    for shown in (out, again):
        assert_shown_safely(shown)
        errors = shown[shown.index("Errors"):shown.index("Failure analysis")]
        assert re.search(rf"boom\s+│\s+0\s+│\s+RuntimeError\s+│\s+{re.escape(SHOWN)}", errors)
        failures = shown[shown.index("Failure analysis"):]
        assert f"missing_phrase: {SHOWN}" in failures


def test_run_stop_line_shows_a_servers_error_text_safely(
        harness: Harness, tmp_path: Path, loopback: LoopbackServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-terminal-safety")
    loopback.set_responder(lambda request: Reply.error(400, message=PAYLOAD))
    scenario = tmp_path / "s.yaml"
    scenario.write_text("id: s\nuser: {goal: g, script: [hello]}\n"
                        "agent: {model: 'openai:m', system_prompt: hi}\n", encoding="utf-8")
    code, out, _ = harness("run", str(scenario), "--agent", "openai:m", "--agent-base-url",
                           loopback.openai_base_url, "--epochs", "1", "--cache-mode", "off",
                           "--out", str(tmp_path / "run"))
    assert code == 2  # a rejected request stops the run
    assert_shown_safely(out)
    stop = next(line for line in out.splitlines() if line.startswith("stopped early"))
    assert f"the server said: {SHOWN} — finished samples are kept" in stop


def test_one_line_error_printer(harness: Harness, tmp_path: Path) -> None:
    code, _, err = harness("stats", str(tmp_path / PAYLOAD))
    assert code == 2
    assert_shown_safely(err)
    assert err.startswith("error: ") and ": file not found" in err
    assert err.count("\n") == 1


def test_the_cli_prints_unhandled_log_records_through_the_safe_handler(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logging, "lastResort", logging.lastResort)  # main() replaces it
    monkeypatch.setattr(sys, "argv", ["harness", "version"])
    with pytest.raises(SystemExit):
        main()
    assert type(logging.lastResort).__name__ == "TerminalLogHandler"


def test_several_problems_one_line_each_with_markup_literal(harness: Harness,
                                                            tmp_path: Path) -> None:
    path = tmp_path / "scores.jsonl"
    line = json.dumps({"scenario_id": PAYLOAD, "epoch": 0, "score": 1.0})
    path.write_text(f"{line}\n{line}\n{{\"scenario_id\": \"a\", \"epoch\": \"\\n[bold]\"}}\n",
                    encoding="utf-8")
    code, _, err = harness("stats", str(path))
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 3 and lines[0].startswith("error: ")
    duplicate = next(line for line in lines if "duplicate sample" in line)
    assert "scenario '\\x1b]2;PWNED\\x1b\\\\" in duplicate and "[red]x[/red]" in duplicate
    assert any(line.endswith('expected an integer >= 0, got "\\n[bold]"') for line in lines)
    assert RAW.search(err.replace("\n", "")) is None


def test_validate_lists_problems_with_values_shown_safely(harness: Harness,
                                                          tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("id: s\nuser: {goal: g, script: [hi]}\nagent: {callable: 'x:y'}\n"
                        f"{json.dumps(PAYLOAD)}: 1\n", encoding="utf-8")
    code, _, err = harness("validate", str(scenario), "--no-imports")
    assert code == 2
    assert_shown_safely(err)
    assert f"s.yaml:4: {SHOWN}: unknown key" in err


def test_compare_table(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.report.terminal import render_comparison
    from harness.safe_text import terminal_console
    from harness.stats.compare import compare_runs

    monkeypatch.setenv("COLUMNS", "400")
    base = {PAYLOAD: [1.0, 0.0, 1.0], "b": [0.5, 0.5, 1.0], "c": [0.0, 0.0, 1.0]}
    cand = {PAYLOAD: [0.0, 0.0, 1.0], "b": [1.0, 0.5, 1.0], "c": [0.0, 1.0, 1.0]}
    data = compare_runs(base, cand).model_dump(mode="json")
    render_comparison({**data, "notice": None}, terminal_console())
    assert_shown_safely(capsys.readouterr().out)
