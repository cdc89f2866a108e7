"""Fixtures for L3: both index adapters, a cheap test embedder, MiniLM once per session."""

from __future__ import annotations

import hashlib
import re
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray
from qdrant_client import QdrantClient

from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.models import Point
from memstrata.longterm.protocol import VectorIndex
from memstrata.longterm.qdrant_server import QdrantServerIndex
from memstrata.longterm.sparse import Bm25Encoder

ADAPTERS = ("edge", "server")


def pytest_configure(config: pytest.Config) -> None:
    # Local mode (the server's stand-in) warns that payload indexes and hnsw_ef are
    # no-ops there; that is expected of a test double and only noise here.
    config.addinivalue_line("filterwarnings", "ignore:Payload indexes have no effect:UserWarning")
    config.addinivalue_line("filterwarnings", "ignore:Local mode performs exact:UserWarning")


class HashEmbedder:
    """TEST DOUBLE, not a model: hashed bag of words, L2-normalized.

    Deterministic and microseconds per text, so property tests can write hundreds
    of items; texts sharing words get a positive cosine, which is all the
    isolation and contract tests need. MiniLM is exercised in its own tests.
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
                sign = 1.0 if digest[4] & 1 else -1.0
                out[row, slot] += sign
            # A fixed offset keeps empty/unknown texts away from the zero vector.
            out[row, 0] += 0.1
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def _make_index(kind: str, path: Path) -> VectorIndex:
    if kind == "edge":
        return EdgeIndex(path / "edge")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return QdrantServerIndex(QdrantClient(location=":memory:"))


@pytest.fixture(params=ADAPTERS)
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorIndex]:
    """Each adapter in turn, collections ensured at 32 dims, closed afterwards."""
    idx = _make_index(request.param, tmp_path)
    idx.ensure_collections(32)
    yield idx
    idx.close()


@pytest.fixture(scope="session")
def make_index() -> Callable[[str, Path], VectorIndex]:
    """Factory for a fresh adapter of a kind ('edge' or 'server') rooted at a path."""
    return _make_index


@pytest.fixture(scope="session")
def hash_embedder() -> HashEmbedder:
    """The cheap deterministic test double (stateless, so shared)."""
    return HashEmbedder(32)


PointFactory = Callable[..., Point]


@pytest.fixture(scope="session")
def make_point(hash_embedder: HashEmbedder) -> PointFactory:
    """Factory for a Point of ``text`` owned by ``tenant`` (test-double vectors)."""
    bm25 = Bm25Encoder()

    def factory(
        text: str,
        tenant: str,
        *,
        user: str | None = "u1",
        type_: str = "fact",
        created_at: float = 100.0,
        point_id: str | None = None,
        **extra: Any,
    ) -> Point:
        payload = {
            "tenant": tenant,
            "user": user,
            "type": type_,
            "text": text,
            "source": "test",
            "created_at": created_at,
            "updated_at": created_at,
            **extra,
        }
        return Point(
            point_id or str(uuid.uuid4()),
            hash_embedder.embed([text])[0],
            bm25.encode_document(text),
            payload,
        )

    return factory


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    """The real model, loaded once for the whole session (takes seconds)."""
    embedder = MiniLMEmbedder(batch_size=32)
    embedder.embed(["warm up"])
    return embedder
