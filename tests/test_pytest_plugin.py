"""The pytest plugin (harness/pytest_plugin.py) in sessions of its own (pytester), the
testing helpers (evaluate, assert_passes) and the fixtures users get."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from statsmodels.stats.proportion import proportion_confint

from harness.testing import assert_passes, evaluate
from harness.testing.replies import Reply
from harness.testing.server import LoopbackServer

pytest_plugins = ("pytester",)

REPO = Path(__file__).resolve().parents[1]
ADK_DICE = REPO / "tests" / "data" / "adk" / "dice"

# A scripted user and mock:echo (it repeats the user) as the agent: no simulator or judge,
# and a required phrase the echo has (passes) or lacks (fails), every epoch alike. (Not
# --harness-offline: it would put mock:agent in place of the scenarios' agent.)
SCENARIOS = """\
- id: greets-back
  user: {goal: be greeted, script: ["hello there"]}
  agent: {model: "mock:echo"}
  expectations: {required_phrases: ["hello"]}
- id: offers-refund
  user: {goal: get a refund, script: ["I want my money back"]}
  agent: {model: "mock:echo"}
  expectations: {required_phrases: ["refund"]}
"""


# A user's project sets pytest-asyncio's loop scope (else every inner session warns).
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


@pytest.fixture(autouse=True)
def _quiet_asyncio(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with two scenarios under evals/ and one ordinary test."""
    pytester.mkdir("evals")
    (pytester.path / "evals" / "greet.yaml").write_text(SCENARIOS, encoding="utf-8")
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    return pytester


def _failure_messages(done: pytest.RunResult) -> list[str]:
    reports = done.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
    return [str(r.longrepr) for r in reports if r.failed]


def test_the_entry_point_names_the_plugin() -> None:
    found = {e.name: e.value for e in entry_points(group="pytest11")}
    assert found.get("harness") == "harness.pytest_plugin"


def test_one_item_per_scenario_a_pass_and_a_failure(project: pytest.Pytester) -> None:
    done = project.runpytest("--harness-scenarios", "evals", "--harness-epochs", "3",
                             "--harness-agent", "mock:echo", "-rA")
    done.assert_outcomes(passed=2, failed=1)
    out = done.stdout.str()
    assert "PASSED evals/greet.yaml::greets-back" in out
    report = done.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
    failed = [r for r in report if r.failed]
    assert [r.nodeid for r in failed] == ["evals/greet.yaml::offers-refund"]
    message = str(failed[0].longrepr)
    assert "scenario 'offers-refund' does not pass: pass rate 0.000 < 1.000" in message
    assert "0 of 3 passed; 95% interval 0.000–" in message
    assert "failing checks:" in message
    assert "required_phrases: failed 3 of 3; score 0.000 (" in message
    assert "n=3" in message
    assert "greets-back" not in message  # only the item's own scenario
    run_dir = Path(message.split("run directory: ")[1].splitlines()[0])
    assert (run_dir / "summary.json").is_file()
    assert f"HTML report: {run_dir / 'report.html'}" in message
    assert (run_dir / "report.html").is_file()


def test_a_pytest_without_its_private_tmp_path_factory_still_gets_a_run_directory(
        project: pytest.Pytester) -> None:
    # The run directory comes from the session's tmp_path_factory, asked for as a fixture
    # (pytest's public way), never from where pytest keeps it: a pytest that keeps it
    # elsewhere still runs the scenarios, under its base temporary directory.
    project.makeconftest(
        "import pytest\n"
        "saved = {}\n"
        "def pytest_collection_finish(session):\n"  # gone while the items run
        "    saved['factory'] = session.config._tmp_path_factory\n"
        "    del session.config._tmp_path_factory\n"
        "@pytest.fixture(scope='session')\n"  # the fixture, served from elsewhere
        "def tmp_path_factory():\n"
        "    return saved['factory']\n"
        "@pytest.hookimpl(tryfirst=True)\n"
        "def pytest_sessionfinish(session):\n"  # back for pytest's own clean-up
        "    session.config._tmp_path_factory = saved['factory']\n")
    base = project.path / "base"
    done = project.runpytest("--harness-scenarios", "evals", "--harness-epochs", "1",
                             "--harness-agent", "mock:echo", "-k", "offers",
                             f"--basetemp={base}")
    done.assert_outcomes(failed=1)
    message = str(next(r for r in done.reprec.getreports(  # type: ignore[attr-defined]
        "pytest_runtest_logreport") if r.failed).longrepr)
    run_dir = Path(message.split("run directory: ")[1].splitlines()[0])
    assert run_dir.name.startswith("harness-run") and (run_dir / "summary.json").is_file()
    assert run_dir.parent == base.resolve()


