"""The README stays true: its set-up commands, the CI script and the scenario example (the
README's tour and docs/scenarios.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.scenarios.loading import validate_paths

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _bash_blocks() -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", README, flags=re.S)]


def test_readme_opens_with_the_two_set_up_commands_and_ci_runs_the_test_one() -> None:
    setup = README[README.index("## Set-up"):README.index("## A five-minute tour")]
    commands = [b.strip() for b in re.findall(r"```bash\n(.*?)```", setup, flags=re.S)]
    assert commands == [
        "python -m pip install -e . && harness demo",
        "python -m pip install -e '.[test,adk,adk-eval,ray]' && python -m pytest",
    ]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert commands[1] in ci, ".ci/run must run exactly the README's test command"


@pytest.mark.parametrize("page", ["README.md", "docs/scenarios.md"])
def test_the_scenario_example_is_a_valid_scenario(page: str, tmp_path: Path) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    block = re.search(r"```yaml\n(id: .*?)```", text, flags=re.S)
    assert block is not None
    (tmp_path / "example.yaml").write_text(block.group(1), encoding="utf-8")
    report = validate_paths([tmp_path / "example.yaml"])
    assert report.errors == [] and [s.id for s in report.scenarios] == ["weather-current-paris"]
