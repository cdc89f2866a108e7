"""Fixtures for the write-queue tests: a client of the shared embedded Valkey."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from memstrata.memory.queue import WriteQueue
from memstrata.working import EmbeddedValkey, RedisBackend


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
