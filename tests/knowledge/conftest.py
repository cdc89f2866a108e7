"""Fixtures for the knowledge paths: an embedded L3 store with a cheap test embedder."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata.clock import FakeClock
from memstrata.config import LongTermSettings
from memstrata.gateway import Sanitizer
from memstrata.knowledge import HotKnowledge, KnowledgeIngestor
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.retrieval import Retriever
from memstrata.testing.embedders import HashEmbedder


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
    return HotKnowledge(store, sanitizer, clock, reader=Retriever(store, embedder))
