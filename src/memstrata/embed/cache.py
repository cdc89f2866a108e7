"""An in-process LRU cache in front of any embedder.

Agents repeat queries (the same intent every step), and a MiniLM query costs
~8 ms on CPU while a cache hit costs microseconds. Cached rows are read-only
copies, so no caller can corrupt another caller's vector.

One forward pass per text: a text embedded alone (a query) by a model that exposes
its token vectors is run through :meth:`TokenEmbedder.embed_tokens`, and its sentence
vector (the tokens pooled, bit for bit the row ``embed`` gives) and its token vectors
are remembered together; a text whose token vectors were asked for first has its
sentence vector remembered with them. The retriever's entity route pools the
question's tokens while the router and the searches read its sentence vector: the
question is embedded once either way.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from memstrata.embed.protocol import Embedder, TokenEmbedder
from memstrata.embed.tokens import TokenVectors
from memstrata.errors import ValidationError
from memstrata.validation import check_positive_int

# Token vectors of a text embedded alone are kept up to this many tokens (a question's
# size; 128 x 384 floats is ~200 KB): a stored turn's are never asked for again.
QUERY_TOKENS_MAX = 128


def _frozen_row(vector: NDArray[np.float32]) -> NDArray[np.float32]:
    """A read-only float32 copy: no caller can corrupt another caller's cached row."""
    row = np.array(vector, dtype=np.float32, copy=True)
    row.setflags(write=False)
    return row


class CachedEmbedder:
    """Wraps an :class:`Embedder`; remembers the newest ``max_entries`` texts, and
    the token vectors of the newest ``max_token_entries`` (a query's are ~20 KB)."""

    def __init__(
        self, inner: Embedder, *, max_entries: int = 4096, max_token_entries: int = 256
    ) -> None:
        self._inner = inner
        self._max = check_positive_int("max_entries", max_entries)
        self._max_tokens = check_positive_int("max_token_entries", max_token_entries)
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, NDArray[np.float32]] = OrderedDict()
        self._tokens: OrderedDict[str, TokenVectors] = OrderedDict()
        # Texts being embedded by some thread now, and the event set when it is done.
        self._pending: dict[str, threading.Event] = {}
        self.hits = 0
        self.misses = 0

    def clear(self) -> None:
        """Drop every remembered text (a forget leaves no copy of what it deleted)."""
        with self._lock:
            self._cache.clear()
            self._tokens.clear()

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self._inner.name

    @property
    def dim(self) -> int:
        """The wrapped model's dimension."""
        return self._inner.dim

    def _compute(self, texts: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        """``texts`` embedded by the wrapped model (one call) and cached."""
        if not texts:
            return {}
        computed = [self._embed_alone(texts[0])] if len(texts) == 1 else self._inner.embed(texts)
        fresh = {text: _frozen_row(v) for text, v in zip(texts, computed, strict=True)}
        with self._lock:
            for text, row in fresh.items():
                self._cache[text] = row
                self._cache.move_to_end(text)
            self._evict()
        return fresh

    def _evict(self) -> None:
        """Drop the oldest sentence vectors past ``max_entries`` (lock held)."""
        while len(self._cache) > self._max:
            self._cache.popitem(last=False)

    def embed_tokens(self, text: str) -> TokenVectors | None:
        """The wrapped model's token vectors of ``text`` (cached); None when it has none."""
        if not isinstance(text, str):
            raise ValidationError("text", f"must be a string, got {type(text).__name__}")
        if not isinstance(self._inner, TokenEmbedder):
            return None
        with self._lock:
            cached = self._tokens.get(text)
            if cached is not None:
                self._tokens.move_to_end(text)
                self.hits += 1
                return cached
            self.misses += 1
        tokens = self._inner.embed_tokens(text)
        if tokens is not None:
            self._keep_tokens(tokens, tokens.pooled())
        return tokens

    def _keep_tokens(self, tokens: TokenVectors, pooled: NDArray[np.float32]) -> None:
        """Remember ``tokens`` and, unless known already, their text's sentence vector."""
        row = _frozen_row(pooled)
        with self._lock:
            self._tokens[tokens.text] = tokens
            self._tokens.move_to_end(tokens.text)
            while len(self._tokens) > self._max_tokens:
                self._tokens.popitem(last=False)
            if tokens.text not in self._cache:
                self._cache[tokens.text] = row
                self._evict()

    def _embed_alone(self, text: str) -> NDArray[np.float32]:
        """One text's sentence vector; by the model's token pass when it has one, so
        its token vectors come from the same run (kept when query-sized)."""
        if isinstance(self._inner, TokenEmbedder):
            tokens = self._inner.embed_tokens(text)
            if tokens is not None:
                pooled = tokens.pooled()
                if len(tokens.offsets) <= QUERY_TOKENS_MAX:
                    self._keep_tokens(tokens, pooled)
                return pooled
        row: NDArray[np.float32] = np.asarray(self._inner.embed([text]), dtype=np.float32)[0]
        return row

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed only the texts not cached; one batch call for all of them."""
        items = list(texts)
        rows: list[NDArray[np.float32] | None] = []
        with self._lock:
            for text in items:
                row = self._cache.get(text)
                if row is not None:
                    self._cache.move_to_end(text)
                    self.hits += 1
                else:
                    self.misses += 1
                rows.append(row)
        missing = list(dict.fromkeys(t for t, r in zip(items, rows, strict=True) if r is None))
        if missing:
            # A text another thread is embedding right now is waited for, not embedded
            # a second time (two write workers' batches often share texts).
            with self._lock:
                theirs = {t: self._pending[t] for t in missing if t in self._pending}
                mine = [t for t in missing if t not in theirs]
                done = threading.Event()
                for text in mine:
                    self._pending[text] = done
            try:
                fresh = self._compute(mine)
            finally:
                with self._lock:
                    for text in mine:
                        if self._pending.get(text) is done:
                            del self._pending[text]
                done.set()
            late: list[str] = []
            for text, event in theirs.items():
                event.wait()
                with self._lock:
                    row = self._cache.get(text)
                if row is None:
                    late.append(text)  # that call failed, or the row was evicted since
                else:
                    fresh[text] = row
            fresh.update(self._compute(late))
            rows = [fresh[t] if r is None else r for t, r in zip(items, rows, strict=True)]
        if not items:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([r for r in rows if r is not None]).astype(np.float32, copy=False)
