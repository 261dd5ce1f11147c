"""Per-sentence grounding (the ``sentence_grounding`` target, built-in rubric
``hallucinations``): which of the agent's sentences the sources back.

The judge is shown the sources (the agent's system prompt, the conversation with every tool
call and tool result) and the answers to check: the final answer and, when the rubric says
``include_intermediate: true``, the agent's earlier texts (in turns before the last, or
written beside tool calls). It splits each answer into sentences and labels every one in a
single structured reply (:class:`GroundingReply`), validated like any judge reply (re-asked
when invalid, cached, retried):

- ``supported``: a source states it or directly implies it;
- ``unsupported``: no source backs it;
- ``contradictory``: a source says otherwise;
- ``disputed``: the sources disagree about it;
- ``not_applicable``: it claims nothing to check (a greeting, a question, an offer of help).

The score is supported / applicable sentences (applicable = not ``not_applicable``); an
answer with no applicable sentence, or no answer at all, is not scored, with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.models.types import OutsideText
from harness.transcript import Transcript

SentenceLabel = Literal["supported", "unsupported", "contradictory", "disputed",
                        "not_applicable"]
SENTENCE_LABELS: tuple[str, ...] = SentenceLabel.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class AgentAnswer:
    """One text of the agent's to check: ``index`` as numbered in the prompt (1-based), the
    user turn it answers, and whether it is the final answer."""

    index: int
    turn: int
    text: str
    final: bool


def answers_to_check(transcript: Transcript, *, include_intermediate: bool) -> list[AgentAnswer]:
    """The agent's texts a grounding judge labels: the final answer (the last agent message
    with text), preceded, with ``include_intermediate``, by every earlier agent message with
    text. Empty when the agent wrote no text."""
    turns = transcript.turn_of_messages()
    spoken = [(m.content, t) for m, t in zip(transcript.messages, turns, strict=True)
              if m.role == "assistant" and m.content.strip()]
    if not spoken:
        return []
    chosen = spoken if include_intermediate else spoken[-1:]
    last = len(chosen) - 1
    return [AgentAnswer(index=i + 1, turn=turn, text=text, final=i == last)
            for i, (text, turn) in enumerate(chosen)]


class LabelledSentence(OutsideText):
    """The judge's label for one sentence (reasoning before the label, as for criteria)."""

    model_config = ConfigDict(extra="forbid")

    answer: int = Field(ge=1, description="The number of the answer this sentence is from.")
    sentence: str = Field(min_length=1, description="The sentence, copied exactly.")
    reasoning: str = Field(min_length=1, description="Why it has this label, written first.")
    evidence: list[str] = Field(
        description="Short exact quotes from the sources that back, contradict or dispute "
                    "the sentence (empty when there is none, e.g. unsupported).")
    label: SentenceLabel = Field(description="supported, unsupported, contradictory, "
                                             "disputed or not_applicable.")


class GroundingReply(BaseModel):
    """Every sentence of every answer shown, in order, each with its label."""

    model_config = ConfigDict(extra="forbid")

    sentences: list[LabelledSentence] = Field(
        description="Every sentence of the answers, in order, each labelled.")


class SentenceVerdict(LabelledSentence):
    """A stored sentence label: the reply's fields, plus the evidence quotes not found in the
    sources and whether the sentence itself was found in the answer it names (a judge that
    paraphrases or invents sentences shows here)."""

    unverified_evidence: list[str] = Field(default_factory=list)
    in_answer: bool = True


def squash(text: str) -> str:
    """``text`` in lower case with each run of whitespace as one space: how a judge's quotes
    are compared with what it was shown."""
    return " ".join(text.split()).lower()


def quoted_in(quote: str, squashed: str) -> bool:
    """Whether ``quote`` (its surrounding quotation marks aside) is in ``squashed`` text (see
    :func:`squash`)."""
    return squash(quote).strip(' "\'') in squashed


def sentence_verdicts(reply: GroundingReply, answers: Sequence[AgentAnswer],
                      material: str) -> list[SentenceVerdict]:
    """The reply's labels checked against what the judge was shown: each evidence quote
    against ``material`` and each sentence against the answer it names (whitespace- and
    case-insensitively)."""
    haystack = squash(material)
    texts = {a.index: squash(a.text) for a in answers}
    return [
        SentenceVerdict(
            **s.model_dump(),
            unverified_evidence=[q for q in s.evidence if not quoted_in(q, haystack)],
            in_answer=quoted_in(s.sentence, texts.get(s.answer, "")),
        )
        for s in reply.sentences
    ]


NO_ANSWER = "not scored: the agent wrote no answer to check"
NO_APPLICABLE = ("not scored: no sentence of the answer makes a claim to check (every "
                 "sentence was labelled not_applicable)")


def supported_share(sentences: Sequence[LabelledSentence]) -> float | None:
    """Supported / applicable sentences; ``None`` when no sentence is applicable."""
    applicable = [s for s in sentences if s.label != "not_applicable"]
    if not applicable:
        return None
    return sum(1 for s in applicable if s.label == "supported") / len(applicable)

