"""REST: one ``POST /v1/<operation>`` per entry of the capability table (FastAPI).

OpenAPI 3.1 is served at ``/openapi.json``; every error is the body of
:func:`memstrata.service.core.error_body` with the status of the error table.
A call is authenticated before its body is read or parsed (:class:`AuthenticateFirst`):
without a valid key the answer is 401, whatever the body; MCP over HTTP (``/mcp``)
needs a key the same way.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memstrata.config_proxy import ProxySettings
from memstrata.errors import MemstrataError, ValidationError, error_code, error_code_of
from memstrata.service.auth import Caller
from memstrata.service.core import Service, bearer_key, error_body
from memstrata.service.mcp import CALLER_SCOPE_KEY, MCP_AUDIT_OPERATION
from memstrata.service.mcp import http_app as mcp_http_app
from memstrata.service.operations import BY_NAME, OPERATIONS, Operation
from memstrata.service.ui.routes import mount as mount_ui
from memstrata.service.wire import dump, error_reason

log = logging.getLogger("memstrata.service")
MAX_BODY_BYTES = 16 * 1024 * 1024
ERROR_RESPONSE = {
    "description": "An error: `code` is the error table's code, `field` and `reason` say why.",
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "required": ["error"],
                "properties": {
                    "error": {
                        "type": "object",
                        "required": ["code", "type", "message"],
                        "properties": {
                            "code": {"type": "string"},
                            "type": {"type": "string"},
                            "message": {"type": "string"},
                            "field": {"type": "string"},
                            "reason": {"type": "string"},
                            "retry_after_s": {"type": "number"},
                        },
                    }
                },
            }
        }
    },
}


def path_of(op: Operation[Any, Any]) -> str:
    return f"/v1/{op.name}"


def error_response(exc: BaseException, *, jsonrpc: bool = False) -> JSONResponse:
    """The error's JSON body with the table's status. ``jsonrpc``: as a JSON-RPC error
    (for MCP over HTTP: the table's MCP code, the body as ``data``), which MCP clients
    surface as the error itself."""
    status = error_code(exc).http if isinstance(exc, MemstrataError) else 500
    headers = {}
    retry = getattr(exc, "retry_after_s", None)
    if retry is not None:
        headers["Retry-After"] = str(max(1, round(retry)))
    if status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    body: dict[str, Any] = {"error": error_body(exc)}
    if jsonrpc:
        code = error_code(exc).mcp if isinstance(exc, MemstrataError) else -32603
        message = str(exc) if isinstance(exc, MemstrataError) else "internal error"
        body = {
            "jsonrpc": "2.0",
            "id": None,  # not parsed: the request is refused before its body is read
            "error": {"code": code, "message": message, "data": error_body(exc)},
        }
    return JSONResponse(body, status_code=status, headers=headers)


def _endpoint(service: Service, op: Operation[Any, Any]) -> Callable[..., Any]:
    def endpoint(request: Request, body: Any) -> Response:
        caller = request.scope.get(CALLER_SCOPE_KEY)
        result = service.call(
            op.name,
            bearer_key(request.headers),
            body,
            transport="rest",
            caller=caller if isinstance(caller, Caller) else None,
        )
        # Already a validated response model: serialized once, not validated again.
        return Response(orjson.dumps(dump(result)), media_type="application/json")

    endpoint.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [
            inspect.Parameter(
                "request", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Request
            ),
            inspect.Parameter(
                "body", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=op.request
            ),
        ],
        return_annotation=op.response,
    )
    endpoint.__name__ = op.name
    return endpoint


def _headers(scope: Scope) -> Mapping[str, str]:
    return {
        name.decode("latin-1").lower(): value.decode("latin-1")
        for name, value in scope.get("headers") or ()
    }


SECURITY_SCHEMES: dict[str, dict[str, str]] = {
    "bearer": {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key (`memstrata keys create`): `Authorization: Bearer <key>`.",
    },
    "apiKey": {
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
        "description": "The same API key in `X-API-Key`, for clients that cannot set "
        "`Authorization`.",
    },
}
"""How a caller presents its key (:func:`memstrata.service.core.bearer_key` reads both)."""


def _openapi(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document with the key every operation needs: the security schemes, and
    either one required on each ``/v1`` operation (``/healthz`` and ``/metrics`` are
    open and not in the document), so Swagger UI offers Authorize and generated
    clients and fuzzers know how to authenticate."""
    if app.openapi_schema is not None:
        return app.openapi_schema
    document = get_openapi(
        title=app.title,
        version=app.version,
        openapi_version=app.openapi_version,
        description=app.description,
        routes=app.routes,
    )
    document.setdefault("components", {})["securitySchemes"] = SECURITY_SCHEMES
    for path, item in document.get("paths", {}).items():
        if path.startswith("/v1/") and path[4:] in BY_NAME:
            for operation in item.values():
                operation["security"] = [{name: []} for name in SECURITY_SCHEMES]
    app.openapi_schema = document
    return document


class AuthenticateFirst:
    """Authenticates a call of an operation (``POST /v1/<operation>``) or of MCP over
    HTTP (``/mcp``) before anything reads or parses its body.

    A missing or bad key is 401 whatever the body holds (never a 422 that would tell
    an anonymous caller how the request is shaped), and an anonymous MCP client gets
    no session, not even ``initialize`` or ``tools/list``. The caller is kept in the
    request's scope, so the key is verified (audited, rate counted) once per request.
    Health and metrics stay open.
    """

    def __init__(self, app: ASGIApp, service: Service) -> None:
        self._app = app
        self._service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        path = str(scope.get("path", ""))
        if path == "/mcp" or path.startswith("/mcp/"):
            name, transport = MCP_AUDIT_OPERATION, "mcp"
        elif scope.get("method") == "POST" and path.startswith("/v1/") and path[4:] in BY_NAME:
            name, transport = path[4:], "rest"
        else:
            await self._app(scope, receive, send)
            return
        key = bearer_key(_headers(scope))
        try:
            caller = await anyio.to_thread.run_sync(self._service.admit, name, key, transport)
        except MemstrataError as exc:
            await error_response(exc, jsonrpc=transport == "mcp")(scope, receive, send)
            return
        scope[CALLER_SCOPE_KEY] = caller
        await self._app(scope, receive, send)


class BodyLimit:
    """Refuses a request body over ``limit`` bytes with a typed 413, before parsing it."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self._app = app
        self._limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self._limit:
            await self._too_large(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self._limit:
                    raise _TooLarge
            return message

        try:
            await self._app(scope, counted, send)
        except _TooLarge:
            await self._too_large(scope, receive, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        exc = ValidationError("body", f"is over the limit of {self._limit} bytes")
        response = JSONResponse({"error": error_body(exc)}, status_code=413)
        await response(scope, receive, send)


class _TooLarge(Exception):
    pass


def create_app(
    service: Service,
    *,
    max_body_bytes: int = MAX_BODY_BYTES,
    mcp: bool = True,
    host: str = "127.0.0.1",
    proxy: ProxySettings | None = None,
) -> FastAPI:
    """The REST app over ``service``, with MCP's streamable HTTP at ``/mcp`` (``mcp``)
    and, with ``proxy``, the OpenAI-compatible ``POST /v1/chat/completions``.

    ``host`` is where the app listens: MCP's DNS-rebinding protection admits only it.
    """
    mcp_lifespan: Callable[[], AbstractAsyncContextManager[None]] | None = None
    mcp_app = None
    if mcp:
        mcp_app, mcp_lifespan = mcp_http_app(service, host=host)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if mcp_lifespan is None:
            yield
            return
        async with mcp_lifespan():
            yield

    app = FastAPI(
        lifespan=lifespan,
        title="memstrata",
        version="1",
        description=(
            "Context for long-running agents: sessions (L1), working memory (L2), "
            "long-term memory and knowledge (L3). Authenticate with "
            "`Authorization: Bearer <key>` (or `X-API-Key: <key>`). Each field's schema "
            "is the server's own check; beyond it, an identifier holding a credential "
            "or personal data (an e-mail address, a phone number) is refused with 422."
        ),
        openapi_url="/openapi.json",
        docs_url="/docs",
        redoc_url=None,
    )

    @app.exception_handler(MemstrataError)
    async def _memstrata_error(_: Request, exc: MemstrataError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _request_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = errors[0] if errors else {}
        loc = [str(p) for p in first.get("loc", ()) if p != "body"]
        return error_response(ValidationError(".".join(loc) or "body", error_reason(first)))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        # Routing errors (unknown path, wrong method) in the same shape as the rest.
        code = {404: "not_found", 405: "unimplemented"}.get(exc.status_code, "invalid_argument")
        body = {"code": code, "type": "HTTPError", "message": str(exc.detail)}
        # Starlette's own headers (a 405's ``Allow``, RFC 9110) go out with the body.
        return JSONResponse({"error": body}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error serving a request")
        return error_response(exc)

    @app.get("/healthz", include_in_schema=False)
    def healthz(reads: bool = False) -> JSONResponse:
        # Every backend, 200 or 503 (service/health.py); ?reads=1: 200 unless down.
        health = service.health()
        return JSONResponse(health.as_dict(), status_code=health.http_status(reads=reads))

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        # Unauthenticated like /healthz: counts and latencies, never content.
        return Response(service.metrics_text(), media_type=CONTENT_TYPE_LATEST)

    for op in OPERATIONS:
        app.add_api_route(
            path_of(op),
            _endpoint(service, op),
            methods=["POST"],
            response_model=op.response,
            response_model_exclude_none=True,
            summary=op.summary,
            operation_id=op.name,
            tags=[op.role],
            responses={
                str(code): ERROR_RESPONSE
                for code in sorted({error_code_of(e).http for e in op.all_errors} | {400, 413, 422})
            },
        )
    if proxy is not None:
        from memstrata.service.proxy.routes import add_proxy

        add_proxy(app, service, proxy)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    # The memory browser at /ui (and / leading to it): its pages call the same table.
    mount_ui(app, service)
    if mcp_app is not None:
        app.router.routes.append(Route("/mcp", endpoint=mcp_app, methods=["GET", "POST", "DELETE"]))
    app.add_middleware(BodyLimit, limit=max_body_bytes)
    # Outermost: nothing reads the body of a call whose key is not known good.
    app.add_middleware(AuthenticateFirst, service=service)
    return app
