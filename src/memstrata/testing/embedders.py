"""TEST DOUBLE embedders: deterministic, microseconds per text, no model.

For tests of logic that needs *some* vectors (isolation, versioning, chunk stores);
the real model (MiniLM) is exercised by its own tests and by the engine tests.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

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
