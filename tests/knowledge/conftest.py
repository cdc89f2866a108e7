"""Fixtures for the knowledge paths: an embedded L3 store with a cheap test embedder."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from memstrata.clock import FakeClock
from memstrata.config import LongTermSettings
from memstrata.gateway import Sanitizer
from memstrata.knowledge import HotKnowledge, KnowledgeIngestor
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.longterm.store import LongTermStore


class HashEmbedder:
    """TEST DOUBLE, not a model: hashed bag of words, L2-normalized.

    Deterministic and microseconds per text; texts sharing words get a positive
    cosine, which is all these tests need (the real model has its own tests).
    """

    name = "test-hash-embedder"

    def __init__(self, dim: int = 32) -> None:
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
                slot = int.from_bytes(digest[:4], "little") % self.dim
                out[row, slot] += 1.0 if digest[4] & 1 else -1.0
            # A fixed offset keeps empty/unknown texts away from the zero vector.
            out[row, 0] += 0.1
        normalized: NDArray[np.float32] = out / np.linalg.norm(out, axis=1, keepdims=True)
        return normalized


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sanitizer() -> Sanitizer:
    return Sanitizer()


@pytest.fixture(scope="module")
def embedder() -> HashEmbedder:
    return HashEmbedder(32)


@pytest.fixture(scope="module")
def store(
    tmp_path_factory: pytest.TempPathFactory, embedder: HashEmbedder
) -> Iterator[LongTermStore]:
    """One embedded (qdrant-edge) store per module: opening one costs about a second.

    Tests stay independent through a tenant of their own (every read is tenant
    filtered in the engine). No store-level sanitizer, so the tests see ours work.
    """
    index = EdgeIndex(tmp_path_factory.mktemp("edge"))
    lt = LongTermStore(index, embedder, Bm25Encoder(), LongTermSettings(), clock=FakeClock())
    yield lt
    lt.close()


@pytest.fixture
def tenant() -> str:
    """A tenant no other test uses."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def ingestor(
    store: LongTermStore, sanitizer: Sanitizer, clock: FakeClock, tmp_path: Path
) -> KnowledgeIngestor:
    return KnowledgeIngestor(store, sanitizer, clock, manifest_dir=tmp_path / "data")


@pytest.fixture
def hot(
    store: LongTermStore, sanitizer: Sanitizer, clock: FakeClock, embedder: HashEmbedder
) -> HotKnowledge:
    return HotKnowledge(store, sanitizer, clock, embedder=embedder, sparse_encoder=Bm25Encoder())
