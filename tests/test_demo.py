"""The README's main command: `harness demo` runs the whole pipeline offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_demo_runs_the_suite_and_a_calibration_study_offline(tmp_path: Path) -> None:
    env_free_of_keys = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    done = subprocess.run(
        [sys.executable, "-m", "harness", "demo", "--out", str(tmp_path / "demo"),
         "--epochs", "2"],
        capture_output=True, text=True, timeout=600, env=env_free_of_keys, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    assert "1. The example suite, offline" in out and "2. Judge calibration, offline" in out
    assert out.count("OFFLINE") >= 2, "both parts must say their numbers come from mock models"
    summary = json.loads((tmp_path / "demo" / "suite" / "summary.json").read_text())
    assert summary["offline"] is True
    assert summary["counts"]["samples"] == 2 * summary["counts"]["scenarios"] >= 20
    assert summary["counts"]["errored"] == 0
    report = json.loads((tmp_path / "demo" / "calibration" / "report.json").read_text())
    assert any("OFFLINE" in note for note in report["notes"])
    assert (tmp_path / "demo" / "calibration" / "judgments.jsonl").stat().st_size > 0
    page = (tmp_path / "demo" / "calibration" / "report.html").read_text()
    assert "Where the judge and the people disagree most" in page and "OFFLINE" in page
    assert "calibration/report.html" in out.replace("\n", "")  # a "Next" line points to it
    # Short enough to read (it printed 424 lines at 80 columns, 174 of them failure groups):
    # the largest failure groups only, the rest pointed to; the calibration's headline
    # figures, the whole report pointed to.
    groups = summary["failure_analysis"]["groups"]
    assert len(groups) > 5
    assert sum(line.startswith("• ") for line in out.splitlines()) == 5
    flat = " ".join(out.split())
    assert f"{len(groups) - 5} more groups" in flat and "(failure_analysis)" in flat
    assert "harness calibrate --judgments" in flat and "policy:" not in out
    assert len(out.splitlines()) < 200
    # the latency and tools tables are left to the report, with a line saying where they are
    assert "latency and per-tool figures: in summary.json and the HTML report" in out
    assert "episode: no judging" not in out
