"""BM25 sparse vectors for English and Chinese text, computed client-side.

Only the term-frequency half of BM25 lives here: the engine multiplies in the IDF
(``modifier = idf`` on the sparse vector), because IDF depends on the corpus and the
engine is the one that sees it. Documents get the saturated, length-normalized TF::

    w(t, d) = tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))

and queries get weight 1 per unique term, so the engine's dot product is exactly the
BM25 score. Token ids are a stable 32-bit blake2b hash: Python's ``hash()`` is salted
per process and would scramble a persisted index on restart.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import threading
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import snowballstemmer

from memstrata.errors import ValidationError
from memstrata.loading import loading
from memstrata.longterm.points import SparseVector

# CJK ideographs (basic, extension A, compatibility): these runs go to jieba, since
# Chinese has no spaces; everything else that is a letter or digit is split by regex.
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN_RE = re.compile(rf"(?P<cjk>[{_CJK}]+)|(?P<word>[^\W_{_CJK}]+)")

# Function words only: BM25's IDF discounts frequent words, but not enough for the
# auxiliaries and question words every question carries ("how did ... would ...").
# Dropping them lets the words that matter decide (docs/benchmarks.md, "How the
# defaults were chosen").
ENGLISH_STOPWORDS = frozenset(
    """a an and are as at be but by for from has have he her his i if in into is it its
    me my no not of on or our she so than that the their them then there these they this
    to was we were what when where which who will with you your
    am been being do does did doing done how why would could should can might must shall
    may about also just very really any some such own same other over out up down off
    again further once here all each few more most both too only now""".split()  # noqa: SIM905
)
CHINESE_STOPWORDS = frozenset(
    "的 了 和 是 在 也 就 都 而 及 与 着 或 吗 呢 吧 啊 呀 把 被 之 其 这 那 个".split()  # noqa: SIM905
)

_jieba_lock = threading.Lock()
_jieba_module: Any = None


def _jieba() -> Any:
    """Import and initialize jieba once, without its INFO chatter on stderr."""
    global _jieba_module
    if _jieba_module is None:
        with _jieba_lock:
            if _jieba_module is None:
                with loading():  # its dictionary: not counted by the read deadlines
                    import jieba

                    jieba.setLogLevel(logging.WARNING)
                    jieba.initialize()
                _jieba_module = jieba
    return _jieba_module


_stemmers = threading.local()  # a Snowball stemmer object keeps state between calls


@functools.lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    """The Snowball (Porter 2) stem of an ASCII word: "hiking", "hiked", "hikes" -> "hike".

    It matches more forms of a word than the plural-only stemmer it replaced
    (docs/benchmarks.md, "How the defaults were chosen"). Other scripts are left as
    they are (jieba already gives words).
    """
    if len(word) <= 2 or not word.isascii() or not word.isalpha():
        return word
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = snowballstemmer.stemmer("english")
    stem: str = stemmer.stemWord(word)
    return stem


def _index_term(word: str) -> str | None:
    """The index term of a lowercase non-CJK word (its stem), None for a stopword."""
    return None if word in ENGLISH_STOPWORDS else _stem(word)


def _cjk_tokens(run: str) -> list[str]:
    """The words of a run of CJK ideographs, stopwords dropped."""
    # lcut_for_search also emits the short words inside long compounds
    # (e.g. 中华人民共和国 -> 中华, 华人, 人民, 共和, 共和国, ...),
    # which raises recall for partial-name queries.
    words: Iterable[str] = _jieba().lcut_for_search(run)
    return [w for w in words if w.strip() and w not in CHINESE_STOPWORDS]


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lowercase index terms (English words, Chinese words, digits).

    Stopwords are dropped; repeated terms are kept (term frequency matters).
    """
    tokens: list[str] = []
    for match in _TOKEN_RE.finditer(text.lower()):
        cjk = match.group("cjk")
        if cjk is not None:
            tokens.extend(_cjk_tokens(cjk))
        else:
            term = _index_term(match.group("word"))
            if term is not None:
                tokens.append(term)
    return tokens


