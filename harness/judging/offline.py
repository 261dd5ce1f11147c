"""The offline judge, ``mock:judge``: well-formed verdicts with no model and no key.

The judging code binds it (:func:`~harness.models.mock.bind_offline`, for ``mock:`` models
only) to what it is asked about: a :class:`RubricCase` (the rubric, the transcript, the turn
and context) or a :class:`PairwiseCase` (the two candidates as shown); from a rubric case it
takes the rubric and a few facts about the transcript (:func:`transcript_features`), computed
then and never for a real judge. It answers deterministically per (prompt, sample index).
Its scores move with the transcript so an offline demo's numbers mean something: an empty
final answer, a failed episode, tool errors, malformed tool arguments or a conversation that
ended badly all lower them; at a temperature above 0 (or the default) each sample adds a
little noise, so repeated samples disagree a little on fine scales, as real judges do.

Variants (the mock registry hands ``mock:judge-<variant>`` to the same factory): ``judge``
(default), ``judge-strict`` (harsher), ``judge-lenient`` (kinder) and ``judge-first`` (in
pairwise comparisons always prefers the response shown first: a position-biased judge for
demonstrating the order-swap check).

For a rubric that requires a reference answer (``final_response_match``) its score follows
the share of the reference's words found in the final answer. For ``sentence_grounding``
(``hallucinations``) it splits each answer into sentences and labels them from the sources
(system prompt, user messages, tool results): a sentence whose numbers all appear in the
sources, or (without numbers) at least half of whose words do, is supported, with the
source passage quoted; one with a number the sources lack, or only some of its words, is
unsupported; a question, or a sentence sharing no word with the sources, is not applicable.

For a ``user_turn`` rubric (``simulator_turns``) it answers yes/no per criterion on the user
turn it is asked about (:func:`user_turn_verdicts`): ``follows_persona`` is no when the user
speaks as the assistant ("As an AI", "How can I help you", tool-call JSON),
``pursues_goal`` no when the user walks out ("never mind", "forget it", "I'll sort it out
myself"), ``stays_in_scope`` no when the user gives a known fact's value the agent's last
turn did not ask for, ``consistent_with_earlier_turns`` no when the user gives a value for
something its profile lists as unknown or repeats an earlier message word for word, and
``natural`` no for an empty message or a wall of text (over 120 words). These are what
``mock:simulator-faulty`` does wrong in its odd epochs, so its odd epochs score lower.

Every number it produces comes from an offline model; the records say so (``offline``).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.errors import ModelConfigError
from harness.judging.context import JudgeContext
from harness.judging.grounding import answers_to_check
from harness.judging.rubric import Rubric
from harness.judging.user_turns import user_messages
from harness.models.base import MockBehaviour
from harness.models.request import ModelRequest
from harness.models.types import Message, T
from harness.transcript import Transcript

_VARIANTS: dict[str, float] = {
    "judge": 0.0,
    "judge-strict": -0.25,
    "judge-lenient": 0.15,
    "judge-first": 0.0,
}
_BAD_ENDINGS = ("user_gave_up", "turn_limit", "agent_step_limit", "tool_call_limit", "off_topic")


def transcript_features(transcript: Transcript, *, turn: int | None = None) -> dict[str, Any]:
    """A few facts about a transcript (or one agent turn) that the offline judge scores on."""
    turns = transcript.turn_of_messages()
    if turn is None:
        final = transcript.final_response
        calls = transcript.tool_calls
    else:
        texts = [m.content for m, t in zip(transcript.messages, turns, strict=True)
                 if t == turn and m.role == "assistant" and m.content.strip()]
        final = texts[-1] if texts else ""
        calls = [c for c in transcript.tool_calls if c.turn == turn]
    return {
        "final_response_empty": not final.strip(),
        "final_response_chars": len(final),
        "tool_calls": len(calls),
        "tool_errors": sum(1 for c in calls if c.is_error),
        "malformed_arguments": sum(1 for c in calls if c.raw_arguments is not None),
        "stop_reason": transcript.stop_reason,
        "errored": transcript.errored,
        "quotes": [final.strip()[:120]] if final.strip() else [],
    }


_WORD = re.compile(r"[^\W_]+")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _words(text: str, min_len: int) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if len(w) >= min_len and not w.isdigit()]


def reference_overlap(final: str, reference: str) -> float:
    """The share of the reference answer's words (3 letters or more) found in ``final``."""
    wanted = set(_words(reference, 3))
    return len(wanted & set(_words(final, 3))) / len(wanted) if wanted else 0.0


