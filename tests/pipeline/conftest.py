"""Pipeline fixtures: a real engine (embedded Valkey + qdrant-edge + MiniLM, FakeClock)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata.clock import FakeClock
from memstrata.config import Settings
from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.engine import ContextEngine

OpenEngine = Callable[..., ContextEngine]
START = datetime(2025, 1, 10, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="session")
def pipeline_minilm() -> CachedEmbedder:
    """The real default model, loaded once for the pipeline tests."""
    return CachedEmbedder(MiniLMEmbedder())


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def open_engine(
    tmp_path: Path, pipeline_minilm: CachedEmbedder, clock: FakeClock
) -> Iterator[OpenEngine]:
    """Opens engines on ``tmp_path`` with the injected clock; closes them all at the end."""
    opened: list[ContextEngine] = []

    def factory(**options: Any) -> ContextEngine:
        engine = ContextEngine.open(
            Settings(data_dir=tmp_path / "data"),
            clock=clock,
            embedder=pipeline_minilm,
            **options,
        )
        opened.append(engine)
        return engine

    yield factory
    for engine in opened:
        engine.close()


@pytest.fixture
def engine(open_engine: OpenEngine) -> ContextEngine:
    return open_engine()
