"""What a user's side of a conversation looks like, in numbers: the features that
``harness simulator-realism`` compares between real users and simulated ones.

Each feature is a pure, deterministic function of a conversation's text turns (the user's and
the agent's, in order; tool calls and empty agent steps are not turns). Some give one value
per conversation, some one value per user turn:

- ``user_turns`` (per conversation): how many user turns it has.
- ``words_per_turn`` (per user turn): words, a word being a run of letters, digits and the
  marks inside words (``don't``, ``A-1001``, ``3.5``).
- ``questions_per_turn`` (per user turn): question marks, a run of them (``??``) counting once.
- ``new_facts_per_turn`` (per user turn): distinct fact words in the turn that no earlier
  message of the conversation (the user's or the agent's) holds, compared without case. A
  fact word holds a digit (``A-1001``, ``18``, ``13:00``) or an ``@`` (an e-mail address), or
  begins with a capital letter without being the first word of a sentence or the pronoun
  ``I`` (``I'm``, ``I'd``...): names, ``Paris``, ``Alice``.
- ``lexical_diversity`` (per conversation): the moving-average type-token ratio (MATTR) of
  all the user's words, lowercased, over windows of :data:`MATTR_WINDOW` words: the mean,
  over every window, of the share of distinct words in it. A user who wrote fewer words than
  a window gets the plain type-token ratio of what they wrote. A fixed window keeps long
  conversations from scoring low just for being long.
- ``corrections_per_turn`` (per user turn after an agent turn): 1 when the turn holds one of
  :data:`CORRECTION_MARKERS` (whole words, any case), else 0: how often users correct the
  agent.
- ``ends_with_closing`` (per conversation): 1 when the user's last turn holds one of
  :data:`CLOSING_MARKERS` (a thank-you or goodbye), else 0.
- ``user_has_last_word`` (per conversation): 1 when the conversation's last text turn is the
  user's, 0 when it is the agent's: who ends the conversation.

The marker lists are English; a conversation in another language counts no corrections and
no closings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

from harness.models.types import Message

Speaker = Literal["user", "agent"]
FeatureLevel = Literal["conversation", "turn"]

MATTR_WINDOW = 25
"""Words per window of the moving-average type-token ratio."""

CORRECTION_MARKERS: tuple[str, ...] = (
    "no,", "no.", "nope", "not what i", "that's not", "that is not", "thats not",
    "i said", "i meant", "i asked", "actually", "wrong", "incorrect", "not correct",
    "not right", "you misunderstood", "misunderstood", "that's wrong", "not quite",
    "instead", "try again", "doesn't work", "does not work", "didn't work", "did not work",
)
"""Phrases that mark a user turn as correcting the agent (matched as whole words, any case;
a trailing ``,`` or ``.`` is part of the phrase: "no, the other one")."""

CLOSING_MARKERS: tuple[str, ...] = (
    "thanks", "thank you", "thank u", "thx", "ty", "cheers", "bye", "goodbye",
    "that's all", "that is all", "that's it", "that helps", "that helped", "perfect",
    "great", "awesome", "appreciate it", "have a nice day", "have a good day",
)
"""Phrases that mark a user turn as closing the conversation (whole words, any case)."""

_WORD = re.compile(r"[^\W_]+(?:['’.:/@-][^\W_]+)*")
_QUESTION_RUN = re.compile(r"\?+")


def _marker_pattern(markers: Sequence[str]) -> re.Pattern[str]:
    # Whole words: a marker neither starts nor ends inside a word (one that ends in a mark,
    # "no,", may be followed by anything: "no,the other one").
    parts = [re.escape(m.lower()).replace("'", "['’]") + (r"(?!\w)" if m[-1].isalnum() else "")
             for m in markers]
    return re.compile(r"(?<!\w)(?:" + "|".join(parts) + r")")


_CORRECTION = _marker_pattern(CORRECTION_MARKERS)
_CLOSING = _marker_pattern(CLOSING_MARKERS)


class Utterance(NamedTuple):
    """One text turn of a conversation: who spoke, and what they wrote."""

    speaker: Speaker
    text: str


def utterances(messages: Sequence[Message]) -> list[Utterance]:
    """The text turns of a conversation: user messages, and assistant messages with text
    (tool results, system prompts and assistant steps that only call tools are left out)."""
    out = []
    for m in messages:
        if m.role == "user":
            out.append(Utterance("user", m.content))
        elif m.role == "assistant" and m.content.strip():
            out.append(Utterance("agent", m.content))
    return out


@dataclass(frozen=True)
class FeatureInfo:
    """A feature's name, whether it has one value per conversation or per user turn, and
    what one value counts (for the terminal and the JSON output)."""

    name: str
    level: FeatureLevel
    unit: str


FEATURES: tuple[FeatureInfo, ...] = (
    FeatureInfo("user_turns", "conversation", "user turns per conversation"),
    FeatureInfo("words_per_turn", "turn", "words per user turn"),
    FeatureInfo("questions_per_turn", "turn", "question marks per user turn"),
    FeatureInfo("new_facts_per_turn", "turn", "fact words not said before, per user turn"),
    FeatureInfo("lexical_diversity", "conversation", f"MATTR of the user's words "
                f"(window {MATTR_WINDOW})"),
    FeatureInfo("corrections_per_turn", "turn", "share of user turns after an agent turn "
                "that correct it"),
    FeatureInfo("ends_with_closing", "conversation", "share of conversations whose last "
                "user turn is a thank-you or goodbye"),
    FeatureInfo("user_has_last_word", "conversation", "share of conversations the user "
                "ends"),
)
FEATURE_NAMES: tuple[str, ...] = tuple(f.name for f in FEATURES)


def words(text: str) -> list[str]:
    """The words of ``text``, in order, as written."""
    return _WORD.findall(text)


def question_count(text: str) -> int:
    """Question marks in ``text``, each run of them (``"??"``) counting once."""
    return len(_QUESTION_RUN.findall(text))


def _is_fact_word(word: str, sentence_start: bool) -> bool:
    if any(c.isdigit() for c in word) or "@" in word:
        return True
    pronoun = word == "I" or word.startswith(("I'", "I’"))  # I, I'm, I'd, I'll, I've
    return word[0].isupper() and not sentence_start and not pronoun


def _starts_sentence(text: str, at: int) -> bool:
    """Whether the word at ``at`` begins a sentence: nothing but spaces before it since the
    text's start, a line break, or a ``.``, ``!`` or ``?``."""
    i = at - 1
    while i >= 0 and text[i].isspace():
        if text[i] == "\n":
            return True
        i -= 1
    return i < 0 or text[i] in ".!?"


