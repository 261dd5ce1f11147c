"""Trajectory metrics: Vertex AI names, one-to-one matching, order, repeats, empty cases."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from harness.checks import trajectory as traj
from harness.checks.args import compile_matching
from harness.checks.run import run_checks
from harness.checks.spec import ArgMatching, Expectations, ExpectedToolCall
from harness.transcript import ToolCallRecord, Transcript

VERTEX = ("trajectory_exact_match", "trajectory_in_order_match", "trajectory_any_order_match",
          "trajectory_precision", "trajectory_recall", "trajectory_f1")


def _call(name: str, turn: int = 0, raw: str | None = None, **args: Any) -> ToolCallRecord:
    return ToolCallRecord(call_id=f"c{name}{len(args)}", name=name, arguments=args,
                          raw_arguments=raw, turn=turn)


def _ref(name: str, **args: Any) -> ExpectedToolCall:
    return ExpectedToolCall(name=name, args=args)


def _tx(calls: list[ToolCallRecord]) -> Transcript:
    return Transcript(scenario_id="s", tool_calls=calls, stop_reason="imported")


def _vertex(reference: list[ExpectedToolCall], calls: list[ToolCallRecord],
            matching: ArgMatching | None = None) -> tuple[float, ...]:
    exp = Expectations(tool_calls=reference, arg_matching=matching or ArgMatching())
    metrics = run_checks(_tx(calls), exp).metrics()
    return tuple(round(metrics[n], 6) for n in VERTEX)  # type: ignore[arg-type]


A, B, C = _ref("A", x=1), _ref("B", y=2), _ref("C")
a, b, c = _call("A", x=1), _call("B", y=2), _call("C")

# (reference, actual, exact, in_order, any_order, precision, recall, f1), computed by hand
CASES = {
    "identical": ([A, B], [a, b], 1, 1, 1, 1, 1, 1),
    "order swap": ([A, B], [b, a], 0, 0, 1, 1, 1, 1),
    "extra call at end": ([A], [a, c], 0, 1, 1, 0.5, 1, 2 / 3),
    "extra call between": ([A, B], [a, c, b], 0, 1, 1, 2 / 3, 1, 0.8),
    "missing call": ([A, B], [a], 0, 0, 0, 1, 0.5, 2 / 3),
    "repeated actual call": ([A], [a, a], 0, 1, 1, 0.5, 1, 2 / 3),
    "repeated reference call, once done": ([A, A], [a], 0, 0, 0, 1, 0.5, 2 / 3),
    "repeated reference call, twice done": ([A, A], [a, a], 1, 1, 1, 1, 1, 1),
    "wrong arguments": ([A], [_call("A", x=2)], 0, 0, 0, 0, 0, 0),
    "wrong tool": ([A], [b], 0, 0, 0, 0, 0, 0),
    "both empty": ([], [], 1, 1, 1, 1, 1, 1),
    "no reference, some calls": ([], [a], 0, 1, 1, 0, 0, 0),
    "reference, no calls": ([A], [], 0, 0, 0, 0, 0, 0),
    "malformed arguments": ([A], [_call("A", raw="{x: 1")], 0, 0, 0, 0, 0, 0),
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_vertex_metrics(case: str) -> None:
    reference, calls, *expected = CASES[case]
    assert _vertex(reference, calls) == tuple(round(float(v), 6) for v in expected)


def test_malformed_arguments_never_match_even_when_arguments_are_ignored() -> None:
    scores = _vertex([A], [_call("A", raw="not json")], ArgMatching(mode="ignore"))
    assert scores == (0, 0, 0, 0, 0, 0)
    report = run_checks(_tx([_call("A", raw="not json")]), Expectations(tool_calls=[A]))
    assert len(report.warnings) == 1 and "not json" in report.warnings[0]


def test_maximum_matching_beats_first_fit() -> None:
    # With subset matching, the first reference call (no arguments) fits either actual call.
    # First-fit gives it the first actual call, leaving nothing for the second reference
    # call; the maximum matching pairs both.
    reference = [_ref("A"), _ref("A", x=1)]
    calls = [_call("A", x=1), _call("A", x=3)]
    scores = _vertex(reference, calls, ArgMatching(mode="subset"))
    assert scores[2:5] == (1.0, 1.0, 1.0)  # any order, precision, recall


def _brute_force_matching_size(compat: np.ndarray) -> int:
    n_ref, n_act = compat.shape
    best = 0
    for k in range(min(n_ref, n_act), 0, -1):
        for rows in itertools.combinations(range(n_ref), k):
            for cols in itertools.permutations(range(n_act), k):
                if all(compat[r, c] for r, c in zip(rows, cols, strict=True)):
                    return k
    return best


def _adk_in_order(compat: np.ndarray) -> bool:
    """ADK's IN_ORDER algorithm (an iterator over the expected calls), reimplemented."""
    n_ref, n_act = compat.shape
    if n_ref == 0:
        return True
    i = 0
    for j in range(n_act):
        if compat[i, j]:
            i += 1
            if i == n_ref:
                return True
    return False


