"""Which language a text is written in: Chinese, English, or both mixed.

Read at write time (stored with each L3 point as ``lang``) and at query time (the
router picks the dense routes and their weights by it). Counting scripts is enough
for the two languages memstrata serves: a Han ideograph is Chinese, a Latin letter
English; what is neither (digits, punctuation, emoji) does not vote.
"""

from __future__ import annotations

import re
from typing import Literal

Language = Literal["en", "zh", "mixed"]
LANGUAGES: tuple[Language, ...] = ("en", "zh", "mixed")

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")

# A text is mixed when the minority script carries at least this share of its
# "words" (a Han character counts as one word, a Latin run of 2+ letters as one):
# one brand name in a Chinese sentence ("我用 iPhone") stays Chinese.
MIXED_SHARE = 0.3


def detect_language(text: str) -> Language:
    """``text``'s language; a text with neither script (numbers, emoji, empty) is
    English, the dense model's home ground."""
    han = len(_HAN.findall(text))
    if han == 0:
        return "en"
    latin = len(_LATIN_WORD.findall(text))
    if latin == 0:
        return "zh"
    # Han characters are counted per character but Chinese words average ~1.5.
    han_words = han / 1.5
    minority = min(han_words, latin) / (han_words + latin)
    if minority >= MIXED_SHARE:
        return "mixed"
    return "zh" if han_words > latin else "en"
