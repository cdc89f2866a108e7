"""The Tokenizer role used to size chunks, and a fast approximate default.

An exact tokenizer for the target model family (e.g. one built on ``bpe-openai``)
can be plugged in anywhere a :class:`Tokenizer` is taken; chunk boundaries then
follow that model's counts.
"""

from __future__ import annotations

import re
from typing import Protocol

# CJK ideographs (with extension A and compatibility forms), kana, Hangul syllables
# and full-width punctuation: scripts written without spaces, where BPE tokenizers
# spend roughly one token per character.
CJK_CLASS = (
    "\u3000-\u303f\u3040-\u309f\u30a0-\u30ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
)
_TOKEN_RE = re.compile(rf"[{CJK_CLASS}]|[^\s{CJK_CLASS}]+")

# A "word" longer than this (URLs, hashes, base64) is several BPE tokens: counting
# it as one would let a chunk of long blobs grow far past the budget.
LONG_WORD_CHARS = 12
_LONG_WORD_RE = re.compile(rf"[^\s{CJK_CLASS}]{{{LONG_WORD_CHARS + 1},}}")


class Tokenizer(Protocol):
    """Counts the tokens a text costs the target model."""

    @property
    def name(self) -> str:
        """A stable identifier (recorded with each ingested file, so a change re-chunks)."""
        ...

    def count(self, text: str) -> int:
        """Number of tokens of ``text`` (0 for blank text)."""
        ...


class ApproxTokenizer:
    """Fast approximation: one token per word of Latin text, one per CJK character.

    A word is a whitespace-delimited run of non-CJK characters (punctuation stuck to
    it included); a word longer than ``LONG_WORD_CHARS`` characters counts one token
    per started ``LONG_WORD_CHARS`` characters. For English prose this undercounts a
    BPE tokenizer by roughly 25 %; budgets using it should leave that margin.
    """

    @property
    def name(self) -> str:
        return "approx-words-cjk-chars-v1"

    def count(self, text: str) -> int:
        # findall runs in C; long words are rare, so their surcharge is a second pass.
        total = len(_TOKEN_RE.findall(text))
        for match in _LONG_WORD_RE.finditer(text):
            total += -(-len(match.group()) // LONG_WORD_CHARS) - 1
        return total
