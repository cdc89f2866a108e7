"""What ``memstrata serve`` answers while its engine loads (docs/service.md, "Readiness").

The ports are bound first and answer at once; the engine (Valkey, the long-term store,
the models) loads in a thread beside them. Until it is ready:

* ``GET /healthz`` answers 200 ``{"status": "starting"}``: the process is alive (a
  liveness probe must not kill it for loading its models);
* ``GET /readyz`` answers 503 ``{"status": "starting"}`` with ``Retry-After``; 200
  ``{"status": "ready"}`` once every operation is served (and ``admin.key`` written);
* every operation over REST answers 503 ``unavailable`` (``BackendUnavailableError``)
  with ``Retry-After: 1``; MCP over HTTP the same as a JSON-RPC error; gRPC
  ``UNAVAILABLE`` with the same JSON body as details.

This module imports no engine module: it runs before they are imported.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal

import anyio
import grpc
from starlette.types import ASGIApp, Receive, Scope, Send

SERVICE_PREFIX = "/memstrata.v1."
"""The gRPC methods gated (proto.SERVICE_FULL_NAME's package; proto is not imported:
it imports the capability table, and through it the engine)."""
State = Literal["starting", "ready", "failed"]
RETRY_AFTER_S = 1
STARTING_MESSAGE = (
    "the service is starting: its models and backends are loading; retry after "
    f"{RETRY_AFTER_S} s (GET /readyz answers 200 once it serves)"
)


def starting_body() -> dict[str, Any]:
    """The error body of a call made before the service is ready (the error table's
    shape: a 503 ``BackendUnavailableError``, which clients raise as such)."""
    return {
        "code": "unavailable",
        "type": "BackendUnavailableError",
        "message": STARTING_MESSAGE,
        "retry_after_s": float(RETRY_AFTER_S),
    }


class Gate:
    """Where the start-up stands: ``starting`` until :meth:`open` (``ready``) or
    :meth:`fail`; the real app once ready."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: State = "starting"
        self._app: ASGIApp | None = None
        self._pending: ASGIApp | None = None
        self._failure: str | None = None
        self._on_ready: list[Callable[[], None]] = []

    @property
    def state(self) -> State:
        return self._state

    @property
    def app(self) -> ASGIApp | None:
        return self._app

    def offer(self, app: ASGIApp) -> None:
        """The loader built the real app: the event loop enters its lifespan, then opens."""
        with self._lock:
            self._pending = app

    def take_offer(self) -> ASGIApp | None:
        with self._lock:
            return self._pending

    def on_ready(self, callback: Callable[[], None]) -> None:
        self._on_ready.append(callback)

    def open(self) -> None:
        with self._lock:
            self._app = self._pending
            self._state = "ready"
            callbacks = list(self._on_ready)
        for callback in callbacks:
            callback()

    def fail(self, why: str) -> None:
        with self._lock:
            self._failure = why
            self._state = "failed"

    @property
    def failure(self) -> str | None:
        return self._failure


async def _send_json(
    send: Send, status: int, body: Any, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *(headers or [])],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


class GatedApp:
    """ASGI: answers health, readiness and a typed 503 while starting; the real app
    (entered in its lifespan on this event loop) once ready."""

    def __init__(self, gate: Gate) -> None:
        self._gate = gate

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        path = str(scope.get("path", ""))
        if scope["type"] == "http" and path == "/readyz":
            await self._readyz(send)
            return
        app = self._gate.app
        if app is not None:
            await app(scope, receive, send)
            return
        if scope["type"] != "http":
            return
        state = self._gate.state
        if path == "/healthz":
            if state == "failed":
                body: dict[str, Any] = {
                    "status": "down",
                    "detail": self._gate.failure,
                    "checks": {},
                }
                await _send_json(send, 503, body)
                return
            detail = "models and backends are loading; GET /readyz answers 200 once ready"
            await _send_json(send, 200, {"status": "starting", "detail": detail, "checks": {}})
            return
        retry = [(b"retry-after", str(RETRY_AFTER_S).encode())]
        error = starting_body()
        if path == "/mcp" or path.startswith("/mcp/"):
            rpc = {"code": -32001, "message": STARTING_MESSAGE, "data": error}
            await _send_json(send, 503, {"jsonrpc": "2.0", "id": None, "error": rpc}, retry)
            return
        await _send_json(send, 503, {"error": error}, retry)

    async def _readyz(self, send: Send) -> None:
        state = self._gate.state
        if state == "ready":
            await _send_json(send, 200, {"status": "ready"})
            return
        body: dict[str, Any] = {"status": state}
        if state == "failed":
            body["detail"] = self._gate.failure
        await _send_json(send, 503, body, [(b"retry-after", str(RETRY_AFTER_S).encode())])

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        await receive()  # lifespan.startup: answered at once, the engine loads beside
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._enter_when_offered)
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
            tasks.cancel_scope.cancel()
        await send({"type": "lifespan.shutdown.complete"})

    async def _enter_when_offered(self) -> None:
        """Wait for the loader's app, run its lifespan (MCP's session manager) on this
        loop, open the gate, and hold the lifespan until shutdown."""
        while (app := self._gate.take_offer()) is None:
            if self._gate.state == "failed":
                return
            await anyio.sleep(0.05)
        lifespan: Callable[[Any], AbstractAsyncContextManager[Any]] | None = getattr(
            getattr(app, "router", None), "lifespan_context", None
        )
        if lifespan is None:
            self._gate.open()
            await anyio.sleep_forever()
            return
        async with lifespan(app):
            self._gate.open()
            await anyio.sleep_forever()


class GrpcGate(grpc.GenericRpcHandler):  # type: ignore[misc]  # grpc has no stubs
    """Answers every memstrata method ``UNAVAILABLE`` (the typed body as details) until
    the gate opens; then nothing, and the service's handlers (added later) answer."""

    def __init__(self, gate: Gate) -> None:
        self._gate = gate

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        method: str = details.method
        if self._gate.state == "ready" or not method.startswith(SERVICE_PREFIX):
            return None
        body = json.dumps(starting_body())

        def refuse(request: bytes, context: grpc.ServicerContext) -> bytes:
            context.set_trailing_metadata((("retry-after", str(RETRY_AFTER_S)),))
            context.abort(grpc.StatusCode.UNAVAILABLE, body)
            raise AssertionError("unreachable: context.abort raises")

        return grpc.unary_unary_rpc_method_handler(refuse)