def test_one_run_for_the_session(project: pytest.Pytester) -> None:
    out = project.path / "run"
    project.runpytest("--harness-scenarios", "evals", "--harness-epochs", "2",
                      "--harness-out", str(out)).assert_outcomes(
        passed=2, failed=1)
    lines = (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4  # both scenarios x 2 epochs, in the one run directory


def test_without_harness_out_the_session_still_makes_one_run(
        project: pytest.Pytester) -> None:
    # The default run directory comes from tmp_path_factory, which hands out a new folder
    # per call: the session's one run must ask for it once, not once per item.
    base = project.path / "base"
    done = project.runpytest("--harness-scenarios", "evals", "--harness-epochs", "2",
                             "--harness-agent", "mock:echo", "-k", "not plain",
                             f"--basetemp={base}")
    done.assert_outcomes(passed=1, failed=1)
    # mktemp's numbered folders (beside them, a "harness-runcurrent" link to the newest)
    [run_dir] = [p for p in base.iterdir() if re.fullmatch(r"harness-run\d+", p.name)]
    lines = (run_dir / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert sorted(json.loads(x)["scenario_id"] for x in lines) == [
        "greets-back", "greets-back", "offers-refund", "offers-refund"]
    message = _failure_messages(done)[0]
    assert f"run directory: {run_dir}" in message


def test_the_documented_default_epochs_is_what_runs(project: pytest.Pytester) -> None:
    # the default as docs/pytest.md's table of options states it
    docs = (REPO / "docs" / "pytest.md").read_text(encoding="utf-8")
    found = re.search(r"^\| `--harness-epochs K` \| .*\(default (\d+)\) \|$", docs, re.M)
    assert found is not None
    documented = int(found.group(1))
    out = project.path / "run"
    project.runpytest("--harness-scenarios", "evals", "--harness-out", str(out),
                      "-k", "greets").assert_outcomes(passed=1)
    lines = (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == documented
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["config"]["epochs"] == documented


def test_adk_eval_sets_are_collected_one_item_per_eval_case(
        pytester: pytest.Pytester) -> None:
    # In a process of its own: the eval-set reader must be registered by what the plugin
    # imports, not by whatever this test process happens to have imported already.
    shutil.copytree(ADK_DICE, pytester.path / "evals")
    [evalset] = (pytester.path / "evals").glob("*.evalset.json")
    cases = json.loads(evalset.read_text(encoding="utf-8"))["evalCases"]
    done = pytester.runpytest_subprocess("--harness-scenarios", "evals", "--co", "-q",
                                         "-p", "no:cacheprovider")
    collected = [x for x in done.stdout.lines if "::" in x]
    assert collected == [f"evals/{evalset.name}::{c['evalId']}" for c in cases]
    assert len(collected) == 3


def test_k_deselection_reduces_what_is_run(project: pytest.Pytester) -> None:
    out = project.path / "run"
    project.runpytest("--harness-scenarios", "evals", "--harness-epochs",
                      "2", "--harness-out", str(out), "-k", "greets").assert_outcomes(passed=1)
    lines = (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and all('"scenario_id": "greets-back"' in x or
                                   '"scenario_id":"greets-back"' in x for x in lines)


def test_min_pass_rate_and_lower_bound(project: pytest.Pytester) -> None:
    # 0.0 lets the failing scenario through on its mean; the lower bound of a 3-of-3 pass
    # rate (Wilson, about 0.44) does not reach 0.5.
    project.runpytest("--harness-scenarios", "evals", "-k", "not plain",
                      "--harness-min-pass-rate", "0").assert_outcomes(passed=2)
    done = project.runpytest("--harness-scenarios", "evals",
                             "--harness-epochs", "3", "-k", "greets",
                             "--harness-min-pass-rate", "0.5", "--harness-gate-on",
                             "lower-bound")
    done.assert_outcomes(failed=1)
    # read the item's own report: how much of it pytest repeats in its short summary
    # depends on the terminal and on whether it runs under CI (the CI variable)
    [line] = [x for x in _failure_messages(done)[0].splitlines()
              if "does not pass: pass rate lower bound" in x]
    shown = float(line.split("lower bound ")[1].split(" <")[0])
    wilson_low, _ = proportion_confint(3, 3, alpha=0.05, method="wilson")
    assert shown == pytest.approx(wilson_low, abs=2e-3)
    assert line.endswith(" < 0.500")


def test_tree_collection_needs_the_ini_option(pytester: pytest.Pytester) -> None:
    (pytester.path / "greet.scenario.yaml").write_text(SCENARIOS, encoding="utf-8")
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    pytester.runpytest().assert_outcomes(passed=1)
    pytester.makeini(INI + "harness_collect = true\n")
    pytester.runpytest("--harness-epochs", "1").assert_outcomes(
        passed=2, failed=1)


def test_a_session_that_does_not_ask_sees_nothing(project: pytest.Pytester) -> None:
    (project.path / "also.scenario.yaml").write_text(SCENARIOS, encoding="utf-8")
    with_plugin = project.runpytest("--co", "-q")
    without = project.runpytest("--co", "-q", "-p", "no:harness")
    assert with_plugin.stdout.lines[:-1] == without.stdout.lines[:-1]
    with_plugin.assert_outcomes()
    assert "test_plain.py::test_plain" in with_plugin.stdout.str()
    assert "scenario" not in with_plugin.stdout.str()


def test_importing_the_plugin_imports_nothing_heavy() -> None:
    code = ("import sys, harness.pytest_plugin; "
            "print(sorted(m for m in sys.modules if m.startswith(('harness.', 'pydantic', "
            "'scipy', 'openai', 'anthropic', 'yaml'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    # harness.version is the front door's one eager import: a single assignment.
    assert done.stdout.strip() == "['harness.pytest_plugin', 'harness.version']"


def test_a_bad_scenario_file_is_one_line_collection_error(project: pytest.Pytester) -> None:
    (project.path / "evals" / "bad.yaml").write_text("- id: x\n  usr: {}\n", encoding="utf-8")
    done = project.runpytest("--harness-scenarios", "evals")
    done.assert_outcomes(errors=1)
    done.stdout.fnmatch_lines(["*bad.yaml*usr*"])
    assert "Traceback" not in done.stdout.str()


def test_a_run_that_cannot_start_fails_every_item_with_its_reason(
        pytester: pytest.Pytester) -> None:
    pytester.mkdir("evals")
    (pytester.path / "evals" / "nomodel.yaml").write_text(
        "- id: a\n  user: {goal: g, script: [hi]}\n  agent: {system_prompt: x}\n"
        "- id: b\n  user: {goal: g, script: [hi]}\n  agent: {system_prompt: x}\n",
        encoding="utf-8")
    done = pytester.runpytest("--harness-scenarios", "evals")
    done.assert_outcomes(failed=2)
    # both scenarios' problem, in each of the two items
    messages = _failure_messages(done)
    assert len(messages) == 2
    for message in messages:
        assert message.count("agent.model: no agent model: set it or pass --agent") == 2
    assert "Traceback" not in done.stdout.str()


def test_evaluate_and_assert_passes(tmp_path: Path) -> None:
    (tmp_path / "greet.yaml").write_text(SCENARIOS, encoding="utf-8")
    result = evaluate(tmp_path / "greet.yaml", out=tmp_path / "run", epochs=2,
                      cache_mode="off")
    assert result.run_dir == tmp_path / "run"
    assert (tmp_path / "run" / "report.html").is_file()
    assert_passes(result, scenario="greets-back")
    assert_passes(result, min_pass_rate=0.5)  # one of two scenarios passes every epoch
    with pytest.raises(AssertionError) as failed:
        assert_passes(result)
    message = str(failed.value)
    assert message.startswith("the suite does not pass: pass rate 0.500 < 1.000")
    assert "scenario 'offers-refund'" in message and "scenario 'greets-back'" not in message
    assert "required_phrases: failed 2 of 2" in message
    assert f"run directory: {tmp_path / 'run'}" in message
    with pytest.raises(ValueError, match="min_pass_rate"):
        assert_passes(result, min_pass_rate=1.5)
    with pytest.raises(KeyError):
        assert_passes(result, scenario="nope")


def test_harness_hub_calls_the_loopback_server(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent='''
import asyncio
from harness.models.request import ModelRequest
from harness.models.types import Message
from harness.testing import Reply

def test_agent(harness_hub, harness_loopback):
    harness_loopback.enqueue(Reply.text_reply("hello from the server"))
    model = harness_hub.get("openai:my-agent")
    reply = asyncio.run(model.chat(ModelRequest([Message(role="user", content="hi")],
                                                role="agent")))
    assert reply.message.content == "hello from the server"
    assert harness_loopback.request_count == 1
''')
    pytester.runpytest("-p", "no:asyncio").assert_outcomes(passed=1)


def test_harness_hub_points_evaluate_at_the_server(
        tmp_path: Path, harness_hub: object, harness_loopback: LoopbackServer) -> None:
    (tmp_path / "s.yaml").write_text(
        "- id: real-agent\n  user: {goal: g, script: ['hello']}\n"
        "  agent: {model: 'openai:my-agent'}\n"
        "  expectations: {required_phrases: ['hello']}\n", encoding="utf-8")
    harness_loopback.enqueue(Reply.text_reply("hello, how can I help?"), times=1)
    result = evaluate(tmp_path / "s.yaml", out=tmp_path / "run", epochs=1, cache_mode="off")
    assert harness_loopback.request_count == 1
    assert_passes(result)


def test_an_eval_id_holding_a_colon_breaks_no_item_of_the_session(
        project: pytest.Pytester) -> None:
    data = json.loads((ADK_DICE / "dice.evalset.json").read_text(encoding="utf-8"))
    data["evalCases"][0]["evalId"] = "greeting:v2"
    data["evalCases"][1]["evalId"] = "a,b"
    (project.path / "evals" / "dice.evalset.json").write_text(json.dumps(data),
                                                                encoding="utf-8")
    done = project.runpytest("--harness-scenarios", "evals", "--harness-epochs", "1",
                             "--harness-offline", "-p", "no:cacheprovider")
    reports = done.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
    ran = [r.nodeid for r in reports if r.when == "call"]
    assert len([x for x in ran if "dice.evalset.json" in x]) == 3
    assert any(x.endswith("::greeting:v2") for x in ran)
    assert "no such file" not in done.stdout.str()
    for message in _failure_messages(done):  # the offline agent may fail a check; no more
        assert "dice.evalset.json:" not in message


@pytest.mark.parametrize("epochs", ["0", "-3", "abc", "10001"])
def test_a_bad_epoch_count_is_a_usage_error(project: pytest.Pytester, epochs: str) -> None:
    done = project.runpytest("--harness-scenarios", "evals", f"--harness-epochs={epochs}")
    assert done.ret == pytest.ExitCode.USAGE_ERROR
    done.stderr.fnmatch_lines([f"*--harness-epochs: expected a whole number of epochs from 1 "
                               f"to 10000, got '{epochs}'"])
    assert "ValidationError" not in done.stderr.str() + done.stdout.str()


def test_the_plugins_epoch_bound_is_the_runs() -> None:
    from pydantic import ValidationError

    from harness.pytest_plugin import MAX_EPOCHS
    from harness.testing.evaluation import run_config

    assert run_config("x.yaml", epochs=MAX_EPOCHS).design.epochs == MAX_EPOCHS
    with pytest.raises(ValidationError):
        run_config("x.yaml", epochs=MAX_EPOCHS + 1)
