"""Counts on the HTML pages agree with their nouns: a one-scenario, one-epoch run's page says
"1 scenario × 1 epoch", never "1 scenarios" (the terminal's tables already did)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]


def test_a_one_scenario_one_epoch_run_page_uses_the_singular(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = run_cli("run", f"{ROOT / 'scenarios' / 'weather.yaml'}:weather-current-paris",
                   "--offline", "--epochs", "1", "--cache-mode", "off", "--out", str(out))
    assert done.returncode == 0, done.stderr
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "1 scenario × 1 epoch<" in page
    assert not re.search(r"\b1 (scenarios|epochs)\b", page)
