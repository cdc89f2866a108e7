"""Engine-level fixtures: a real engine on embedded Valkey + qdrant-edge + MiniLM."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata.clock import FakeClock
from memstrata.config import Settings
from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.engine import ContextEngine


@pytest.fixture(scope="session")
def shared_minilm() -> CachedEmbedder:
    """The real default model, loaded once for the whole session."""
    return CachedEmbedder(MiniLMEmbedder())


@pytest.fixture
def engine_factory(
    tmp_path: Path, shared_minilm: CachedEmbedder
) -> Iterator[type[ContextEngine] | object]:
    opened: list[ContextEngine] = []

    def open_engine(data_dir: Path | None = None, clock: FakeClock | None = None) -> ContextEngine:
        engine = ContextEngine.open(
            Settings(data_dir=data_dir or tmp_path / "data"),
            clock=clock,
            embedder=shared_minilm,
        )
        opened.append(engine)
        return engine

    yield open_engine
    for engine in opened:
        engine.close()


@pytest.fixture
def engine(engine_factory: object) -> ContextEngine:
    return engine_factory()  # type: ignore[operator, no-any-return]
