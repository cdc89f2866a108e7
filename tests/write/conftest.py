"""Write-path fixtures: a client of the shared embedded Valkey for the queue, and a real
engine (embedded Valkey + qdrant-edge + MiniLM, FakeClock) for the path end to end."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import redis

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.working import EmbeddedValkey, RedisBackend
from memstrata.write.queue import WriteQueue


@pytest.fixture(scope="session")
def queue_client(embedded_valkey: EmbeddedValkey) -> Iterator[redis.Redis]:
    """A redis-py client (decode_responses=True) of the session's embedded server."""
    backend = RedisBackend.from_url(embedded_valkey.url)
    client = backend.client
    assert isinstance(client, redis.Redis)
    yield client
    backend.close()


@pytest.fixture
def queue_name() -> str:
    """A fresh queue name per test, so tests never see each other's entries."""
    return f"q-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def make_queue(queue_client: redis.Redis, queue_name: str) -> Callable[..., WriteQueue]:
    """Build a WriteQueue named ``queue_name`` on the embedded server."""

    def build(**kwargs: Any) -> WriteQueue:
        return WriteQueue(queue_client, queue_name, **kwargs)

    return build


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
