"""The router tests' engine: one per test module (see ``stage.py``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from tests.router.stage import LOW_CONFIDENCE, SKIP_BELOW, START, Stage

from memstrata.clock import FakeClock
from memstrata.config import LongTermSettings, Settings
from memstrata.embed.cache import CachedEmbedder
from memstrata.engine import ContextEngine


@pytest.fixture(scope="module")
def shared_engine(
    tmp_path_factory: pytest.TempPathFactory, minilm: CachedEmbedder
) -> Iterator[tuple[ContextEngine, FakeClock]]:
    clock = FakeClock(START)
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("router-engine"),
        longterm=LongTermSettings(
            low_confidence_cosine=LOW_CONFIDENCE, skip_below_cosine=SKIP_BELOW
        ),
    )
    engine = ContextEngine.open(settings, clock=clock, embedder=minilm)
    yield engine, clock
    engine.close()


@pytest.fixture
def stage(shared_engine: tuple[ContextEngine, FakeClock]) -> Stage:
    """The module's engine with a fresh tenant and user for this test."""
    engine, clock = shared_engine
    return Stage(engine, clock, f"t-{uuid.uuid4().hex[:10]}", f"u-{uuid.uuid4().hex[:8]}")
