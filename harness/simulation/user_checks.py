"""What the simulated user did wrong, turn by turn: the contract of a simulator finding.

A simulated user is a model too, and it fails in ways that make an agent look worse (or
better) than it is: it volunteers a fact nobody asked for, contradicts its own profile,
invents an answer it was told it does not know, goes on after saying its goal was met, walks
out while the agent is mid-task, speaks as the assistant, skips a step of its plan, or opens
with another message than the scenario's. Each is a :class:`SimulatorFinding` naming the
user turn and quoting the evidence. Findings are reported apart from the agent's figures and
feed the attribution of a failed sample to the party that caused it.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.models.types import Message
from harness.scenarios.schema import UserSpec
from harness.simulation.profile_text import fact_text, name_words, plan_lines

FindingKind = Literal[
    "fact_volunteered",  # a known fact revealed before the agent asked for it
    "fact_contradicted",  # a fact stated that contradicts the profile's known_facts
    "unknown_fact_invented",  # an answer made up for one of the profile's unknown_facts
    "turn_after_goal_met",  # the user went on after declaring the goal met
    "ended_while_agent_pending",  # the user ended while the agent asked or was mid-action
    "role_confusion",  # a user turn spoken as the assistant (or holding tool-call JSON)
    "plan_step_skipped",  # a step of the scenario's plan never said
    "opening_mismatch",  # the first user message is not the scenario's opening message
]
FINDING_KINDS: tuple[FindingKind, ...] = (
    "fact_volunteered",
    "fact_contradicted",
    "unknown_fact_invented",
    "turn_after_goal_met",
    "ended_while_agent_pending",
    "role_confusion",
    "plan_step_skipped",
    "opening_mismatch",
)


class SimulatorFinding(BaseModel):
    """One thing the simulated user did wrong: its ``kind``, the 0-based user ``turn`` it
    happened at, and the ``evidence`` (the words quoted, and what they break)."""

    model_config = ConfigDict(extra="forbid")

    kind: FindingKind
    turn: int = Field(ge=0, description="0-based index of the user turn")
    evidence: str


# --- the checks ----------------------------------------------------------------------------
#
# Everything below is a pure function of the user's profile and the conversation: no model
# call, no randomness. The phrasings each check looks for are listed here, with the reason for
# each choice; docs/simulated-users.md ("Simulator findings") gives their known limits.

EVIDENCE_CHARS = 120  # a quotation in a finding's evidence is shortened to about this

# Why a conversation ended that the simulator chose (it ends the conversation itself). A
# transfer is the agent's doing, so it is not among them.
USER_STOPS = frozenset({"goal_met", "user_gave_up", "off_topic"})
# Endings after which an unsaid plan step is not the simulator's fault: the agent failed or
# ran out of steps, the turns ran out, the episode was cut, the simulator's call failed, or
# the agent handed the user over.
_PLAN_NOT_CHECKED = frozenset({"agent_error", "agent_step_limit", "tool_call_limit",
                               "time_limit", "turn_limit", "simulator_error",
                               "transfer_requested"})
# A scripted user's turns were written by the scenario's author, who may reveal a fact at
# once, say thanks twice or stop whenever they like; what is left to check is whether the
# script agrees with its own profile and speaks as a user.
SCRIPTED_KINDS: frozenset[FindingKind] = frozenset(
    {"fact_contradicted", "unknown_fact_invented", "role_confusion"})

_A = "['’]"  # an apostrophe, typed or typographic
_JOINERS = r"[-_./@]"  # characters that join two word pieces into one token (A-1002, a.b@c)
# Words of a key that only say "which kind of identifier": they stand for each other.
_ID_WORDS = frozenset({"id", "number", "no", "num", "code"})
_STOP_WORDS = frozenset({
    "a", "an", "the", "of", "to", "in", "on", "at", "by", "for", "and", "or", "is", "are",
    "my", "your", "their", "his", "her", "its", "they", "them", "which", "what", "whether",
    "how", "when", "where", "who", "user", "users", "any", "some", "this", "that", "with",
})
# Plan words that say what to do rather than what to say (left out of an unquoted step).
_PLAN_WORDS = frozenset({
    "ask", "asks", "say", "says", "tell", "tells", "mention", "mentions", "give", "gives",
    "then", "first", "next", "finally", "also", "agent", "assistant", "about", "explain",
    "request", "thank", "thanks", "want", "wants", "again", "step", "later", "start",
})
_CONDITIONAL = re.compile(r"\b(?:if|when|whenever|once|unless|in case|only after)\b", re.I)

# "I don't know" in the phrasings users use: not knowing, not remembering, not being sure,
# having no idea, having forgotten.
_NOT_KNOWING = re.compile(
    rf"\b(?:do\s+not|don{_A}?t|did\s+not|didn{_A}?t|can{_A}?t|cannot|can\s+not|couldn{_A}?t)"
    r"\s+(?:really\s+)?(?:know|remember|recall|have|tell|say|find)\b"
    r"|\bnot\s+(?:sure|certain)\b|\bno\s+(?:idea|clue)\b|\bunsure\b|\bforg[eo]t(?:ten)?\b"
    rf"|\bhaven{_A}?t\s+(?:got|a\s+clue)\b|\bbeats\s+me\b|\bno\s+way\s+to\s+know\b",
    re.I)
# The goal declared met: "that's all I needed", "that solves it", "problem solved", "I'm all
# set", "thanks, bye", "goodbye". Plain thanks is not among them: a user thanks an agent
# mid-task too.
_GOAL_MET = re.compile(
    rf"\bthat(?:{_A}s|\s+is|\s+was)\s+(?:all|everything|exactly\s+what)\s+i\s+"
    r"(?:needed|need|wanted)\b"
    r"|\bthat\s+(?:solves|solved|fixes|fixed|answers|answered|settles|sorts)\s+"
    r"(?:it|that|everything|my\s+(?:problem|question|issue))\b"
    rf"|\bproblem\s+solved\b|\bi{_A}?m\s+all\s+set\b|\bi\s+am\s+all\s+set\b"
    r"|\b(?:thanks|thank\s+you)\b[^.?!]{0,30}?\b(?:bye|goodbye)\b|\bgood\s*bye\b",
    re.I)
# Giving up, as a user's last words: "never mind", "forget it", "I give up".
_GIVE_UP = re.compile(rf"\bnever\s*mind\b|\bforget\s+it\b|\bi\s+give\s+up\b|\bi{_A}?ll\s+"
                      r"(?:go|try)\s+(?:elsewhere|somewhere\s+else)\b", re.I)
# An agent's turn that waits on the user: a question ("?" at its end), an offer or a request
# for confirmation, or an action announced and not yet done.
_AGENT_ASKS = re.compile(
    r"\b(?:would\s+you\s+like|shall\s+i|should\s+i|do\s+you\s+want\s+me\s+to|"
    r"(?:can|could)\s+you\s+(?:please\s+)?confirm|please\s+confirm)\b", re.I)
_AGENT_ACTING = re.compile(
    r"\b(?:let\s+me\s+(?:check|look|see|find|pull|verify|get|search)|one\s+moment|"
    r"just\s+a\s+(?:moment|second|minute)|give\s+me\s+a\s+(?:moment|second|minute)|"
    r"please\s+(?:hold|wait)|"
    rf"i{_A}ll\s+(?:look\s+into|check|look\s+up|find\s+out|get\s+back)|"
    rf"i\s+will\s+(?:look\s+into|check|look\s+up|find\s+out)|"
    rf"i{_A}m\s+(?:checking|looking\s+into|looking\s+up|looking\s+for))\b", re.I)
# "Anything else?" ends an answer politely; it does not leave the agent waiting on the user.
_COURTESY = re.compile(r"\b(?:anything|something)\s+else\b|\bany\s+other\s+questions?\b|"
                       r"\bany(?:thing)?\s+more\b|\bfurther\s+(?:questions?|help)\b", re.I)
# The assistant's voice in a user turn, tool-call JSON, or an "Assistant:" label.
_ASSISTANT_VOICE = re.compile(
    rf"\bas\s+an\s+ai\b|\bas\s+a\s+(?:large\s+)?language\s+model\b|\bi{_A}?m\s+an\s+ai\b"
    rf"|\bi\s+am\s+an\s+ai\b|\b(?:i{_A}?m|i\s+am)\s+(?:an|your)\s+(?:ai\s+|virtual\s+)?"
    r"assistant\b|\bhow\s+(?:can|may)\s+i\s+(?:help|assist)\s+you\b", re.I)
_TOOL_JSON = re.compile(
    r'"name"\s*:\s*"[^"]*"\s*,\s*"(?:arguments|parameters|args)"\s*:'
    r'|"(?:tool_calls?|function_call)"\s*:|<tool_call>', re.I)
_ROLE_LABEL = re.compile(r"^\s*(?:assistant|agent)\s*:", re.I)
_NEGATION = re.compile(rf"\bnot\b|n{_A}t\b|\bnever\b|\bno\b", re.I)
# What may stand between a fact's key and its value: "my order number is 12345",
# "order id: 12345", "email would be a@b.co".
_FILLER = frozenset({"is", "was", "it", "its", "it's", "s", "be", "would", "should", "will",
                     "being", "reads", "like", "the", "my", "of", "just", "still", "that"})
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_VALUE_TOKEN = re.compile(rf"(?<!\w)(?:[\w.+-]+@[\w-]+(?:\.[\w-]+)+|"
                          rf"\w*\d\w*(?:{_JOINERS}\w+)*)(?!\w)")


@dataclass(frozen=True)
class _Turn:
    """One live user turn: its index, text, the agent's turn before it (its text) and all
    that was said before it (history included)."""

    index: int
    text: str
    agent_before: str
    earlier: str
    agent_said: str  # the agent's last words before this turn (its last message with text)


def _agent_text(message: Message, sees_tool_calls: bool) -> str:
    parts = [message.content]
    if sees_tool_calls:
        parts += [f"{c.name} {json.dumps(c.arguments, ensure_ascii=False)}"
                  for c in message.tool_calls]
    return " ".join(p for p in parts if p)


def _turns(history: Sequence[Message], messages: Sequence[Message], sees_tool_calls: bool
           ) -> list[_Turn]:
    """The live user turns."""
    turns: list[_Turn] = []
    earlier: list[str] = []
    agent: list[str] = []
    live_from = len(history)
    combined = [*history, *messages]
    for i, m in enumerate(combined):
        if m.role == "user":
            if i >= live_from:
                turns.append(_Turn(len(turns), m.content, " ".join(agent), " ".join(earlier),
                                   agent_said_last(combined[:i])))
            earlier.append(m.content)
            agent = []
        elif m.role == "assistant" or (m.role == "tool" and sees_tool_calls):
            text = _agent_text(m, sees_tool_calls) if m.role == "assistant" else m.content
            agent.append(text)
            earlier.append(text)
    return turns


def agent_said_last(conversation: Sequence[Message]) -> str:
    """The agent's last words: the text of its last message with text after the last user
    message ('' when it said nothing since)."""
    for m in reversed(conversation):
        if m.role == "user":
            break
        if m.role == "assistant" and m.content.strip():
            return m.content
    return ""


def _unasked(user: UserSpec, turn: _Turn) -> list[tuple[str, str, re.Pattern[str]]]:
    """The known facts (key, value text, its pattern) that ``turn`` would volunteer if it
    gave them: not said by anyone before it, and neither named nor given by the agent's
    previous turn."""
    out = []
    for key, value in user.known_facts.items():
        text = _value_of(value)
        if text is None:
            continue
        pattern = _value_pattern(text)
        if not (pattern.search(turn.earlier) or pattern.search(turn.agent_before)
                or names_key(turn.agent_before, str(key))):
            out.append((str(key), text, pattern))
    return out


def unasked_facts(user: UserSpec, conversation: Sequence[Message]) -> list[str]:
    """The keys of the known facts a user turn written now, after ``conversation`` (history
    included), would volunteer if it gave them (what :func:`simulator_findings` flags as
    ``fact_volunteered``)."""
    turn = _turns((), [*conversation, Message(role="user", content="")],
                  user.sees_tool_calls)[-1]
    return [key for key, _, _ in _unasked(user, turn)]


def _squash(text: str) -> str:
    return " ".join(text.split())


def _flat_at(text: str, at: int) -> int:
    """Where ``text[at]`` lands in ``_squash(text)``."""
    head = _squash(text[:at])
    return len(head) + (1 if head and text[:at][-1:].isspace() and _squash(text[at:]) else 0)


def quote(text: str, start: int = 0, end: int | None = None) -> str:
    """``text`` in double quotes on one line, shortened to about :data:`EVIDENCE_CHARS`
    around ``text[start:end]`` (an ellipsis marks what was cut)."""
    flat = _squash(text)
    if len(flat) <= EVIDENCE_CHARS:
        return f'"{flat}"'
    lo = _flat_at(text, start)
    hi = max(lo, min(_flat_at(text, len(text) if end is None else end), lo + EVIDENCE_CHARS))
    room = max(0, EVIDENCE_CHARS - (hi - lo))
    lo2 = max(0, lo - room // 2)
    hi2 = min(len(flat), hi + (EVIDENCE_CHARS - (hi - lo2)))
    lo2 = max(0, min(lo2, hi2 - EVIDENCE_CHARS))
    return ('"' + ("…" if lo2 > 0 else "") + flat[lo2:hi2].strip()
            + ("…" if hi2 < len(flat) else "") + '"')


def _value_of(value: Any) -> str | None:
    """A known fact's value as text to look for, or ``None`` when it cannot be told apart
    from ordinary words: a yes/no or empty value, or a single character."""
    if value is None or isinstance(value, bool):
        return None
    text = fact_text(value).strip()
    return text if len(text) >= 2 else None


def _value_pattern(text: str) -> re.Pattern[str]:
    """``text`` as a whole token, case-insensitive: not part of a longer word or number
    (``12345`` is not in ``123456``, ``A-12345`` nor ``12,345``)."""
    body = r"\s+".join(re.escape(part) for part in text.split())
    return re.compile(rf"(?<!\w)(?<!\w{_JOINERS})(?<!\d,){body}(?!\w)(?!{_JOINERS}\w)(?!,\d)",
                      re.I)


def _words_in(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.lower())


def _has_word(words: Sequence[str], word: str) -> bool:
    """Whether ``word`` is among ``words`` (a word of four letters or more also as the start
    of one: ``order`` in ``ordered``, ``birth`` in ``birthday``; a short one also plural)."""
    if len(word) >= 4:
        return any(w.startswith(word) for w in words)
    return word in words or f"{word}s" in words


def _key_words(key: str) -> list[str]:
    return [w for w in name_words(key) if w not in _STOP_WORDS]


def names_key(text: str, key: str) -> bool:
    """Whether ``text`` names a fact's key: one of its distinctive words (``order`` for
    ``order_id``), or, for a key of identifier words only (``id``), one of those."""
    words = _words_in(text)
    key_words = _key_words(key)
    distinctive = [w for w in key_words if w not in _ID_WORDS]
    wanted = distinctive or key_words
    return any(_has_word(words, w) if w not in _ID_WORDS else any(i in words for i in _ID_WORDS)
               for w in wanted)


def agent_pending(text: str) -> bool:
    """Whether an agent's last words leave it waiting on the user: they end with a question
    (not a courtesy "anything else?"), offer or ask for confirmation ("would you like",
    "shall I", "can you confirm"), or end by announcing an action not yet done ("let me
    check", "one moment", "I'll look into"; an action announced and then reported on is
    done)."""
    flat = _squash(text)
    if not flat:
        return False
    last = re.split(r"(?<=[.!?])\s+", flat)[-1]
    if last.rstrip(" )]*_\"'”’").endswith("?") and not _COURTESY.search(last):
        return True
    return bool(_AGENT_ASKS.search(flat) or _AGENT_ACTING.search(last))


def declares_goal_met(text: str) -> bool:
    """Whether a user turn says the goal was met ("that's all I needed", "that solves it",
    "problem solved", "I'm all set", "thanks, bye", "goodbye") and asks nothing more."""
    found = _GOAL_MET.search(text)
    return found is not None and "?" not in text[found.end():]


def simulator_findings(
    user: UserSpec,
    messages: Sequence[Message],
    *,
    stop_reason: str | None = None,
    history: Sequence[Message] = (),
) -> list[SimulatorFinding]:
    """What the simulated user did wrong in one conversation, turn by turn, with no model call.

    ``user`` is the scenario's user block (profile, facts, opening message, plan; a scripted
    user's script); ``messages`` the live conversation (a transcript's ``messages``: user,
    agent and tool messages); ``history`` what came before it (``user.history``), read only
    as context (a fact asked in the history and given in the first live turn was asked for),
    never checked. ``stop_reason`` is why the conversation ended (a transcript's
    ``stop_reason``); ``None`` (or ``"imported"``) for a conversation that exists already,
    where a final user turn that signs off or gives up counts as the user's ending.

    Returns one :class:`SimulatorFinding` per problem, in turn order: its kind, the 0-based
    live user turn, and the evidence quoted. A scripted user gets only
    :data:`SCRIPTED_KINDS` (its author wrote when it reveals, thanks and stops). The checks,
    what each looks for and their limits are in docs/simulated-users.md ("Simulator
    findings").
    """
    turns = _turns(history, messages, user.sees_tool_calls)
    agent_last = agent_said_last(messages)
    stop = None if stop_reason == "imported" else stop_reason
    found: list[SimulatorFinding] = []
    for turn in turns:
        found += _role_confusion(turn)
        found += _contradicted(user, turn)
        found += _invented(user, turn)
    if not user.scripted:
        found += _volunteered(user, turns)
        found += _after_goal_met(turns)
        found += _ended_pending(turns, agent_last, stop)
        found += _plan_skipped(user, turns, stop)
        found += _opening(user, turns)
    return sorted(found, key=lambda f: f.turn)


def _finding(kind: FindingKind, turn: int, evidence: str) -> SimulatorFinding:
    return SimulatorFinding(kind=kind, turn=turn, evidence=evidence)


def _volunteered(user: UserSpec, turns: Sequence[_Turn]) -> list[SimulatorFinding]:
    """``fact_volunteered``: a known fact's value said for the first time in a user turn whose
    previous agent turn names neither the fact's key nor its value. The scenario's own opening
    message is the author's, and not checked."""
    openings = {_squash(t).lower() for t in (user.opening_message, user.history_opening())
                if t}
    out = []
    for turn in turns:
        if turn.index == 0 and _squash(turn.text).lower() in openings:
            continue
        for key, text, pattern in _unasked(user, turn):
            said = pattern.search(turn.text)
            if said is None:
                continue
            asked = "before the agent's first turn" if not turn.agent_before else (
                "though the agent's previous turn did not ask for it")
            out.append(_finding("fact_volunteered", turn.index,
                                f"revealed {key} ({text}) unasked, {asked}: "
                                f"{quote(turn.text, said.start(), said.end())}"))
    return out


def _shape(text: str) -> re.Pattern[str] | None:
    """The pattern of values shaped like ``text``, for a value with a digit or an e-mail
    address (``A-1002`` -> letters, a dash, digits); ``None`` for plain words, whose other
    values could be anything."""
    if _EMAIL.fullmatch(text):
        return _EMAIL
    if not any(c.isdigit() for c in text):
        return None
    pieces = re.findall(r"[^\W\d_]+|\d+|\s+|.", text)
    body = "".join(r"[^\W\d_]+" if p.isalpha() else r"\d+" if p.isdigit()
                   else r"\s+" if p.isspace() else re.escape(p) for p in pieces)
    return re.compile(body, re.I)


def _key_phrase(key: str) -> re.Pattern[str] | None:
    """A fact's key as the user would write it: its distinctive words in order, each maybe
    followed by an identifier word ("order", "order id", "order number", "order #")."""
    words = _key_words(key)
    distinctive = [w for w in words if w not in _ID_WORDS]
    ids = r"(?:ids?|numbers?|no\.?|num|codes?|#)"
    if not distinctive:
        return re.compile(rf"\b{ids}", re.I) if words else None
    body = r"\W+".join(rf"{re.escape(w)}\w*" for w in distinctive)
    return re.compile(rf"\b{body}(?:\W*{ids})?(?!\w)", re.I)


def _stated_value(text: str, start: int, shape: re.Pattern[str]) -> re.Match[str] | None:
    """The value of ``shape`` right after ``text[:start]``, with only filler words (``is``,
    ``was``, ``:``) between; ``None`` when something else comes first."""
    tail = text[start:start + 160]
    for match in re.finditer(rf"(?<![\w.+-]){shape.pattern}(?![\w])(?!{_JOINERS}\w)", tail,
                             re.I):
        gap = tail[:match.start()]
        if _NEGATION.search(gap):
            return None
        words = re.findall(r"[\w']+", gap.lower())
        if all(w in _FILLER for w in words) and len(words) <= 4:
            return match
        return None
    return None


def _contradicted(user: UserSpec, turn: _Turn) -> list[SimulatorFinding]:
    """``fact_contradicted``: a user turn names a known fact's key and gives right after it a
    value of the same shape (digits, an e-mail address, a date, an id such as ``A-1002``)
    that is not the profile's (nor another known fact's)."""
    values = {t.lower() for v in user.known_facts.values() if (t := _value_of(v))}
    out = []
    for key, value in user.known_facts.items():
        text = _value_of(value)
        shape = None if text is None else _shape(text)
        phrase = _key_phrase(key)
        if text is None or shape is None or phrase is None:
            continue
        for mention in phrase.finditer(turn.text):
            stated = _stated_value(turn.text, mention.end(), shape)
            if stated is None or stated.group(0).lower() in values:
                continue
            at = mention.end() + stated.end()
            out.append(_finding("fact_contradicted", turn.index,
                                f"states {key} as {stated.group(0)}, but the profile says "
                                f"{text}: {quote(turn.text, mention.start(), at)}"))
            break
    return out


def _item_words(item: str) -> list[str]:
    return [w for w in _words_in(item) if w not in _STOP_WORDS and len(w) >= 2]


def _invented(user: UserSpec, turn: _Turn) -> list[SimulatorFinding]:
    """``unknown_fact_invented``: the agent's previous turn asks about an ``unknown_facts``
    item (all of its words appear there) and the user answers with a concrete value (a token
    with a digit, or an e-mail address, that no known fact holds and nobody said before)
    instead of saying they do not know."""
    if not turn.agent_before or _NOT_KNOWING.search(turn.text):
        return []
    agent_words = _words_in(turn.agent_before)
    known = {t.lower() for v in user.known_facts.values() if (t := _value_of(v))}
    out = []
    for item in user.unknown_facts:
        words = _item_words(item)
        if not words or not all(_has_word(agent_words, w) for w in words):
            continue
        for token in _VALUE_TOKEN.finditer(turn.text):
            value = token.group(0)
            if value.lower() in known or _value_pattern(value).search(turn.earlier):
                continue
            out.append(_finding("unknown_fact_invented", turn.index,
                                f"answers {value} for {item!r}, which the profile says the "
                                "user does not know (and gives no \"don't know\"): "
                                f"{quote(turn.text, token.start(), token.end())}"))
            break
    return out


def _after_goal_met(turns: Sequence[_Turn]) -> list[SimulatorFinding]:
    """``turn_after_goal_met``: the user turn that follows one declaring the goal met (see
    :func:`declares_goal_met`), once per declaration."""
    out = []
    for before, after in itertools.pairwise(turns):
        if declares_goal_met(before.text):
            out.append(_finding("turn_after_goal_met", after.index,
                                f"goes on after declaring the goal met at turn {before.index} "
                                f"({quote(before.text)}): {quote(after.text)}"))
    return out


def _ended_by_user(turns: Sequence[_Turn], stop: str | None) -> bool:
    if stop is not None:
        return stop in USER_STOPS
    last = turns[-1].text if turns else ""
    return bool(turns) and (declares_goal_met(last) or _GIVE_UP.search(last) is not None)


def _ended_pending(turns: Sequence[_Turn], agent_last: str, stop: str | None
                   ) -> list[SimulatorFinding]:
    """``ended_while_agent_pending``: the user ended the conversation (a stop of
    :data:`USER_STOPS`; for an existing conversation, a last user turn that signs off or
    gives up) while the agent's last turn waited on them (:func:`agent_pending`). The turn is
    the user's move that ended it."""
    if not _ended_by_user(turns, stop):
        return []
    if stop is None:
        agent, at, how = turns[-1].agent_said, turns[-1].index, quote(turns[-1].text)
    else:
        agent, at, how = agent_last, len(turns), stop
    if not agent_pending(agent):
        return []
    return [_finding("ended_while_agent_pending", at,
                     f"ended the conversation ({how}) while the agent's last turn waited on "
                     f"the user: {quote(agent, max(0, len(agent) - EVIDENCE_CHARS))}")]


def _said(target: str, words: Sequence[str], turns: Sequence[_Turn]) -> bool:
    """Whether some user turn holds ``target`` (whitespace and case aside) or two thirds of
    its ``words``."""
    flat = _squash(target).lower().strip(" .!?")
    need = max(1, -(-2 * len(words) // 3))
    for turn in turns:
        text = _squash(turn.text).lower()
        if flat and flat in text:
            return True
        said = _words_in(text)
        if words and sum(_has_word(said, w) for w in words) >= need:
            return True
    return False


def _plan_skipped(user: UserSpec, turns: Sequence[_Turn], stop: str | None
                  ) -> list[SimulatorFinding]:
    """``plan_step_skipped``: a plan step that no user turn said: its quoted sentence, or for
    a step without one its distinctive words (two thirds of them in one turn). A conditional
    step ("if", "when", "once", ...) may rightly go unsaid and is not checked; nor is any step
    when the conversation ended for a reason not the user's (:data:`_PLAN_NOT_CHECKED`)."""
    if stop in _PLAN_NOT_CHECKED or not turns:
        return []
    at = len(turns) if stop in USER_STOPS else len(turns) - 1
    out = []
    for number, line in enumerate(plan_lines(user.plan), start=1):
        outside = line.text if line.quoted is None else line.text.replace(line.quoted, "")
        if _CONDITIONAL.search(outside):
            continue
        target = line.quoted or ""
        words = [w for w in _item_words(line.quoted or line.text) if w not in _PLAN_WORDS]
        if not target and not words:
            continue
        if not _said(target, words, turns):
            out.append(_finding("plan_step_skipped", at,
                                f"plan step {number} was never said by the end: "
                                f"{quote(line.text)[1:-1]}"))
    return out


def _opening(user: UserSpec, turns: Sequence[_Turn]) -> list[SimulatorFinding]:
    """``opening_mismatch``: the first live user message is not the scenario's opening
    message (whitespace aside)."""
    opening = user.opening_message
    if opening is None or not turns or _squash(turns[0].text) == _squash(opening):
        return []
    return [_finding("opening_mismatch", 0, f"opened with {quote(turns[0].text)}, not the "
                     f"scenario's opening message {quote(opening)}")]


def _role_confusion(turn: _Turn) -> list[SimulatorFinding]:
    """``role_confusion``: a user turn in the assistant's voice ("As an AI", "How can I help
    you today", "I'm an assistant"), holding tool-call JSON, or labelled "Assistant:"."""
    for pattern, what in ((_ROLE_LABEL, "is labelled as the assistant's"),
                          (_ASSISTANT_VOICE, "speaks as the assistant"),
                          (_TOOL_JSON, "holds tool-call JSON")):
        match = pattern.search(turn.text)
        if match:
            return [_finding("role_confusion", turn.index,
                             f"{what}: {quote(turn.text, match.start(), match.end())}")]
    return []