def test_matching_and_order_against_independent_implementations() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        n_ref, n_act = rng.integers(0, 5, size=2)
        compat = rng.random((n_ref, n_act)) < 0.4
        pairs = traj.maximum_matching(compat)
        # a valid one-to-one matching of compatible pairs ...
        assert len({i for i, _ in pairs}) == len({j for _, j in pairs}) == len(pairs)
        assert all(compat[i, j] for i, j in pairs)
        # ... of maximum size: Hungarian algorithm and brute force agree
        if n_ref and n_act:
            rows, cols = linear_sum_assignment(compat.astype(int), maximize=True)
            assert len(pairs) == int(compat[rows, cols].sum())
        assert len(pairs) == _brute_force_matching_size(compat)
        assert traj.in_order_match(compat) == _adk_in_order(compat)


@pytest.mark.parametrize(
    ("expected", "called", "score"),
    [
        (["listFiles", "readFile"], ["listFiles", "readFile"], 1.0),
        (["listFiles", "readFile"], ["listFiles", "readFile", "readFile"], 1.0),
        (["listFiles", "readFile"], ["listFiles", "search", "readFile"], 1.0),
        (["listFiles", "readFile"], ["readFile"], 0.5),
        (["listFiles", "readFile"], ["readFile", "listFiles"], 0.5),
        # first calls decide: reading before listing is out of order even if read again
        (["listFiles", "readFile"], ["readFile", "listFiles", "readFile"], 0.5),
        (["listFiles", "readFile"], [], 0.0),
        (["a", "b", "c", "d"], ["a", "c", "d"], 0.75),  # LCS, not prefix: credit after a miss
        ([], ["a"], 1.0),
        # an expected order that repeats a name is compared with the full sequence
        (["search", "read", "search"], ["search", "read", "search"], 1.0),
        (["search", "read", "search"], ["search", "read"], 2 / 3),
    ],
)
def test_tool_order_score(expected: list[str], called: list[str], score: float) -> None:
    assert traj.tool_order_score(expected, called)[0] == pytest.approx(score)


def test_single_tool_use() -> None:
    exp = Expectations(single_tool_use=["A", "Z"])
    metrics = run_checks(_tx([_call("A", raw="bad"), b]), exp).metrics()
    assert metrics["trajectory_single_tool_use:A"] == 1.0  # used, even with bad arguments
    assert metrics["trajectory_single_tool_use:Z"] == 0.0


def _kinds(reference: list[ExpectedToolCall], calls: list[ToolCallRecord],
           forbidden: frozenset[str] = frozenset()) -> list[tuple[str, str | None, str | None]]:
    matchings = [compile_matching(ArgMatching())] * len(reference)
    compat, _ = traj.compatibility(reference, calls, matchings)
    pairs = traj.maximum_matching(compat)
    return [(f.kind, f.tool, f.expected_tool)
            for f in traj.diagnose(reference, calls, matchings, pairs, forbidden)]


