"""`harness calibrate --judgments FILE [--json]` (contract 3)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from harness.cli import app
from tests.helpers.cli import CliResult, run_cli

EXAMPLES = Path(__file__).parents[1] / "examples" / "calibration"


def _run(*args: str) -> str:
    result = CliRunner().invoke(app, ["calibrate", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_json_pointwise_report_has_the_contract_keys() -> None:
    out = json.loads(_run("--judgments", str(EXAMPLES / "pointwise_judgments.jsonl"), "--json",
                          "--resamples", "50", "--pass-threshold", "4"))
    assert out["kind"] == "pointwise"
    assert [j["judge_id"] for j in out["judges"]] == ["strict-prompt", "lenient-prompt"]
    for judge in out["judges"]:
        for key in ("spearman", "kendall_tau_b", "pearson", "cohen_kappa",
                    "krippendorff_alpha", "mean_bias", "mae"):
            assert {"value", "ci_low", "ci_high", "n"} <= set(judge[key])
        assert judge["n_items"] == 16 and judge["n_missing_human"] == 4
        assert judge["ppi"]["mean_score"]["n_unlabelled"] == 4
    assert out["options"]["n_resamples"] == 50 and out["options"]["pass_threshold"] == 4
    assert {c["statistic"] for c in out["comparisons"]} == {"spearman", "cohen_kappa"}


def test_json_pairwise_report_is_flat_for_one_judge_and_reproducible() -> None:
    args = ("--judgments", str(EXAMPLES / "pairwise_judgments.jsonl"), "--json",
            "--resamples", "200", "--seed", "3")
    out = json.loads(_run(*args))
    for key in ("accuracy", "accuracy_both_orders", "position_consistency", "order_kappa"):
        assert "value" in out[key] and "ci_low" in out[key]
    # 7 of 8 right in the original order, 5 of 8 swapped (one verdict missing counts wrong)
    assert out["accuracy"]["value"] == (7 / 8 + 5 / 8) / 2
    assert out["n_missing_verdicts"] == 1 and out["n_items"] == 8
    assert json.loads(_run(*args)) == out
    excluded = json.loads(_run(*args, "--missing-verdict", "exclude"))
    assert excluded["accuracy_swapped_order"]["value"] == 5 / 7


def test_terminal_summary() -> None:
    out = _run("--judgments", str(EXAMPLES / "pairwise_judgments.jsonl"), "--resamples", "50")
    assert "position_consistency" in out and "first_position_rate" in out
    assert "policy: missing verdicts" in out


def _cli(*args: str) -> CliResult:
    return run_cli("calibrate", *args)


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text('{"item_id": "p", "gold": "A", "verdict": ["A"], "swapped": false}\n')
    proc = _cli("--judgments", str(path), "--json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().startswith(f"error: {path}:1: verdict: expected")
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_bad_options_are_named(tmp_path: Path) -> None:
    judgments = str(EXAMPLES / "pairwise_judgments.jsonl")
    for args, expected in (
        (("--confidence", "1.5"), "error: --confidence:"),
        (("--threshold-criterion", "f1"), "error: --threshold-criterion:"),
        (("--scale", "5:1"), "error: --scale: expected MIN:MAX"),
    ):
        result = CliRunner().invoke(app, ["calibrate", "--judgments", judgments, *args])
        assert result.exit_code != 0
        assert str(result.exception).startswith(expected.removeprefix("error: ")), args
