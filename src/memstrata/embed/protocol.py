"""The Embedder role: text in, L2-normalized float32 vectors out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray


class Embedder(Protocol):
    """Turns texts into dense vectors.

    ``embed`` returns a float32 array of shape ``(len(texts), dim)`` whose rows have
    unit L2 norm, so a dot product is the cosine similarity.
    """

    @property
    def name(self) -> str:
        """A stable model identifier (stored next to vectors built with it)."""
        ...

    @property
    def dim(self) -> int:
        """Length of every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` in order; an empty input gives shape ``(0, dim)``."""
        ...
