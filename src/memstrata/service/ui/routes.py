"""The memory browser at ``/ui``: server-rendered pages over the capability table.

Signed in with an API key (checked by the key store exactly as a REST call's), the
browser keeps an opaque session cookie (:mod:`memstrata.service.ui.session`); every
page then calls the table's operations with that key (:mod:`memstrata.service.ui.calls`),
so tenancy, role and clearance apply as they do over REST. An error of the table is
shown as the page, with its code, field and reason, and the status REST would answer.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

from memstrata.errors import (
    AuthenticationError,
    MemstrataError,
    PermissionDeniedError,
    ValidationError,
    error_code,
)
from memstrata.service.core import Service, error_body
from memstrata.service.ui import calls
from memstrata.service.ui.session import (
    PRE_COOKIE,
    PRE_TTL_S,
    SESSION_COOKIE,
    SessionStore,
    UiSession,
    new_token,
    same_token,
)

HERE = Path(__file__).parent
PREFIX = "/ui"
SECURITY_HEADERS = {
    # Every asset is the package's own: no inline script, no CDN.
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "frame-src 'self'; frame-ancestors 'self'; form-action 'self'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
REPORT_HEADERS = {
    # The health report is one self-contained page with inline styles, shown in a
    # sandboxed frame: nothing in it runs or loads.
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}


def _templates() -> Jinja2Templates:
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.globals["prefix"] = PREFIX
    templates.env.filters["q"] = lambda value: quote(str(value), safe="")
    return templates


def mount(app: FastAPI, service: Service, store: SessionStore | None = None) -> SessionStore:
    """Add the browser's routes to ``app`` (and ``/`` redirecting to it); its sessions."""
    sessions = store or SessionStore(routes=_routes_of(service))
    templates = _templates()
    secure = False  # plain HTTP on loopback by default; a TLS proxy sets Secure itself

    def render(
        request: Request,
        name: str,
        session: UiSession | None,
        status: int = 200,
        **context: Any,
    ) -> HTMLResponse:
        response = templates.TemplateResponse(
            request,
            name,
            {"session": session, "caller": session and session.caller, **context},
            status_code=status,
        )
        response.headers.update(SECURITY_HEADERS)
        return response

    def error_page(request: Request, session: UiSession | None, exc: MemstrataError) -> Response:
        if isinstance(exc, AuthenticationError) and session is not None:
            # The key was revoked or expired since sign-in: the session ends with it.
            sessions.close(request.cookies.get(SESSION_COOKIE))
            session = None
        status = error_code(exc).http
        return render(request, "error.html", session, status, error=error_body(exc))

    def current(request: Request) -> UiSession | None:
        return sessions.get(request.cookies.get(SESSION_COOKIE))

    def to_sign_in(request: Request) -> Response:
        target = f"{PREFIX}/sign-in?next={quote(request.url.path, safe='')}"
        return RedirectResponse(target, status_code=303)

    def signed_in(
        handler: Callable[..., Response],
    ) -> Callable[..., Response]:
        """The page for a signed-in browser (else the sign-in page); a table error
        becomes the error page."""

        def page(request: Request) -> Response:
            session = current(request)
            if session is None:
                return to_sign_in(request)
            try:
                return handler(request, session, **request.path_params)
            except MemstrataError as exc:
                return error_page(request, session, exc)

        return page

    async def form_of(request: Request, session: UiSession) -> dict[str, str]:
        """The POSTed form, once its CSRF token is the session's (else a refusal of
        field ``csrf``)."""
        form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
        if not same_token(form.get("csrf"), session.csrf):
            raise PermissionDeniedError(
                "csrf", "the form's CSRF token is missing or not this session's"
            )
        return form

    # -- sign-in and out ------------------------------------------------------------

    @app.get("/", include_in_schema=False)
    def root() -> Response:
        return RedirectResponse(f"{PREFIX}/", status_code=307)

    @app.get(PREFIX, include_in_schema=False)
    def ui_bare() -> Response:
        return RedirectResponse(f"{PREFIX}/", status_code=307)

    @app.get(f"{PREFIX}/sign-in", include_in_schema=False)
    def sign_in_form(request: Request, next: str = f"{PREFIX}/") -> Response:
        token = new_token()
        response = render(request, "sign_in.html", None, csrf=token, next=_local(next))
        response.set_cookie(
            PRE_COOKIE, token, max_age=int(PRE_TTL_S), path=f"{PREFIX}/sign-in",
            httponly=True, samesite="strict", secure=secure,
        )  # fmt: skip
        return response

    @app.post(f"{PREFIX}/sign-in", include_in_schema=False)
    async def sign_in(request: Request) -> Response:
        form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
        next_page = _local(form.get("next", f"{PREFIX}/"))
        pre = request.cookies.get(PRE_COOKIE)
        try:
            if pre is None or not same_token(form.get("csrf"), pre):
                raise PermissionDeniedError(
                    "csrf", "the sign-in form's CSRF token is missing or stale"
                )
            key = form.get("key", "").strip()
            if not key:
                raise ValidationError("key", "an API key is required")
            # The key store's own check, as AuthenticateFirst runs it for REST.
            caller = service.admit("ui_sign_in", key, calls.TRANSPORT)
        except MemstrataError as exc:
            token = new_token()
            status = error_code(exc).http
            response = render(
                request, "sign_in.html", None, status,
                csrf=token, next=next_page, error=error_body(exc),
            )  # fmt: skip
            response.set_cookie(
                PRE_COOKIE, token, max_age=int(PRE_TTL_S), path=f"{PREFIX}/sign-in",
                httponly=True, samesite="strict", secure=secure,
            )  # fmt: skip
            return response
        session_id, _ = sessions.open(key, caller)
        signed = RedirectResponse(next_page, status_code=303)
        signed.set_cookie(
            SESSION_COOKIE, session_id, max_age=int(sessions.ttl_s), path=PREFIX,
            httponly=True, samesite="strict", secure=secure,
        )  # fmt: skip
        signed.delete_cookie(PRE_COOKIE, path=f"{PREFIX}/sign-in")
        return signed

    @app.post(f"{PREFIX}/sign-out", include_in_schema=False)
    async def sign_out(request: Request) -> Response:
        session = current(request)
        if session is not None:
            try:
                await form_of(request, session)
            except PermissionDeniedError as exc:
                return error_page(request, session, exc)
            sessions.close(request.cookies.get(SESSION_COOKIE))
        response = RedirectResponse(f"{PREFIX}/sign-in", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path=PREFIX)
        return response

    # -- pages ----------------------------------------------------------------------

    def home(request: Request, session: UiSession) -> Response:
        return render(request, "home.html", session)

    def users(request: Request, session: UiSession) -> Response:
        return render(request, "users.html", session, listed=calls.list_users(service, session))

    def user(request: Request, session: UiSession, user_id: str) -> Response:
        kind = request.query_params.get("kind") or None
        page = request.query_params.get("page") or None
        listed = calls.list_memories(service, session, user_id, kind=kind, page=page)
        return render(
            request, "user.html", session,
            user_id=user_id, listed=listed, kind=kind or "",
        )  # fmt: skip

    def fact(request: Request, session: UiSession, user_id: str, fact_id: str) -> Response:
        history = calls.fact_history(service, session, fact_id)
        cards, cards_refused = _cards_or_refusal(
            lambda: calls.cards_using(service, session, fact_id)
        )
        return render(
            request, "fact.html", session,
            user_id=user_id, fact_id=fact_id, history=history,
            cards=cards, cards_refused=cards_refused,
            notice=request.query_params.get("notice"),
        )  # fmt: skip

    def search(request: Request, session: UiSession) -> Response:
        query = request.query_params.get("q", "").strip()
        user_id = request.query_params.get("user", "").strip()
        result = calls.search(service, session, query, user_id or None) if query else None
        return render(request, "search.html", session, q=query, user_id=user_id, result=result)

    def cards(request: Request, session: UiSession) -> Response:
        listed, refused = _cards_or_refusal(lambda: calls.trace_cards(service, session))
        return render(request, "cards.html", session, cards=listed, refused=refused)

    def card(request: Request, session: UiSession, card_id: str) -> Response:
        found = calls.trace_card(service, session, card_id)
        held = calls.card_memories(service, session, list(found.get("memory_ids", ())))
        return render(
            request, "card.html", session,
            card=found, held=held, notice=request.query_params.get("notice"),
        )  # fmt: skip

    def forget_confirm(request: Request, session: UiSession, user_id: str) -> Response:
        memory_id = request.query_params.get("memory") or ""
        return render(request, "forget.html", session, user_id=user_id, memory_id=memory_id)

    def forget_job(request: Request, session: UiSession, job_id: str) -> Response:
        job = calls.forget_status(service, session, job_id)
        return render(request, "forget_job.html", session, job=job)

    def health(request: Request, session: UiSession) -> Response:
        since = request.query_params.get("since", "7d")
        try:
            report, refused = calls.health_report(service, session, since), None
        except PermissionDeniedError as exc:
            report, refused = None, error_body(exc)
        return render(request, "health.html", session, report=report, refused=refused, since=since)

    def health_frame(request: Request, session: UiSession) -> Response:
        report = calls.health_report(service, session, request.query_params.get("since", "7d"))
        return HTMLResponse(report["html"], headers=REPORT_HEADERS)

    for path, handler in (
        ("/", home),
        ("/users", users),
        ("/users/{user_id}", user),
        ("/users/{user_id}/facts/{fact_id}", fact),
        ("/users/{user_id}/forget", forget_confirm),
        ("/search", search),
        ("/cards", cards),
        ("/cards/{card_id}", card),
        ("/forget/{job_id}", forget_job),
        ("/health", health),
        ("/health/report", health_frame),
    ):
        app.add_api_route(
            PREFIX + path, signed_in(handler), methods=["GET"], include_in_schema=False
        )

    # -- writes ---------------------------------------------------------------------

    def posting(
        handler: Callable[[Request, UiSession, dict[str, str]], Response],
    ) -> Callable[..., Any]:
        """A form POST of a signed-in browser, refused without its CSRF token."""

        async def post(request: Request) -> Response:
            session = current(request)
            if session is None:
                return to_sign_in(request)
            try:
                form = await form_of(request, session)
            except PermissionDeniedError as exc:
                return error_page(request, session, exc)
            try:
                return handler(request, session, form)
            except MemstrataError as exc:
                return error_page(request, session, exc)

        return post

    def post_correct(request: Request, session: UiSession, form: dict[str, str]) -> Response:
        card_id, memory_id = form.get("card_id", ""), form.get("memory_id", "")
        receipt = calls.correct(service, session, card_id, memory_id, form.get("correction", ""))
        notice = f"correction queued (event {receipt.get('event_id', '?')})"
        back = _local(form.get("back", f"{PREFIX}/cards/{quote(card_id, safe='')}"))
        return RedirectResponse(f"{back}?notice={quote(notice)}", status_code=303)

    def post_forget(request: Request, session: UiSession, form: dict[str, str]) -> Response:
        user_id = form.get("user_id", "")
        memory_id = form.get("memory_id", "")
        job = calls.forget(service, session, user_id, [memory_id] if memory_id else None)
        return RedirectResponse(f"{PREFIX}/forget/{quote(job['job_id'], safe='')}", 303)

    app.add_api_route(
        f"{PREFIX}/correct", posting(post_correct), methods=["POST"], include_in_schema=False
    )
    app.add_api_route(
        f"{PREFIX}/forget", posting(post_forget), methods=["POST"], include_in_schema=False
    )
    app.mount(f"{PREFIX}/static", StaticFiles(directory=str(HERE / "static")), name="ui-static")
    return sessions


def _routes_of(service: Service) -> Any:
    """Where the sessions' tenants are written for the front of ``serve --workers``:
    the key store's Valkey (None without one, or for an app built without a service
    for its OpenAPI document alone)."""
    keys = getattr(service, "keys", None)
    return None if keys is None else keys.client


def _cards_or_refusal(
    read: Callable[[], list[dict[str, Any]]],
) -> tuple[list[dict[str, Any]] | None, dict[str, Any] | None]:
    """Trace cards, or why this key may not read them (they are medium-level context)."""
    try:
        return read(), None
    except PermissionDeniedError as exc:
        return None, error_body(exc)


def _local(target: str) -> str:
    """A redirect target inside the browser only (never another site)."""
    if target.startswith(PREFIX) and not target.startswith("//") and "\\" not in target:
        return target
    return f"{PREFIX}/"
