"""Text helpers shared by the rules and the filter: quote folding, sentences, normal form."""

from __future__ import annotations

import re
import unicodedata

# One-to-one replacements only, so offsets in the folded text are offsets in the
# original and verbatim extras can be cut from either.
_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "＇": "'"})

# Hard sentence ends; '.' is handled separately because it also appears in decimals,
# abbreviations and "order no. 123".
_HARD_ENDS = frozenset("。！？!?；;\n…")
_NOT_A_SENTENCE = "".join(sorted(_HARD_ENDS)) + ". "
# Where a sentence may end: the scan visits only these characters, not every one of a
# long text.
_MAYBE_ENDS = re.compile("[" + re.escape("".join(sorted(_HARD_ENDS)) + ".") + "]")
_ABBREVIATIONS = frozenset({"no", "mr", "mrs", "ms", "dr", "st", "vs", "e.g", "i.e", "etc"})
_PUNCT_RE = re.compile(r"[\W_]+", re.UNICODE)


def fold_quotes(text: str) -> str:
    """``text`` with typographic quotes replaced by ASCII ones (same length)."""
    return text.translate(_QUOTES)


def _ends_at_period(text: str, index: int) -> bool:
    """Whether the '.' at ``index`` closes a sentence."""
    after = text[index + 1 : index + 2]
    if after and not after.isspace():
        return False  # 3.5, e.g., example.com
    start = index
    while start > 0 and (text[start - 1].isalpha() or text[start - 1] == "."):
        start -= 1
    return text[start:index].casefold() not in _ABBREVIATIONS


def split_sentences(text: str) -> tuple[str, ...]:
    """Non-empty, stripped sentences of ``text`` in order (English and Chinese)."""
    sentences: list[str] = []
    start = 0
    for end in _MAYBE_ENDS.finditer(text):
        index = end.start()
        if text[index] != "." or _ends_at_period(text, index):
            piece = text[start : index + 1].strip()
            if piece.strip(_NOT_A_SENTENCE):
                sentences.append(piece)
            start = index + 1
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return tuple(sentences)


def normal_form(text: str) -> str:
    """Comparison form: NFKC, case-folded, punctuation and whitespace collapsed.

    Two texts that differ only in case, spacing, punctuation or full-width forms have
    the same normal form (the repeat filter hashes it).
    """
    folded = unicodedata.normalize("NFKC", fold_quotes(text)).casefold()
    return " ".join(_PUNCT_RE.sub(" ", folded).split())
