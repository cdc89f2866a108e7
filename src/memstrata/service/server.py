"""``memstrata serve``: REST (with MCP at ``/mcp``) and gRPC over one engine.

One process owns the embedded store (the Valkey server and the qdrant-edge shards
under the data directory) and every session it opens: L1 is never persisted, so a
session lives where it started. Replicas behind a load balancer share a Redis (or
Redis Cluster) and a Qdrant server named in the settings; see docs/service.md.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from memstrata.clock import Clock, SystemClock
from memstrata.config import Settings
from memstrata.engine import ContextEngine
from memstrata.errors import BackendUnavailableError
from memstrata.service.auth import KeyStore
from memstrata.service.core import Service
from memstrata.wiring import embedded_valkey, redis_backend

log = logging.getLogger("memstrata.service")
ADMIN_KEY_FILE = "admin.key"


@dataclass(frozen=True, slots=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8080
    grpc_port: int = 50051
    grpc_threads: int = 16


@contextlib.contextmanager
def key_store(settings: Settings, clock: Clock | None = None) -> Iterator[KeyStore]:
    """The key store of ``settings`` without an engine (``memstrata keys``).

    With the embedded store this starts its Valkey, which fails with a clear error
    while a service owns the data directory.
    """
    server = None
    url = settings.redis_url
    if not url:
        try:
            server = embedded_valkey(settings).start()
        except BackendUnavailableError as exc:
            raise BackendUnavailableError(
                f"{exc}. If `memstrata serve` is running on this data directory, manage keys "
                "through it: memstrata keys ... --url http://HOST:PORT with an admin key in "
                "MEMSTRATA_API_KEY"
            ) from None
        url = server.url
    backend = redis_backend(url)
    try:
        yield KeyStore(backend.client, clock)
    finally:
        backend.close()
        if server is not None:
            server.stop()


def write_admin_key(keys: KeyStore, data_dir: Path) -> Path:
    """Create an admin key for tenant ``default`` and write it to ``admin.key`` (0600)."""
    created = keys.create("default", "admin", "admin")
    path = data_dir / ADMIN_KEY_FILE
    data_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(created.key + "\n")
    return path


@dataclass
class RunningService:
    """A service, its engine and what closes them."""

    service: Service
    engine: ContextEngine
    keys: KeyStore
    admin_key_file: Path | None
    _closers: list[Callable[[], None]]

    def close(self) -> None:
        for close in self._closers:
            with contextlib.suppress(Exception):
                close()
        self._closers.clear()


def open_service(
    settings: Settings, *, clock: Clock | None = None, engine: ContextEngine | None = None
) -> RunningService:
    """Open the engine of ``settings`` (unless given) and the key store beside it.

    When no key exists yet, an admin key for tenant ``default`` is created and
    written to ``<data dir>/admin.key`` (mode 0600), so the first caller can make the
    others with ``memstrata keys create``.
    """
    clock = clock or SystemClock()
    owned = engine is None
    engine = engine or ContextEngine.open(settings, clock=clock)
    # The keys live in the engine's Valkey, reached through its own connection pool.
    keys = KeyStore(engine.parts.working_backend.client, clock)
    admin_file = None if keys.any_key() else write_admin_key(keys, Path(settings.data_dir))
    closers: list[Callable[[], None]] = []
    if owned:
        closers.append(engine.close)
    return RunningService(Service(engine, keys, clock), engine, keys, admin_file, closers)


def serve(
    settings: Settings, options: ServeOptions, *, ready: threading.Event | None = None
) -> None:
    """Run REST + MCP (uvicorn) and gRPC until interrupted."""
    import uvicorn

    from memstrata.service.grpc_server import create_server
    from memstrata.service.rest import create_app

    running = open_service(settings)
    try:
        if running.admin_key_file is not None:
            log.warning(
                "no API key existed: an admin key was written to %s", running.admin_key_file
            )
        grpc_server, grpc_port = create_server(
            running.service, f"{options.host}:{options.grpc_port}", threads=options.grpc_threads
        )
        grpc_server.start()
        app = create_app(running.service, host=options.host)
        config = uvicorn.Config(
            app, host=options.host, port=options.port, log_level="warning", access_log=False
        )
        server = uvicorn.Server(config)
        log.warning(
            "memstrata serving REST and MCP on http://%s:%d (MCP at /mcp), gRPC on %s:%d",
            options.host,
            options.port,
            options.host,
            grpc_port,
        )
        if ready is not None:
            ready.set()
        try:
            server.run()
        finally:
            grpc_server.stop(grace=2).wait()
    finally:
        running.close()
