"""The pytest plugin's gate on the corrected lower bound (issue 27): ``--harness-gate-on
corrected-lower-bound`` adds one item, ``harness::suite-gate``, that gates the suite's pass
rate corrected by random human labels (``--harness-labels FILE`` or the run's stored ones)
with the words and numbers of ``harness run --gate-on corrected-lower-bound``; too few
labels fail it saying how many more; bad input is one line; the Python API does the same.
Sessions of their own (pytester), offline (mock:echo as the agent)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.runs.corrected_figures import gate_corrected_figures
from harness.runs.summary import read_summary
from harness.stats.corrected import MIN_LABELS
from harness.testing import assert_passes, evaluate
from tests.helpers.cli import run_cli

pytest_plugins = ("pytester",)

# Five scenarios the echo passes (it repeats "hello"), one it fails (no "refund").
GREETINGS = [f"greets-{n}" for n in range(5)]
SCENARIOS = "".join(
    f'- id: {sid}\n  user: {{goal: be greeted, script: ["hello {sid}"]}}\n'
    '  agent: {model: "mock:echo"}\n  expectations: {required_phrases: ["hello"]}\n'
    for sid in GREETINGS) + (
    '- id: offers-refund\n  user: {goal: get a refund, script: ["I want my money back"]}\n'
    '  agent: {model: "mock:echo"}\n  expectations: {required_phrases: ["refund"]}\n')
EPOCHS = 4
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


def _label_lines(count: int, *, random: bool = True) -> str:
    """Pass/fail labels agreeing with the judge, for the first ``count`` samples taken
    scenario by scenario (epoch 0 of each first, so they spread over scenarios)."""
    samples = [(sid, epoch) for epoch in range(EPOCHS) for sid in [*GREETINGS, "offers-refund"]]
    return "".join(json.dumps({
        "scenario_id": sid, "epoch": epoch, "annotator": "ana", "target": "passed",
        "value": sid != "offers-refund", "random": random}) + "\n"
        for sid, epoch in samples[:count])


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(INI)
    pytester.mkdir("evals")
    (pytester.path / "evals" / "greet.yaml").write_text(SCENARIOS, encoding="utf-8")
    return pytester


def _run(project: pytest.Pytester, *args: str, labels: str | None = None,
         rate: str = "0.3") -> pytest.RunResult:
    if labels is not None:
        (project.path / "labels.jsonl").write_text(labels, encoding="utf-8")
        args = ("--harness-labels", "labels.jsonl", *args)
    return project.runpytest("--harness-scenarios", "evals", "--harness-epochs", str(EPOCHS),
                             "--harness-gate-on", "corrected-lower-bound",
                             "--harness-min-pass-rate", rate, "-p", "no:xdist", *args)


def _reports(done: pytest.RunResult) -> dict[str, pytest.TestReport]:
    got = done.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
    return {r.nodeid: r for r in got if r.when == "call"}


def test_too_few_labels_fail_the_suite_item_saying_how_many_more(
        project: pytest.Pytester) -> None:
    done = _run(project, labels=_label_lines(4))
    # the scenario items do not gate on the judge's figure (the offers-refund one passes);
    # the suite item does, on the corrected one
    done.assert_outcomes(passed=6, failed=1)
    suite = _reports(done)["harness::suite-gate"]
    assert suite.failed
    message = str(suite.longrepr)
    assert message.startswith(
        f"the suite does not pass: pass rate: no corrected figure (needs at least "
        f"{MIN_LABELS} random labels, got 4: {MIN_LABELS - 4} more")
    assert "or give --harness-labels FILE" in message
    out = done.stdout.str()
    assert "harness suite gate" in out and "FAILED: pass rate: no corrected figure" in out


def test_no_labels_at_all_fail_the_suite_item_too(project: pytest.Pytester) -> None:
    done = _run(project)
    done.assert_outcomes(passed=6, failed=1)
    assert f"no random labels of 'passed': needs at least {MIN_LABELS}" in str(
        _reports(done)["harness::suite-gate"].longrepr)


def test_labels_chosen_by_hand_do_not_count(project: pytest.Pytester) -> None:
    done = _run(project, labels=_label_lines(24, random=False))
    assert f"no random labels of 'passed': needs at least {MIN_LABELS}" in str(
        _reports(done)["harness::suite-gate"].longrepr)


def test_the_gate_has_the_runs_words_and_numbers(project: pytest.Pytester) -> None:
    out = project.path / "run"
    done = _run(project, "--harness-out", str(out), "-rA", labels=_label_lines(18))
    done.assert_outcomes(passed=7)
    line = re.search(r"^passed: (pass rate corrected lower bound .*)$", done.stdout.str(),
                     re.MULTILINE)
    assert line is not None, done.stdout.str()
    summary = read_summary(out)
    figures = gate_corrected_figures(out, summary.config.design,
                                     project.path / "labels.jsonl")
    assert figures is not None and figures.pass_rate is not None
    assert figures.pass_rate.n_labelled == 18
    assert line[1].startswith(f"pass rate corrected lower bound "
                              f"{figures.pass_rate.ci_low:.3f} >= 0.300 (corrected with 18 "
                              "human labels")
    cli = run_cli("run", "--resume", out, "--min-pass-rate", "0.3", "--gate-on",
                  "corrected-lower-bound", "--labels", project.path / "labels.jsonl",
                  "--json")
    assert cli.returncode == 0, cli.stderr
    [check] = json.loads(cli.stdout)["gate"]["checks"]
    assert check["detail"] == line[1]


def test_a_bar_above_the_corrected_lower_bound_fails_with_the_figure(
        project: pytest.Pytester) -> None:
    done = _run(project, labels=_label_lines(18), rate="0.99")
    done.assert_outcomes(passed=6, failed=1)
    message = str(_reports(done)["harness::suite-gate"].longrepr)
    assert re.match(r"the suite does not pass: pass rate corrected lower bound 0\.\d{3} < "
                    r"0\.990 \(corrected with 18 human labels: ", message), message
    assert "scenario 'offers-refund': pass rate 0.000" in message  # the evidence, as ever


def test_deselecting_every_scenario_leaves_the_suite_item_nothing_to_measure(
        project: pytest.Pytester) -> None:
    done = _run(project, "-k", "suite", labels=_label_lines(18))
    done.assert_outcomes(failed=1)
    assert "nothing to measure: no scenario item is selected" in str(
        _reports(done)["harness::suite-gate"].longrepr)


def test_without_the_corrected_gate_no_suite_item_is_added(project: pytest.Pytester) -> None:
    done = project.runpytest("--harness-scenarios", "evals", "--harness-epochs", "2",
                             "--harness-min-pass-rate", "0", "-p", "no:xdist")
    done.assert_outcomes(passed=6)
    assert "harness suite gate" not in done.stdout.str()


# ---- bad input ----

def _usage_error(done: pytest.RunResult) -> str:
    assert done.ret == pytest.ExitCode.USAGE_ERROR, done.stdout.str()
    [line] = [ln for ln in done.stderr.lines if ln.startswith("ERROR:")]
    return line


def test_labels_without_the_corrected_gate_are_refused(project: pytest.Pytester) -> None:
    (project.path / "labels.jsonl").write_text(_label_lines(12), encoding="utf-8")
    done = project.runpytest("--harness-scenarios", "evals", "--harness-labels",
                             "labels.jsonl", "--harness-gate-on", "lower-bound",
                             "-p", "no:xdist")
    assert "--harness-labels applies only with --harness-gate-on corrected-lower-bound" in (
        _usage_error(done))


def test_a_missing_labels_file_is_refused(project: pytest.Pytester) -> None:
    done = _run(project, "--harness-labels", "nowhere.jsonl")
    assert _usage_error(done).endswith("nowhere.jsonl: no such file")


@pytest.mark.parametrize(("line", "field"), [
    ('{"scenario_id": "greets-0", "epoch": -1, "annotator": "ana", "target": "passed", '
     '"value": true, "random": true}', "epoch"),
    ('{"scenario_id": "greets-0", "epoch": 0, "annotator": "ana", "target": "verdict", '
     '"value": true, "random": true}', "target"),
    ("{not json", None),
])
def test_a_bad_labels_line_is_refused_before_the_run_naming_file_line_and_field(
        project: pytest.Pytester, line: str, field: str | None) -> None:
    done = _run(project, labels=_label_lines(2) + line + "\n")
    error = _usage_error(done)
    assert re.search(r"labels\.jsonl:3: " + (f"{field}: " if field else ""), error), error
    assert not (project.path / ".harness").exists()  # no model was called


def test_an_empty_labels_file_is_refused(project: pytest.Pytester) -> None:
    assert "holds no labels" in _usage_error(_run(project, labels="\n"))


def test_a_label_of_a_sample_not_in_the_run_fails_the_suite_item_in_one_line(
        project: pytest.Pytester) -> None:
    stray = json.dumps({"scenario_id": "greets-0", "epoch": 9, "annotator": "ana",
                        "target": "passed", "value": True, "random": True}) + "\n"
    done = _run(project, labels=_label_lines(12) + stray)
    done.assert_outcomes(passed=6, failed=1)
    message = str(_reports(done)["harness::suite-gate"].longrepr)
    assert re.fullmatch(r".*labels\.jsonl:13: epoch: scenario 'greets-0' has no epoch 9 in "
                        r"this run \(it has 0, 1, 2, 3\)", message), message


# ---- the Python API ----

def test_assert_passes_gates_the_suite_on_the_corrected_bound(tmp_path: Path) -> None:
    (tmp_path / "greet.yaml").write_text(SCENARIOS, encoding="utf-8")
    result = evaluate(tmp_path / "greet.yaml", out=tmp_path / "run", epochs=EPOCHS,
                      cache_mode="off")
    labels = tmp_path / "labels.jsonl"
    labels.write_text(_label_lines(5), encoding="utf-8")
    with pytest.raises(AssertionError, match=f"got 5: {MIN_LABELS - 5} more.*labels=FILE"):
        assert_passes(result, min_pass_rate=0.3, gate_on="corrected-lower-bound",
                      labels=labels)
    labels.write_text(_label_lines(18), encoding="utf-8")
    assert_passes(result, min_pass_rate=0.3, gate_on="corrected-lower-bound", labels=labels)
    with pytest.raises(ValueError, match="gates the suite, not one scenario"):
        assert_passes(result, gate_on="corrected-lower-bound", scenario="greets-0")
    with pytest.raises(ValueError, match="labels apply only with gate_on="):
        assert_passes(result, min_pass_rate=0.0, labels=labels)
