"""``harness score-transcripts`` on Vertex AI's tabular agent-evaluation datasets (JSONL and
CSV): hand-computed metrics for the example files, the CLI output, and every kind of bad
input reported as one line naming the file, the line and the field (exit 2)."""

from __future__ import annotations

import csv
import io
import json
import statistics
from fractions import Fraction as Fr
from pathlib import Path
from typing import Any

import pytest
from statsmodels.stats.proportion import proportion_confint

from harness.errors import InputError
from harness.formats.transcript_file import load_transcript_file, score_records
from tests.helpers.cli import run_cli

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "transcripts"
JSONL = EXAMPLES / "vertex_dataset.jsonl"
CSV = EXAMPLES / "vertex_dataset.csv"

# Per row, by hand (reference trajectory R, predicted P; one-to-one matching):
# V0: P = R = [search_flights(to=CDG), book_flight(flight=AF1234)]: every metric 1.
#     ROUGE-1: response tokens your flight to pari is book af1234 leav at 9 40 (11),
#     reference book af1234 to pari leav 9 40 (7), all 7 shared: P 7/11, R 1, F 14/18 = 7/9.
# V1: P has an extra get_weather between the two: exact 0, in order 1, any order 1,
#     precision 2/3, recall 1, F1 0.8. ROUGE-1 (accented words whole, unstemmed): votr vol
#     est réservé (4) / vol réservé (2): P 1/2, R 1, F 2/3.
# V2: the two calls swapped: exact 0, in order 0, any order 1, precision 1, recall 1.
# V3: get_weather(city=London) for get_weather(city=Paris) (tool_input as JSON text): all 0.
# V4: failure = 1: not scored, counted in the failure rate.
# ADK's tool_trajectory_avg_score (EXACT, the row one invocation) equals exact match here.
EXPECTED: dict[str, dict[str, Fr]] = {
    "V0-exact": {"trajectory_exact_match": Fr(1), "trajectory_in_order_match": Fr(1),
                 "trajectory_any_order_match": Fr(1), "trajectory_precision": Fr(1),
                 "trajectory_recall": Fr(1), "tool_trajectory_avg_score": Fr(1),
                 "response_match_score": Fr(7, 9)},
    "V1-extra-call": {"trajectory_exact_match": Fr(0), "trajectory_in_order_match": Fr(1),
                      "trajectory_any_order_match": Fr(1), "trajectory_precision": Fr(2, 3),
                      "trajectory_recall": Fr(1), "trajectory_f1": Fr(4, 5),
                      "tool_trajectory_avg_score": Fr(0), "response_match_score": Fr(2, 3)},
    "V2-wrong-order": {"trajectory_exact_match": Fr(0), "trajectory_in_order_match": Fr(0),
                       "trajectory_any_order_match": Fr(1), "trajectory_precision": Fr(1),
                       "trajectory_recall": Fr(1)},
    "V3-wrong-argument": {"trajectory_exact_match": Fr(0), "trajectory_in_order_match": Fr(0),
                          "trajectory_any_order_match": Fr(0), "trajectory_precision": Fr(0),
                          "trajectory_recall": Fr(0)},
}
LATENCIES = [1.2, 2.4, 0.9, 3.5, 30.0]


