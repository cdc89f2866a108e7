"""The near-duplicate threshold with the real model (MiniLM), not the hash double."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstrata.clock import FakeClock
from memstrata.config import LongTermSettings, MemorySettings
from memstrata.embed.protocol import Embedder
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import MEMORIES
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.memory.store import MemoryStore
from memstrata.working import RedisBackend

T0 = datetime(2025, 1, 1, tzinfo=UTC)
DAY = timedelta(days=1)


@pytest.fixture(scope="module")
def minilm_longterm(
    tmp_path_factory: pytest.TempPathFactory, minilm: Embedder
) -> Iterator[LongTermStore]:
    """One MiniLM-backed index for the module; each test takes its own tenant."""
    longterm = LongTermStore(
        EdgeIndex(tmp_path_factory.mktemp("minilm-edge")),
        minilm,
        Bm25Encoder(),
        LongTermSettings(),
        clock=FakeClock(T0),
    )
    yield longterm
    longterm.close()


def _store(longterm: LongTermStore, redis: Any, settings: MemorySettings) -> MemoryStore:
    prefix = f"mv-{uuid.uuid4().hex[:10]}"
    return MemoryStore(
        longterm, redis, FakeClock(T0), settings=replace(settings, redis_prefix=prefix)
    )


@pytest.fixture
def tenant() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.mark.parametrize(
    ("attribute", "first", "second", "expected"),
    [
        # Rephrasings (cosine 0.97-0.997 with MiniLM): one point, refreshed.
        ("reply_style", "short and concise answers", "short, concise answers", "deduplicated"),
        ("contact_channel", "email", "e-mail", "deduplicated"),
        # Real changes (cosine 0.69-0.88): a new version.
        ("city", "Hangzhou", "Chengdu", "superseded"),
        ("所在城市", "杭州", "成都", "superseded"),
        ("diet", "vegetarian", "vegan", "superseded"),
    ],
)
def test_default_threshold(
    minilm_longterm: LongTermStore,
    embedded_backend: RedisBackend,
    make_unit: Any,
    tenant: str,
    attribute: str,
    first: str,
    second: str,
    expected: str,
) -> None:
    store = _store(minilm_longterm, embedded_backend.client, MemorySettings())
    a = store.write(make_unit(attribute, first, T0, importance=0.3, tenant=tenant))
    b = store.write(make_unit(attribute, second, T0 + DAY, importance=0.6, tenant=tenant))
    assert b.action == expected
    active = store.active_fact(tenant, "u1", "user", attribute)
    if expected == "deduplicated":
        assert b.unit_id == a.unit_id and active.value == first
        assert active.access_count == 1 and active.importance == pytest.approx(0.6)
        assert minilm_longterm.count(MEMORIES, tenant=tenant) == 1
    else:
        assert active.value == second and active.version == 2


def test_threshold_is_configurable(
    minilm_longterm: LongTermStore, embedded_backend: RedisBackend, make_unit: Any, tenant: str
) -> None:
    strict = MemorySettings(near_duplicate_cosine=0.99)
    store = _store(minilm_longterm, embedded_backend.client, strict)
    store.write(make_unit("contact_channel", "email", T0, tenant=tenant))
    out = store.write(make_unit("contact_channel", "e-mail", T0 + DAY, tenant=tenant))
    assert out.action == "superseded"
