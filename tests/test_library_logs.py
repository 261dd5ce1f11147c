"""The model libraries' own log lines (issue 11): instructor, openai, httpx ... log to a file
(the run's `harness.log`, or `.harness/logs/` for a command without an output directory),
never to the terminal unless `--verbose`; the terminal gets the harness's one line per
problem and a pointer to the file. No key reaches the file. `score-transcripts` stops on a
refused key as `run` does (exit 2, one line).

Models are on the loopback server: a judge whose answers never validate, and one whose key
is refused with the key echoed back in the error body.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli import app, main
from harness.logs import library_logs
from harness.testing.hub import TEST_KEYS
from harness.testing.replies import RecordedRequest, Reply
from harness.testing.server import LoopbackServer
from tests.helpers.judging_fakes import criterion_reply

KEY = TEST_KEYS["openai"]
# A reply no criterion schema accepts: ordinal scores go from 1 to 5.
OFF_SCALE = {"correctness": criterion_reply(9, "off the scale")}


@contextmanager
def bare_logging() -> Iterator[None]:
    """Logging as in a fresh process: no handler on the root logger (pytest adds its own for
    each test phase, which would hide what a user sees), so Python's last-resort handler
    prints warnings and errors to stderr unless the command routes them elsewhere."""
    root = logging.getLogger()
    kept = root.handlers[:]
    root.handlers = []
    try:
        yield
    finally:
        root.handlers = kept


@pytest.fixture
def openai_at_loopback(loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch
                       ) -> LoopbackServer:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", loopback.openai_base_url)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    return loopback


def _judged_suite(tmp_path: Path) -> Path:
    path = tmp_path / "judged.yaml"
    path.write_text(json.dumps([
        {"id": f"judged-{i}", "user": {"goal": "g", "script": ["What is 2 + 2?"]},
         "agent": {"model": "mock:echo"}, "rubrics": ["final_response_quality"]}
        for i in range(2)]))
    return path


def test_a_misbehaving_judge_leaves_stderr_short_and_its_lines_in_the_run_log(
        tmp_path: Path, openai_at_loopback: LoopbackServer) -> None:
    openai_at_loopback.set_responder(lambda request: Reply.json(OFF_SCALE))
    out = tmp_path / "run"
    with bare_logging():
        result = CliRunner().invoke(app, [
            "run", str(_judged_suite(tmp_path)), "--judge", "openai:loop-judge", "--epochs",
            "3", "--cache-mode", "off", "--out", str(out), "--json"])
    assert result.exit_code == 4, result.output  # every sample is a judge error
    assert json.loads(result.stdout)["counts"]["errors_by_kind"] == {"judge_error": 6}
    # 6 samples x (1 call + 2 re-asks): instructor logged every failed attempt, with the
    # validation dump; none of it on the terminal.
    assert openai_at_loopback.request_count == 18
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 2, result.stderr
    assert lines[0].startswith("error: no sample was scored (6 errored")
    assert f"are in {out / 'harness.log'}" in lines[1] and "--verbose" in lines[1]
    log = (out / "harness.log").read_text()
    assert log.count(" ERROR instructor") >= 6
    assert "validation error" in log.lower()


def test_verbose_shows_the_library_lines_on_the_terminal_too(
        tmp_path: Path, openai_at_loopback: LoopbackServer) -> None:
    openai_at_loopback.set_responder(lambda request: Reply.json(OFF_SCALE))
    out = tmp_path / "run"
    result = CliRunner().invoke(app, [
        "run", str(_judged_suite(tmp_path)), "--judge", "openai:loop-judge", "--epochs", "1",
        "--cache-mode", "off", "--out", str(out), "--json", "--verbose"])
    assert result.exit_code == 4, result.output
    assert result.stderr.count("ERROR instructor") >= 2
    assert "INFO httpx" in result.stderr  # every record at INFO and above
    assert KEY not in result.stderr


def _echo_the_key(request: RecordedRequest) -> Reply:
    """A 401 whose body repeats the key it was sent, as some gateways do (after 0.2 s, so
    the calls in flight are seen to be the only ones)."""
    sent = request.headers.get("authorization", "")
    return Reply.slow(0.2, Reply.error(401, message=f"Incorrect API key provided: {sent}"))


def test_score_transcripts_stops_on_a_refused_key_with_one_line_and_no_key_in_the_log(
        tmp_path: Path, openai_at_loopback: LoopbackServer, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    openai_at_loopback.set_responder(_echo_the_key)
    line = {"messages": [{"role": "user", "content": "hi"},
                         {"role": "assistant", "content": "hello"}], "expected_tool_calls": []}
    transcripts = tmp_path / "t.jsonl"
    transcripts.write_text("".join(json.dumps({"id": f"t{i}", **line}) + "\n"
                                   for i in range(100)))
    # The log of a command with no output directory: .harness/logs in the current directory
    # (conftest points it elsewhere for other tests).
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("harness.logs.LOG_DIR", Path(".harness") / "logs")
    monkeypatch.setattr(sys, "argv", [
        "harness", "score-transcripts", str(transcripts), "--json", "--judge",
        "openai:loop-judge", "--rubric", "final_response_quality"])
    with bare_logging(), pytest.raises(SystemExit) as stopped:
        main()
    assert stopped.value.code == 2  # as run, calibrate and pairwise: not 0 with null scores
    captured = capsys.readouterr()
    assert captured.out == ""  # no scores printed
    errors = [x for x in captured.err.splitlines() if x.startswith("error:")]
    assert errors == ["error: openai:loop-judge: OPENAI_API_KEY was refused (401); check "
                      "that the key is valid"]
    assert len(captured.err.strip().splitlines()) == 2  # the error and the log's name
    # Stopped at once: the calls already admitted under the provider's concurrency bound
    # finish, no further one starts (before: one call per transcript, 100).
    assert openai_at_loopback.request_count <= 64
    [log] = (tmp_path / ".harness" / "logs").glob("score-transcripts-*.log")
    assert log.name in captured.err
    text = log.read_text()
    assert "401" in text and "ERROR instructor" in text
    assert KEY not in text and KEY not in captured.err


def test_the_log_file_hides_keys_whatever_logs_them(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "plain-gateway-key-42")  # not shaped like a key
    path = tmp_path / "logs" / "x.log"
    with library_logs(path) as sink:
        library = logging.getLogger("some_sdk")
        library.error("request headers: %s", {"Authorization": f"Bearer {KEY}"})
        library.warning("retrying with x-api-key=plain-gateway-key-42")
        try:
            raise RuntimeError(f"refused {KEY}")
        except RuntimeError:
            library.exception("call failed")
        logging.getLogger("httpx").info("a library's INFO: not written")
        logging.getLogger("harness.models").info("our own retry line")
    text = path.read_text()
    assert KEY not in text and "plain-gateway-key-42" not in text
    assert text.count("[redacted]") >= 3 and "Traceback" in text
    assert "a library's INFO" not in text and "our own retry line" in text
    assert sink.problems == 3
    # Outside the block the logging set-up is as it was: nothing more reaches the file.
    logging.getLogger("some_sdk").error("after")
    assert "after" not in path.read_text()


def test_a_run_whose_agent_key_is_refused_prints_one_line_and_logs_no_key(
        tmp_path: Path, openai_at_loopback: LoopbackServer) -> None:
    openai_at_loopback.set_responder(_echo_the_key)
    suite = tmp_path / "s.yaml"
    suite.write_text(json.dumps({"id": "refused", "user": {"goal": "g", "script": ["hi"]},
                                 "agent": {"model": "openai:loop-agent"}}))
    out = tmp_path / "run"
    with bare_logging():
        result = CliRunner().invoke(app, ["run", str(suite), "--epochs", "3", "--cache-mode",
                                          "off", "--out", str(out), "--json"])
    assert result.exit_code == 2, result.output
    assert json.loads(result.stdout)["stopped"]["reason"] == "model_configuration"
    lines = result.stderr.strip().splitlines()
    assert lines[0] == ("error: the run stopped: openai:loop-agent: OPENAI_API_KEY was refused "
                        f"(401); check that the key is valid; fix it and continue with harness "
                        f"run --resume {out}")
    assert len(lines) <= 2  # and, when the libraries logged errors, the log file's name
    log = out / "harness.log"
    assert KEY not in result.stderr and (not log.exists() or KEY not in log.read_text())


def test_our_own_warnings_reach_the_terminal_without_raw_escape_sequences(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # e.g. a retry warning quoting a server's error text
    with library_logs(tmp_path / "harness.log"):
        logging.getLogger("harness.models").warning(
            "retrying: the server said \x1b]2;PWNED\x1b\\ \x1b[2J [red]x[/red]")
    err = capsys.readouterr().err
    assert "\x1b" not in err
    assert "warning: retrying: the server said \\x1b]2;PWNED\\x1b\\ \\x1b[2J [red]x[/red]" in err
    # the log file is read with cat or tail -f: its lines show the escapes too
    logged = (tmp_path / "harness.log").read_text(encoding="utf-8")
    assert "\x1b" not in logged and "the server said \\x1b]2;PWNED\\x1b\\ \\x1b[2J" in logged


def test_the_hint_counts_the_harness_s_own_warnings_and_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "harness.log"
    with library_logs(path) as sink:
        assert sink.hint() is None
        logging.getLogger("harness.runs.workers").warning("worker 1 sent nothing for 31 s")
        assert sink.hint() == (f"1 warning/error line (the harness's and the model libraries') "
                               f"is in {path} (--verbose shows them here)")
        logging.getLogger("some_sdk").error("refused")
    assert sink.hint() == (f"2 warning/error lines (the harness's and the model libraries') "
                           f"are in {path} (--verbose shows them here)")