@dataclass(frozen=True)
class RubricCase:
    """What a rubric judge call is about, for binding ``mock:judge``: the rubric, the
    transcript, the material the prompt shows, the agent turn (``None``: the whole
    conversation) and the judge context (reference answer)."""

    rubric: Rubric
    transcript: Transcript
    material: str
    turn: int | None = None
    context: JudgeContext | None = None


@dataclass(frozen=True)
class PairwiseCase:
    """What a pairwise judge call is about, for binding ``mock:judge``: the two candidates as
    shown (``first`` is Response A) and whether a tie may be answered."""

    first: str
    second: str
    allow_tie: bool


def rubric_case_info(case: RubricCase) -> dict[str, Any]:
    """What ``mock:judge`` scores a rubric case on: the rubric, the transcript's features
    (with the reference overlap when the rubric compares with a reference), and for
    ``sentence_grounding`` the answers and their sources."""
    rubric, transcript, material = case.rubric, case.transcript, case.material
    turn, context = case.turn, case.context
    features = transcript_features(transcript, turn=turn)
    reference = context.reference_answer if context is not None else None
    if rubric.requires_reference_answer and reference:
        features["reference_overlap"] = reference_overlap(transcript.final_response, reference)
    info: dict[str, Any] = {
        "kind": "rubric",
        "rubric": rubric.model_dump(mode="json"),
        "turn": turn,
        "features": features,
        "material_chars": len(material),
    }
    if rubric.target == "user_turn" and turn is not None:
        info["user_turn"] = user_turn_case(transcript, turn, context)
    if rubric.target == "sentence_grounding":
        sources = [m.content for m in transcript.messages if m.role in ("system", "user", "tool")]
        info["grounding"] = {
            "answers": [{"index": a.index, "text": a.text} for a in answers_to_check(
                transcript, include_intermediate=rubric.include_intermediate)],
            "sources": [transcript.system_prompt or "", *sources],
        }
    return info


def user_turn_case(transcript: Transcript, turn: int, context: JudgeContext | None
                   ) -> dict[str, Any]:
    """What ``mock:judge`` reads of one user turn: its text, the agent's text just before it
    (tool calls included), the earlier user turns and the profile's facts."""
    texts = user_messages(transcript)
    before, seen = "", 0
    for message in transcript.messages:
        if message.role == "user":
            if seen == turn:
                break
            seen, before = seen + 1, ""
        elif message.role == "assistant":
            calls = " ".join(f"{c.name} {json.dumps(c.arguments)}" for c in message.tool_calls)
            before += f" {message.content} {calls}"
    ctx = context or JudgeContext()
    return {"text": texts[turn] if turn < len(texts) else "", "agent_before": before,
            "earlier": texts[:turn],
            "facts": {k: v for k, v in ctx.user_facts.items()
                      if isinstance(v, str | int | float) and not isinstance(v, bool)},
            "unknowns": list(ctx.user_unknowns)}


_AS_ASSISTANT = re.compile(r"\bas an ai\b|\bi(?: am|'m) an? (?:ai|assistant|language model)\b|"
                           r"\bhow can i (?:help|assist) you\b|^\s*[\[{]\s*\"(?:name|tool|"
                           r"function)\"", re.IGNORECASE)
_WALK_OUT = re.compile(r"\bnever ?mind\b|\bforget it\b|\bi give up\b|"
                       r"\bsort it out myself\b", re.IGNORECASE)
_WALL_OF_TEXT = 120


def user_turn_verdicts(case: Mapping[str, Any]) -> dict[str, tuple[bool, str]]:
    """The offline judge's yes/no and reason per ``user_turn`` criterion for one user turn
    (a :func:`user_turn_case`; see the module docstring)."""
    text, before = case["text"], case["agent_before"].lower()
    lowered, asked = text.lower(), set(_words(before, 2))
    given = [key for key, value in case["facts"].items() if str(value).lower() in lowered
             and not asked.intersection(_words(key.replace("_", " "), 2))
             and str(value).lower() not in before]
    invented = [item for item in case["unknowns"]
                if _words(item, 4) and all(w in lowered for w in _words(item, 4))
                and not re.search(r"\b(?:don't|do not|not sure|no idea)\b", lowered)]
    repeated = text.strip().lower() in (e.strip().lower() for e in case["earlier"])
    words = len(text.split())
    return {
        "follows_persona": (not _AS_ASSISTANT.search(text),
                            "speaks as the assistant" if _AS_ASSISTANT.search(text)
                            else "speaks as the user"),
        "pursues_goal": (not _WALK_OUT.search(text),
                         "walks out before the goal is met" if _WALK_OUT.search(text)
                         else "keeps to the goal"),
        "stays_in_scope": (not given,
                           f"gives {', '.join(given)} unasked" if given
                           else "gives only what was asked"),
        "consistent_with_earlier_turns": (
            not invented and not repeated,
            f"answers for {invented[0]!r}, which it does not know" if invented
            else "repeats an earlier message word for word" if repeated
            else "agrees with its earlier turns and profile"),
        "natural": (0 < words <= _WALL_OF_TEXT,
                    "empty" if words == 0 else f"a wall of text ({words} words)"
                    if words > _WALL_OF_TEXT else "reads like a person's message"),
    }