def fact_words(text: str) -> set[str]:
    """The distinct fact words of ``text``, lowercased (see the module docstring)."""
    found: set[str] = set()
    for match in _WORD.finditer(text):
        if _is_fact_word(match.group(), _starts_sentence(text, match.start())):
            found.add(match.group().lower())
    return found


def mattr(tokens: Sequence[str], window: int = MATTR_WINDOW) -> float | None:
    """The moving-average type-token ratio of ``tokens`` over windows of ``window`` tokens;
    the plain type-token ratio when there are fewer; ``None`` for no token."""
    if not tokens:
        return None
    if len(tokens) <= window:
        return len(set(tokens)) / len(tokens)
    counts: dict[str, int] = {}
    for token in tokens[:window]:
        counts[token] = counts.get(token, 0) + 1
    total = len(counts)
    for i in range(window, len(tokens)):
        gone, new = tokens[i - window], tokens[i]
        counts[gone] -= 1
        if not counts[gone]:
            del counts[gone]
        counts[new] = counts.get(new, 0) + 1
        total += len(counts)
    return total / (len(tokens) - window + 1) / window


def is_correction(text: str) -> bool:
    """Whether ``text`` holds a correction marker (:data:`CORRECTION_MARKERS`)."""
    return bool(_CORRECTION.search(text.lower()))


def is_closing(text: str) -> bool:
    """Whether ``text`` holds a closing marker (:data:`CLOSING_MARKERS`)."""
    return bool(_CLOSING.search(text.lower()))


def conversation_features(utterances: Sequence[Utterance]) -> dict[str, list[float]]:
    """Every feature of :data:`FEATURES` for one conversation: a list of one value for a
    per-conversation feature, one value per user turn for a per-turn feature (per user turn
    after an agent turn for ``corrections_per_turn``; empty when there is none). A
    conversation without user turns gives empty lists."""
    texts = [u for u in utterances if u.text.strip()]
    user_texts = [u.text for u in texts if u.speaker == "user"]
    out: dict[str, list[float]] = {name: [] for name in FEATURE_NAMES}
    if not user_texts:
        return out
    seen: set[str] = set()
    agent_spoke = False
    user_words: list[str] = []
    for u in texts:
        if u.speaker == "user":
            turn_words = words(u.text)
            user_words.extend(w.lower() for w in turn_words)
            out["words_per_turn"].append(float(len(turn_words)))
            out["questions_per_turn"].append(float(question_count(u.text)))
            out["new_facts_per_turn"].append(float(len(fact_words(u.text) - seen)))
            if agent_spoke:
                out["corrections_per_turn"].append(float(is_correction(u.text)))
        else:
            agent_spoke = True
        seen.update(w.lower() for w in words(u.text))
    out["user_turns"] = [float(len(user_texts))]
    diversity = mattr(user_words)
    out["lexical_diversity"] = [diversity] if diversity is not None else []
    out["ends_with_closing"] = [float(is_closing(user_texts[-1]))]
    out["user_has_last_word"] = [float(texts[-1].speaker == "user")]
    return out
