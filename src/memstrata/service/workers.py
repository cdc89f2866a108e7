"""``memstrata serve --workers N``: N engine processes behind one front, sharded by tenant.

A session's L1 state lives in the process that opened it, and with the embedded
defaults each process owns its own L3 shards (qdrant-edge runs in process). So a
tenant's sessions and its long-term memory must meet in one process: the front routes
every request by the tenant of its API key, and a session therefore always reaches
the worker that holds it. The workers share one Valkey (the front's embedded server,
or ``MEMSTRATA_REDIS_URL``): API keys, namespaces and working memory are common; each
worker has its own write queue and its own L3 under ``<data dir>/workers/<k>``.

The number of workers is fixed when the data directory is laid out
(``workers.json``): a tenant's L3 lives in its worker's directory, so starting with
another N is refused rather than losing sight of data.

The front is thin: it reads the key's tenant (one Valkey read, cached; the worker
still verifies the key, audits it and applies its rate limit) and forwards REST, MCP
and gRPC bytes as they are. A tenant's load is served by one worker: workers scale
out across tenants, not within one. With a Qdrant server for L3, run replicas behind
a session-affine load balancer instead (docs/service.md).

The front supervises its embedded Valkey (started again from its append-only file
when its process dies); its ``/healthz`` is the worst of its Valkey's state and every
worker's own ``/healthz``; SIGTERM and SIGINT stop the front, the workers and the
Valkey the same clean way.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import multiprocessing
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from http.cookies import CookieError, SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import anyio
import grpc
import httpx
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.types import Message, Receive, Scope, Send

from memstrata.config import Settings
from memstrata.errors import BackendUnavailableError, ConfigError, ValidationError
from memstrata.filemodes import open_private, private_dir
from memstrata.service.auth import KeyStore
from memstrata.service.core import bearer_key
from memstrata.service.merged_metrics import merged_exposition
from memstrata.service.proxy import PROXY_PATH
from memstrata.service.server import ServeOptions, stop_signals, write_admin_key
from memstrata.service.startup import Port, bind, check_data_dir, check_free
from memstrata.service.ui.session import SESSION_COOKIE, session_tenant
from memstrata.wiring import embedded_valkey, redis_backend
from memstrata.working.embedded import EmbeddedValkey

log = logging.getLogger("memstrata.service")
LAYOUT_FILE = "workers.json"
MAX_WORKERS = 64
WORKER_HEADER = "x-memstrata-worker"
_KEY_CACHE = 10_000
_SCRAPE_TIMEOUT_S = 10.0
_HEALTH_TIMEOUT_S = 3.0
UI_PREFIX = "/ui"
"""The memory browser's pages (memstrata.service.ui.routes.PREFIX, not imported: that
module loads the templates and the engine's service)."""
_HOP_HEADERS = frozenset(
    {b"connection", b"keep-alive", b"transfer-encoding", b"upgrade", b"host", b"content-length"}
)


def worker_of(tenant: str | None, workers: int) -> int:
    """The worker that serves ``tenant`` (stable across restarts); 0 when unknown."""
    if tenant is None:
        return 0
    digest = hashlib.sha256(tenant.encode()).digest()
    return int.from_bytes(digest[:8], "big") % workers


def check_layout(data_dir: Path, workers: int) -> None:
    """Record N on first use; refuse another N later (the tenants' L3 would move)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise ValidationError("workers", f"must be an integer in [1, {MAX_WORKERS}]")
    path = data_dir / LAYOUT_FILE
    if path.exists():
        laid_out = int(json.loads(path.read_text())["workers"])
        if laid_out != workers:
            raise ConfigError(
                f"workers: {data_dir} is laid out for {laid_out} workers (each tenant's "
                f"long-term memory lives in its worker's directory); start with "
                f"--workers {laid_out}"
            )
        return
    private_dir(data_dir)  # 0700, the layout file 0600 (memstrata.filemodes)
    with open_private(path, "a") as out:
        out.write(json.dumps({"workers": workers}))


def worker_settings(settings: Settings, index: int, redis_url: str) -> Settings:
    """Worker ``index``'s settings: its own L3 directory and write queue, shared Valkey."""
    return replace(
        settings,
        data_dir=Path(settings.data_dir) / "workers" / str(index),
        redis_url=redis_url,
        pipeline=replace(settings.pipeline, queue_name=f"{settings.pipeline.queue_name}-w{index}"),
    )


