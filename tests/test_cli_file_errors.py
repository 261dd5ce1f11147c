"""Every file a command reads or writes on a user's behalf: a path that is missing, a
directory, unreadable, not UTF-8, a file where a directory is needed, or a directory where a
file is needed is one line on stderr naming the path and what was expected, with exit 2;
never a traceback, and nothing judged or run before the refusal.

Commands run in-process through ``harness.cli.main`` (the console entry point's function),
so the one-line error printer is what is tested."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cli import main
from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
WEATHER = ROOT / "scenarios" / "weather.yaml"
POINTWISE_ITEMS = ROOT / "examples" / "calibration" / "pointwise_items.jsonl"
NOT_UTF8 = b"openai:\n  api_key: \xff\xfe\n"

Cli = Callable[..., tuple[int, str]]


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Cli:
    """Run ``harness ARGS`` in-process; return (exit code, stderr)."""

    def run(*args: str | Path) -> tuple[int, str]:
        monkeypatch.setattr(sys, "argv", ["harness", *map(str, args)])
        with pytest.raises(SystemExit) as exited:
            main()
        code = exited.value.code
        return code if isinstance(code, int) else 0, capsys.readouterr().err

    return run


def one_line_error(result: tuple[int, str], *fragments: str | Path) -> str:
    """The single error line of a failed command, checked to name every fragment."""
    code, err = result
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for fragment in fragments:
        assert str(fragment) in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished offline run (one epoch of the example scenarios)."""
    out = tmp_path_factory.mktemp("file_errors") / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", ["harness", "run", str(WEATHER), "--offline", "--epochs",
                                    "1", "--cache-mode", "off", "--out", str(out), "--json"])
        with pytest.raises(SystemExit) as exited:
            main()
    assert exited.value.code == 0
    return out


OFFLINE_RUN = ("run", WEATHER, "--offline", "--epochs", "1", "--cache-mode", "off")


# -- files read ----------------------------------------------------------------------------

def test_a_models_config_that_is_not_utf8(tmp_path: Path, cli: Cli) -> None:
    config = tmp_path / "m.yaml"
    config.write_bytes(NOT_UTF8)
    line = one_line_error(cli(*OFFLINE_RUN, "--out", tmp_path / "r", "--models-config", config),
                          f"{config}:2: not UTF-8 text (byte 0xff at column 12)",
                          "expected a models YAML file")
    assert "Traceback" not in line
    assert not (tmp_path / "r").exists()


def test_a_models_config_that_is_a_directory_or_missing(tmp_path: Path, cli: Cli) -> None:
    one_line_error(cli(*OFFLINE_RUN, "--models-config", tmp_path),
                   f"{tmp_path}: is a directory; expected a models YAML file")
    one_line_error(cli("pairwise", tmp_path, tmp_path, "--offline", "--rubric", "x",
                       "--models-config", tmp_path / "nope.yaml"),
                   "nope.yaml: file not found; expected a models YAML file")


