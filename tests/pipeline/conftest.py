"""Pipeline fixtures: a real engine (embedded Valkey + qdrant-edge + MiniLM, FakeClock)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine

OpenEngine = Callable[..., ContextEngine]
START = datetime(2025, 1, 10, 9, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def open_engine(engine_opener: OpenEngine, clock: FakeClock) -> OpenEngine:
    """Opens engines on ``tmp_path`` with the injected clock; closed at the end."""
    return functools.partial(engine_opener, clock=clock)


@pytest.fixture
def engine(open_engine: OpenEngine) -> ContextEngine:
    return open_engine()
