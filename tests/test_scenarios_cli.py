"""``harness validate`` and ``harness schema`` as a user runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml
from typer.testing import CliRunner

from harness.cli import app

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()

GOOD = {
    "id": "ok",
    "user": {"goal": "g", "script": ["hi"]},
    "agent": {"model": "mock:agent"},
}


def test_validate_examples_ok() -> None:
    result = runner.invoke(app, ["validate", str(ROOT / "scenarios")])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("ok: ") and "scenarios in 4 files" in result.output


def test_validate_reports_every_file_one_line_each(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(yaml.safe_dump(GOOD))
    (tmp_path / "a.yaml").write_text(yaml.safe_dump({**GOOD, "id": "a", "agnet": {}}))
    (tmp_path / "b.yaml").write_text(
        yaml.safe_dump({**GOOD, "id": "b", "agent": {"callable": "nowhere_xyz.mod:f"}})
    )
    result = runner.invoke(app, ["validate", str(tmp_path)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 3 and lines[-1] == "2 problems in 2 files"
    assert lines[0].startswith(f"{tmp_path / 'a.yaml'}:") and "unknown key 'agnet'" in lines[0]
    assert lines[1].startswith(f"{tmp_path / 'b.yaml'}:") and "agent.callable" in lines[1]
    # --no-imports skips importing Python code (for linting files without their packages)
    result = runner.invoke(app, ["validate", "--no-imports", str(tmp_path / "b.yaml")])
    assert result.exit_code == 0


def test_validate_through_the_console_entry_point_prints_no_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: [unclosed\n")
    result = subprocess.run(
        [sys.executable, "-m", "harness", "validate", str(bad), str(tmp_path / "missing.yaml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert f"{bad}:" in result.stderr and "not valid YAML" in result.stderr
    assert "missing.yaml: no such file or directory" in result.stderr


def test_schema_writes_and_checks(tmp_path: Path) -> None:
    out = tmp_path / "schemas"
    stale = runner.invoke(app, ["schema", "--out", str(out), "--check"])
    assert stale.exit_code == 1 and "missing or out of date" in stale.output
    written = runner.invoke(app, ["schema", "--out", str(out)])
    assert written.exit_code == 0 and (out / "scenario.schema.json").is_file()
    assert runner.invoke(app, ["schema", "--out", str(out), "--check"]).exit_code == 0
    assert (out / "scenario.schema.json").read_text() == (
        ROOT / "schemas" / "scenario.schema.json"
    ).read_text()
