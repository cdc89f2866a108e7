"""Fixtures for multi-route retrieval: a real store on each index adapter (qdrant-edge
embedded, QdrantServerIndex over qdrant-client local mode) and a cheap hash embedder."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from qdrant_client import QdrantClient

from memstrata.clock import FakeClock
from memstrata.config import LongTermSettings
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.protocol import VectorIndex
from memstrata.longterm.qdrant_server import QdrantServerIndex
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.longterm.store import LongTermStore
from memstrata.testing.embedders import HashEmbedder

ADAPTERS = ("edge", "server")
DIM = 64


def pytest_configure(config: pytest.Config) -> None:
    # Local mode (the server's stand-in) warns that payload indexes and hnsw_ef are
    # no-ops there: expected of a test double, only noise here.
    config.addinivalue_line("filterwarnings", "ignore:Payload indexes have no effect:UserWarning")
    config.addinivalue_line("filterwarnings", "ignore:Local mode performs exact:UserWarning")


def make_index(kind: str, path: Path) -> VectorIndex:
    if kind == "edge":
        return EdgeIndex(path / "edge")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return QdrantServerIndex(QdrantClient(location=":memory:"))


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
