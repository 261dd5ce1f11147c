"""Judging the simulated user turn by turn (rubric target ``user_turn``), as pure functions.

A ``user_turn`` rubric (the built-in ``simulator_turns``) asks, for each user message the
simulator wrote, yes/no questions from a fixed set
(:data:`~harness.judging.rubric.USER_TURN_CRITERIA`), each with a
short reason; a turn passes when every criterion holds. A user message the scenario gave
(``user.opening_message``, a history's final user message, a script's first turn) is not
judged: it is compared with the given text exactly (whitespace at the ends aside), with no
model call, and passes when it is the same. The words with which the user ended the
conversation (``goal_met``, ``user_gave_up``, ``off_topic``) are its last turn: walking out
too early is judged, as ADK judges the stop signal. The score is the share of the
conversation's user turns that pass, as ADK's ``per_turn_user_simulator_quality_v1`` scores
a conversation.

Samples and panels combine per turn: ``majority`` passes a turn when more than half the votes
passed it (a tie fails it, as ADK's majority vote does), ``mean`` gives the turn the share of
votes that passed it; the score is then the mean over turns of those values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from harness.choices import AggregationMethod
from harness.judging.context import JudgeContext
from harness.judging.rubric import USER_TURN_CRITERIA as USER_TURN_CRITERIA  # re-exported
from harness.judging.rubric import Rubric
from harness.judging.scoring import EPS, RubricScore, criterion_passed, mean_or_none
from harness.judging.verdicts import CriterionVerdict, UserTurnVerdict
from harness.transcript import Transcript


def given_opening(context: JudgeContext | None) -> str | None:
    """The first user message the scenario gave, if any (compared, not judged)."""
    text = context.opening_message if context is not None else None
    return text if text and text.strip() else None


USER_ENDINGS = frozenset({"goal_met", "user_gave_up", "off_topic"})
"""Endings the simulated user chose: its closing words (the transcript's ``stop_detail``) are
its last turn, judged like the others (ending too early is a simulator's failure too)."""


def closing_words(transcript: Transcript) -> str | None:
    """What the simulated user said as it ended the conversation, or ``None``."""
    if transcript.stop_reason in USER_ENDINGS and (transcript.stop_detail or "").strip():
        return transcript.stop_detail
    return None


def user_messages(transcript: Transcript) -> list[str]:
    """The text of the live conversation's user turns, in order (turn ``i`` is the
    ``i``-th): its user messages, then the user's closing words when it ended the
    conversation itself (:func:`closing_words`)."""
    sent = [m.content for m in transcript.messages if m.role == "user"]
    closing = closing_words(transcript)
    return sent if closing is None else [*sent, closing]


def turns_to_judge(transcript: Transcript, context: JudgeContext | None) -> list[int]:
    """The user turns the judge is asked about: every one, except the first when the
    scenario gave it."""
    first = 1 if given_opening(context) is not None else 0
    return list(range(first, len(user_messages(transcript))))


def opening_verdict(transcript: Transcript, context: JudgeContext | None
                    ) -> UserTurnVerdict | None:
    """The first user turn compared with the message the scenario gave, or ``None`` when
    the scenario gave none (or the conversation has no user turn)."""
    given = given_opening(context)
    sent = user_messages(transcript)
    if given is None or not sent:
        return None
    same = sent[0].strip() == given.strip()
    reason = ("the first user message is the scenario's opening message" if same else
              "the first user message is not the scenario's opening message, which the "
              "simulator must send as given")
    return UserTurnVerdict(turn=0, checked="opening_message", passed=same,
                           value=1.0 if same else 0.0, reason=reason)


def judged_turn_verdicts(verdicts: Sequence[CriterionVerdict]) -> list[UserTurnVerdict]:
    """One :class:`UserTurnVerdict` per turn from one judge sample's criterion verdicts
    (tagged with their turn, scored 0/1): the turn passes when every criterion held."""
    by_turn: dict[int, list[CriterionVerdict]] = {}
    for verdict in verdicts:
        if verdict.turn is not None:
            by_turn.setdefault(verdict.turn, []).append(verdict)
    out = []
    for turn, turn_verdicts in sorted(by_turn.items()):
        failed = [v.criterion_id for v in turn_verdicts if v.score == 0]
        out.append(UserTurnVerdict(turn=turn, checked="judge", passed=not failed,
                                   value=0.0 if failed else 1.0, failed_criteria=failed))
    return out


def pass_share(turns: Sequence[UserTurnVerdict]) -> float | None:
    """The score of a conversation: the mean of its turns' values (for one sample, the share
    of turns that pass); ``None`` with no turn."""
    return math.fsum(t.value for t in turns) / len(turns) if turns else None


def combine_turn_votes(votes: Sequence[Sequence[UserTurnVerdict]],
                       method: AggregationMethod) -> list[UserTurnVerdict]:
    """Combine several votes' per-turn verdicts (judge samples, or panel members'
    aggregates) into one verdict per turn, by ``method`` (see the module docstring). A turn
    missing from some votes is combined over the votes that have it."""
    by_turn: dict[int, list[UserTurnVerdict]] = {}
    for vote in votes:
        for verdict in vote:
            by_turn.setdefault(verdict.turn, []).append(verdict)
    return [_combine(turn_votes, method) for _, turn_votes in sorted(by_turn.items())]


def _combine(votes: Sequence[UserTurnVerdict], method: AggregationMethod) -> UserTurnVerdict:
    passes = [v.passed for v in votes]
    if method == "majority":
        passed = sum(passes) * 2 > len(passes)
        value = 1.0 if passed else 0.0
    else:
        value = math.fsum(v.value for v in votes) / len(votes)
        passed = value * 2 > 1
    counts: dict[str, int] = {}
    for vote in votes:
        for criterion in vote.failed_criteria:
            counts[criterion] = counts.get(criterion, 0) + 1
    failed = [c for c, n in counts.items() if n * 2 >= len(votes)]
    first = votes[0]
    return UserTurnVerdict(turn=first.turn, checked=first.checked, passed=passed, value=value,
                           failed_criteria=failed, reason=first.reason, votes=passes)


def criterion_shares(rubric: Rubric, verdicts: Sequence[CriterionVerdict]
                     ) -> dict[str, float | None]:
    """Per criterion, the share of judged turns on which it held (``None`` when no turn was
    judged, e.g. when the only user turn is the given opening message)."""
    return {crit.id: mean_or_none([v.normalised for v in verdicts if v.criterion_id == crit.id])
            for crit in rubric.criteria}


def score_user_turns(rubric: Rubric, turns: Sequence[UserTurnVerdict],
                     criterion_scores: Mapping[str, float | None]) -> RubricScore:
    """The rubric score of a ``user_turn`` rubric: the share of turns that pass
    (:func:`pass_share`), passing at the rubric's threshold; a criterion fails when the
    share of turns on which it held is below the threshold. No turn: not scored."""
    score = pass_share(turns)
    if score is None:
        return RubricScore(score=None, passed=None, unscored_reason=NO_USER_TURN)
    failed = [c for c, value in criterion_scores.items()
              if criterion_passed(rubric, c, value) is False]
    return RubricScore(score=score, passed=score >= rubric.threshold - EPS,
                       failed_criteria=failed)


NO_USER_TURN = "not scored: the conversation has no user turn"