@dataclass(frozen=True, slots=True)
class Worker:
    index: int
    port: int
    grpc_port: int


class TenantRouter:
    """Which worker a presented key's tenant lives on (a key's tenant never changes,
    so it is cached; an unknown key goes to worker 0, which answers 401)."""

    def __init__(self, keys: KeyStore, workers: Sequence[Worker]) -> None:
        self._keys = keys
        self._workers = tuple(workers)
        self._tenants: OrderedDict[str, str | None] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def workers(self) -> tuple[Worker, ...]:
        return self._workers

    def _tenant(self, presented: str | None) -> str | None:
        key_id = KeyStore.key_id_of(presented)
        if key_id is None:
            return None
        with self._lock:
            if key_id in self._tenants:
                self._tenants.move_to_end(key_id)
                return self._tenants[key_id]
        tenant = self._keys.tenant_of(key_id)
        if tenant is not None:
            with self._lock:
                self._tenants[key_id] = tenant
                while len(self._tenants) > _KEY_CACHE:
                    self._tenants.popitem(last=False)
        return tenant

    def worker_for(self, presented: str | None) -> Worker:
        return self._workers[worker_of(self._tenant(presented), len(self._workers))]

    def worker_for_request(
        self, path: str, method: str, headers: Mapping[str, str], body: bytes
    ) -> Worker:
        """The worker of a request: by its key (the proxy's is ``X-API-Key``), or for the
        memory browser (``/ui``) by the key its sign-in form carries, then by its session
        cookie's tenant."""
        if path == PROXY_PATH:  # Authorization is the caller's upstream key there
            return self.worker_for(headers.get("x-api-key"))
        if path != UI_PREFIX and not path.startswith(UI_PREFIX + "/"):
            return self.worker_for(bearer_key(headers))
        if method == "POST" and path == f"{UI_PREFIX}/sign-in":
            form = parse_qs(body.decode("utf-8", errors="replace"))
            keys = form.get("key")
            return self.worker_for(keys[0] if keys else None)
        cookies = SimpleCookie()
        with contextlib.suppress(CookieError):
            cookies.load(headers.get("cookie", ""))
        morsel = cookies.get(SESSION_COOKIE)
        tenant = session_tenant(self._keys.client, None if morsel is None else morsel.value)
        return self._workers[worker_of(tenant, len(self._workers))]


