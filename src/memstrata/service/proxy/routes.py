"""``POST /v1/chat/completions``: the user's memories into the system message, the
request forwarded to the upstream, its answer returned as it came, the turn observed.

Who is who: the memstrata API key in ``X-API-Key`` (its tenant and clearance, as on
every operation); the caller's own key for the upstream in ``Authorization``, passed
on; the end user in ``X-Memstrata-User`` or the body's ``user``; the session in
``X-Memstrata-Session`` (a new one when absent, its id in the answer's header of the
same name). The context is built by the capability table's ``build_context`` and the
turns are written by its ``observe`` (the gateway sanitizes them), so the proxy sees
what every transport sees.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.background import BackgroundTask

from memstrata.config_proxy import ProxySettings
from memstrata.context.budget import known_window
from memstrata.errors import (
    BackendError,
    MemstrataError,
    UpstreamError,
    UpstreamTimeoutError,
    ValidationError,
)
from memstrata.service.auth import Caller
from memstrata.service.core import Service
from memstrata.service.proxy import PROXY_PATH, forward
from memstrata.service.proxy.messages import (
    MAX_INITIAL_QUERY_CHARS,
    ChatRequest,
    ReplyAssembler,
    context_payload,
    memory_block,
    parse_body,
    read_request,
    whole_reply,
    with_memories,
)

log = logging.getLogger("memstrata.proxy")
TRANSPORT = "proxy"
"""The ``transport`` label of the proxy's calls in ``memstrata_service_requests``."""
USER_HEADER = "x-memstrata-user"
SESSION_HEADER = "x-memstrata-session"
MEMORIES_HEADER = "x-memstrata-memories"
DEGRADED_HEADER = "x-memstrata-degraded"
OBSERVED_HEADER = "x-memstrata-observed"


@dataclass(frozen=True, slots=True)
class Prepared:
    """The request to send upstream, and what the answer's headers say of it."""

    session_id: str
    body: bytes
    memories: int
    degraded: str | None

    def headers(self) -> dict[str, str]:
        out = {SESSION_HEADER: self.session_id, MEMORIES_HEADER: str(self.memories)}
        if self.degraded is not None:
            out[DEGRADED_HEADER] = _header_text(self.degraded)
        return out


def _encoded(body: Mapping[str, Any]) -> bytes:
    # json, not orjson: a caller's integer past 64 bits goes on as it came.
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def _header_text(text: str) -> str:
    # A header value is one latin-1 line.
    return " ".join(text.split()).encode("latin-1", "replace").decode("latin-1")[:500]


def _error(exc: BaseException, headers: Mapping[str, str] | None = None) -> JSONResponse:
    from memstrata.service.rest import error_response

    response = error_response(exc)
    response.headers.update(dict(headers or {}))
    return response


