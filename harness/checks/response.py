"""Checks on the agent's final answer: ADK's ``response_match_score`` and required phrases.

``response_match_score`` is ROUGE-1 F-measure of the final answer against the reference
answer, computed with Google's ``rouge_score`` package as current ADK does, scored as
``scorer.score(reference, candidate)``:

- when both texts are mostly Latin script (more than half of their letters), rouge_score's
  own tokenizer with the Porter stemmer: lower-case, runs of characters other than ``a-z0-9``
  split tokens, words over three letters stemmed;
- otherwise a Unicode word tokenizer and no stemming (the Porter stemmer is English-only, and
  rouge_score's tokenizer drops every letter outside ``a-z``, so Cyrillic, Greek, Arabic or
  CJK text would have no tokens and always score 0). A token is a run of Unicode word
  characters (``\\w+``), case kept: as in ADK, "Привет" and "привет" are different tokens,
  and text without spaces (Chinese, Japanese) is one token per run.

ADK averages this over invocations, each with its own reference; a scenario here has one
reference answer, compared with the agent's last message that has text.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from typing import Any


def _is_latin_script(text: str) -> bool:
    """True when more than half of the letters are Latin (or there are no letters)."""
    letters = latin = 0
    for char in text:
        if unicodedata.category(char).startswith("L"):
            letters += 1
            latin += "LATIN" in unicodedata.name(char, "")
    return letters == 0 or latin / letters > 0.5


class UnicodeWordTokenizer:
    """rouge_score tokenizer for text that is not mostly Latin: runs of Unicode word
    characters, case and form kept (no stemming)."""

    _WORD = re.compile(r"\w+")

    def tokenize(self, text: str) -> list[str]:
        return self._WORD.findall(text)


@functools.cache
def _scorer(latin: bool) -> Any:
    # Imported lazily: rouge_score pulls in nltk, which is slow to import.
    from rouge_score import rouge_scorer

    if latin:
        return rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    return rouge_scorer.RougeScorer(["rouge1"], use_stemmer=False,
                                    tokenizer=UnicodeWordTokenizer())


def rouge1(candidate: str, reference: str) -> tuple[float, float, float]:
    """ROUGE-1 (precision, recall, F-measure) of ``candidate`` against ``reference``, with
    ADK's settings: stemmed rouge_score tokens when both texts are mostly Latin script,
    unstemmed Unicode words otherwise (see the module docstring)."""
    latin = _is_latin_script(candidate) and _is_latin_script(reference)
    score = _scorer(latin).score(reference, candidate)["rouge1"]
    return float(score.precision), float(score.recall), float(score.fmeasure)


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
