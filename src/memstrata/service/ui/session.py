"""The memory browser's sign-in sessions: an opaque random cookie names a session
kept in this process; the API key stays on the server.

The cookie holds only the session id (32 random bytes, URL-safe); the store keeps its
SHA-256, so even a dump of the store cannot be replayed as a cookie. The key itself
is kept beside it because every page calls the capability table with it, exactly as a
REST call presents it: a key revoked or expired after sign-in stops the session at its
next page. Nothing here logs the key or the session id.

With ``serve --workers N`` a tenant's memory lives in one worker, and the front sends
each request to its tenant's worker: the pages carry the cookie, not the key, so the
store also writes the session's tenant (never its key) to the shared Valkey under the
digest of its id (:func:`session_tenant`), with the session's expiry, for the front to
read.

Every POST form carries the session's CSRF token; the sign-in form, before any
session exists, carries a token matched against a short-lived pre-session cookie
(double submit), so a foreign page cannot sign a browser in under its own key.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from memstrata.service.auth import Caller
from memstrata.working.redis_errors import redis_errors

SESSION_COOKIE = "memstrata_ui"
PRE_COOKIE = "memstrata_ui_pre"
"""The sign-in form's CSRF cookie (before a session exists)."""
SESSION_TTL_S = 8 * 3600.0
"""A session ends this long after sign-in, whatever it does (the cookie's Max-Age too)."""
PRE_TTL_S = 600.0
MAX_SESSIONS = 10_000
"""Past this many live sessions the oldest is dropped (a flood of sign-ins cannot
grow the process without bound)."""


ROUTE_PREFIX = "{memstrata:ui}:route:"
"""Valkey key prefix of a session's tenant, for the front of ``serve --workers``."""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def route_key(session_id: str) -> str:
    return ROUTE_PREFIX + _digest(session_id)


def session_tenant(client: Any, session_id: str | None) -> str | None:
    """The tenant a session cookie was signed in under (None: unknown or expired), as
    the store wrote it to Valkey; it says where the session lives, it proves nothing."""
    if not session_id:
        return None
    with redis_errors("redis read ui session route"):
        tenant = client.get(route_key(session_id))
    return None if tenant is None else str(cast(str, tenant))


def new_token() -> str:
    """32 random bytes, URL-safe: a session id or a CSRF token."""
    return secrets.token_urlsafe(32)


def same_token(given: str | None, expected: str) -> bool:
    """Constant-time comparison of a presented token with the expected one."""
    return bool(given) and hmac.compare_digest(str(given).encode(), expected.encode())


@dataclass(frozen=True, slots=True)
class UiSession:
    """A signed-in browser: who its key is, the key (server side only), its CSRF token."""

    key: str
    caller: Caller
    csrf: str
    expires_at: float

    def __repr__(self) -> str:  # never the key, should a session reach a log
        return f"UiSession(key_id={self.caller.key_id!r}, tenant={self.caller.tenant!r})"


class SessionStore:
    """Sessions by the digest of their id, each with its expiry (thread-safe)."""

    def __init__(
        self,
        ttl_s: float = SESSION_TTL_S,
        now: Callable[[], float] = time.monotonic,
        *,
        routes: Any = None,
    ) -> None:
        """``routes``: the Valkey client the session's tenant is written to (None: a
        single process, nothing to route)."""
        self._ttl_s = ttl_s
        self._now = now
        self._routes = routes
        self._lock = threading.Lock()
        self._sessions: dict[str, UiSession] = {}

    @property
    def ttl_s(self) -> float:
        return self._ttl_s

    def open(self, key: str, caller: Caller) -> tuple[str, UiSession]:
        """A new session for ``caller`` (its key already verified): the cookie value
        (shown once, never stored) and the session."""
        session_id = new_token()
        session = UiSession(key, caller, new_token(), self._now() + self._ttl_s)
        if self._routes is not None:
            with redis_errors("redis write ui session route"):
                self._routes.set(route_key(session_id), caller.tenant, ex=int(self._ttl_s))
        with self._lock:
            self._drop_expired()
            while len(self._sessions) >= MAX_SESSIONS:
                del self._sessions[next(iter(self._sessions))]
            self._sessions[_digest(session_id)] = session
        return session_id, session

    def get(self, session_id: str | None) -> UiSession | None:
        """The live session a cookie names (None: no cookie, unknown or expired)."""
        if not session_id:
            return None
        digest = _digest(session_id)
        with self._lock:
            session = self._sessions.get(digest)
            if session is not None and session.expires_at <= self._now():
                del self._sessions[digest]
                return None
            return session

    def close(self, session_id: str | None) -> None:
        """Sign out: the session is gone (a copy of the cookie no longer works)."""
        if session_id:
            with self._lock:
                self._sessions.pop(_digest(session_id), None)
            if self._routes is not None:
                with redis_errors("redis delete ui session route"):
                    self._routes.delete(route_key(session_id))

    def _drop_expired(self) -> None:
        now = self._now()
        for digest in [d for d, s in self._sessions.items() if s.expires_at <= now]:
            del self._sessions[digest]
