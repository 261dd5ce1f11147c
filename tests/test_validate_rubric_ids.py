"""`harness validate` and `harness run` check every rubric id a scenario names against the
rubric registry (built-in plus --rubrics), before any model call."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.errors import InputError
from harness.runs.api import run_suite
from harness.runs.config import RunConfig
from tests.helpers.cli import CliResult, run_cli

SCENARIO = """\
id: {id}
user: {{goal: say hi, script: [hi]}}
agent: {{model: mock:agent}}
rubrics: [{rubric}]
"""

RUBRIC = """\
id: politeness
target: final_response
threshold: 0.5
criteria:
  - id: polite
    question: Is the reply polite?
    scale: binary
"""


def validate(*args: str) -> CliResult:
    return run_cli("validate", *args)


def test_unknown_rubric_ids_are_named_with_the_known_ones(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO.format(id="a", rubric="task_completon"))
    done = validate(str(tmp_path / "s.yaml"))
    assert done.returncode == 2
    assert "s.yaml:4: rubrics[0]: unknown rubric 'task_completon'" in done.stderr
    assert "task_completion" in done.stderr


def test_user_rubrics_extend_the_known_ids(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO.format(id="a", rubric="politeness"))
    (tmp_path / "politeness.yaml").write_text(RUBRIC)
    assert validate(str(tmp_path / "s.yaml")).returncode == 2
    done = validate(str(tmp_path / "s.yaml"), "--rubrics", str(tmp_path / "politeness.yaml"))
    assert done.returncode == 0, done.stderr


def test_a_bad_rubric_file_is_reported_beside_scenario_problems(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO.format(id="a", rubric="politeness"))
    (tmp_path / "bad.yaml").write_text(RUBRIC.replace("criteria:", "criterias:"))
    done = validate(str(tmp_path / "s.yaml"), "--rubrics", str(tmp_path / "bad.yaml"))
    assert done.returncode == 2 and "bad.yaml" in done.stderr and "criterias" in done.stderr


async def test_run_refuses_an_unknown_rubric_before_any_model_call(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO.format(id="a", rubric="no_such_rubric"))
    with pytest.raises(InputError, match="unknown rubric 'no_such_rubric'"):
        await run_suite(RunConfig(scenario_paths=[str(tmp_path / "s.yaml")], offline=True),
                        tmp_path / "run")
    assert not (tmp_path / "run").exists()
