"""Fixtures for long-term memory: real embedded Valkey + EdgeIndex, a cheap embedder."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata.clock import FakeClock
from memstrata.config import LongTermSettings
from memstrata.embed.protocol import Embedder
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.longterm.store import LongTermStore
from memstrata.memory.settings import MemorySettings
from memstrata.memory.store import MemoryStore
from memstrata.memory.units import MemoryUnit, UnitSource
from memstrata.testing.embedders import HashEmbedder
from memstrata.working import RedisBackend

T0 = datetime(2025, 1, 1, tzinfo=UTC)


@dataclass
class Env:
    """One store under test and what it was built from (``tenant``: its own tenant)."""

    store: MemoryStore
    longterm: LongTermStore
    clock: FakeClock
    redis: Any
    prefix: str
    tenant: str = "t1"


StoreFactory = Callable[..., Env]


@pytest.fixture
def make_store(tmp_path: Path, embedded_backend: RedisBackend) -> Iterator[StoreFactory]:
    """Build stores on fresh EdgeIndex directories and a fresh Redis key prefix each."""
    opened: list[LongTermStore] = []

    def factory(
        *,
        embedder: Embedder | None = None,
        settings: MemorySettings | None = None,
        name: str | None = None,
        prefix: str | None = None,
    ) -> Env:
        clock = FakeClock(T0)
        root = tmp_path / (name or uuid.uuid4().hex[:8])
        longterm = LongTermStore(
            EdgeIndex(root),
            embedder or HashEmbedder(64),
            Bm25Encoder(),
            LongTermSettings(),
            clock=clock,
        )
        opened.append(longterm)
        prefix = prefix or f"mv-{uuid.uuid4().hex[:10]}"
        base = settings or MemorySettings()
        store = MemoryStore(
            longterm, embedded_backend.client, clock, settings=replace(base, redis_prefix=prefix)
        )
        return Env(store, longterm, clock, embedded_backend.client, prefix)

    yield factory
    for longterm in opened:
        longterm.close()


@pytest.fixture(scope="session")
def shared_longterm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LongTermStore]:
    """One EdgeIndex for most tests (opening four shards costs seconds); tests stay
    apart by tenant, which every engine query filters on."""
    longterm = LongTermStore(
        EdgeIndex(tmp_path_factory.mktemp("memory-edge")),
        HashEmbedder(64),
        Bm25Encoder(),
        LongTermSettings(),
        clock=FakeClock(T0),
    )
    yield longterm
    longterm.close()


@pytest.fixture
def env(shared_longterm: LongTermStore, embedded_backend: RedisBackend) -> Env:
    """A store with the hash embedder, a fresh tenant and a fresh Redis key prefix."""
    clock = FakeClock(T0)
    prefix = f"mv-{uuid.uuid4().hex[:10]}"
    store = MemoryStore(
        shared_longterm,
        embedded_backend.client,
        clock,
        settings=MemorySettings(redis_prefix=prefix),
    )
    tenant = f"t-{uuid.uuid4().hex[:10]}"
    return Env(store, shared_longterm, clock, embedded_backend.client, prefix, tenant)


def _fact(
    attribute: str,
    value: str,
    at: datetime,
    *,
    subject: str = "user",
    user: str = "u1",
    tenant: str = "t1",
    kind: str = "fact",
    **kw: Any,
) -> MemoryUnit:
    """A unit observed and valid from ``at``."""
    return MemoryUnit(
        subject=subject,
        attribute=attribute,
        value=value,
        kind=kind,  # type: ignore[arg-type]
        source=UnitSource(tenant=tenant, user=user, session_id="s1", turn_id="1"),
        observed_at=at,
        valid_from=at,
        **kw,
    )


UnitFactory = Callable[..., MemoryUnit]


@pytest.fixture
def fact(env: Env) -> UnitFactory:
    """``fact(attribute, value, at, **fields)``: a unit of ``env``'s tenant valid from ``at``."""
    return functools.partial(_fact, tenant=env.tenant)


@pytest.fixture
def make_unit() -> UnitFactory:
    """Like ``fact`` without a bound tenant (default ``t1``)."""
    return _fact


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    """The real model, loaded once for the whole session (seconds)."""
    from memstrata.embed.minilm import MiniLMEmbedder

    embedder = MiniLMEmbedder(batch_size=32)
    embedder.embed(["warm up"])
    return embedder