def label_sentence(sentence: str, sources: Sequence[str]) -> tuple[str, list[str], str]:
    """The offline judge's label for one sentence: ``(label, evidence quotes, reasoning)``
    (see the module docstring)."""
    if sentence.rstrip().endswith("?"):
        return "not_applicable", [], "a question, not a claim"
    numbers = _NUMBER.findall(sentence)
    words = _words(sentence, 4)
    source_numbers = {n for src in sources for n in _NUMBER.findall(src)}
    source_words = {w for src in sources for w in _words(src, 4)}
    if numbers:
        missing = [n for n in numbers if n not in source_numbers]
        if missing:
            return "unsupported", [], f"no source gives {', '.join(missing)}"
        return "supported", _quote(numbers[0], sources), "every number is in a source"
    found = [w for w in words if w in source_words]
    if not found:
        return "not_applicable", [], "shares no word with the sources: no claim to check"
    if len(found) * 2 < len(words):
        return "unsupported", [], f"only {len(found)} of its {len(words)} words are in a source"
    return "supported", _quote(found[0], sources), "most of its words are in a source"


def _quote(token: str, sources: Sequence[str]) -> list[str]:
    """An exact passage of the first source holding ``token`` (case-insensitively): the whole
    source when short, else the token with some context."""
    for src in sources:
        at = src.lower().find(token.lower())
        if at >= 0:
            return [src.strip() if len(src) <= 160 else src[max(0, at - 40):at + 40].strip()]
    return []


def _quality(features: Mapping[str, Any], target: str) -> float:
    if target == "simulator_fidelity":
        quality = 0.9
        if features["stop_reason"] == "simulator_error":
            quality = 0.05
        elif features["stop_reason"] in _BAD_ENDINGS:
            quality -= 0.2
        return quality
    quality = 0.9
    if features["errored"]:
        return 0.05
    if features["final_response_empty"] and target != "tool_use":
        quality = 0.15
    quality -= 0.2 * int(features["tool_errors"]) + 0.25 * int(features["malformed_arguments"])
    if features["stop_reason"] in _BAD_ENDINGS:
        quality -= 0.3
    return quality


def _candidate_quality(text: str) -> float:
    if not text.strip():
        return 0.0
    # A mild length preference, as many real judges show.
    quality = 0.4 + 0.4 * min(len(text), 300) / 300
    if "ERROR" in text:
        quality -= 0.2
    return quality


