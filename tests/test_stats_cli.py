"""`harness stats FILE --json` (contract 2): the figures against independent computations,
the table output, and every kind of bad input reported as an error naming file, line and
field, with a non-zero exit and no traceback."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint
from typer.testing import CliRunner

from harness.cli import app, main
from harness.errors import InputError, InputErrors
from harness.stats import read_sample_scores

CONTRACT_KEYS = {"n_scenarios", "n_samples", "mean", "stderr", "ci_low", "ci_high",
                 "pass_hat_k", "pass_at_k"}


def _write(tmp_path: Path, *lines: Any, name: str = "scores.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(
        "".join((ln if isinstance(ln, str) else json.dumps(ln)) + "\n" for ln in lines),
        encoding="utf-8",
    )
    return path


def _samples(epochs: dict[str, list[float]]) -> list[dict[str, Any]]:
    return [{"scenario_id": s, "epoch": e, "score": x}
            for s, xs in epochs.items() for e, x in enumerate(xs)]


def _run_main(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
              *args: str) -> tuple[int, str, str]:
    """Run the real entry point in-process (main() turns HarnessError into exit 2)."""
    monkeypatch.setattr(sys, "argv", ["harness", *args])
    with pytest.raises(SystemExit) as exc:
        main()
    out = capsys.readouterr()
    code = exc.value.code
    return (code if isinstance(code, int) else 1), out.out, out.err


def test_json_output_matches_independent_computation(tmp_path: Path) -> None:
    data = {"a": [1.0, 0.0, 1.0, 1.0], "b": [0.0, 0.0, 0.5], "c": [1.0, 1.0, 1.0, 1.0, 1.0],
            "d": [0.25, 1.0, 0.0]}
    path = _write(tmp_path, *_samples(data))
    result = CliRunner().invoke(app, ["stats", str(path), "--json", "--seed", "3",
                                      "--bootstrap-resamples", "500"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out) >= CONTRACT_KEYS
    means = np.array([np.mean(v) for v in data.values()])
    assert out["n_scenarios"] == 4 and out["n_samples"] == 15
    assert out["mean"] == pytest.approx(means.mean())
    assert out["stderr"] == pytest.approx(means.std(ddof=1) / 2)
    low, high = sps.t.interval(0.95, 3, loc=means.mean(), scale=means.std(ddof=1) / 2)
    # The t interval reaches past 1: it is cut at the score range, and says so.
    assert high > 1 and out["ci_clipped"] is True
    assert (out["ci_low"], out["ci_high"]) == pytest.approx((low, 1.0))
    assert out["score_range"] == [0.0, 1.0]
    # k = 1 .. smallest epoch count (3); passes use score >= 1 - 1e-6.
    assert list(out["pass_at_k"]) == ["1", "2", "3"] == list(out["pass_hat_k"])
    counts = [(4, 3), (3, 0), (5, 5), (3, 1)]
    for k in (1, 2, 3):
        at = np.mean([1 - math.comb(n - c, k) / math.comb(n, k) for n, c in counts])
        hat = np.mean([math.comb(c, k) / math.comb(n, k) for n, c in counts])
        assert out["pass_at_k"][str(k)] == pytest.approx(at)
        assert out["pass_hat_k"][str(k)] == pytest.approx(hat)
    # Four scenarios: too few for the cluster bootstrap, which is not computed and says so.
    assert out["bootstrap"] is None
    assert any("cluster bootstrap not computed: with 4 scenarios" in n for n in out["notes"])
    assert out["epochs"] == {"min": 3, "max": 5, "equal": False}
    assert [s["scenario_id"] for s in out["scenarios"]] == ["a", "b", "c", "d"]
    assert out["flaky_scenarios"] == ["a", "d"]
    assert out["variance_components"]["n_scenarios"] == 4
    assert out["power"]["minimum_detectable_difference"] > 0
    assert any("unequal epoch counts" in n for n in out["notes"])
    again = CliRunner().invoke(app, ["stats", str(path), "--json", "--seed", "3",
                                     "--bootstrap-resamples", "500"])
    assert json.loads(again.stdout) == out


def test_passed_field_and_confidence_option(tmp_path: Path) -> None:
    lines = [{"scenario_id": s, "epoch": e, "score": 0.6, "passed": s == "a"}
             for s in ("a", "b") for e in range(2)]
    path = _write(tmp_path, *lines)
    result = CliRunner().invoke(app, ["stats", str(path), "--json", "--confidence", "0.9"])
    out = json.loads(result.stdout)
    assert out["confidence"] == 0.9
    assert out["pass_rate"]["value"] == pytest.approx(0.5)
    assert out["pass_at_k"]["1"] == pytest.approx(0.5)
    # Identical scenario means: zero spread, valid JSON (no NaN), and no point interval: the
    # Wilson interval for 2 scenarios, the widest variance a [0, 1] mean of 0.6 can have.
    assert out["stderr"] == 0.0
    want = proportion_confint(1.2, 2, alpha=0.1, method="wilson")
    assert (out["ci_low"], out["ci_high"]) == pytest.approx(want, abs=1e-12)
    assert "no spread between the 2 scenarios" in out["method"]


def test_judge_scores_give_judge_noise(tmp_path: Path) -> None:
    lines = [{"scenario_id": s, "epoch": e, "score": 0.5, "judge_scores": [0.4 + 0.1 * e, 0.6]}
             for s in ("a", "b", "c") for e in range(3)]
    out = json.loads(CliRunner().invoke(app, ["stats", str(_write(tmp_path, *lines)),
                                              "--json"]).stdout)
    assert out["judge_variance_components"]["judge"] > 0


def test_table_output(tmp_path: Path) -> None:
    path = _write(tmp_path, *_samples({"alpha": [1.0, 0.0], "beta": [1.0, 1.0]}))
    result = CliRunner().invoke(app, ["stats", str(path)])
    assert result.exit_code == 0, result.output
    for text in ("Suite (2 scenarios, 4 samples)", "pass^2", "alpha", "Wilson 95%",
                 "Variance components"):
        assert text in result.stdout


def test_single_scenario_is_reported_without_interval(tmp_path: Path) -> None:
    path = _write(tmp_path, *_samples({"only": [1.0, 0.0]}))
    out = json.loads(CliRunner().invoke(app, ["stats", str(path), "--json"]).stdout)
    assert out["stderr"] is None and out["ci_low"] is None
    assert any("one scenario" in n for n in out["notes"])


BAD_LINES = [
    ("not json", ["{\"scenario_id\": \"a\", "], ":1:", "not valid JSON"),
    ("not an object", ["[1, 2]"], ":1:", "expected a JSON object"),
    ("missing field", [{"scenario_id": "a", "epoch": 0}], ":1: score:", "missing"),
    ("score a string", [{"scenario_id": "a", "epoch": 0, "score": "high"}], ":1: score:",
     "finite number"),
    ("score NaN", ['{"scenario_id": "a", "epoch": 0, "score": NaN}'], ":1: score:",
     "finite number"),
    ("score bool", [{"scenario_id": "a", "epoch": 0, "score": True}], ":1: score:",
     "finite number"),
    ("score null", [{"scenario_id": "a", "epoch": 0, "score": None}], ":1: score:",
     "finite number"),
    ("epoch float", [{"scenario_id": "a", "epoch": 1.5, "score": 1}], ":1: epoch:", "integer"),
    ("epoch negative", [{"scenario_id": "a", "epoch": -1, "score": 1}], ":1: epoch:",
     "expected an integer >= 0, got -1"),
    ("score above 1", [{"scenario_id": "a", "epoch": 0, "score": 1.5}], ":1: score:",
     "expected a number in the score range [0, 1] (declare another with --score-range "
     "LOW:HIGH), got 1.5"),
    ("score below 0", [{"scenario_id": "a", "epoch": 0, "score": 0.5},
                       {"scenario_id": "a", "epoch": 1, "score": -0.25}], ":2: score:",
     "score range [0, 1]"),
    ("passed null", [{"scenario_id": "a", "epoch": 0, "score": 1, "passed": None}],
     ":1: passed:", "true or false, got null"),
    ("offline string", [{"scenario_id": "a", "epoch": 0, "score": 1, "offline": "no"}],
     ":1: offline:", "true or false"),
    ("judge_scores empty", [{"scenario_id": "a", "epoch": 0, "score": 1, "judge_scores": []}],
     ":1: judge_scores:", "non-empty list"),
    ("bad status", [{"scenario_id": "a", "epoch": 0, "score": 1, "status": "done"}],
     ":1: status:", "expected one of scored, errored, unscored"),
    ("empty id", [{"scenario_id": "", "epoch": 0, "score": 1}], ":1: scenario_id:",
     "non-empty string"),
    ("passed string", [{"scenario_id": "a", "epoch": 0, "score": 1, "passed": "yes"}],
     ":1: passed:", "true or false"),
    ("misspelt field", [{"scenario_id": "a", "epoch": 0, "score": 1, "pased": True}],
     ":1: pased:", "did you mean 'passed'"),
    ("duplicate", [{"scenario_id": "a", "epoch": 0, "score": 1}, "",
                   {"scenario_id": "a", "epoch": 0, "score": 0}], ":3: epoch:",
     "already on line 1"),
    ("empty file", [], "", "no samples"),
    ("blank lines only", ["", "  "], "", "no samples"),
]


@pytest.mark.parametrize(("lines", "where", "message"), [b[1:] for b in BAD_LINES],
                         ids=[b[0] for b in BAD_LINES])
def test_bad_input_names_file_line_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    lines: list[Any], where: str, message: str,
) -> None:
    path = _write(tmp_path, *lines)
    with pytest.raises(InputError) as exc:
        read_sample_scores(path)
    assert str(path) + where in str(exc.value)
    assert message in str(exc.value)
    code, out, err = _run_main(monkeypatch, capsys, "stats", str(path), "--json")
    assert code == 2 and out == ""
    assert "Traceback" not in err
    assert str(path) + where in err and message in err


def test_several_bad_lines_are_all_reported(tmp_path: Path) -> None:
    path = _write(tmp_path, {"scenario_id": "a", "epoch": 0}, "oops",
                  {"scenario_id": "a", "epoch": 1, "score": 0.5})
    with pytest.raises(InputErrors) as exc:
        read_sample_scores(path)
    text = str(exc.value)
    assert f"{path}:1: score" in text and f"{path}:2:" in text


def test_many_bad_lines_are_capped(tmp_path: Path) -> None:
    path = _write(tmp_path, *["x"] * 50)
    with pytest.raises(InputErrors) as exc:
        read_sample_scores(path)
    assert len(exc.value.errors) == 21
    assert "30 more problems" in str(exc.value)


def test_duplicates_and_other_problems_are_reported_in_line_order(tmp_path: Path) -> None:
    # Duplicates are found after the whole file is read; they still come in line order
    # among the other problems, and the first 20 problems are the ones shown.
    lines: list[Any] = []
    for i in range(15):
        lines.append({"scenario_id": "a", "epoch": i, "score": 1})
        lines.append({"scenario_id": "a", "epoch": i, "score": 0})  # duplicate of the last
        lines.append({"scenario_id": "b", "epoch": i, "score": 2})  # out of range
    path = _write(tmp_path, *lines)
    with pytest.raises(InputErrors) as exc:
        read_sample_scores(path)
    shown = exc.value.errors
    assert [e.location for e in shown[:20]] == sorted(
        [3 * i + 2 for i in range(10)] + [3 * i + 3 for i in range(10)])
    assert str(shown[0]) == (f"{path}:2: epoch: duplicate sample: scenario 'a' epoch 0 "
                             "already on line 1")
    assert f"{path}:3: score:" in str(shown[1])
    assert str(shown[20]).endswith("... and 10 more problems not shown")


def test_a_declared_score_range(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, *_samples({"a": [10, 7, 10], "b": [2, 10, 10]}))
    code, _, err = _run_main(monkeypatch, capsys, "stats", str(path), "--json")
    assert code == 2 and f"{path}:1: score:" in err and "--score-range" in err
    code, out, _ = _run_main(monkeypatch, capsys, "stats", str(path), "--json",
                             "--score-range", "0:10")
    assert code == 0
    summary = json.loads(out)
    assert summary["score_range"] == [0.0, 10.0]
    assert summary["mean"] == pytest.approx(49 / 6)
    # Without "passed", a sample passes at the top of the declared range.
    assert summary["pass_rate"]["value"] == pytest.approx(2 / 3)
    assert summary["ci_high"] <= 10.0
    code, _, err = _run_main(monkeypatch, capsys, "stats", str(path), "--score-range", "0:5")
    assert code == 2 and "score range [0, 5] (as declared by --score-range), got 10" in err
    for bad in ("5", "a:b", "3:1", "1:1", "0:inf"):
        code, _, err = _run_main(monkeypatch, capsys, "stats", str(path), "--score-range", bad)
        assert code == 2 and "--score-range" in err and "Traceback" not in err, bad


def test_errored_lines_as_failures_score_the_bottom_of_the_range(tmp_path: Path) -> None:
    path = _write(tmp_path, {"scenario_id": "a", "epoch": 0, "score": 5},
                  {"scenario_id": "a", "epoch": 1, "status": "errored"},
                  {"scenario_id": "b", "epoch": 0, "score": 3, "status": "scored"})
    table = read_sample_scores(path, errors_as_failures=True, score_range=(1.0, 5.0))
    assert table.scores == {"a": [5.0, 1.0], "b": [3.0]}
    assert table.passed == {"a": [True, False], "b": [False]}
    assert any("counted as failures (score 1, not passed)" in n for n in table.notes)


def test_a_byte_order_mark_is_dropped_and_a_bad_byte_is_located(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"scenario_id": "a", "epoch": 0, "score": 1}\n')
    assert read_sample_scores(path).scores == {"a": [1.0]}
    path.write_bytes(b'{"scenario_id": "a", "epoch": 0, "score": 1}\n'
                     b'{"scenario_id": "\xff", "epoch": 1, "score": 1}\n')
    with pytest.raises(InputError) as exc:
        read_sample_scores(path)
    assert str(exc.value) == (f"{path}:2: not UTF-8 text (byte 0xff at column 18); expected "
                              "a JSONL file of sample scores, encoded as UTF-8")


def test_run_sample_lines_with_extra_keys_and_judge_scores(tmp_path: Path) -> None:
    # The shape of a run's samples.jsonl: extra keys are ignored, judge_scores are kept,
    # a misspelt known key is still an error.
    line = {"scenario_id": "a", "epoch": 0, "status": "scored", "score": 0.5, "passed": False,
            "metrics": {"x": 1.0}, "judge_scores": [0.4, 0.6], "stop_reason": "goal_met",
            "error": None, "usage": {}, "duration_s": 1.2, "offline": True}
    path = _write(tmp_path, line, {**line, "epoch": 1, "score": 1, "passed": True},
                  {**line, "scenario_id": "b"}, {**line, "scenario_id": "b", "epoch": 1})
    table = read_sample_scores(path)
    assert table.scores == {"a": [0.5, 1.0], "b": [0.5, 0.5]}
    assert table.passed == {"a": [False, True], "b": [False, False]}
    assert table.judge_scores == {"a": [[0.4, 0.6], [0.4, 0.6]], "b": [[0.4, 0.6]] * 2}
    assert table.n_offline == 4
    without = {k: v for k, v in line.items() if k != "judge_scores"}
    misspelt = _write(tmp_path, without, {**without, "epoch": 1, "judge_score": [1.0]},
                      name="m.jsonl")
    with pytest.raises(InputError, match=":2: judge_score: unknown field; did you mean"):
        read_sample_scores(misspelt)


def test_json_output_is_ascii_with_every_id_kept_exactly(tmp_path: Path) -> None:
    # ids from outside: a C1 control, a bidirectional override, an emoji (past the BMP) and a
    # lone surrogate (valid as a JSON escape, not as Unicode text)
    ids = ["a\x9bb", "\u202eevil", "caf\u00e9 \U0001f600", "x\ud800"]
    path = tmp_path / "scores.jsonl"
    path.write_text("".join(json.dumps({"scenario_id": sid, "epoch": e, "score": e % 2}) + "\n"
                            for sid in ids for e in range(2)), encoding="utf-8")
    result = CliRunner().invoke(app, ["stats", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert result.stdout.isascii()
    out = json.loads(result.stdout)
    assert [s["scenario_id"] for s in out["scenarios"]] == ids


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found; expected a JSONL file of sample"):
        read_sample_scores(tmp_path / "nope.jsonl")
    with pytest.raises(InputError, match="is a directory"):
        read_sample_scores(tmp_path)
    binary = tmp_path / "b.jsonl"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="not UTF-8"):
        read_sample_scores(binary)


def test_unknown_fields_are_ignored_and_separators_kept(tmp_path: Path) -> None:
    path = _write(tmp_path, {"scenario_id": "a\u2028b", "epoch": 2, "score": 1, "model": "x"},
                  {"scenario_id": "a\u2028b", "epoch": 1, "score": 0})
    table = read_sample_scores(path)
    assert table.scores == {"a\u2028b": [0.0, 1.0]}  # sorted by epoch
    assert table.epochs == {"a\u2028b": [1, 2]}
    assert table.passed == {"a\u2028b": [False, True]}


@pytest.mark.parametrize(("args", "field"), [
    (["--confidence", "1.5"], "--confidence"),
    (["--confidence", "0"], "--confidence"),
    (["--bootstrap-resamples", "-1"], "--bootstrap-resamples"),
])
def test_bad_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                     capsys: pytest.CaptureFixture[str], args: list[str], field: str) -> None:
    path = _write(tmp_path, *_samples({"a": [1.0], "b": [0.0]}))
    code, _, err = _run_main(monkeypatch, capsys, "stats", str(path), *args)
    assert code == 2 and field in err and "Traceback" not in err


def test_console_script_end_to_end(tmp_path: Path) -> None:
    good = _write(tmp_path, *_samples({"a": [1.0, 0.0], "b": [1.0, 1.0]}), name="good.jsonl")
    proc = subprocess.run([sys.executable, "-m", "harness", "stats", str(good), "--json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["n_samples"] == 4
    bad = _write(tmp_path, {"scenario_id": "a", "epoch": 0, "score": "x"}, name="bad.jsonl")
    proc = subprocess.run([sys.executable, "-m", "harness", "stats", str(bad), "--json"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert f"{bad}:1: score" in proc.stderr