class ChatProxy:
    """The route's behaviour over one service, with one pooled upstream client."""

    def __init__(self, service: Service, settings: ProxySettings) -> None:
        self._service = service
        self._settings = settings
        self._url = settings.completions_url
        self._http: httpx.AsyncClient | None = None

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = forward.client(self._settings.connect_timeout_s, self._settings.timeout_s)
        return self._http

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def handle(self, request: Request) -> Response:
        try:  # the key first: nothing of the body is read for an unknown caller
            caller = await anyio.to_thread.run_sync(
                self._service.admit, "build_context", request.headers.get("x-api-key"), TRANSPORT
            )
        except MemstrataError as exc:
            return _error(exc)
        try:
            chat = read_request(parse_body(await request.body()))
            user = request.headers.get(USER_HEADER) or chat.user
            if user is None:
                raise ValidationError(
                    "user", f"is required: the {USER_HEADER} header or the request's user field"
                )
            session = request.headers.get(SESSION_HEADER)
            prepared = await anyio.to_thread.run_sync(self._prepare, caller, chat, user, session)
        except MemstrataError as exc:
            return _error(exc)
        try:
            answer = await forward.send(
                self._client(), self._url, prepared.body, forward.upstream_headers(request.headers)
            )
        except MemstrataError as exc:
            log.warning("proxy: %s", exc)
            return _error(exc, prepared.headers())
        if answer.status_code >= 400 or not chat.stream:
            return await self._whole(answer, caller, chat, prepared)
        return await self._streamed(answer, caller, chat, prepared)

    def _prepare(
        self, caller: Caller, chat: ChatRequest, user: str, session: str | None
    ) -> Prepared:
        """Open (or find) the session and build the context for the last user message
        within the model's window; memories the engine cannot read now are left out
        and the answer says why (a degraded read must not stop the user's call)."""
        sid = session or f"s_{uuid.uuid4().hex}"
        self._call(
            "start_session",
            caller,
            {"user_id": user, "initial_query": chat.user_input[:MAX_INITIAL_QUERY_CHARS],
             "session_id": sid},
        )  # fmt: skip
        window = self._settings.window_of(chat.model, known_window(chat.model))
        payload = context_payload(chat, sid, window, self._settings.k)
        try:
            built = dump_of(self._call("build_context", caller, payload))
        except BackendError as exc:
            log.warning("proxy: forwarded without memories: %s", exc)
            reason = f"memories left out: {type(exc).__name__}: {exc}"
            return Prepared(sid, _encoded(chat.body), 0, reason)
        # Stored memories (L3) counted; the block also carries live L1/L2 items.
        memories = sum(
            1
            for entry in built.get("admitted", ())
            if entry["section"] == "memory" and entry["layer"] == "L3"
        )
        degraded = "; ".join(
            f"{name}: {built[name]}"
            for name in ("l3_skip_reason", "dense_skip_reason")
            if built.get(name)
        )
        body = with_memories(chat.body, memory_block(built["messages"]))
        return Prepared(sid, _encoded(body), memories, degraded or None)

    def _call(self, name: str, caller: Caller, payload: Mapping[str, Any]) -> Any:
        return self._service.call(name, None, payload, transport=TRANSPORT, caller=caller)

    def _observe(self, caller: Caller, session_id: str, role: str, text: str) -> str | None:
        """Write one turn through ``observe``; the reason when it was not kept (logged,
        and counted in ``memstrata_service_requests{transport="proxy"}``)."""
        if not text.strip():
            return f"{role}: no text to observe"
        try:
            self._call("observe", caller, {"session_id": session_id, "role": role, "text": text})
        except MemstrataError as exc:
            log.warning(
                "proxy: the %s turn of session %s was not observed: %s", role, session_id, exc
            )
            return f"{role}: not observed: {type(exc).__name__}: {exc}"
        return None

    async def _whole(
        self, answer: httpx.Response, caller: Caller, chat: ChatRequest, prepared: Prepared
    ) -> Response:
        try:
            raw = await answer.aread()
        except httpx.TimeoutException:
            return _error(UpstreamTimeoutError(self._url, "the answer stopped"), prepared.headers())
        except httpx.HTTPError as exc:
            return _error(
                UpstreamError(self._url, f"the answer broke off ({exc})"), prepared.headers()
            )
        finally:
            await answer.aclose()
        headers = {**forward.returned_headers(answer.headers), **prepared.headers()}
        if answer.status_code < 400:
            failures = await anyio.to_thread.run_sync(
                self._observe_turn, caller, prepared.session_id, chat.user_input, whole_reply(raw)
            )
            headers[OBSERVED_HEADER] = _header_text("; ".join(failures) or "user, assistant")
        return Response(raw, status_code=answer.status_code, headers=headers)

    def _observe_turn(self, caller: Caller, session_id: str, said: str, reply: str) -> list[str]:
        return [
            reason
            for role, text in (("user", said), ("assistant", reply))
            if (reason := self._observe(caller, session_id, role, text)) is not None
        ]

    async def _streamed(
        self, answer: httpx.Response, caller: Caller, chat: ChatRequest, prepared: Prepared
    ) -> Response:
        # The user turn now, so the answer's header can say whether it was kept; the
        # reply once the stream has ended (logged and counted if it was not kept).
        failed = await anyio.to_thread.run_sync(
            self._observe, caller, prepared.session_id, "user", chat.user_input
        )
        headers = {**forward.returned_headers(answer.headers), **prepared.headers()}
        headers[OBSERVED_HEADER] = _header_text(failed or "user; assistant after the stream")
        reply = ReplyAssembler()
        complete = False

        async def chunks() -> AsyncIterator[bytes]:
            nonlocal complete
            try:
                async for chunk in answer.aiter_bytes():
                    reply.feed(chunk)
                    yield chunk
                complete = True
            except httpx.HTTPError as exc:
                log.warning("proxy: the upstream stream broke off: %s", type(exc).__name__)
            finally:
                await answer.aclose()

        async def after() -> None:
            if not complete:
                log.warning(
                    "proxy: the reply of session %s was not observed: the stream did not end",
                    prepared.session_id,
                )
                return
            await anyio.to_thread.run_sync(
                self._observe, caller, prepared.session_id, "assistant", reply.text
            )

        return StreamingResponse(
            chunks(),
            status_code=answer.status_code,
            headers=headers,
            background=BackgroundTask(after),
        )


def dump_of(model: Any) -> dict[str, Any]:
    from memstrata.service.wire import dump

    out = dump(model)
    assert isinstance(out, dict)
    return out


def add_proxy(app: FastAPI, service: Service, settings: ProxySettings) -> ChatProxy:
    """Serve ``POST /v1/chat/completions`` on ``app``, forwarding to ``settings.upstream``;
    the upstream client is closed with the app."""
    proxy = ChatProxy(service, settings)

    async def chat_completions(request: Request) -> Response:
        return await proxy.handle(request)

    # Not in the OpenAPI document: its body and answer are the upstream's (OpenAI's).
    app.add_api_route(PROXY_PATH, chat_completions, methods=["POST"], include_in_schema=False)
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(owner: Any) -> AsyncIterator[Any]:
        async with inner(owner) as state:
            try:
                yield state
            finally:
                await proxy.aclose()

    app.router.lifespan_context = lifespan
    return proxy


def create_proxy_app(service: Service, settings: ProxySettings) -> FastAPI:
    """The app of ``memstrata proxy``: the proxy route, ``/healthz`` and ``/readyz``."""
    from memstrata.service.rest import BodyLimit

    app = FastAPI(title="memstrata proxy", openapi_url=None, docs_url=None, redoc_url=None)

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> JSONResponse:
        health = service.health()
        return JSONResponse(health.as_dict(), status_code=health.http_status(reads=False))

    @app.get("/readyz", include_in_schema=False)
    def readyz() -> JSONResponse:
        return JSONResponse({"status": "ready"})

    add_proxy(app, service, settings)
    app.add_middleware(BodyLimit)
    return app
