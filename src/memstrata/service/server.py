"""``memstrata serve``: REST (with MCP at ``/mcp``) and gRPC over one engine.

One process owns the embedded store (the Valkey server and the qdrant-edge shards
under the data directory) and every session it opens: L1 is never persisted, so a
session lives where it started. Replicas behind a load balancer share a Redis (or
Redis Cluster) and a Qdrant server named in the settings; see docs/service.md.

Faults (docs/service.md, "Health and supervision"): a data directory whose disk
cannot hold the embedded store is refused before anything starts; the embedded
Valkey is restarted when its process dies; SIGTERM and SIGINT both stop the servers
gracefully, close the engine and stop the Valkey it started.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memstrata.clock import Clock, SystemClock
from memstrata.config import Settings
from memstrata.disk import DiskPolicy
from memstrata.errors import BackendUnavailableError, ConfigError
from memstrata.service.startup import Port, as_failure, bind, check_data_dir

if TYPE_CHECKING:  # the engine's modules load in the start-up thread, not before binding
    import grpc

    from memstrata.engine import ContextEngine
    from memstrata.service.auth import KeyStore
    from memstrata.service.core import Service
    from memstrata.service.health import ServiceHealth
    from memstrata.service.starting import Gate

log = logging.getLogger("memstrata.service")
ADMIN_KEY_FILE = "admin.key"
DISK_RESERVE_VARIABLE = "MEMSTRATA_DISK_RESERVE_MB"
"""Free MiB below which the service turns read-only (the floor is half of it)."""


def disk_policy_from_env(env: Mapping[str, str] | None = None) -> DiskPolicy | None:
    """The disk thresholds ``MEMSTRATA_DISK_RESERVE_MB`` asks for (None: the defaults)."""
    value = (os.environ if env is None else env).get(DISK_RESERVE_VARIABLE)
    if not value:
        return None
    try:
        return DiskPolicy.with_reserve_mib(int(value))
    except ValueError:
        raise ConfigError(f"{DISK_RESERVE_VARIABLE}: must be a whole number of MiB") from None


class Stopped(Exception):
    """Raised in the main thread by SIGTERM or SIGINT: every ``finally`` then runs."""


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """SIGTERM and SIGINT stop the same clean way: uvicorn shuts down gracefully on
    either, then re-raises it, which lands here as :class:`Stopped` instead of the
    default action (SIGTERM's would end the process before the engine is closed and
    leave its Valkey running). A second signal during the shutdown is ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    stopping = False

    def stop(signum: int, frame: object) -> None:
        nonlocal stopping
        if not stopping:
            stopping = True
            raise Stopped(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    except Stopped as exc:
        log.warning("memstrata stopped (%s)", exc)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@dataclass(frozen=True, slots=True)
class ServeOptions:
    host: str = "127.0.0.1"
    port: int = 8080
    grpc_port: int = 50051
    grpc_threads: int = 16


@contextlib.contextmanager
def key_store(settings: Settings, clock: Clock | None = None) -> Iterator[KeyStore]:
    """The key store of ``settings`` without an engine (``memstrata keys``).

    With the embedded store this starts its Valkey, or, while ``memstrata serve``
    owns the data directory, reaches the service's own Valkey over its unix socket
    (the directory is private to the operator): a key made here works at once, since
    the service reads every key from Valkey on each call. That is how an operator
    locked out of a running service gets back in (docs/service.md, "Lock-out recovery").
    """
    from memstrata.service.auth import KeyStore
    from memstrata.wiring import embedded_valkey, redis_backend

    server = None
    url = settings.redis_url
    if not url:
        embedded = embedded_valkey(settings)
        try:
            server = embedded.start()
            url = server.url
        except BackendUnavailableError as exc:
            if not embedded.answers():
                raise BackendUnavailableError(
                    f"{exc}. If `memstrata serve` is running on this data directory, manage "
                    "keys through it: memstrata keys ... --url http://HOST:PORT with an admin "
                    "key in MEMSTRATA_API_KEY"
                ) from None
            url = embedded.url  # the running service's server: used, never stopped here
    backend = redis_backend(url)
    try:
        yield KeyStore(backend.client, clock)
    finally:
        backend.close()
        if server is not None:
            server.stop()


def write_admin_key(keys: KeyStore, data_dir: Path) -> Path:
    """Create an admin key for tenant ``default`` and write it to ``admin.key`` (0600):
    no expiry and the highest rate, since every key minted through the service has at
    most its creator's."""
    from memstrata.service.auth import MAX_RATE_PER_S

    created = keys.create("default", "admin", "admin", rate_per_s=MAX_RATE_PER_S)
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
    health: ServiceHealth | None = None

    def close(self) -> None:
        for close in self._closers:
            with contextlib.suppress(Exception):
                close()
        self._closers.clear()


def open_service(
    settings: Settings,
    *,
    clock: Clock | None = None,
    engine: ContextEngine | None = None,
    disk: DiskPolicy | None = None,
) -> RunningService:
    """Open the engine of ``settings`` (unless given; ``disk``: its free-space
    thresholds) and the key store beside it.

    When no key exists yet, an admin key for tenant ``default`` is created and
    written to ``<data dir>/admin.key`` (mode 0600), so the first caller can make the
    others with ``memstrata keys create``.
    """
    from memstrata.engine import ContextEngine
    from memstrata.service.auth import KeyStore
    from memstrata.service.core import Service
    from memstrata.service.health import ServiceHealth
    from memstrata.wiring import build_stack

    clock = clock or SystemClock()
    owned = engine is None
    engine = engine or ContextEngine(build_stack(settings, clock=clock, disk=disk))
    closers: list[Callable[[], None]] = []
    if owned:
        closers.append(engine.close)
    try:
        # The keys live in the engine's Valkey, reached through its own connection pool.
        keys = KeyStore(engine.parts.working_backend.client, clock)
        admin_file = None if keys.any_key() else write_admin_key(keys, Path(settings.data_dir))
    except BaseException:
        for close in closers:
            close()
        raise
    health = ServiceHealth(engine, keys)
    closers.insert(0, health.close)
    service = Service(engine, keys, clock, health=health)
    return RunningService(service, engine, keys, admin_file, closers, health)


def serve(
    settings: Settings, options: ServeOptions, *, ready: threading.Event | None = None
) -> None:
    """Run REST + MCP (uvicorn) and gRPC until SIGTERM or SIGINT (both stop cleanly).

    The data directory is checked and both ports are bound first, and answer at once
    (``/healthz`` says ``starting``; docs/service.md, "Readiness"); the engine loads
    in a thread beside them, and ``ready`` is set (and "serving" logged) only once
    every operation is served. A failure to start raises
    :class:`~memstrata.service.startup.StartupFailure` (or the error behind it).
    """
    with stop_signals():
        _serve(settings, options, ready)


GRPC_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""grpc_server.MAX_MESSAGE_BYTES (not imported: that module imports the engine)."""


def _bind_grpc(options: ServeOptions, gate: Gate) -> tuple[grpc.Server, int]:
    """The gRPC server, bound and started, answering UNAVAILABLE until ``gate`` opens."""
    from concurrent.futures import ThreadPoolExecutor

    import grpc

    from memstrata.service.starting import GrpcGate
    from memstrata.service.startup import check_free, grpc_bind_failed

    port = Port("gRPC", "--grpc-port", options.host, options.grpc_port)
    check_free(port)  # a clear line, not grpc's own log, for the usual case
    server = grpc.server(
        ThreadPoolExecutor(max_workers=options.grpc_threads, thread_name_prefix="memstrata-grpc"),
        options=[
            ("grpc.max_receive_message_length", GRPC_MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", GRPC_MAX_MESSAGE_BYTES),
            ("grpc.so_reuseport", 0),  # a port another server holds is refused, not shared
        ],
    )
    server.add_generic_rpc_handlers((GrpcGate(gate),))
    try:
        bound = server.add_insecure_port(f"{options.host}:{options.grpc_port}")
    except RuntimeError:
        raise grpc_bind_failed(port) from None
    if not bound:
        raise grpc_bind_failed(port)
    server.start()
    return server, int(bound)


class _Started:
    """A started gRPC server as :func:`~memstrata.service.grpc_server.add_service` sees
    it: generic handlers are added (looked up per call, so they serve at once); the
    registered-method fast path, which grpc accepts only before the start, is left out."""

    def __init__(self, server: grpc.Server) -> None:
        self._server = server

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        self._server.add_generic_rpc_handlers(handlers)

    def add_registered_method_handlers(self, service_name: str, handlers: Any) -> None:
        """Left out: the generic handler added beside serves these methods."""


@dataclass
class _Loader:
    """Opens the service in a thread while the ports already answer: the engine, the
    admin key, the models; then the gRPC handlers and the REST app (offered to the
    gate, which opens once the app's lifespan runs)."""

    settings: Settings
    options: ServeOptions
    disk: DiskPolicy | None
    gate: Gate
    grpc_server: grpc.Server
    on_failure: Callable[[], None]
    running: RunningService | None = None
    error: BaseException | None = None
    cancelled: bool = False
    _thread: threading.Thread | None = field(default=None, repr=False)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._load, name="memstrata-start", daemon=True)
        self._thread.start()

    def _load(self) -> None:
        try:
            from memstrata.loading import freeze_loaded

            self.running = open_service(self.settings, disk=self.disk)
            if self.cancelled:
                return
            # The models load before the gate opens, so the first read does not wait.
            self.running.engine.warm()
            freeze_loaded()  # start-up's objects are never garbage: no full GC walks them
            if self.running.admin_key_file is not None:
                log.warning(
                    "no API key existed: an admin key was written to %s",
                    self.running.admin_key_file,
                )
            from memstrata.service.grpc_server import add_service
            from memstrata.service.rest import create_app

            add_service(_Started(self.grpc_server), self.running.service)
            proxy = self.settings.proxy if self.settings.proxy.upstream else None
            self.gate.offer(create_app(self.running.service, host=self.options.host, proxy=proxy))
        except BaseException as exc:
            self.error = exc
            self.gate.fail(as_failure(exc).problem)
            self.on_failure()

    def stop(self) -> None:
        """Wait for a start in progress (a model half loaded cannot be interrupted),
        then close what it opened."""
        self.cancelled = True
        if self._thread is not None:
            self._thread.join()
        if self.running is not None:
            self.running.close()


def _serve(settings: Settings, options: ServeOptions, ready: threading.Event | None) -> None:
    import uvicorn

    from memstrata.service.starting import Gate, GatedApp

    check_data_dir(Path(settings.data_dir))
    disk = disk_policy_from_env()
    rest_socket = bind(Port("REST", "--port", options.host, options.port))
    try:
        gate = Gate()
        grpc_server, grpc_port = _bind_grpc(options, gate)
        rest_port = int(rest_socket.getsockname()[1])
        config = uvicorn.Config(
            GatedApp(gate),
            host=options.host,
            port=rest_port,
            log_level="warning",
            access_log=False,
            lifespan="on",
        )
        server = uvicorn.Server(config)

        def stop_server() -> None:
            server.should_exit = True

        def serving() -> None:
            log.warning(
                "memstrata serving REST and MCP on http://%s:%d (MCP at /mcp), gRPC on %s:%d",
                options.host, rest_port, options.host, grpc_port,
            )  # fmt: skip
            if ready is not None:
                ready.set()

        gate.on_ready(serving)
        loader = _Loader(settings, options, disk, gate, grpc_server, stop_server)
        log.info(
            "memstrata starting on http://%s:%d: /healthz answers now, /readyz once the "
            "models and backends are loaded",
            options.host,
            rest_port,
        )
        loader.start()
        try:
            server.run(sockets=[rest_socket])
        finally:
            grpc_server.stop(grace=2).wait()
            loader.stop()
        if loader.error is not None:
            raise loader.error
    finally:
        rest_socket.close()