@functools.lru_cache(maxsize=65_536)
def token_id(token: str) -> int:
    """Stable unsigned 32-bit id of ``token`` (same in every process and release).

    Cached: a vocabulary is small next to the number of tokens hashed.
    """
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "little")


def _sorted_vector(weights: dict[int, float]) -> SparseVector:
    ordered = sorted(weights.items())
    return SparseVector(tuple(i for i, _ in ordered), tuple(v for _, v in ordered))


@functools.lru_cache(maxsize=65_536)
def _word_term_id(word: str) -> int | None:
    """The term id of a lowercase non-CJK word, None for a stopword: one cache lookup
    per word where tokenizing and hashing take three."""
    term = _index_term(word)
    return None if term is None else token_id(term)


def _term_ids(text: str) -> list[int]:
    """``[token_id(t) for t in tokenize(text)]``, with one cache lookup per English
    word (a long turn has hundreds)."""
    ids: list[int] = []
    for cjk, word in _TOKEN_RE.findall(text.lower()):
        if cjk:
            ids.extend(token_id(t) for t in _cjk_tokens(cjk))
        else:
            term = _word_term_id(word)
            if term is not None:
                ids.append(term)
    return ids


@functools.lru_cache(maxsize=16_384)
def _encode_document(text: str, k1: float, b: float, avg_doc_len: float) -> SparseVector:
    # Cached: a fact is written up to three times (pending, committed, closed) and
    # tokenizing (jieba for CJK) dominated those rewrites; SparseVector is immutable.
    ids = _term_ids(text)
    if not ids:
        return SparseVector((), ())
    # Two tokens hashing to one id count as one term: their frequencies add up.
    counts = Counter(ids)
    norm = k1 * (1.0 - b + b * len(ids) / avg_doc_len)
    return _sorted_vector({tid: tf * (k1 + 1.0) / (tf + norm) for tid, tf in counts.items()})


@functools.lru_cache(maxsize=4096)
def _encode_query(text: str) -> SparseVector:
    # Cached: agents ask some questions every step (an intent's fixed knowledge query).
    # The same terms as tokenize() with fewer lookups: 44 -> 35 us for a new query.
    ids: set[int] = set()
    for match in _TOKEN_RE.finditer(text.lower()):
        cjk = match.group("cjk")
        if cjk is None:
            term = _word_term_id(match.group("word"))
            if term is not None:
                ids.add(term)
        else:
            ids.update(token_id(t) for t in _cjk_tokens(cjk))
    ordered = tuple(sorted(ids))
    return SparseVector(ordered, (1.0,) * len(ordered))


@dataclass(frozen=True, slots=True)
class Bm25Encoder:
    """Turns text into BM25 document and query sparse vectors.

    ``avg_doc_len`` is in tokens; a fixed estimate keeps a stored document's weights
    independent of what is written later (re-weighting the whole index on every
    write would be unaffordable), at the cost of slightly off length normalization.
    """

    k1: float = 1.2
    b: float = 0.75
    avg_doc_len: float = 32.0

    def __post_init__(self) -> None:
        if not self.k1 >= 0:
            raise ValidationError("k1", "must be >= 0")
        if not 0.0 <= self.b <= 1.0:
            raise ValidationError("b", "must be within [0, 1]")
        if not self.avg_doc_len > 0:
            raise ValidationError("avg_doc_len", "must be > 0")

    def clear_cache(self) -> None:
        """Drop the document encodings remembered (a process-wide cache of texts)."""
        _encode_document.cache_clear()

    def encode_document(self, text: str) -> SparseVector:
        """BM25-saturated term frequencies of ``text``'s terms."""
        return _encode_document(text, self.k1, self.b, self.avg_doc_len)

    def encode_query(self, text: str) -> SparseVector:
        """Weight 1 for every unique term of ``text`` (the engine adds the IDF)."""
        return _encode_query(text)