def test_diagnose_explains_unmatched_calls() -> None:
    assert _kinds([A, B], [a, c]) == [("wrong_tool", "C", "B")]
    assert _kinds([A, B], [a]) == [("missing_tool", "B", None)]
    assert _kinds([A], [a, a]) == [("over_calling", "A", None)]
    assert _kinds([A], [a, c]) == [("unexpected_call", "C", None)]
    assert _kinds([A], [_call("A", raw="{")]) == [("malformed_arguments", "A", None)]
    assert _kinds([A], [c], forbidden=frozenset({"C"})) == [("missing_tool", "A", None)]
    reference = [_ref("get_forecast", city="London", days=3)]
    findings = traj.diagnose(
        reference, [_call("get_forecast", city="London", days=5, units="C")],
        [compile_matching(ArgMatching())], [])
    assert [(f.kind, f.parameters) for f in findings] == [("parameter_error", ["days", "units"])]
    assert "days: expected 3, got 5" in findings[0].message


def test_trajectory_checks_run_only_when_reference_given() -> None:
    metrics = run_checks(_tx([a]), Expectations()).metrics()
    assert metrics == {}


def _brute_force_lcs_length(x: list[str], y: list[str]) -> int:
    for k in range(min(len(x), len(y)), 0, -1):
        subsequences = set(itertools.combinations(y, k))
        if any(c in subsequences for c in itertools.combinations(x, k)):
            return k
    return 0


def test_longest_common_subsequence_against_brute_force() -> None:
    rng = np.random.default_rng(11)
    for _ in range(300):
        x = [str(c) for c in rng.choice(list("abc"), size=rng.integers(0, 6))]
        y = [str(c) for c in rng.choice(list("abc"), size=rng.integers(0, 6))]
        pairs = traj.longest_common_subsequence(len(x), len(y),
                                                lambda i, j, x=x, y=y: x[i] == y[j])
        # a common subsequence (increasing on both sides, equal items) of the longest length
        assert all(x[i] == y[j] for i, j in pairs)
        assert all(a[0] < b[0] and a[1] < b[1] for a, b in itertools.pairwise(pairs))
        assert len(pairs) == _brute_force_lcs_length(x, y), (x, y)


def test_a_tied_order_credits_the_tool_called_first() -> None:
    # both one-tool orders are longest; the one kept is the tool the agent called first
    assert traj.tool_order_score(["search", "book"], ["book", "search"]) == (0.5, ["book"])


def test_diagnose_goes_on_after_each_kind_of_finding() -> None:
    reference = [_ref("pay"), _ref("A", x=1), _ref("B", y=1)]
    calls = [_call("A", raw="{"), _call("Z"), _call("B", y=2, z=3), _call("Y"), _call("V")]
    findings = traj.diagnose(reference, calls, [compile_matching(ArgMatching())] * 3, [],
                             frozenset({"Z"}))
    assert [(f.kind, f.tool, f.expected_tool, f.parameters, f.message) for f in findings] == [
        ("malformed_arguments", "A", None, [], "arguments of A are not a JSON object: '{'"),
        ("parameter_error", "B", None, ["y", "z"], "B: unexpected z; y: expected 1, got 2"),
        ("wrong_tool", "Y", "pay", [], "called Y where pay was expected"),
        ("unexpected_call", "V", None, [], "call to V, which the reference does not use"),
    ]


def test_parameter_error_message_lists_missing_unexpected_and_different() -> None:
    reference = [_ref("t", a=1, b=2, c=3, d=4)]
    findings = traj.diagnose(reference, [_call("t", c=0, d=0, e=5, f=6)],
                             [compile_matching(ArgMatching())], [])
    assert [f.message for f in findings] == [
        "t: missing a, b; unexpected e, f; c: expected 3, got 0; d: expected 4, got 0"]


def test_missing_tool_message_writes_the_reference_arguments() -> None:
    findings = traj.diagnose([_ref("t", city="Oslo", days=3)], [],
                             [compile_matching(ArgMatching())], [])
    assert [f.message for f in findings] == ["expected a call to t(city='Oslo', days=3)"]
