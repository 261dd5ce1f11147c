"""The offline judge, ``mock:judge``: well-formed verdicts with no model and no key.

It reads what it needs from the ``hints`` the judging code passes (the rubric, a few facts
about the transcript, quotable text) and answers deterministically per (prompt, sample index).
Its scores move with the transcript so an offline demo's numbers mean something: an empty
final answer, a failed episode, tool errors, malformed tool arguments or a conversation that
ended badly all lower them; at a temperature above 0 (or the default) each sample adds a
little noise, so repeated samples disagree a little on fine scales, as real judges do.

Variants (the mock registry hands ``mock:judge-<variant>`` to the same factory): ``judge``
(default), ``judge-strict`` (harsher), ``judge-lenient`` (kinder) and ``judge-first`` (in
pairwise comparisons always prefers the response shown first: a position-biased judge for
demonstrating the order-swap check).

Every number it produces comes from an offline model; the records say so (``offline``).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from typing import Any

from harness.errors import ModelConfigError
from harness.judging.rubric import Rubric
from harness.models.base import MockBehaviour
from harness.models.types import GenerationParams, Message, T, ToolChoice, ToolSpec
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


def judge_hints(
    rubric: Rubric, transcript: Transcript, material: str, *, turn: int | None = None
) -> dict[str, Any]:
    """The hints a rubric judge call carries for ``mock:judge`` (real providers ignore them;
    they are not part of the cache key)."""
    return {"judge": {
        "kind": "rubric",
        "rubric": rubric.model_dump(mode="json"),
        "turn": turn,
        "features": transcript_features(transcript, turn=turn),
        "material_chars": len(material),
    }}


def pairwise_hints(first: str, second: str, *, allow_tie: bool) -> dict[str, Any]:
    """The hints a pairwise judge call carries for ``mock:judge``: the two candidates as
    shown (first = Response A)."""
    return {"judge": {"kind": "pairwise", "first": first, "second": second,
                      "allow_tie": allow_tie}}


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
    """``mock:judge``: deterministic rubric verdicts and pairwise preferences from hints."""

    VARIANTS = tuple(v.removeprefix("judge-") for v in _VARIANTS if v != "judge")

    def __init__(self, name: str = "judge") -> None:
        if name not in _VARIANTS:
            raise ModelConfigError(
                f"unknown offline judge 'mock:{name}'; known: "
                + ", ".join(f"mock:{v}" for v in _VARIANTS)
            )
        self.name = name
        self.shift = _VARIANTS[name]

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec],
        tool_choice: ToolChoice,
        params: GenerationParams,
        sample_index: int,
        hints: Mapping[str, Any],
    ) -> Message:
        raise ModelConfigError(
            f"mock:{self.name} only answers judge requests (structured output); use "
            "mock:agent or mock:simulator for conversations"
        )

    async def structured(
        self,
        messages: Sequence[Message],
        response_model: type[T],
        *,
        params: GenerationParams,
        sample_index: int,
        hints: Mapping[str, Any],
    ) -> T:
        info = hints.get("judge")
        if not isinstance(info, Mapping):
            raise ModelConfigError(
                f"mock:{self.name} answers only the harness's judge requests (its hints are "
                "missing)"
            )
        rng = random.Random(self._seed(messages, sample_index))
        noisy = params.temperature is None or params.temperature > 0
        if info["kind"] == "pairwise":
            data = self._pairwise(info, rng, noisy)
        else:
            data = self._rubric(info, rng, noisy)
        return response_model.model_validate(data)

    def _seed(self, messages: Sequence[Message], sample_index: int) -> int:
        payload = json.dumps([self.name, sample_index, [[m.role, m.content] for m in messages]])
        return int.from_bytes(hashlib.sha256(payload.encode()).digest()[:8], "big")

    def _rubric(self, info: Mapping[str, Any], rng: random.Random, noisy: bool) -> dict[str, Any]:
        rubric = Rubric.model_validate(info["rubric"])
        features = info["features"]
        base = _quality(features, rubric.target) + self.shift
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
    def _reasons(features: Mapping[str, Any]) -> str:
        parts = []
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
