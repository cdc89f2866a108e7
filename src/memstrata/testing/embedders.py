"""TEST DOUBLE embedders: deterministic, microseconds per text, no model.

For tests of logic that needs *some* vectors (isolation, versioning, chunk stores);
the real model (MiniLM) is exercised by its own tests and by the engine tests.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections import Counter
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from memstrata.embed.protocol import Embedder, TokenEmbedder
from memstrata.embed.tokens import TokenVectors

_WORD = re.compile(r"\w+")


class HashEmbedder:
    """TEST DOUBLE, not a model: a hashed bag of words, L2-normalized.

    Texts sharing words get a positive cosine; different words land in different
    signed buckets, so unrelated texts score near zero.
    """

    name = "test-hash-embedder"

    def __init__(self, dim: int = 32) -> None:
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                slot = int.from_bytes(digest[:4], "little") % self.dim
                out[row, slot] += 1.0 if digest[4] & 1 else -1.0
            # A fixed offset keeps empty/unknown texts away from the zero vector.
            out[row, 0] += 0.1
        normalized: NDArray[np.float32] = out / np.linalg.norm(out, axis=1, keepdims=True)
        return normalized


class CountingEmbedder:
    """TEST DOUBLE wrapper: any embedder (the real model included), counting each text
    it is asked to embed (thread-safe), so a test can say no text was embedded twice."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self.texts: Counter[str] = Counter()

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self._inner.name

    @property
    def dim(self) -> int:
        """The wrapped model's dimension."""
        return self._inner.dim

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """The wrapped model's vectors; each text counted."""
        with self._lock:
            self.texts.update(texts)
        return np.asarray(self._inner.embed(texts), dtype=np.float32)

    def repeated(self) -> dict[str, int]:
        """The texts embedded more than once, with their counts."""
        with self._lock:
            return {text: n for text, n in self.texts.items() if n > 1}


class CountingTokenEmbedder(CountingEmbedder):
    """:class:`CountingEmbedder` of a model that also gives token vectors: a token pass
    counts as a pass over its text."""

    def __init__(self, inner: Embedder) -> None:
        if not isinstance(inner, TokenEmbedder):
            raise TypeError(f"{inner.name} gives no token vectors: use CountingEmbedder")
        super().__init__(inner)
        self._tokens = inner

    def embed_tokens(self, text: str) -> TokenVectors | None:
        """The wrapped model's token vectors; the text counted."""
        with self._lock:
            self.texts[text] += 1
        return self._tokens.embed_tokens(text)