def _check_output(out: dict[str, Any], lines: list[int]) -> None:
    rows = {row["id"]: row for row in out["transcripts"]}
    assert list(rows) == [*EXPECTED, "V4-failed"]
    assert [row["line"] for row in out["transcripts"]] == lines
    for row_id, metrics in EXPECTED.items():
        for name, value in metrics.items():
            assert rows[row_id][name] == pytest.approx(float(value)), (row_id, name)
    assert "response_match_score" not in rows["V2-wrong-order"]  # no response, no reference
    assert [rows[r]["latency_in_seconds"] for r in rows] == LATENCIES
    assert [rows[r]["failure"] for r in rows] == [0, 0, 0, 0, 1]

    failed = rows["V4-failed"]
    assert failed["error"] == "agent_error: failure = 1 in the dataset"
    assert failed["passed"] is None and failed["checks"] == []
    assert "trajectory_exact_match" not in failed

    summary = out["summary"]
    assert summary["n_transcripts"] == 5
    means = {name: (s["mean"], s["n"]) for name, s in summary["metrics"].items()}
    # over the four scored rows; the failed row is left out, not counted as 0
    assert means["trajectory_exact_match"] == (pytest.approx(1 / 4), 4)
    assert means["trajectory_in_order_match"] == (pytest.approx(2 / 4), 4)
    assert means["trajectory_any_order_match"] == (pytest.approx(3 / 4), 4)
    assert means["trajectory_precision"] == (pytest.approx((1 + 2 / 3 + 1 + 0) / 4), 4)
    assert means["trajectory_recall"] == (pytest.approx(3 / 4), 4)
    assert means["response_match_score"] == (pytest.approx((7 / 9 + 2 / 3) / 2), 2)

    latency = summary["latency_in_seconds"]
    assert latency["n"] == 5 and latency["max"] == 30.0 and latency["median"] == 2.4
    assert latency["mean"] == pytest.approx(7.6)
    assert latency["std"] == pytest.approx(statistics.stdev(LATENCIES))
    # p90 by hand: sorted 0.9 1.2 2.4 3.5 30.0, position 0.9 * 4 = 3.6: 3.5 + 0.6 * 26.5
    assert latency["p90"] == pytest.approx(19.4)

    failure = summary["failure"]
    low, high = proportion_confint(1, 5, alpha=0.05, method="wilson")
    assert failure == {"rate": 0.2, "ci_low": pytest.approx(low), "ci_high": pytest.approx(high),
                       "failed": 1, "n": 5}


def test_jsonl_dataset_scores_as_computed_by_hand() -> None:
    result = run_cli("score-transcripts", JSONL, "--json")
    assert result.returncode == 0, result.stderr
    _check_output(json.loads(result.stdout), lines=[1, 2, 3, 4, 5])


def test_csv_dataset_scores_the_same_and_names_the_line_each_record_starts_on() -> None:
    # V0's response cell holds a newline, so V0 spans lines 2-3 and V1 starts on line 4.
    result = run_cli("score-transcripts", CSV, "--json")
    assert result.returncode == 0, result.stderr
    _check_output(json.loads(result.stdout), lines=[2, 4, 5, 6, 7])


def test_the_csv_example_holds_the_jsonl_example() -> None:
    jsonl = [json.loads(line) for line in JSONL.read_text(encoding="utf-8").splitlines()]
    rows = list(csv.DictReader(io.StringIO(CSV.read_text(encoding="utf-8"), newline="")))
    assert [r["id"] for r in rows] == [r["id"] for r in jsonl]
    for cells, row in zip(rows, jsonl, strict=True):
        for column in ("predicted_trajectory", "reference_trajectory"):
            assert json.loads(cells[column]) == row[column]


def test_table_output_shows_the_failed_row_apart_with_latency_and_failure_rate() -> None:
    result = run_cli("score-transcripts", JSONL, columns=200)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "not scored: agent_error: failure = 1 in the dataset" in text
    assert "latency_in_seconds: mean 7.60, median 2.40, p90 19.40, max 30.00 (n 5)" in text
    assert "failure rate: 0.20 [0.04, 0.62] 95% Wilson (1 of 5 rows failed" in text


def test_single_tool_use_option_checks_every_row() -> None:
    result = run_cli("score-transcripts", JSONL, "--json", "--single-tool-use", "get_weather")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    got = [row.get("trajectory_single_tool_use:get_weather") for row in out["transcripts"]]
    assert got == [0.0, 1.0, 0.0, 1.0, None]  # the failed row is not scored


