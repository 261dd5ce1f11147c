"""Trajectory metrics: the agent's tool calls against the reference calls.

Matching. A reference call and an actual call are *compatible* when the names are equal, the
actual arguments parsed as a JSON object, and the arguments match under the reference call's
mode (:mod:`harness.checks.args`). Calls are then paired one-to-one by a maximum bipartite
matching (``scipy.sparse.csgraph.maximum_bipartite_matching``), so a reference call is used
by at most one actual call and vice versa: a repeated call is counted once, and a first-fit
choice can never hide a pairing that exists (with ``subset`` matching, first-fit can give an
early actual call to the wrong reference call and miss a full match).

Vertex AI names and meanings, and where we differ:

- ``trajectory_exact_match``: 1 when the calls are the reference calls, same count, same
  order, each pair compatible; else 0. As in Vertex AI.
- ``trajectory_in_order_match``: 1 when the reference calls appear in the actual calls in
  order (a subsequence, extra calls allowed in between); else 0. As in Vertex AI.
- ``trajectory_any_order_match``: 1 when every reference call is matched one-to-one by some
  actual call (extra calls allowed); else 0. Vertex AI says "contains all"; with repeated
  reference calls we require as many actual calls as reference calls (as ADK's ANY_ORDER
  does by removing each actual call it uses; a membership test would not).
- ``trajectory_precision`` = matched pairs / actual calls, ``trajectory_recall`` = matched
  pairs / reference calls, ``trajectory_f1`` their harmonic mean (not in Vertex AI).
  **Differs from Vertex AI**, whose precision counts actual calls that are *members* of the
  reference: there, calling ``readFile`` twice when the reference has it once gives
  precision 1.0; here the second call is unmatched, so precision is 2/3 for
  ``[listFiles, readFile, readFile]`` against ``[listFiles, readFile]``. One-to-one counting
  is what makes precision notice over-calling.
- ``trajectory_single_tool_use`` (per named tool): 1 when the agent called that tool at
  least once, whatever its arguments (malformed ones included); else 0. As in Vertex AI.

Empty trajectories (Vertex AI documents no values for these): with no reference calls and
no actual calls every metric is 1. With no reference calls but some actual calls, exact is 0
while in-order and any-order are 1 (the reference is trivially contained, as in Vertex AI's
and ADK's definitions; the "should not call tools" check is the one that fails), and
precision, recall and F1 are 0. With reference calls but no actual calls, every metric is 0.
The rule: a ratio whose denominator is empty is 1 only when both sides are empty.

Calls with malformed arguments (not a JSON object) are compatible with nothing, whatever the
mode, because the tool could not have run them as intended; the report carries a warning.

ADK's ``tool_trajectory_avg_score``: per user turn (ADK's *invocation*), 1 when that turn's
calls match that turn's reference calls under ``EXACT`` (same calls, same order, nothing
extra), ``IN_ORDER`` (reference calls in order, **extra calls allowed**) or ``ANY_ORDER``
(all reference calls in any order, **extra calls allowed**); the score is the mean over
turns. Turns come from the reference calls' ``turn``; when no reference call names a turn the
whole conversation is one invocation. ADK compares arguments with Python ``==`` (or ignores
them); we use the same argument matching as above (default ``exact``, where ``true != 1``),
and ANY_ORDER uses the maximum matching where ADK uses first-fit (identical under an
equality). google-adk 2.13 raises when the actual and expected invocation counts differ
(``actual_invocations and expected_invocations must have the same length``); we score every
turn up to the larger of the two, so a turn with reference calls that the conversation never
reached scores 0. That is the harness's definition, used for scenarios of ours; on a scenario
from an ADK file (``adk_invocations``) the ADK name is ADK's own number and this one is
reported as ``tool_trajectory_avg_score_strict`` (:mod:`harness.checks.adk_scores`).

Tool-order score (from the seeds): the share of the expected order found in sequence, i.e.
the longest common subsequence of the expected names and the order in which tools were
*first* called, divided by the expected length. First calls, because the expected order says
which tool should come first; re-reading a file afterwards is not an order error, so
``listFiles, readFile, readFile`` scores 1.0 on ``[listFiles, readFile]``. The LCS rather than
the longest matching prefix gives credit for later steps after a missed one. When the
expected order itself repeats a name it describes repeats, so the full call sequence is used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from harness.checks.args import ArgDiff, CompiledMatching
from harness.checks.result import Finding
from harness.checks.spec import ExpectedToolCall
from harness.transcript import ToolCallRecord

AdkMatchType = Literal["EXACT", "IN_ORDER", "ANY_ORDER"]


def _ratio(numerator: int, denominator: int, other_side: int) -> float:
    if denominator == 0:
        return 1.0 if other_side == 0 else 0.0
    return numerator / denominator


def compatibility(
    reference: Sequence[ExpectedToolCall],
    actual: Sequence[ToolCallRecord],
    matchings: Sequence[CompiledMatching],
) -> tuple[np.ndarray, list[str]]:
    """A boolean matrix (reference x actual): which actual call could stand for which
    reference call, and warnings raised while comparing (e.g. a custom matcher that raised).
    ``matchings[i]`` is the compiled matching of ``reference[i]``."""
    compat = np.zeros((len(reference), len(actual)), dtype=bool)
    warnings: list[str] = []
    for i, ref in enumerate(reference):
        for j, call in enumerate(actual):
            if call.name != ref.name or call.raw_arguments is not None:
                continue
            diff = matchings[i].compare(ref.args, call.arguments)
            compat[i, j] = diff.matched
            warnings.extend(diff.warnings)
    return compat, list(dict.fromkeys(warnings))


def maximum_matching(compat: np.ndarray) -> list[tuple[int, int]]:
    """Pairs (reference index, actual index) of a maximum one-to-one matching."""
    n_ref, n_act = compat.shape
    if n_ref == 0 or n_act == 0:
        return []
    graph = csr_matrix(compat.astype(np.int8))
    # perm_type="column": for each row (reference call) the column (actual call) it got, or -1
    columns = maximum_bipartite_matching(graph, perm_type="column")
    return [(int(i), int(j)) for i, j in enumerate(columns) if j >= 0]


def longest_common_subsequence(
    n: int, m: int, same: Callable[[int, int], bool]
) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of two sequences of lengths ``n`` and
    ``m``, where ``same(i, j)`` says whether item ``i`` of the first equals item ``j`` of the
    second. Dynamic programming, O(n*m)."""
    table = np.zeros((n + 1, m + 1), dtype=np.int64)
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            if same(i, j):
                table[i, j] = table[i + 1, j + 1] + 1
            else:
                table[i, j] = max(table[i + 1, j], table[i, j + 1])
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < n and j < m:
        if same(i, j) and table[i, j] == table[i + 1, j + 1] + 1:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1, j] >= table[i, j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def exact_match(compat: np.ndarray) -> bool:
    """Same number of calls and each position compatible."""
    n_ref, n_act = compat.shape
    return n_ref == n_act and all(bool(compat[i, i]) for i in range(n_ref))


def in_order_match(compat: np.ndarray) -> bool:
    """The reference calls form a subsequence of the actual calls (extras allowed)."""
    n_ref, n_act = (int(n) for n in compat.shape)
    return len(longest_common_subsequence(n_ref, n_act, lambda i, j: bool(compat[i, j]))) == n_ref


def any_order_match(compat: np.ndarray) -> bool:
    """Every reference call is matched one-to-one by some actual call (extras allowed)."""
    return len(maximum_matching(compat)) == int(compat.shape[0])


@dataclass(frozen=True)
class TrajectoryScores:
    """The Vertex AI metrics plus F1 for one reference/actual pair, and the matching."""

    exact_match: float
    in_order_match: float
    any_order_match: float
    precision: float
    recall: float
    f1: float
    pairs: list[tuple[int, int]]


def trajectory_scores(compat: np.ndarray) -> TrajectoryScores:
    """Compute the trajectory metrics from a compatibility matrix (see module docstring for
    the definitions and the empty-trajectory conventions)."""
    n_ref, n_act = compat.shape
    pairs = maximum_matching(compat)
    matched = len(pairs)
    precision = _ratio(matched, n_act, n_ref)
    recall = _ratio(matched, n_ref, n_act)
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return TrajectoryScores(
        exact_match=float(exact_match(compat)),
        in_order_match=float(in_order_match(compat)),
        any_order_match=float(matched == n_ref),
        precision=precision,
        recall=recall,
        f1=f1,
        pairs=pairs,
    )


def single_tool_use(tool: str, actual: Sequence[ToolCallRecord]) -> float:
    """1.0 when ``tool`` was called at least once, else 0.0."""
    return float(any(c.name == tool for c in actual))


def adk_turn_match(compat: np.ndarray, match_type: AdkMatchType) -> bool:
    """ADK's per-invocation verdict for one turn's compatibility matrix."""
    if match_type == "EXACT":
        return exact_match(compat)
    if match_type == "IN_ORDER":
        return in_order_match(compat)
    return any_order_match(compat)


def adk_tool_trajectory(
    compat: np.ndarray,
    reference_turns: Sequence[int],
    actual_turns: Sequence[int],
    n_turns: int,
    match_type: AdkMatchType,
) -> list[float]:
    """ADK's per-turn scores (1.0 or 0.0) for turns ``0 .. n_turns-1``; their mean is
    ``tool_trajectory_avg_score``. ``reference_turns[i]``/``actual_turns[j]`` give the turn
    of each reference/actual call (rows/columns of ``compat``)."""
    ref_turns = np.asarray(reference_turns, dtype=np.int64)
    act_turns = np.asarray(actual_turns, dtype=np.int64)
    scores: list[float] = []
    for turn in range(n_turns):
        rows = np.flatnonzero(ref_turns == turn)
        cols = np.flatnonzero(act_turns == turn)
        sub = compat[np.ix_(rows, cols)]
        scores.append(float(adk_turn_match(sub, match_type)))
    return scores


def tool_order_score(
    expected: Sequence[str], actual_names: Sequence[str]
) -> tuple[float, list[str]]:
    """The share of ``expected`` found in sequence in the order tools were first called
    (the full sequence when ``expected`` repeats a name). Returns (score, the names found in
    order). An empty expected order scores 1.0."""
    if not expected:
        return 1.0, []
    sequence = (
        list(actual_names)
        if len(set(expected)) < len(expected)
        else list(dict.fromkeys(actual_names))
    )
    pairs = longest_common_subsequence(
        len(expected), len(sequence), lambda i, j: expected[i] == sequence[j]
    )
    return len(pairs) / len(expected), [expected[i] for i, _ in pairs]


def diagnose(
    reference: Sequence[ExpectedToolCall],
    actual: Sequence[ToolCallRecord],
    matchings: Sequence[CompiledMatching],
    pairs: Sequence[tuple[int, int]],
    forbidden: frozenset[str] = frozenset(),
) -> list[Finding]:
    """Explain the calls the maximum matching left unpaired, as findings.

    An unmatched reference call is a ``parameter_error`` (or ``malformed_arguments``) when an
    unmatched actual call has the same name, else a ``wrong_tool`` when an unmatched call went
    to a tool the reference never uses (paired in call order), else a ``missing_tool``. A
    left-over actual call is ``over_calling`` when its tool is in the reference (a repeat),
    ``malformed_arguments`` when its arguments did not parse, else an ``unexpected_call``.
    Calls to ``forbidden`` tools are left to the forbidden-tools check.
    """
    matched_ref = {i for i, _ in pairs}
    matched_act = {j for _, j in pairs}
    free_ref = [i for i in range(len(reference)) if i not in matched_ref]
    free_act = [j for j in range(len(actual)) if j not in matched_act]
    reference_names = {r.name for r in reference}
    findings: list[Finding] = []

    still_missing: list[int] = []
    for i in free_ref:
        ref = reference[i]
        same = next((j for j in free_act if actual[j].name == ref.name), None)
        if same is None:
            still_missing.append(i)
            continue
        free_act.remove(same)
        call = actual[same]
        if call.raw_arguments is not None:
            findings.append(_malformed(call))
            continue
        diff: ArgDiff = matchings[i].compare(ref.args, call.arguments)
        findings.append(
            Finding(
                kind="parameter_error",
                tool=ref.name,
                parameters=diff.faulty_keys,
                message=_describe_diff(ref, call, diff),
            )
        )

    strangers = [j for j in free_act if actual[j].name not in reference_names
                 and actual[j].name not in forbidden]
    for i in still_missing:
        ref = reference[i]
        if strangers:
            j = strangers.pop(0)
            free_act.remove(j)
            findings.append(
                Finding(
                    kind="wrong_tool",
                    tool=actual[j].name,
                    expected_tool=ref.name,
                    message=f"called {actual[j].name} where {ref.name} was expected",
                )
            )
        else:
            findings.append(
                Finding(kind="missing_tool", tool=ref.name,
                        message=f"expected a call to {ref.name}({_args_text(ref.args)})")
            )

    for j in free_act:
        call = actual[j]
        if call.name in forbidden:
            continue
        if call.raw_arguments is not None:
            findings.append(_malformed(call))
        elif call.name in reference_names:
            findings.append(Finding(kind="over_calling", tool=call.name,
                                    message=f"extra call to {call.name} beyond the reference"))
        else:
            findings.append(Finding(kind="unexpected_call", tool=call.name,
                                    message=f"call to {call.name}, which the reference does "
                                    "not use"))
    return findings


def _malformed(call: ToolCallRecord) -> Finding:
    return Finding(
        kind="malformed_arguments",
        tool=call.name,
        message=f"arguments of {call.name} are not a JSON object: {call.raw_arguments!r}",
    )


def _args_text(args: dict[str, object]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in args.items())


def _describe_diff(ref: ExpectedToolCall, call: ToolCallRecord, diff: ArgDiff) -> str:
    parts: list[str] = []
    if diff.missing:
        parts.append("missing " + ", ".join(diff.missing))
    if diff.unexpected:
        parts.append("unexpected " + ", ".join(diff.unexpected))
    for key in diff.different:
        parts.append(f"{key}: expected {ref.args[key]!r}, got {call.arguments[key]!r}")
    return f"{ref.name}: " + "; ".join(parts)
