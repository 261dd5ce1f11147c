"""ADK's tool_trajectory_avg_score (per turn) and response_match_score (ROUGE-1 F)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from rouge_score import rouge_scorer

from harness.checks.args import CheckConfigError
from harness.checks.response import find_phrases, rouge1
from harness.checks.run import run_checks
from harness.checks.spec import Expectations, ExpectedToolCall, TurnAnswer
from harness.checks.trajectory import adk_turn_match
from harness.models.types import Message
from harness.transcript import ToolCallRecord, Transcript


def _call(name: str, turn: int, **args: Any) -> ToolCallRecord:
    return ToolCallRecord(call_id=f"{name}{turn}", name=name, arguments=args, turn=turn)


def _ref(name: str, turn: int | None = None, **args: Any) -> ExpectedToolCall:
    return ExpectedToolCall(name=name, args=args, turn=turn)


def _tx(calls: list[ToolCallRecord], user_turns: int = 1, final: str = "") -> Transcript:
    messages = [Message(role="user", content=f"q{i}") for i in range(user_turns)]
    if final:
        messages.append(Message(role="assistant", content=final))
    return Transcript(scenario_id="s", messages=messages, tool_calls=calls,
                      stop_reason="imported")


def _adk(reference: list[ExpectedToolCall], calls: list[ToolCallRecord], match: str,
         user_turns: int = 2) -> tuple[float, list[float]]:
    exp = Expectations(tool_calls=reference, adk_trajectory_match=match)  # type: ignore[arg-type]
    result = run_checks(_tx(calls, user_turns), exp).get("tool_trajectory_avg_score")
    assert result.value is not None
    return result.value, result.details["per_turn"]


# Turn 0 is done exactly; turn 1 has an extra call after the expected one.
REF_2TURNS = [_ref("search", 0, q="x"), _ref("book", 1, id=1)]
EXTRA_IN_TURN_1 = [_call("search", 0, q="x"), _call("book", 1, id=1), _call("email", 1)]
SWAP_IN_TURN_1 = [_call("search", 0, q="x"), _call("email", 1), _call("book", 1, id=1)]


@pytest.mark.parametrize(
    ("calls", "match", "score", "per_turn"),
    [
        (EXTRA_IN_TURN_1, "EXACT", 0.5, [1.0, 0.0]),
        (EXTRA_IN_TURN_1, "IN_ORDER", 1.0, [1.0, 1.0]),  # ADK allows extra calls here
        (EXTRA_IN_TURN_1, "ANY_ORDER", 1.0, [1.0, 1.0]),  # and here
        (SWAP_IN_TURN_1, "IN_ORDER", 1.0, [1.0, 1.0]),
        ([_call("book", 1, id=1), _call("search", 1, q="x")], "ANY_ORDER", 0.5, [0.0, 1.0]),
        ([_call("search", 0, q="x")], "ANY_ORDER", 0.5, [1.0, 0.0]),
    ],
)
def test_per_turn_score(calls: list[ToolCallRecord], match: str, score: float,
                        per_turn: list[float]) -> None:
    assert _adk(REF_2TURNS, calls, match) == (score, per_turn)


def test_order_within_a_turn() -> None:
    reference = [_ref("a", 0), _ref("b", 0)]
    swapped = [_call("b", 0), _call("a", 0)]
    assert _adk(reference, swapped, "IN_ORDER", user_turns=1)[0] == 0.0
    assert _adk(reference, swapped, "ANY_ORDER", user_turns=1)[0] == 1.0
    assert _adk(reference, swapped, "EXACT", user_turns=1)[0] == 0.0


def test_turn_without_reference_calls_expects_none_and_unreached_turn_scores_zero() -> None:
    # three user turns, the reference only has a call in turn 0: turns 1-2 expect no call
    assert _adk([_ref("a", 0)], [_call("a", 0), _call("b", 2)], "EXACT", user_turns=3) == (
        pytest.approx(2 / 3), [1.0, 1.0, 0.0])
    # a reference call in turn 2 of a conversation that stopped after turn 0
    assert _adk([_ref("a", 0), _ref("b", 2)], [_call("a", 0)], "EXACT", user_turns=1) == (
        pytest.approx(2 / 3), [1.0, 1.0, 0.0])


def test_without_turns_the_conversation_is_one_invocation() -> None:
    reference = [_ref("a"), _ref("b")]
    calls = [_call("a", 0), _call("b", 1)]  # spread over turns, but the reference is not
    assert _adk(reference, calls, "EXACT", user_turns=2) == (1.0, [1.0])


def test_turns_on_some_reference_calls_only_is_an_error() -> None:
    with pytest.raises(CheckConfigError, match=r"tool_calls\[1\]\.turn"):
        run_checks(_tx([]), Expectations(tool_calls=[_ref("a", 0), _ref("b")]))


# ADK's own three algorithms (trajectory_evaluator.py), reimplemented over name/args tuples.
def _adk_exact(actual: list, expected: list) -> bool:
    return len(actual) == len(expected) and all(
        x == y for x, y in zip(actual, expected, strict=True))


def _adk_in_order(actual: list, expected: list) -> bool:
    if not expected:
        return True
    it = iter(expected)
    current = next(it)
    for x in actual:
        if x == current:
            current = next(it, None)
            if current is None:
                return True
    return False


def _adk_any_order(actual: list, expected: list) -> bool:
    pool = list(actual)
    for y in expected:
        if y not in pool:
            return False
        pool.remove(y)
    return True


def test_turn_match_agrees_with_adk_algorithms_under_exact_equality() -> None:
    rng = np.random.default_rng(11)
    alphabet = [("a", 1), ("a", 2), ("b", 1)]
    adk = {"EXACT": _adk_exact, "IN_ORDER": _adk_in_order, "ANY_ORDER": _adk_any_order}
    for _ in range(400):
        actual = [alphabet[k] for k in rng.integers(0, 3, size=rng.integers(0, 5))]
        expected = [alphabet[k] for k in rng.integers(0, 3, size=rng.integers(0, 4))]
        compat = np.array([[x == y for x in actual] for y in expected],
                          dtype=bool).reshape(len(expected), len(actual))
        for match_type, reference_impl in adk.items():
            assert adk_turn_match(compat, match_type) == reference_impl(actual, expected), (  # type: ignore[arg-type]
                match_type, actual, expected)


# --- response_match_score -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("candidate", "reference", "precision", "recall", "fmeasure"),
    [
        # rouge_score's README example: one shared unigram out of 1 and 3
        ("testing", "testing one two", 1.0, 1 / 3, 0.5),
        # T001 by hand: tokens after lower-casing, splitting on non-alphanumerics and Porter
        # stemming words over 3 letters: candidate 12 tokens, reference 8, shared 6
        # (it, sunni, 18, c, in, pari): P = 6/12, R = 6/8, F = 0.6
        ("It's currently sunny in Paris with a temperature of 18°C.",
         "It is sunny and 18°C in Paris.", 0.5, 0.75, 0.6),
        # stemming: running -> run, dogs -> dog, runs -> run
        ("running dogs", "the dog runs", 1.0, 2 / 3, 0.8),
        ("", "anything at all", 0.0, 0.0, 0.0),
        ("Sunny!", "sunny", 1.0, 1.0, 1.0),
    ],
)
def test_rouge1_hand_computed(candidate: str, reference: str, precision: float, recall: float,
                              fmeasure: float) -> None:
    assert rouge1(candidate, reference) == pytest.approx((precision, recall, fmeasure))


def test_rouge1_matches_rouge_score_with_adk_settings() -> None:
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    pairs = [("The cats are running home quickly", "A cat ran home quick"),
             ("Booked flight BA117 for 3 passengers", "Your flight BA117 is booked for three")]
    for candidate, reference in pairs:
        expected = scorer.score(reference, candidate)["rouge1"]
        assert rouge1(candidate, reference) == pytest.approx(tuple(expected))


def test_rouge1_ascii_text_is_rouge_score_with_the_stemmer() -> None:
    # ADK sends ASCII words through rouge_score's own tokenizer; accented and other-script
    # words are kept whole (tests/test_response_match_adk.py).
    stemmed = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    for candidate, reference in [("The dogs were running home", "A dog runs home"),
                                 ("Ola, como voce esta?", "Ola, como vai voce?")]:
        assert rouge1(candidate, reference) == pytest.approx(
            tuple(stemmed.score(reference, candidate)["rouge1"]))
    assert rouge1("running dogs", "the dog runs")[2] == pytest.approx(0.8)  # stemmed


def test_response_match_check_scores_cyrillic_answers() -> None:
    exp = Expectations(reference_answer="В Париже солнечно, 18°C.")
    result = run_checks(_tx([], final="в париже СОЛНЕЧНО, 18°C."), exp)
    assert result.get("response_match_score").value == 1.0  # ADK lower-cases Cyrillic
    assert result.get("response_match_score").passed


def test_response_match_check_threshold_and_empty_answer() -> None:
    exp = Expectations(reference_answer="It is sunny and 18°C in Paris.")
    good = run_checks(_tx([], final="It is sunny and 18°C in Paris."), exp)
    assert good.get("response_match_score").value == 1.0
    assert good.get("response_match_score").passed
    partial = run_checks(_tx([], final="It's currently sunny in Paris with a temperature of "
                                       "18°C."), exp).get("response_match_score")
    assert partial.value == pytest.approx(0.6) and partial.passed is False  # ADK default 0.8
    assert partial.findings[0].kind == "response_mismatch"
    lenient = exp.model_copy(update={"response_match_threshold": 0.5})
    assert run_checks(_tx([], final="It's currently sunny in Paris with a temperature of 18°C."),
                      lenient).get("response_match_score").passed
    silent = run_checks(_tx([]), exp).get("response_match_score")
    assert silent.value == 0.0 and silent.details["empty_response"]


@pytest.mark.parametrize(
    ("text", "found", "missing"),
    [
        ("It is 18°C in PARIS.", ["Paris", "18°C"], []),
        ("It is 18 °C in Paris", ["Paris"], ["18°C"]),
        ("Your order\n  number is 42", ["order number"], []),  # whitespace runs are one space
        ("", [], ["Paris"]),
    ],
)
def test_required_phrases(text: str, found: list[str], missing: list[str]) -> None:
    phrases = [*found, *missing]
    assert find_phrases(text, phrases) == (found, missing)


def test_a_trajectory_score_equal_to_its_threshold_passes_as_in_adk() -> None:
    # ADK compares score >= threshold: a score exactly at the threshold passes.
    exp = Expectations(tool_calls=REF_2TURNS, adk_trajectory_match="EXACT",
                       trajectory_threshold=0.5)
    at = run_checks(_tx(EXTRA_IN_TURN_1, 2), exp).get("tool_trajectory_avg_score")
    assert (at.value, at.passed) == (0.5, True)
    above = exp.model_copy(update={"trajectory_threshold": 0.5000001})
    assert run_checks(_tx(EXTRA_IN_TURN_1, 2), above).get(
        "tool_trajectory_avg_score").passed is False


def test_a_word_for_word_answer_per_turn_scores_one_and_passes_a_threshold_of_one() -> None:
    answers = ["It is sunny in Paris.", "Tomorrow brings rain to Tokyo."]
    messages = []
    for i, answer in enumerate(answers):
        messages += [Message(role="user", content=f"q{i}"),
                     Message(role="assistant", content=answer)]
    transcript = Transcript(scenario_id="s", messages=messages, stop_reason="imported")
    exp = Expectations(reference_answers=[TurnAnswer(turn=i, answer=a)
                                          for i, a in enumerate(answers)],
                       response_match_threshold=1.0)
    result = run_checks(transcript, exp).get("response_match_score")
    assert (result.value, result.passed) == (1.0, True)
    single = Expectations(reference_answer=answers[-1], response_match_threshold=1.0)
    assert run_checks(transcript, single).get("response_match_score").passed is True
