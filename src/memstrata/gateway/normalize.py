"""The form of a text the detectors read: Unicode NFKC, zero-width characters removed.

A secret written in full-width letters (``ｐａｓｓｗｏｒｄ``, ``alice＠example.com``) or
with a zero-width space inside its cue (``pass\\u200bword``) reads the same to a person
and to any model the text later reaches, so the detectors must read it the same way.
They run over the normalized form; each span they find is mapped back to the text as
written, and only that span is replaced: the rest of the stored text stays exactly as
the user wrote it (a full-width comma in Chinese prose is not rewritten, and a text
with nothing to redact is stored unchanged).

Spaces between two Chinese characters are removed too ("密　码" is 密码).

Normalization is per character (NFKC of each character on its own): composition across
characters cannot turn a non-secret into a cue, and per character every normalized
character has one source span. Only characters outside the ranges known to be stable
are looked at, so ASCII and ordinary Chinese text cost one regex scan.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache

#: Removed before detection: zero-width space, non-joiner, joiner, word joiner, the
#: invisible operators, the byte-order mark and the soft hyphen.
ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad\u180e")

# Characters that may change under NFKC or be removed. Everything else (ASCII, CJK
# unified ideographs, the common CJK punctuation, curly quotes) is stable.
_UNSTABLE_RE = re.compile(
    r"[^\x00-\x7f\u00a1-\u00a7\u00a9\u00ab\u00ac\u00ae\u00b0\u00b1\u00b6\u00b7\u00bb\u00bf-\u0131"
    r"\u2010\u2012-\u2016\u2018-\u201f\u3001-\u3003\u3008-\u3011\u4e00-\u9fff]"
)


@lru_cache(maxsize=4096)
def _normalize_char(ch: str) -> str:
    if ch in ZERO_WIDTH:
        return ""
    return unicodedata.normalize("NFKC", ch)


@dataclass(frozen=True, slots=True)
class Normalized:
    """A text's normalized form and the way back to the text as written.

    ``norm_starts[i]`` is where the i-th changed stretch starts in ``text`` and
    ``orig_starts[i]`` where it starts in the original; between breakpoints the two
    advance together (unchanged characters), inside a changed character every
    normalized offset maps to that character's span.
    """

    text: str
    original: str
    norm_starts: tuple[int, ...]
    orig_starts: tuple[int, ...]
    norm_ends: tuple[int, ...]
    orig_ends: tuple[int, ...]

    @property
    def changed(self) -> bool:
        """True if the normalized text differs from the original."""
        return bool(self.norm_starts)

    def start(self, offset: int) -> int:
        """The original offset where the normalized character at ``offset`` starts."""
        i = bisect_right(self.norm_starts, offset) - 1
        if i < 0:
            return offset
        if offset < self.norm_ends[i]:
            return self.orig_starts[i]
        return self.orig_ends[i] + (offset - self.norm_ends[i])

    def end(self, offset: int) -> int:
        """The original offset where the normalized text ending at ``offset`` ends."""
        if offset <= 0:
            return 0
        i = bisect_right(self.norm_starts, offset - 1) - 1
        if i < 0:
            return offset
        if offset - 1 < self.norm_ends[i]:
            return self.orig_ends[i]
        return self.orig_ends[i] + (offset - self.norm_ends[i])


# Spaces between two Chinese characters ("密　码", "密 码") split a word: removed.
_CJK_GAP_RE = re.compile(r"[\u4e00-\u9fff]([ \t\u3000]+)(?=[\u4e00-\u9fff])")


# A key or password spelled out one character at a time ("s k - a b c 1 2 3 ...") reads
# as the characters joined: a run of at least eight single characters, one space apart,
# with a letter among them (digit runs are read group by group by the number
# detectors). The hint (a literal space first: a fast scan) gates the full pattern.
_SPACED_HINT_RE = re.compile(r" [!-~] [!-~] [!-~] [!-~] [!-~] [!-~] ")
_LETTER_RE = re.compile(r"[A-Za-z]")
_SPACED_RE = re.compile(r"(?<!\S)[!-~](?: [!-~]){7,}(?!\S)")


def _spaced_edits(text: str, edits: dict[int, str]) -> None:
    if _SPACED_HINT_RE.search(text) is None:
        return
    for m in _SPACED_RE.finditer(text):
        if _LETTER_RE.search(m.group()) is not None:
            for at in range(m.start() + 1, m.end(), 2):
                edits[at] = ""


def normalize(text: str) -> Normalized:
    """``text`` as the detectors read it (module docstring), with the offset map back."""
    edits: dict[int, str] = {}
    if text.isascii():
        _spaced_edits(text, edits)
        if not edits:
            return Normalized(text, text, (), (), (), ())
        return _build(text, edits)
    _spaced_edits(text, edits)
    for m in _UNSTABLE_RE.finditer(text):
        out = _normalize_char(m.group())
        if out != m.group():
            edits[m.start()] = out
    for m in _CJK_GAP_RE.finditer(text):
        for at in range(m.start(1), m.end(1)):
            edits[at] = ""
    if not edits:
        return Normalized(text, text, (), (), (), ())
    return _build(text, edits)


def _build(text: str, edits: dict[int, str]) -> Normalized:
    parts: list[str] = []
    norm_starts: list[int] = []
    orig_starts: list[int] = []
    norm_ends: list[int] = []
    orig_ends: list[int] = []
    cursor = 0
    size = 0
    for at in sorted(edits):
        out = edits[at]
        parts.append(text[cursor:at])
        size += at - cursor
        norm_starts.append(size)
        orig_starts.append(at)
        parts.append(out)
        size += len(out)
        norm_ends.append(size)
        orig_ends.append(at + 1)
        cursor = at + 1
    parts.append(text[cursor:])
    return Normalized(
        "".join(parts),
        text,
        tuple(norm_starts),
        tuple(orig_starts),
        tuple(norm_ends),
        tuple(orig_ends),
    )