class RestProxy:
    """ASGI: forwards each HTTP request (REST and MCP alike) to its tenant's worker;
    ``/metrics`` answers with every worker's metrics, labelled by worker."""

    def __init__(self, router: TenantRouter, valkey: EmbeddedValkey | None = None) -> None:
        self._router = router
        self._valkey = valkey
        self._client: httpx.AsyncClient | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if scope["path"] == "/readyz":  # the front listens only once every worker is ready
            ready = b'{"status": "ready"}'
            await _send_bytes(send, 200, ready, [(b"content-type", b"application/json")])
            return
        if scope["path"] == "/healthz":
            asked = scope.get("query_string", b"")
            status, health = await self._health(b"reads=1" in asked or b"reads=true" in asked)
            await _send_bytes(send, status, health, [(b"content-type", b"application/json")])
            return
        if scope["path"] == "/metrics" and scope["method"] == "GET":
            await _send_bytes(
                send, 200, await self._metrics(), [(b"content-type", CONTENT_TYPE_LATEST.encode())]
            )
            return
        body = bytearray()
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        worker = await anyio.to_thread.run_sync(
            self._router.worker_for_request, scope["path"], scope["method"], headers, bytes(body)
        )
        assert self._client is not None
        url = f"http://127.0.0.1:{worker.port}{scope['raw_path'].decode('latin-1')}"
        query = scope.get("query_string", b"")
        if query:
            url += "?" + query.decode("latin-1")
        forwarded = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP_HEADERS]
        request = self._client.build_request(
            scope["method"], url, headers=forwarded, content=bytes(body)
        )
        response = await self._client.send(request, stream=True)
        try:
            out_headers = [
                (k.encode("latin-1"), v.encode("latin-1"))
                for k, v in response.headers.multi_items()
                if k.lower().encode("latin-1") not in _HOP_HEADERS
            ]
            out_headers.append((WORKER_HEADER.encode(), str(worker.index).encode()))
            await send({"type": "http.response.start", "status": response.status_code,
                        "headers": out_headers})  # fmt: skip
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()

    async def _health(self, reads: bool) -> tuple[int, bytes]:
        """The worst of the front's Valkey and every worker's own ``/healthz``."""
        assert self._client is not None
        client = self._client
        severity = {"ok": 0, "read_only": 1, "degraded": 2, "down": 3}

        async def ask(worker: Worker) -> dict[str, Any]:
            try:
                reply = await client.get(
                    f"http://127.0.0.1:{worker.port}/healthz", timeout=_HEALTH_TIMEOUT_S
                )
                found: dict[str, Any] = reply.json()
            except (httpx.HTTPError, ValueError):
                return {"status": "down", "detail": "no answer"}
            return found

        workers = self._router.workers
        answers = await asyncio.gather(*(ask(w) for w in workers))
        checks: dict[str, Any] = {
            f"worker {w.index}": a for w, a in zip(workers, answers, strict=True)
        }
        if self._valkey is not None:
            state = self._valkey.state
            checks["valkey"] = {
                "status": "down" if state != "running" else "ok",
                "detail": state,
                "restarts": self._valkey.restarts,
            }
        statuses = [str(c.get("status", "down")) for c in checks.values()]
        worst = max(statuses, key=lambda s: severity.get(s, 3))
        ok = worst == "ok" or (reads and worst != "down")
        body = json.dumps({"status": worst, "checks": checks}).encode()
        return (200 if ok else 503), body

    async def _metrics(self) -> bytes:
        """Every worker's ``/metrics``, scraped at once and merged by worker."""
        assert self._client is not None
        client = self._client

        async def scrape(worker: Worker) -> str | None:
            try:
                reply = await client.get(
                    f"http://127.0.0.1:{worker.port}/metrics", timeout=_SCRAPE_TIMEOUT_S
                )
            except httpx.HTTPError:
                return None
            return reply.text if reply.status_code == 200 else None

        workers = self._router.workers
        texts = await asyncio.gather(*(scrape(w) for w in workers))
        return merged_exposition({w.index: t for w, t in zip(workers, texts, strict=True)})

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message: Message = await receive()
            if message["type"] == "lifespan.startup":
                self._client = httpx.AsyncClient(timeout=None)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._client is not None:
                    await self._client.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _send_bytes(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class GrpcProxy(grpc.GenericRpcHandler):  # type: ignore[misc]  # grpc has no stubs
    """Forwards every gRPC method, as bytes, to the tenant's worker (reflection to 0)."""

    def __init__(self, router: TenantRouter) -> None:
        self._router = router
        self._channels = {
            w.index: grpc.insecure_channel(f"127.0.0.1:{w.grpc_port}") for w in router.workers
        }

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method: str = details.method
        metadata = {k.lower(): v for k, v in details.invocation_metadata if isinstance(v, str)}
        if method.startswith("/grpc.reflection."):
            channel = self._channels[0]
            forward_stream = channel.stream_stream(method)

            def stream(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
                yield from forward_stream(requests, metadata=context.invocation_metadata())

            return grpc.stream_stream_rpc_method_handler(stream)
        worker = self._router.worker_for(bearer_key(metadata))
        forward = self._channels[worker.index].unary_unary(method)

        def unary(request: bytes, context: grpc.ServicerContext) -> bytes:
            try:
                reply: bytes = forward(request, metadata=context.invocation_metadata())
                return reply
            except grpc.RpcError as exc:
                context.abort(exc.code(), exc.details())
                raise

        return grpc.unary_unary_rpc_method_handler(unary)

    def close(self) -> None:
        for channel in self._channels.values():
            channel.close()


def _run_worker(settings: Settings, options: ServeOptions) -> None:  # pragma: no cover - child
    from memstrata.service.server import serve

    logging.basicConfig(level=logging.WARNING)
    serve(settings, options)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_healthy(worker: Worker, process: Any, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not process.is_alive():
            raise BackendUnavailableError(f"worker {worker.index} exited while starting")
        with contextlib.suppress(httpx.HTTPError):
            # Ready is enough: a worker that started read-only (a short disk) is ready
            # though its /healthz answers 503.
            if httpx.get(f"http://127.0.0.1:{worker.port}/readyz", timeout=1).status_code == 200:
                return
        time.sleep(0.2)
    raise BackendUnavailableError(f"worker {worker.index} did not start in {timeout_s:.0f} s")


def serve_workers(settings: Settings, options: ServeOptions, workers: int) -> None:
    """Run the front (REST + MCP proxy, gRPC proxy) and ``workers`` engine processes
    until SIGTERM or SIGINT (both stop everything cleanly)."""
    with stop_signals():
        _serve_workers(settings, options, workers)


def _serve_workers(settings: Settings, options: ServeOptions, workers: int) -> None:
    import uvicorn

    base = Path(settings.data_dir)
    check_data_dir(base)
    check_layout(base, workers)
    # Both ports before anything starts: the front listens on them once workers are ready.
    rest_socket = bind(Port("REST", "--port", options.host, options.port))
    closers: list[Any] = [rest_socket.close]
    valkey: EmbeddedValkey | None = None
    try:
        check_free(Port("gRPC", "--grpc-port", options.host, options.grpc_port))
        url = settings.redis_url
        if not url:
            valkey = embedded_valkey(settings).start()
            closers.append(valkey.stop)
            valkey.supervise()
            url = valkey.url
        backend = redis_backend(url)
        closers.insert(0, backend.close)
        keys = KeyStore(backend.client)
        if not keys.any_key():
            path = write_admin_key(keys, base)
            log.warning("no API key existed: an admin key was written to %s", path)
        context = multiprocessing.get_context("spawn")
        started: list[tuple[Worker, Any]] = []
        for index in range(workers):
            worker = Worker(index, _free_port(), _free_port())
            child = replace(options, host="127.0.0.1", port=worker.port, grpc_port=worker.grpc_port)
            process = context.Process(
                target=_run_worker,
                args=(worker_settings(settings, index, url), child),
                name=f"memstrata-worker-{index}",
            )
            process.start()
            started.append((worker, process))
            closers.insert(0, _stopper(process))
        for worker, process in started:
            _wait_healthy(worker, process)
        router = TenantRouter(keys, [w for w, _ in started])
        grpc_proxy = GrpcProxy(router)
        grpc_server = grpc.server(
            ThreadPoolExecutor(max_workers=options.grpc_threads),
            options=[("grpc.so_reuseport", 0)],  # a port another server holds is refused
        )
        grpc_server.add_generic_rpc_handlers((grpc_proxy,))
        grpc_server.add_insecure_port(f"{options.host}:{options.grpc_port}")
        grpc_server.start()
        closers.insert(0, grpc_proxy.close)
        closers.insert(0, lambda: grpc_server.stop(grace=2).wait())
        log.warning(
            "memstrata serving on http://%s:%d (MCP at /mcp) and gRPC %s:%d with %d workers",
            options.host, options.port, options.host, options.grpc_port, workers,
        )  # fmt: skip
        config = uvicorn.Config(
            RestProxy(router, valkey), host=options.host, port=options.port,
            log_level="warning", access_log=False,
        )  # fmt: skip
        uvicorn.Server(config).run(sockets=[rest_socket])
    finally:
        for close in closers:
            with contextlib.suppress(Exception):
                close()


def _stopper(process: Any) -> Any:
    def stop() -> None:
        if process.is_alive():
            process.terminate()  # SIGTERM: uvicorn exits and the worker closes its engine
            process.join(timeout=30)
        if process.is_alive():
            process.kill()

    return stop
