"""The simulator panel's figures apart from a whole run: slugs, the flip line on hand-made
figures, a design that is not balanced (no components, said why), a suite of one scenario
(no paired difference, said why), and the files' readers refusing what they do not know."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from harness.errors import InputError
from harness.runs.comparison import compare_run_dirs
from harness.runs.simulator_panel import (
    FLIP_LEAD,
    PANEL_FILENAME,
    PanelDifference,
    PanelGate,
    PanelMember,
    read_panel,
    read_plan,
    simulator_slug,
    summarise_panel,
)
from harness.stats.estimate import Estimate
from tests.helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
SIMULATORS = ("mock:simulator", "mock:simulator-faulty")


def _panel(out: Path, suite: str, epochs: int = 2) -> None:
    args = ["run", str(ROOT / "scenarios" / suite), "--offline", "--epochs", str(epochs),
            "--out", str(out)]
    for model in SIMULATORS:
        args += ["--simulator", model]
    result = run_cli(*args, cwd=out.parent)
    assert result.returncode == 0, result.stderr


def test_slugs_are_directory_names_and_unique() -> None:
    assert simulator_slug("mock:simulator", set()) == "mock-simulator"
    assert simulator_slug("openai:gpt-4.1 mini/v2", set()) == "openai-gpt-4.1-mini-v2"
    assert simulator_slug("a:b", {"a-b"}) == "a-b-2"
    assert simulator_slug("A/B", {"a-b", "a-b-2"}) == "A-B-3"  # case-insensitive file systems
    assert simulator_slug(":::", set()) == "simulator"


def _estimate(value: float, low: float, high: float) -> Estimate:
    return Estimate(value=value, stderr=0.1, ci_low=low, ci_high=high, confidence=0.95,
                    df=9, n=20, n_clusters=10, method="test")


def _member(name: str) -> PanelMember:
    return PanelMember(simulator=name, slug=name, run_dir=f"simulators/{name}", offline=True,
                       samples=20, scored=20, errored=0, mean=None, pass_rate=None)


def _difference(name: str, value: float, low: float, high: float) -> PanelDifference:
    return PanelDifference(simulator=name, baseline="a", n_scenarios=10,
                           difference=_estimate(value, low, high), p_value=0.5, test="t")


@pytest.mark.parametrize(("value", "low", "high", "word"), [
    (-0.2, -0.3, -0.1, "lower"), (0.2, 0.1, 0.3, "higher"), (0.05, -0.01, 0.11, None),
    (-0.05, -0.11, 0.0, None)])
def test_without_a_gate_the_line_needs_an_interval_that_excludes_zero(
        value: float, low: float, high: float, word: str | None) -> None:
    from harness.runs.simulator_panel import flip_line

    line = flip_line([_member("a"), _member("b")], [_difference("b", value, low, high)], None)
    if word is None:
        assert line is None
    else:
        assert line == (f"{FLIP_LEAD}: the agent's mean score is {word} under b than under a: "
                        f"difference {value:+.3f} [{low:+.3f}, {high:+.3f}], an interval "
                        "that excludes 0")


def test_with_a_gate_only_the_gate_decides() -> None:
    from harness.runs.simulator_panel import flip_line

    members = [_member("a"), _member("b"), _member("c")]
    moved = [_difference("b", -0.2, -0.3, -0.1), _difference("c", 0.0, -0.1, 0.1)]
    assert flip_line(members, moved, PanelGate(passed=True, failed_under=[])) is None
    assert flip_line(members, moved, PanelGate(passed=False,
                                                failed_under=["a", "b", "c"])) is None
    assert flip_line(members, moved, PanelGate(passed=False, failed_under=["b"])) == (
        f"{FLIP_LEAD}: gate PASS under a, c, FAIL under b")


def test_a_design_that_is_not_balanced_has_no_components(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _panel(out, "support.yaml")
    plan = read_plan(out)
    second = plan.run_dir(out, plan.simulators[1])
    with sqlite3.connect(second / "run.sqlite") as db:
        (sid,) = db.execute("SELECT scenario_id FROM samples ORDER BY scenario_id, epoch "
                            "LIMIT 1").fetchone()
        db.execute("DELETE FROM samples WHERE scenario_id = ? AND epoch = 1", (sid,))
    db.close()
    panel = summarise_panel(out, plan)
    assert panel.variance is None
    (note,) = [n for n in panel.notes if n.startswith("no variance components")]
    assert "not balanced: 1 sample of the 2 scenarios x 2 simulators x 2 epochs grid has " \
        "no score" in note
    # the paired difference does not need a balanced design: it is still compare's
    expected = compare_run_dirs(plan.run_dir(out, plan.simulators[0]), second)
    (d,) = panel.differences
    assert d.difference is not None
    assert d.difference.model_dump(mode="json") == expected["difference"]


def test_one_scenario_has_neither_a_difference_nor_components(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _panel(out, "files.yaml")
    panel = read_panel(out)
    (d,) = panel.differences
    assert d.difference is None and d.reason is not None
    assert "at least 2 scenarios" in d.reason
    assert panel.variance is None
    assert any("no variance components: they need scored samples of at least 2 scenarios"
               in note for note in panel.notes)
    shown = run_cli("report", out, columns=80)
    assert shown.returncode == 0, shown.stderr
    assert "Variance of a sample's score" not in shown.stdout
    assert "no paired difference" in " ".join(shown.stdout.split())


def test_the_panel_file_refuses_a_key_it_does_not_know(tmp_path: Path) -> None:
    out = tmp_path / "run"
    _panel(out, "files.yaml", epochs=1)
    data = json.loads((out / PANEL_FILENAME).read_text("utf-8"))
    data["members"][0]["surprise"] = 1
    (out / PANEL_FILENAME).write_text(json.dumps(data), "utf-8")
    with pytest.raises(InputError, match=r"simulator_panel\.json: members\.0\.surprise"):
        read_panel(out)
    shown = run_cli("report", out)
    assert shown.returncode == 2 and shown.stderr.count("\n") == 1


def test_the_table_shows_outside_text_safely() -> None:
    import io

    from rich.console import Console

    from harness.report.simulator_panel import render_panel
    from harness.runs.simulator_panel import SimulatorPanel

    members = [_member("\x1b[31mred"), _member("[bold]b[/bold]")]
    panel = SimulatorPanel.model_validate({
        "schema": "agent-eval-harness/simulator-panel", "schema_version": 1,
        "harness_version": "0", "confidence": 0.95,
        "members": [m.model_dump(mode="json") for m in members],
        "differences": [_difference("[bold]b[/bold]", 0.1, 0.05, 0.2).model_dump(
            mode="json")],
        "variance": None, "flip": "flips \x1b]8;;http://x\x07 [red]x[/red]",
        "scripted_scenarios": [], "offline": False, "notes": ["\x1b[2J [link=x]y[/link]"]})
    out = io.StringIO()
    render_panel(panel, Console(file=out, width=80, force_terminal=False), run_dir="r\x1b")
    text = out.getvalue()
    assert "\x1b" not in text
    assert "[bold]b[/bold]" in text and "[red]x[/red]" in text and "[link=x]y[/link]" in text
    assert max(len(line) for line in text.splitlines()) <= 80
