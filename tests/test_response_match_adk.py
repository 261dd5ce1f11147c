"""``response_match_score`` (ROUGE-1) equals google-adk 2.13.0's on text in any script.

Two kinds of test: fixed values that hold without ADK installed (token lists and the P/R/F
arithmetic written out by hand for several), and a comparison with ADK's own function on the
same pairs plus random text across scripts. The comparison runs whenever google-adk imports
(the ``adk`` test extra) and is skipped otherwise, unless ``HARNESS_REQUIRE_ADK=1`` (set by
``.ci/run``) turns the skip into a failure.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from fractions import Fraction as Fr
from typing import Any

import pytest

from harness.checks.response import AdkTokenizer, rouge1


def _f(p: Fr, r: Fr) -> Fr:
    return Fr(0) if p + r == 0 else 2 * p * r / (p + r)


# (id, candidate, reference, precision, recall): P = shared / candidate tokens,
# R = shared / reference tokens (shared unigrams counted with multiplicity, clipped).
PAIRS: list[tuple[str, str, str, Fr, Fr]] = [
    # English: rouge_score's tokenizer with the Porter stemmer.
    # cand the cat are run home quickli (6), ref a cat ran home quick (5); shared cat home.
    ("en-stem", "The cats are running home quickly", "A cat ran home quick", Fr(2, 6), Fr(2, 5)),
    ("en-flight", "Booked flight BA117 for 3 passengers", "Your flight BA117 is booked for three",
     Fr(4, 6), Fr(4, 7)),
    # cand it s current sunni in pari with a temperatur of 18 c (12),
    # ref it is sunni and 18 c in pari (8); shared it sunni in pari 18 c = 6: P 1/2, R 3/4, F 0.6
    ("en-weather", "It's currently sunny in Paris with a temperature of 18°C.",
     "It is sunny and 18°C in Paris.", Fr(6, 12), Fr(6, 8)),
    # French: accented words kept whole and unstemmed; ASCII words stemmed (paris -> pari).
    # cand il fait beau à pari aujourd hui (7), ref aujourd hui il fait très beau à pari (8):
    # all 7 shared: P 1, R 7/8, F = 2*7/8/(15/8) = 14/15
    ("fr-weather", "Il fait beau à Paris aujourd'hui.", "Aujourd'hui, il fait très beau à Paris.",
     Fr(7, 7), Fr(7, 8)),
    # votr réservation est confirmée (4) / la réservation est confirmée pour vendredi (6): 3
    ("fr-booking", "Votre réservation est confirmée.",
     "La réservation est confirmée pour vendredi.", Fr(3, 4), Fr(3, 6)),
    # German: straße stays straße (non-ASCII, unstemmed); strasse is stemmed to strass.
    # die straße ist gesperrt (4) / die strass ist heut gesperrt (5): shared die ist gesperrt
    ("de-strasse", "Die Straße ist gesperrt.", "Die Strasse ist heute gesperrt.",
     Fr(3, 4), Fr(3, 5)),
    ("de-umlaut", "Größe: 42, Farbe: grün", "Farbe grün, Größe 44", Fr(3, 4), Fr(3, 4)),
    # Vietnamese: each syllable a word, diacritics kept, lower-cased (Hà -> hà).
    # cand thời tiết hôm nay ở hà nội rất đẹp (9), ref hôm nay hà nội trời đẹp (6): 5 shared
    ("vi", "Thời tiết hôm nay ở Hà Nội rất đẹp.", "Hôm nay Hà Nội trời đẹp.", Fr(5, 9), Fr(5, 6)),
    # Russian: lower-cased, so Привет and привет are one token.
    # привет мир как дела (4) / привет друг как (3): 2 shared: P 1/2, R 2/3, F 4/7
    ("ru-case", "Привет, мир! Как дела?", "привет, друг. Как?", Fr(2, 4), Fr(2, 3)),
    ("ru-upper", "ПОГОДА В МОСКВЕ ХОРОШАЯ", "Погода в Москве хорошая", Fr(1), Fr(1)),
    ("el-case", "Καλημέρα κόσμε", "καλημέρα ΚΌΣΜΕ", Fr(1), Fr(1)),
    # Chinese: one token per character. 北 京 今 天 天 气 晴 朗 / 今 天 北 京 天 气 很 好:
    # shared 北 京 今 天 天 气 = 6 of 8 each way (天 twice on both sides): F 3/4
    ("zh", "北京今天天气晴朗", "今天北京天气很好", Fr(6, 8), Fr(6, 8)),
    ("zh-none", "苹果 橙子 香蕉", "汽车 飞机 火车", Fr(0), Fr(0)),
    # Japanese: kanji, hiragana and katakana one token each.
    # 東 京 の 天 気 は 晴 れ で す (10) / 東 京 は 晴 れ で す (7): all 7 shared: F 14/17
    ("ja", "東京の天気は晴れです", "東京は晴れです", Fr(7, 10), Fr(7, 7)),
    # halfwidth katakana: NFKC makes it fullwidth, so the texts are equal
    ("ja-halfwidth", "ｶﾀｶﾅ", "カタカナ", Fr(1), Fr(1)),
    # Korean: one token per Hangul syllable: 서 울 날 씨 가 좋 습 니 다 (9) /
    # 서 울 의 날 씨 는 좋 습 니 다 (10): 8 shared
    ("ko", "서울 날씨가 좋습니다", "서울의 날씨는 좋습니다", Fr(8, 9), Fr(8, 10)),
    # Thai: grapheme clusters, marks kept with their base: ส วั ส ดี ค รั บ (7) /
    # ส วั ส ดี ค่ ะ (6): shared ส ส วั ดี = 4 (ค่ carries a tone mark, ค does not)
    ("th-hello", "สวัสดีครับ", "สวัสดีค่ะ", Fr(4, 7), Fr(4, 6)),
    # NFKC splits SARA AM into NIKHAHIT (a mark) + SARA AA: กิ น ข้ า ว (5) / กิ น น้ํ า (4):
    # shared กิ น า = 3
    ("th-am", "กินข้าว", "กินน้ำ", Fr(3, 5), Fr(3, 4)),
    ("lo", "ສະບາຍດີ", "ສະບາຍດີ", Fr(1), Fr(1)),
    ("km", "សួស្តី", "សួស្ដី", Fr(2, 3), Fr(2, 3)),
    ("my", "မင်္ဂလာပါ", "မင်္ဂလာ", Fr(4, 5), Fr(4, 4)),
    # Devanagari: spaced words kept whole with their vowel signs and virama.
    ("hi-hello", "नमस्ते दुनिया", "नमस्ते भारत", Fr(1, 2), Fr(1, 2)),
    # मौसम अच्छा है (3) / आज मौसम बहुत अच्छा है (5): 3 shared: P 1, R 3/5, F 3/4
    ("hi-weather", "मौसम अच्छा है", "आज मौसम बहुत अच्छा है", Fr(3, 3), Fr(3, 5)),
    ("ar", "الطقس جميل اليوم", "اليوم الطقس جميل جدا", Fr(3, 3), Fr(3, 4)),
    # Fullwidth forms: NFKC gives "Paris 18°C" (the ideographic space becomes a space).
    ("fullwidth", "Ｐａｒｉｓ\u300018°Ｃ", "Paris 18°C", Fr(1), Fr(1)),
    ("fullwidth-caps", "ＨＥＬＬＯ\u3000ＷＯＲＬＤ", "hello world", Fr(1), Fr(1)),
    # Mixed: flight to 東 京 at 9am привет (7) / flight 東 京 9am (4): 4 shared: F 8/11
    ("mixed", "Flight to 東京 at 9am, привет!", "flight 東京 9am", Fr(4, 7), Fr(4, 4)),
    # order 4521 confirm merci beaucoup (5) / order 4521 confirm merci (4): F 8/9
    ("mixed-symbols", "Order #4521 confirmed ✅ — merci beaucoup", "order 4521 confirmed, merci",
     Fr(4, 5), Fr(4, 4)),
    # Emoji are separators, never tokens.
    ("emoji", "👍 Done! 🎉", "Done", Fr(1), Fr(1)),
    ("emoji-only", "😀😀😀", "😀", Fr(0), Fr(0)),
    # Empty text has no token and scores 0, on either side.
    ("empty-candidate", "", "anything at all", Fr(0), Fr(0)),
    ("empty-both", "", "", Fr(0), Fr(0)),
    ("punctuation-only", "!!! ...", "?", Fr(0), Fr(0)),
]


@pytest.mark.parametrize(("candidate", "reference", "precision", "recall"),
                         [p[1:] for p in PAIRS], ids=[p[0] for p in PAIRS])
def test_rouge1_fixed_values(candidate: str, reference: str, precision: Fr, recall: Fr) -> None:
    expected = (float(precision), float(recall), float(_f(precision, recall)))
    assert rouge1(candidate, reference) == pytest.approx(expected, abs=1e-12)


def test_the_pairs_cover_the_scripts_the_issue_names() -> None:
    assert len(PAIRS) >= 25
    prefixes = {p[0].split("-")[0] for p in PAIRS}
    assert {"en", "fr", "de", "vi", "ru", "zh", "ja", "ko", "th", "hi", "ar", "fullwidth",
            "mixed", "emoji", "empty"} <= prefixes


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("The dogs were RUNNING", ["the", "dog", "were", "run"]),
        ("Привет, МИР", ["привет", "мир"]),  # lower-cased, unstemmed
        ("東京タワー", ["東", "京", "タ", "ワ", "ー"]),
        ("สวัสดี", ["ส", "วั", "ส", "ดี"]),  # marks stay with their base consonant
        ("नमस्ते", ["नमस्ते"]),  # a spaced script: the word whole, matras and virama in it
        ("Ｐａｒｉｓ２０２５", ["paris2025"]),  # NFKC, then one ASCII word (not stemmed: digits)
        ("café_au-lait", ["café", "au", "lait"]),  # "_" and "-" separate words
        ("naïve running", ["naïve", "run"]),  # only ASCII words are stemmed
        ("👍🏽 ok", ["ok"]),
        ("", []),
    ],
)
def test_tokenizer(text: str, tokens: list[str]) -> None:
    assert AdkTokenizer().tokenize(text) == tokens


def test_case_and_width_no_longer_change_a_score() -> None:
    # The old tokenizer kept Cyrillic case and dropped fullwidth letters (0.0 for both).
    assert rouge1("Привет мир", "привет Мир")[2] == 1.0
    assert rouge1("ＢＯＯＫＥＤ", "booked")[2] == 1.0


# --- against google-adk itself ---------------------------------------------------------------

# Characters drawn for the random texts: ASCII, accented Latin, Cyrillic, Greek, CJK, kana,
# Hangul, Thai/Lao/Khmer/Myanmar (bases and marks), Devanagari, Arabic, fullwidth and
# halfwidth forms, emoji and modifiers, combining accents, ligatures, punctuation, spaces.
_POOL = [*"abcXYZ019 ,.'-_!?", *"éèßÄöçñÅø", *"ViệtНампривет", *"ΚαλημέραΌ",
         *"東京天気晴れのですカタ한국어", "\u0e01", "\u0e32", "\u0e34", "\u0e48", "\u0e38",
         "\u0e33", "\u0e4f", "\u0e3f", *"नमस्ते", *"مرحبا", *"ＡＢＣ１２ｶﾀ", "😀", "👍🏽",
         "\u200d", "ﬁ", "İ", "Ⅻ", "½", "²", "\u0301", "\u1000\u103a", "ສະ", "ខ្ញុំ", "\u3000",
         "\t", "running ", "dogs ", "the ", "Paris "]


def _random_pairs(n: int, seed: int = 13) -> list[tuple[str, str]]:
    rng = random.Random(seed)

    def text() -> str:
        return "".join(rng.choice(_POOL) for _ in range(rng.randint(0, 30)))

    return [(text(), text()) for _ in range(n)]


def _adk_rouge_1() -> Callable[[str, str], Any]:
    """ADK's own ROUGE-1 function, imported only here (google-adk takes ~2 s to import)."""
    try:
        from google.adk.evaluation.final_response_match_v1 import _calculate_rouge_1_scores
    except ImportError as err:
        why = (f"google-adk is not installed ({err}); python -m pip install -e '.[test,adk]' "
               "installs it")
        if os.environ.get("HARNESS_REQUIRE_ADK"):
            pytest.fail(why + "; HARNESS_REQUIRE_ADK forbids skipping")
        pytest.skip(why)
    return _calculate_rouge_1_scores


def test_rouge1_equals_google_adk_on_every_pair_and_random_text() -> None:
    adk = _adk_rouge_1()
    from importlib.metadata import version

    pairs = [(p[1], p[2]) for p in PAIRS] + _random_pairs(3000)
    for candidate, reference in pairs:
        theirs = adk(candidate, reference)
        assert rouge1(candidate, reference) == (theirs.precision, theirs.recall,
                                                theirs.fmeasure), (
            f"google-adk {version('google-adk')} differs on {candidate!r} / {reference!r}")
