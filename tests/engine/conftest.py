"""Engine-level fixtures: a real engine on embedded Valkey + qdrant-edge + MiniLM."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memstrata.engine import ContextEngine


@pytest.fixture
def engine_factory(
    engine_opener: Callable[..., ContextEngine],
) -> Callable[..., ContextEngine]:
    """``engine_factory(data_dir=None, clock=None, **options)``."""
    return engine_opener


@pytest.fixture
def engine(engine_opener: Callable[..., ContextEngine]) -> ContextEngine:
    return engine_opener()
