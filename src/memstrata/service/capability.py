"""What an operation of the service is: its declaration and the call it runs in.

Tenancy: the tenant is always the caller's key's. Session ids are kept per tenant
(the engine sees ``<tenant>@<session id>``), so one tenant can neither open, read
nor even detect another tenant's session: both get the same ``NotFoundError``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from memstrata.clock import Clock
from memstrata.engine import ContextEngine
from memstrata.errors import (
    AuthenticationError,
    BackendError,
    MemstrataError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitedError,
    ValidationError,
)
from memstrata.service.auth import LOCAL_KEY_ID, Caller, KeyStore, Role
from memstrata.service.wire_base import request_error
from memstrata.session import SessionState

Req = TypeVar("Req", bound=BaseModel)
Resp = TypeVar("Resp", bound=BaseModel)

SESSION_SEPARATOR = "@"
OPERATOR_TENANT = "default"
"""The operator's tenant: its admin keys see every tenant (the health report, keys)."""
# Every operation can fail these ways before it runs.
COMMON_ERRORS: tuple[type[MemstrataError], ...] = (
    AuthenticationError,
    PermissionDeniedError,
    RateLimitedError,
    ValidationError,
    BackendError,
)


@dataclass(frozen=True, slots=True)
class Call:
    """One request being served: the engine and who is asking."""

    engine: ContextEngine
    caller: Caller
    clock: Clock
    keys: KeyStore | None = None
    screen: Callable[[BaseModel], None] | None = None
    """Checks a validated request before it runs (its identifiers pass the gateway)."""

    def key_store(self) -> KeyStore:
        if self.keys is None:
            raise NotFoundError("this server has no API keys (a local MCP session)")
        return self.keys

    def engine_session_id(self, session_id: str) -> str:
        """The id the engine keeps ``session_id`` under. A key's caller shares the engine
        with other tenants: ``<tenant>@<id>``. The local user of a data directory owns it
        and sees the ids as the engine's Python API keeps them, so the CLI reads what an
        application opened on the same directory wrote."""
        if self.caller.key_id == LOCAL_KEY_ID:
            return session_id
        return f"{self.caller.tenant}{SESSION_SEPARATOR}{session_id}"

    def session(self, session_id: str) -> SessionState:
        """The caller's session; another tenant's is exactly as absent as a missing one."""
        try:
            state = self.engine.session(self.engine_session_id(session_id))
        except NotFoundError:
            state = None
        if state is None or state.tenant != self.caller.tenant:
            raise NotFoundError(f"session {session_id!r} is not open")
        return state


@dataclass(frozen=True, slots=True)
class Operation(Generic[Req, Resp]):
    """One capability: its name, wire models, role, errors and implementation."""

    name: str
    summary: str
    request: type[Req]
    response: type[Resp]
    role: Role
    run: Callable[[Call, Req], Resp]
    errors: tuple[type[MemstrataError], ...] = ()

    @property
    def all_errors(self) -> tuple[type[MemstrataError], ...]:
        return COMMON_ERRORS + tuple(e for e in self.errors if e not in COMMON_ERRORS)

    def invoke(self, call: Call, payload: BaseModel | Mapping[str, Any]) -> Resp:
        """Check the role, validate ``payload`` as this operation's request, screen it,
        run it."""
        call.caller.require(self.role)
        if isinstance(payload, self.request):
            request = payload
        else:
            data = payload.model_dump() if isinstance(payload, BaseModel) else payload
            try:
                request = self.request.model_validate(data)
            except PydanticValidationError as exc:
                raise request_error(exc) from None
        if call.screen is not None:
            call.screen(request)
        return self.run(call, request)


# An operation addressing a session may find it closed (or another tenant's).
SESSION_ERRORS: tuple[type[MemstrataError], ...] = (NotFoundError,)
