"""Checks on the agent's final answer: ADK's ``response_match_score`` and required phrases.

``response_match_score`` is the ROUGE-1 F-measure of the final answer against the reference
answer, as **google-adk 2.13.0** computes it (``final_response_match_v1``): Google's
``rouge_score`` package scores ``scorer.score(reference, candidate)`` with a tokenizer for
any script. :class:`AdkTokenizer` is our own code giving the same tokens as ADK's:

1. the text is NFKC-normalised (fullwidth ``Ｐａｒｉｓ`` becomes ``Paris``, halfwidth
   katakana becomes fullwidth) and lower-cased (Cyrillic and Greek included);
2. each character of the CJK ideographs (U+4E00–9FFF), hiragana, katakana and Hangul
   syllables is a token of its own;
3. Thai, Lao, Khmer and Myanmar, written without spaces, are cut into grapheme clusters: each
   base character starts a cluster and the combining marks after it (vowel signs, tone marks)
   stay in it;
4. every other run of letters, digits and combining marks (``str.isalnum`` or a Unicode
   ``M*`` category) is one word, kept whole: ``café``, ``straße``, ``привет``, ``नमस्ते``;
   anything else (spaces, punctuation, symbols, emoji, ``_``) separates words;
5. a word made only of ASCII goes through rouge_score's own tokenizer with the Porter
   stemmer (words over three letters stemmed: ``running`` -> ``run``); other words are not
   stemmed.

So English scores exactly as rouge_score's default tokenizer with ``use_stemmer=True``, and
no script scores 0 just because rouge_score's ``a-z0-9`` tokenizer drops its letters. Text
without spaces is compared per character or cluster, not per word (no dictionary
segmentation), as in ADK.

ADK averages this over invocations, each with its own reference: so does a scenario's
``reference_answers`` (per turn), while a single ``reference_answer`` is compared with the
agent's last message that has text. Which turns count, and whether a reference's thinking
text does, is :mod:`harness.checks.adk_scores`'s (ADK's files) or
:mod:`harness.checks.builtins`'s (ours).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from harness.transcript import Transcript

# Code point ranges (inclusive) as in google-adk 2.13.0.
_ONE_TOKEN_PER_CHARACTER = (
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0x3040, 0x309F),  # hiragana
    (0x30A0, 0x30FF),  # katakana
    (0xAC00, 0xD7AF),  # Hangul syllables
)
_GRAPHEME_CLUSTERS = (
    (0x0E00, 0x0E7F),  # Thai
    (0x0E80, 0x0EFF),  # Lao
    (0x1780, 0x17FF),  # Khmer
    (0x1000, 0x109F),  # Myanmar
)


def _in(ranges: tuple[tuple[int, int], ...], char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in ranges)


class AdkTokenizer:
    """google-adk 2.13.0's ROUGE tokenizer for any script (see the module docstring): a
    ``rouge_score`` tokenizer, ``tokenize(text) -> tokens``."""

    def __init__(self) -> None:
        # Imported lazily: rouge_score pulls in nltk, which is slow to import.
        from rouge_score import tokenizers

        self._ascii = tokenizers.DefaultTokenizer(use_stemmer=True)

    @staticmethod
    def words(text: str) -> list[str]:
        """Steps 1-4: the words (and single characters, and clusters) before stemming."""
        words: list[str] = []
        current: list[str] = []

        def close_word() -> None:
            if current:
                words.append("".join(current))
                current.clear()

        for char in unicodedata.normalize("NFKC", text).lower():
            mark = unicodedata.category(char).startswith("M")
            if _in(_ONE_TOKEN_PER_CHARACTER, char):
                close_word()
                words.append(char)
            elif _in(_GRAPHEME_CLUSTERS, char):
                if not mark:  # a base character opens a new cluster; marks join it
                    close_word()
                current.append(char)
            elif mark or char.isalnum():
                current.append(char)
            else:
                close_word()
        close_word()
        return words

    def tokenize(self, text: str) -> list[str]:
        """The tokens of ``text``: its words, ASCII ones through rouge_score's tokenizer."""
        tokens: list[str] = []
        for word in self.words(text):
            tokens.extend(self._ascii.tokenize(word) if word.isascii() else [word])
        return tokens


@functools.cache
def _scorer() -> Any:
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rouge1"], tokenizer=AdkTokenizer())


def rouge1(candidate: str, reference: str) -> tuple[float, float, float]:
    """ROUGE-1 (precision, recall, F-measure) of ``candidate`` against ``reference``, equal to
    google-adk 2.13.0's ``response_match_score`` (see the module docstring). Empty text has
    no tokens and scores 0."""
    score = _scorer().score(reference, candidate)["rouge1"]
    return float(score.precision), float(score.recall), float(score.fmeasure)


def turn_responses(transcript: Transcript) -> dict[int, str]:
    """The last agent message with text in each user turn (0-based), by turn."""
    out: dict[int, str] = {}
    for message, turn in zip(transcript.messages, transcript.turn_of_messages(), strict=True):
        if message.role == "assistant" and message.content:
            out[turn] = message.content
    return out


_SPACES = re.compile(r"\s+")


def _normalise(text: str) -> str:
    return _SPACES.sub(" ", text).strip().casefold()


def find_phrases(text: str, phrases: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split ``phrases`` into (found, missing) in ``text``: case-insensitive substring
    search, with runs of whitespace treated as one space."""
    haystack = _normalise(text)
    found = [p for p in phrases if _normalise(p) in haystack]
    missing = [p for p in phrases if _normalise(p) not in haystack]
    return found, missing
