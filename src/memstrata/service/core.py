"""The service core every transport shares: authenticate, check the role, run, report.

A transport turns its request into (operation name, presented key, payload), calls
:meth:`Service.call`, and renders either the response model or :func:`error_body`
with the status :func:`memstrata.errors.error_code` gives. Nothing else differs
between REST, gRPC and MCP.

A write the service cannot keep is answered with an error, never a 200: while the
disk is short of space every writing operation is refused before it runs
(:class:`~memstrata.errors.ReadOnlyError`, 503), and a receipt that says
``queued=False`` (``observe``, ``remember``, ``feedback``) becomes
:class:`~memstrata.errors.WriteNotQueuedError` (503; nothing of it was kept, the
queue takes a write whole or not at all).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from memstrata.clock import Clock
from memstrata.engine import ContextEngine
from memstrata.errors import (
    AuthenticationError,
    MemstrataError,
    NotFoundError,
    ValidationError,
    error_code,
)
from memstrata.metrics import ServiceMetrics
from memstrata.service.auth import Caller, KeyStore
from memstrata.service.health import Health, ServiceHealth
from memstrata.service.operations import BY_NAME, Call, Operation
from memstrata.service.screen import IdentifierScreen

log = logging.getLogger("memstrata.service")


def error_body(exc: BaseException) -> dict[str, Any]:
    """The JSON error every transport returns: the table's code, the field, the reason.

    An error that is not memstrata's own is reported as ``internal`` without its
    message (it may quote stored content); the log has the traceback.
    """
    if not isinstance(exc, MemstrataError):
        return {"code": "internal", "type": "InternalError", "message": "internal error"}
    body: dict[str, Any] = {
        "code": error_code(exc).grpc.lower(),
        "type": type(exc).__name__,
        "message": str(exc),
    }
    for attribute in ("field", "reason", "retry_after_s"):
        value = getattr(exc, attribute, None)
        if value is not None:
            body[attribute] = value
    return body


class Service:
    """The engine behind an authenticated surface.

    ``keys`` is None only for a local, single-user transport (MCP over stdio), which
    then acts as ``local_caller``. Every call is counted in ``metrics`` (by default the
    service metrics in the engine's registry, shared by every service over it).
    ``health`` checks the backends for ``/healthz`` and gates writes while the disk is
    short (by default one over the engine).
    """

    def __init__(
        self,
        engine: ContextEngine,
        keys: KeyStore | None,
        clock: Clock,
        *,
        local_caller: Caller | None = None,
        metrics: ServiceMetrics | None = None,
        health: ServiceHealth | None = None,
    ) -> None:
        if keys is None and local_caller is None:
            raise ValidationError("keys", "a service needs a key store or a local caller")
        self._engine = engine
        self._keys = keys
        self._clock = clock
        self._local = local_caller
        self._metrics = (
            metrics if metrics is not None else ServiceMetrics.of(engine.metrics_registry())
        )
        self._health = health if health is not None else ServiceHealth(engine, keys)
        self._screen = IdentifierScreen(engine.parts.sanitizer)

    def health(self) -> Health:
        """Every backend's state now (what ``/healthz`` answers)."""
        return self._health.check()

    @property
    def keys(self) -> KeyStore | None:
        return self._keys

    def metrics_text(self) -> bytes:
        """The engine's and the service's metrics, Prometheus text exposition."""
        return self._engine.metrics_text()

    def operation(self, name: str) -> Operation[Any, Any]:
        try:
            return BY_NAME[name]
        except KeyError:
            raise NotFoundError(f"no operation {name!r}") from None

    def authenticate(self, presented: str | None, operation: str) -> Caller:
        if self._keys is None:
            assert self._local is not None
            return self._local
        if presented is None:
            raise AuthenticationError("an API key is required (Authorization: Bearer <key>)")
        return self._keys.verify(presented, operation)

    def admit(self, name: str, presented_key: str | None, transport: str) -> Caller:
        """Authenticate a call of operation ``name`` before its body is even parsed
        (the transport then passes the caller to :meth:`call`). A refusal is counted
        in the service metrics like any failed call."""
        started = time.perf_counter()
        try:
            return self.authenticate(presented_key, name)
        except MemstrataError as exc:
            self._metrics.observe(
                name if name in BY_NAME else "unknown",
                transport,
                error_code(exc).grpc.lower(),
                time.perf_counter() - started,
            )
            raise

    def call(
        self,
        name: str,
        presented_key: str | None,
        payload: BaseModel | Mapping[str, Any],
        transport: str = "inprocess",
        *,
        caller: Caller | None = None,
    ) -> BaseModel:
        """Run one operation for the holder of ``presented_key`` (or for ``caller``,
        whom the transport authenticated with :meth:`admit` before parsing the body).

        ``transport`` (``rest``, ``grpc``, ``mcp``, ``inprocess``) labels the call in
        the service metrics, with the outcome: ``ok`` or the error table's code.
        """
        started = time.perf_counter()
        code = "ok"
        try:
            op = self.operation(name)
            if caller is None:
                caller = self.authenticate(presented_key, name)
            self._health.refuse_write(name, op.role)
            result: BaseModel = op.invoke(
                Call(self._engine, caller, self._clock, self._keys, self._screen), payload
            )
            if getattr(result, "queued", None) is False:
                ids = getattr(result, "episode_ids", None)
                raise self._health.not_queued(getattr(result, "error", None), len(ids or ()))
        except BaseException as exc:
            code = error_code(exc).grpc.lower() if isinstance(exc, MemstrataError) else "internal"
            raise
        finally:
            self._metrics.observe(
                name if name in BY_NAME else "unknown",
                transport,
                code,
                time.perf_counter() - started,
            )
        return result


def bearer_key(headers: Mapping[str, str]) -> str | None:
    """The API key in ``Authorization: Bearer <key>`` or ``X-API-Key``."""
    auth = headers.get("authorization")
    if auth:
        scheme, _, value = auth.partition(" ")
        return value.strip() if scheme.lower() == "bearer" and value.strip() else auth.strip()
    return headers.get("x-api-key")