class MockJudge(MockBehaviour):
    """``mock:judge``: deterministic rubric verdicts and pairwise preferences for the case it
    is bound to (see the module docstring)."""

    VARIANTS = tuple(v.removeprefix("judge-") for v in _VARIANTS if v != "judge")

    def __init__(self, name: str = "judge") -> None:
        if name not in _VARIANTS:
            raise ModelConfigError(
                f"unknown offline judge 'mock:{name}'; known: "
                + ", ".join(f"mock:{v}" for v in _VARIANTS)
            )
        self.name = name
        self.shift = _VARIANTS[name]
        self.info: Mapping[str, Any] | None = None

    def bind(self, context: object) -> MockBehaviour:
        """A judge for ``context``: a :class:`RubricCase` or a :class:`PairwiseCase`; any
        other context leaves it unbound."""
        if isinstance(context, RubricCase):
            info: dict[str, Any] = {"kind": "rubric", **rubric_case_info(context)}
        elif isinstance(context, PairwiseCase):
            info = {"kind": "pairwise", "first": context.first, "second": context.second,
                    "allow_tie": context.allow_tie}
        else:
            return self
        bound = MockJudge(self.name)
        bound.info = info
        return bound

    async def chat(self, request: ModelRequest) -> Message:
        raise ModelConfigError(
            f"mock:{self.name} only answers judge requests (structured output); use "
            "mock:agent or mock:simulator for conversations"
        )

    async def structured(self, request: ModelRequest, response_model: type[T]) -> T:
        info = self.info
        if info is None:
            raise ModelConfigError(
                f"mock:{self.name} answers only the harness's judge requests (it was not "
                "bound to a rubric or pairwise case)"
            )
        rng = random.Random(self._seed(request.messages, request.sample_index))
        params = request.generation_params
        noisy = params.temperature is None or params.temperature > 0
        if info["kind"] == "pairwise":
            data = self._pairwise(info, rng, noisy)
        elif "grounding" in info:
            data = self._grounding(info["grounding"])
        elif "user_turn" in info:
            data = self._user_turn(info)
        else:
            data = self._rubric(info, rng, noisy)
        return response_model.model_validate(data)

    def _seed(self, messages: Sequence[Message], sample_index: int) -> int:
        payload = json.dumps([self.name, sample_index, [[m.role, m.content] for m in messages]])
        return int.from_bytes(hashlib.sha256(payload.encode()).digest()[:8], "big")

    def _rubric(self, info: Mapping[str, Any], rng: random.Random, noisy: bool) -> dict[str, Any]:
        rubric = Rubric.model_validate(info["rubric"])
        features = info["features"]
        base = features.get("reference_overlap", _quality(features, rubric.target)) + self.shift
        reasons = self._reasons(features)
        answer: dict[str, Any] = {}
        for crit in rubric.criteria:
            values = rubric.scale_of(crit).values
            if crit.allow_na and features["tool_calls"] == 0:
                answer[crit.id] = {"reasoning": "Offline mock judge: no tool was called, so "
                                                "this criterion does not apply.",
                                   "evidence": [], "score": "N/A"}
                continue
            # Noise lives in quality space, so it moves fine scales often and a clear binary
            # verdict almost never, as with real judges.
            quality = base + (rng.gauss(0.0, 0.08) if noisy else 0.0)
            position = round(max(0.0, min(1.0, quality)) * (len(values) - 1))
            answer[crit.id] = {
                "reasoning": f"Offline mock judge (not a model): {reasons}.",
                "evidence": list(features["quotes"]),
                "score": values[position],
            }
        return answer

    @staticmethod
    def _user_turn(info: Mapping[str, Any]) -> dict[str, Any]:
        verdicts = user_turn_verdicts(info["user_turn"])
        text = info["user_turn"]["text"]
        return {
            crit["id"]: {"reasoning": f"Offline mock judge (not a model): the turn {why}.",
                         "evidence": [text.strip()[:120]] if text.strip() and not holds else [],
                         "score": int(holds)}
            for crit in info["rubric"]["criteria"]
            for holds, why in [verdicts[crit["id"]]]
        }

    @staticmethod
    def _grounding(info: Mapping[str, Any]) -> dict[str, Any]:
        sentences = []
        for answer in info["answers"]:
            for sentence in _SENTENCE_END.split(answer["text"].strip()):
                if not sentence.strip():
                    continue
                label, evidence, why = label_sentence(sentence, info["sources"])
                sentences.append({"answer": answer["index"], "sentence": sentence,
                                  "reasoning": f"Offline mock judge (not a model): {why}.",
                                  "evidence": evidence, "label": label})
        return {"sentences": sentences}

    @staticmethod
    def _reasons(features: Mapping[str, Any]) -> str:
        parts = []
        if "reference_overlap" in features:
            parts.append(f"{features['reference_overlap']:.0%} of the reference answer's "
                         "words are in the final answer")
        if features["errored"]:
            parts.append("the episode failed")
        parts.append("no final answer" if features["final_response_empty"]
                     else "a final answer was given")
        if features["tool_errors"]:
            parts.append(f"{features['tool_errors']} tool call(s) returned an error")
        if features["malformed_arguments"]:
            parts.append(f"{features['malformed_arguments']} tool call(s) had malformed "
                         "arguments")
        parts.append(f"the conversation ended with {features['stop_reason']}")
        return "; ".join(parts)

    def _pairwise(self, info: Mapping[str, Any], rng: random.Random, noisy: bool
                  ) -> dict[str, Any]:
        if self.name == "judge-first":
            return {"reasoning": "Offline mock judge: prefers the response shown first.",
                    "verdict": "A"}
        first = _candidate_quality(info["first"])
        second = _candidate_quality(info["second"])
        if noisy:
            first += rng.uniform(-0.015, 0.015)
            second += rng.uniform(-0.015, 0.015)
        if info["allow_tie"] and abs(first - second) < 0.04:
            verdict = "tie"
        else:
            verdict = "A" if first > second else "B"
        return {"reasoning": "Offline mock judge (not a model): compared completeness and "
                             "errors of the two responses.", "verdict": verdict}
