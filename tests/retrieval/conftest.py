"""Fixtures for multi-route retrieval: a real store on each index adapter (qdrant-edge
embedded, QdrantServerIndex over qdrant-client local mode) and a cheap hash embedder."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from memstrata.clock import FakeClock
from memstrata.config import LongTermSettings
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.testing.embedders import HashEmbedder
from memstrata.testing.indexes import ADAPTERS, LOCAL_MODE_WARNINGS, make_index

DIM = 64


def pytest_configure(config: pytest.Config) -> None:
    # Local mode (the server's stand-in) warns that payload indexes and hnsw_ef are
    # no-ops there: expected of a test double, only noise here.
    for rule in LOCAL_MODE_WARNINGS:
        config.addinivalue_line("filterwarnings", rule)


@pytest.fixture(scope="module", params=ADAPTERS)
def store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LongTermStore]:
    """One store per adapter (edge, server) for a whole module, 64 dims: opening a
    qdrant-edge index costs seconds, so tests share it and keep apart by using a
    fresh tenant each (tenant isolation is pushed down into the engine)."""
    index = make_index(str(request.param), tmp_path_factory.mktemp(f"store-{request.param}"))
    opened = LongTermStore(
        index, HashEmbedder(DIM), Bm25Encoder(), LongTermSettings(), clock=FakeClock()
    )
    yield opened
    opened.close()


@pytest.fixture
def tenant() -> str:
    """A tenant id no other test uses."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def hash_embedder() -> HashEmbedder:
    """The cheap deterministic test double (stateless, so shared)."""
    return HashEmbedder(DIM)
