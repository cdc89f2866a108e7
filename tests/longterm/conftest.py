"""Fixtures for L3: both index adapters, a cheap test embedder, MiniLM once per session."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.longterm.points import Point
from memstrata.longterm.protocol import VectorIndex
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.testing.embedders import HashEmbedder
from memstrata.testing.indexes import ADAPTERS, LOCAL_MODE_WARNINGS
from memstrata.testing.indexes import make_index as new_index


def pytest_configure(config: pytest.Config) -> None:
    # Local mode (the server's stand-in) warns that payload indexes and hnsw_ef are
    # no-ops there; that is expected of a test double and only noise here.
    for rule in LOCAL_MODE_WARNINGS:
        config.addinivalue_line("filterwarnings", rule)


@pytest.fixture(params=ADAPTERS)
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorIndex]:
    """Each adapter in turn, collections ensured at 32 dims, closed afterwards."""
    idx = new_index(request.param, tmp_path)
    idx.ensure_collections(32)
    yield idx
    idx.close()


@pytest.fixture(scope="session")
def make_index() -> Callable[[str, Path], VectorIndex]:
    """Factory for a fresh adapter of a kind ('edge' or 'server') rooted at a path."""
    return new_index


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