def test_a_row_without_id_is_named_by_its_pandas_index(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    row = {"predicted_trajectory": [], "reference_trajectory": []}
    path.write_text(json.dumps(row) + "\n\n" + json.dumps(row) + "\n", encoding="utf-8")
    records = load_transcript_file(path)
    assert [(r.id, r.line) for r in records] == [("row-0", 1), ("row-1", 3)]
    out = score_records(records)
    assert out["transcripts"][0]["trajectory_exact_match"] == 1.0  # both empty
    assert "latency_in_seconds" not in out["summary"] and "failure" not in out["summary"]


def test_tool_input_as_json_text_and_missing_tool_input(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({
        "predicted_trajectory": [{"tool_name": "a", "tool_input": '{"x": 1}'},
                                 {"tool_name": "b"}],
        "reference_trajectory": [{"tool_name": "a", "tool_input": {"x": 1}},
                                 {"tool_name": "b", "tool_input": {}}]}) + "\n",
        encoding="utf-8")
    record = load_transcript_file(path)[0]
    assert [(c.name, c.arguments) for c in record.transcript.tool_calls] == [("a", {"x": 1}),
                                                                            ("b", {})]
    assert score_records([record])["transcripts"][0]["trajectory_exact_match"] == 1.0


def test_reference_without_response_is_not_compared(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"predicted_trajectory": [], "reference_trajectory": [],
                                "reference": "Booked.", "prompt": "Book it"}) + "\n",
                    encoding="utf-8")
    row = score_records(load_transcript_file(path))["transcripts"][0]
    assert "response_match_score" not in row
    path.write_text(json.dumps({"predicted_trajectory": [], "reference_trajectory": [],
                                "reference": "Booked.", "response": ""}) + "\n",
                    encoding="utf-8")
    row = score_records(load_transcript_file(path))["transcripts"][0]
    assert row["response_match_score"] == 0.0  # an empty answer is scored, as 0


_OK = {"predicted_trajectory": [], "reference_trajectory": []}
_CALL = {"tool_name": "get_weather", "tool_input": {"city": "Paris"}}


def _jsonl(*rows: Any) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


def _assert_refused(path: Path, content: str, location: str, fragment: str) -> None:
    """Reading ``content`` from ``path`` fails with one message starting with the path and
    ``location`` (line and field) and holding ``fragment``."""
    path.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_transcript_file(path)
    message = str(info.value)
    assert message.startswith(str(path) + location), message
    assert fragment in message, message


@pytest.mark.parametrize(
    ("content", "location", "fragment"),
    [
        # a row that mixes the two forms, and a file that does
        (_jsonl({"id": "a", "messages": [], "predicted_trajectory": []}),
         ":1: predicted_trajectory:", "one form per row"),
        (_jsonl(_OK, {"id": "b", "messages": [], "expected_tool_calls": []}),
         ":2: messages:", "one form per file: line 1 is a Vertex AI dataset row"),
        (_jsonl({"id": "a", "messages": [], "expected_tool_calls": []}, _OK),
         ":2: predicted_trajectory:", "one form per file: line 1 is our transcript form"),
        # trajectories that are not lists of {tool_name, tool_input} objects
        (_jsonl({**_OK, "predicted_trajectory": _CALL}), ":1: predicted_trajectory:",
         "a list of {tool_name, tool_input} objects"),
        (_jsonl({**_OK, "reference_trajectory": "get_weather"}), ":1: reference_trajectory:",
         "a list of"),
        (_jsonl({**_OK, "predicted_trajectory": None}), ":1: predicted_trajectory:", "a list"),
        (_jsonl({**_OK, "predicted_trajectory": ["get_weather"]}),
         ":1: predicted_trajectory[0]:", "an object {tool_name, tool_input}"),
        (_jsonl({**_OK, "predicted_trajectory": [_CALL, {"tool_input": {}}]}),
         ":1: predicted_trajectory[1].tool_name:", "required field is missing"),
        (_jsonl({**_OK, "reference_trajectory": [{"tool_name": 3}]}),
         ":1: reference_trajectory[0].tool_name:", "string"),
        (_jsonl({**_OK, "predicted_trajectory": [{"tool_name": "a", "tool_input": [1]}]}),
         ":1: predicted_trajectory[0].tool_input:", "an object, or a string holding a JSON"),
        (_jsonl({**_OK, "predicted_trajectory": [{"tool_name": "a", "tool_input": "city=P"}]}),
         ":1: predicted_trajectory[0].tool_input:", "got the string 'city=P'"),
        (_jsonl({**_OK, "predicted_trajectory": [{"tool_name": "a", "tool_input": "[1]"}]}),
         ":1: predicted_trajectory[0].tool_input:", "a string holding a JSON object"),
        (_jsonl({**_OK, "predicted_trajectory": [{**_CALL, "tool_output": "sunny"}]}),
         ":1: predicted_trajectory[0].tool_output:", "unknown field"),
        # missing, unknown and badly typed columns
        (_jsonl({"predicted_trajectory": []}), ":1: reference_trajectory:",
         "required field is missing"),
        (_jsonl({**_OK, "context": "x"}), ":1: context:", "unknown column"),
        (_jsonl({**_OK, "latency_in_seconds": -1}), ":1: latency_in_seconds:", "0"),
        (_jsonl({**_OK, "latency_in_seconds": "fast"}), ":1: latency_in_seconds:", "number"),
        (_jsonl({**_OK, "failure": 2}), ":1: failure:", "0 or 1"),
        (_jsonl({**_OK, "failure": "yes"}), ":1: failure:", "0 or 1"),
        (_jsonl({**_OK, "response": 42}), ":1: response:", "string"),
        (_jsonl({**_OK, "id": "x"}, {**_OK, "id": "x"}), ":2: id:", "also on line 1"),
    ],
)
def test_bad_jsonl_rows_name_line_and_field(tmp_path: Path, content: str, location: str,
                                            fragment: str) -> None:
    _assert_refused(tmp_path / "dataset.jsonl", content, location, fragment)