def test_an_unreadable_models_config(tmp_path: Path, cli: Cli,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "m.yaml"
    config.write_text("timeout_s: 5\n")
    original = Path.read_bytes

    def read_bytes(self: Path) -> bytes:  # tests may run as root, whom chmod cannot stop
        if self == config:
            raise PermissionError(13, "Permission denied", str(self))
        return original(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    one_line_error(cli(*OFFLINE_RUN, "--models-config", config),
                   f"{config}: permission denied; cannot read a models YAML file")


def test_scenario_and_rubric_files_that_are_not_utf8(tmp_path: Path, cli: Cli) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_bytes(b"id: x\ngoal: caf\xe9\n")
    one_line_error(cli("run", scenario, "--offline"), f"{scenario}:2: not UTF-8 text",
                   "expected a scenario file (YAML)")
    rubric = tmp_path / "r.yaml"
    rubric.write_bytes(b"\xff")
    one_line_error(cli(*OFFLINE_RUN, "--rubrics", rubric), f"{rubric}:1: not UTF-8 text",
                   "expected a rubric file (YAML or JSON)")


def test_calibrate_judgments_that_is_a_directory(tmp_path: Path, cli: Cli) -> None:
    one_line_error(cli("calibrate", "--judgments", tmp_path),
                   f"{tmp_path}: is a directory; expected a JSONL or CSV file of judgment "
                   "records")
    study = tmp_path / "study"
    study.mkdir()
    (study / "judgments.jsonl").write_text("")
    one_line_error(cli("calibrate", "--judgments", study), f"{study}: is a directory",
                   f"give {study / 'judgments.jsonl'}")


def test_calibration_files_that_are_not_utf8_or_a_directory(tmp_path: Path, cli: Cli) -> None:
    judgments = tmp_path / "j.csv"
    judgments.write_bytes(b"item_id,human,judge\na,1,\xff\n")
    one_line_error(cli("calibrate", "--judgments", judgments), f"{judgments}:2: not UTF-8")
    one_line_error(cli("calibrate", tmp_path, "--offline", "--rubric", "final_response_quality",
                       "--cache-mode", "off", "--out", tmp_path / "study"),
                   f"{tmp_path}: is a directory; expected a JSONL or CSV file of labelled items")


def test_transcripts_scores_and_summaries(tmp_path: Path, cli: Cli) -> None:
    one_line_error(cli("score-transcripts", tmp_path, "--json"),
                   f"{tmp_path}: is a directory; expected a JSONL file of transcripts")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"id": "\xc3"}\n')
    one_line_error(cli("score-transcripts", bad), f"{bad}:1: not UTF-8")
    one_line_error(cli("stats", bad, "--json"), f"{bad}:1: not UTF-8",
                   "expected a JSONL file of sample scores")
    one_line_error(cli("report", tmp_path), f"{tmp_path / 'summary.json'}: file not found; "
                   "expected a run summary")
    (tmp_path / "summary.json").write_bytes(b'{"schema": "\xff"}')
    one_line_error(cli("report", tmp_path), f"{tmp_path / 'summary.json'}:1: not UTF-8")


def test_an_error_message_is_printed_literally_not_as_markup(tmp_path: Path, cli: Cli) -> None:
    odd = tmp_path / "a[/]b[bold]c.jsonl"  # rich markup in a path must not break the printer
    one_line_error(cli("stats", odd), f"{odd}: file not found")


# -- files and directories written ---------------------------------------------------------

def test_run_out_that_is_a_file_or_under_a_file(tmp_path: Path, cli: Cli) -> None:
    blocker = tmp_path / "f.txt"
    blocker.write_text("keep")
    one_line_error(cli(*OFFLINE_RUN, "--out", blocker),
                   f"{blocker}: exists and is not a directory; expected a run directory")
    one_line_error(cli(*OFFLINE_RUN, "--out", blocker / "sub"),
                   f"{blocker / 'sub'}: cannot be created: {blocker} is a file")
    assert blocker.read_text() == "keep"


def test_run_out_that_cannot_be_written(tmp_path: Path, cli: Cli,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "r"
    out.mkdir()
    real_access = os.access

    def access(path: str | Path, mode: int, **kwargs: object) -> bool:
        # tests may run as root, whom permissions cannot stop: refuse writing into `out`
        return not (Path(path) == out and mode & os.W_OK) and real_access(path, mode)

    monkeypatch.setattr(os, "access", access)
    one_line_error(cli(*OFFLINE_RUN, "--out", out),
                   f"{out}: permission denied; cannot write into a run directory")


def test_cache_paths_that_cannot_be_used(tmp_path: Path, cli: Cli,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    run = ("run", WEATHER, "--offline", "--epochs", "1")
    one_line_error(cli(*run, "--cache", tmp_path, "--out", tmp_path / "r1"),
                   f"{tmp_path}: is a directory; expected the response cache")
    monkeypatch.chdir(tmp_path)
    Path(".harness").write_text("")  # the default cache's directory is a file
    one_line_error(cli(*run, "--out", "r2"),
                   f"{tmp_path / '.harness' / 'cache.sqlite'}: cannot be written: "
                   f"{tmp_path / '.harness'} is a file, not a directory; expected the response "
                   "cache")
    Path(".harness").unlink()
    cache = tmp_path / "cache.sqlite"
    cache.write_bytes(b"")
    real_access = os.access

    def access(path: str | Path, mode: int, **kwargs: object) -> bool:
        return not (Path(path) == cache and mode & os.W_OK) and real_access(path, mode)

    monkeypatch.setattr(os, "access", access)  # as root, permissions cannot stop a test
    one_line_error(cli(*run, "--cache", cache, "--out", "r3"),
                   f"{cache}: permission denied; cannot write the response cache")
    assert not any(Path(name).exists() for name in ("r1", "r2", "r3"))


def test_calibrate_out_and_cache_that_are_files(tmp_path: Path, cli: Cli) -> None:
    blocker = tmp_path / "f.txt"
    blocker.write_text("")
    study = ("calibrate", POINTWISE_ITEMS, "--offline", "--rubric", "final_response_quality")
    one_line_error(cli(*study, "--cache-mode", "off", "--out", blocker),
                   f"{blocker}: exists and is not a directory; expected a calibration study "
                   "directory")
    one_line_error(cli(*study, "--cache", blocker / "c.sqlite", "--out", tmp_path / "s"),
                   f"{blocker / 'c.sqlite'}: cannot be written: {blocker} is a file")


def test_pairwise_out_is_refused_before_any_judging(run_dir: Path, tmp_path: Path, cli: Cli,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    import harness.runs.pairwise_runs as pairwise

    def no_judging(*args: object, **kwargs: object) -> None:
        raise AssertionError("judged before refusing --out")

    monkeypatch.setattr(pairwise, "compare_runs_pairwise", no_judging)
    base = ("pairwise", run_dir, run_dir, "--offline", "--rubric", "task_completion",
            "--cache-mode", "off")
    one_line_error(cli(*base, "--out", tmp_path),
                   f"{tmp_path}: is a directory; expected the pairwise output file")
    blocker = tmp_path / "f.txt"
    blocker.write_text("")
    one_line_error(cli(*base, "--out", blocker / "pairs.jsonl"),
                   f"cannot be written: {blocker} is a file")


def test_pairwise_out_is_written_whole(run_dir: Path, tmp_path: Path, cli: Cli) -> None:
    out = tmp_path / "new" / "pairs.jsonl"
    code, err = cli("pairwise", run_dir, run_dir, "--offline", "--rubric", "task_completion",
                    "--cache-mode", "off", "--out", out, "--json")
    assert code == 0, err
    assert len(out.read_text().splitlines()) == 6
    assert sorted(p.name for p in out.parent.iterdir()) == ["pairs.jsonl"]


def test_schema_and_demo_out_that_is_a_file(tmp_path: Path, cli: Cli) -> None:
    blocker = tmp_path / "f.txt"
    blocker.write_text("")
    one_line_error(cli("schema", "--out", blocker), f"{blocker}: exists and is not a directory")
    one_line_error(cli("demo", "--out", blocker), f"cannot be created: {blocker} is a file")



def test_schema_check_on_a_file_that_is_not_utf8_says_out_of_date(tmp_path: Path,
                                                                  cli: Cli) -> None:
    assert cli("schema", "--out", tmp_path)[0] == 0
    (tmp_path / "rubric.schema.json").write_bytes(b"\xff\xfe{}")
    code, err = cli("schema", "--out", tmp_path, "--check")
    assert code == 1 and err.strip() == (f"{tmp_path / 'rubric.schema.json'}: missing or out of "
                                         f"date; run `harness schema --out {tmp_path}`")


def test_a_refused_command_leaves_no_output_directory_behind(tmp_path: Path) -> None:
    """Without --out, run and calibrate claim runs/<date>-<time>; refused for bad input,
    they remove it again (it used to stay behind, empty)."""
    for args in (("run", tmp_path / "missing.yaml", "--offline"),
                 ("calibrate", tmp_path / "missing.jsonl", "--offline", "--rubric",
                  "final_response_quality")):
        done = run_cli(*args, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert not list((tmp_path / "runs").iterdir())
