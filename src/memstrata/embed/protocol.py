"""The Embedder role: text in, L2-normalized float32 vectors out; optionally token vectors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from memstrata.embed.tokens import TokenVectors
from memstrata.errors import ValidationError


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


@runtime_checkable
class TokenEmbedder(Protocol):
    """An embedder that can also hand out one text's token vectors (one forward pass).

    ``TokenVectors.pooled()`` must equal the text's :meth:`Embedder.embed` row, so a
    caller may take the sentence vector and span vectors from the same pass.
    """

    def embed_tokens(self, text: str) -> TokenVectors | None:
        """``text``'s token vectors, or None when this embedder cannot expose them."""
        ...


def embed_one(embedder: Embedder, text: str) -> NDArray[np.float32]:
    """The dense vector of one text (a query), as float32."""
    return np.asarray(embedder.embed([text])[0], dtype=np.float32)


def check_texts(texts: Sequence[str]) -> list[str]:
    """``texts`` as a list of strings; a bare string or a non-string item is refused
    (an embedder would otherwise embed a string's characters one by one)."""
    if isinstance(texts, str):
        raise ValidationError("texts", "must be a sequence of strings, not one string")
    items = list(texts)
    for i, text in enumerate(items):
        if not isinstance(text, str):
            raise ValidationError(f"texts[{i}]", f"must be a string, got {type(text).__name__}")
    return items