_HEADER = "predicted_trajectory,reference_trajectory,latency_in_seconds,failure\n"


@pytest.mark.parametrize(
    ("content", "location", "fragment"),
    [
        (_HEADER + '[],"[{""tool_name"": ""a""",1,0\n', ":2: reference_trajectory:",
         "not valid JSON"),
        (_HEADER + '[],[],1,0\n"{""tool_name"": ""a""}",[],1,0\n', ":3: predicted_trajectory:",
         "a list of {tool_name, tool_input} objects"),
        (_HEADER + '[],"[{""tool_input"": {}}]",1,0\n', ":2: reference_trajectory[0].tool_name:",
         "required"),
        (_HEADER + "[],[],soon,0\n", ":2: latency_in_seconds:", "a number of seconds"),
        (_HEADER + "[],[],1,maybe\n", ":2: failure:", "0 or 1"),
        (_HEADER + "[],[],1\n", ":2:", "4 cells as in the header (this record has 3)"),
        (_HEADER + ',[],1,0\n', ":2: predicted_trajectory:", "required field is missing"),
        # a record spanning lines 2-3 is named by the line it starts on
        (_HEADER + '[],[],1,0\n"[\n{""tool_name"": 1}]",[],1,0\n',
         ":3: predicted_trajectory[0].tool_name:", "string"),
        ("predicted_trajectory,reference_trajectory,tools\n[],[],x\n", ":1: tools:",
         "unknown column"),
        ("predicted_trajectory,predicted_trajectory\n[],[]\n", ":1: predicted_trajectory:",
         "each column once"),
        ("", ":1:", "a CSV header"),
        (_HEADER, ":", "at least one transcript"),
        (_HEADER + '[],"[]\n', ":2:", "CSV (unexpected end of data)"),
    ],
)
def test_bad_csv_rows_name_line_and_field(tmp_path: Path, content: str, location: str,
                                          fragment: str) -> None:
    _assert_refused(tmp_path / "dataset.csv", content, location, fragment)


def test_cli_reports_a_bad_row_on_one_line_and_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "dataset.jsonl"
    path.write_text(_jsonl(_OK, {**_OK, "predicted_trajectory": [{"tool_input": {}}]}),
                    encoding="utf-8")
    result = run_cli("score-transcripts", path, "--json")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"error: {path}:2: predicted_trajectory[0].tool_name: required field is missing"]
