"""Holds the current SessionState per session and applies updates without losing any.

Updates are compare-and-swap: a writer computes a new value from the one it read and
installs it only if nobody changed the entry meanwhile, retrying otherwise. The lock is
held only for the swap itself (never while user code runs), so threads and asyncio
tasks alike can update one session concurrently.

What enters L1 passes the gateway: the initial query when a session starts is kept
sanitized; the entity id, the pointers and the action ids an update sets are ids, so
one the gateway would change (a credential, or personal data its policy does not
allow: an e-mail address as an entity id) is refused with a ValidationError naming
the field, and the session keeps its previous state. Payloads are never kept, only
hashes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from uuid import uuid4

from memstrata.clock import Clock
from memstrata.errors import ConflictError, NotFoundError, ValidationError
from memstrata.session.state import AuthContext, SessionState
from memstrata.validation import check_id, check_text

TextSanitizer = Callable[[str, str], str]
"""(text, location) -> sanitized text."""

MAX_CAS_RETRIES = 10_000


def _identity(text: str, location: str) -> str:
    return text


class SessionRegistry:
    """In-process home of L1 state. Never persisted, by design."""

    def __init__(self, clock: Clock, sanitize: TextSanitizer = _identity) -> None:
        self._clock = clock
        self._sanitize = sanitize
        self._lock = threading.Lock()
        self._sessions: dict[str, SessionState] = {}
        self._stale_writes = 0

    def start(
        self,
        user_id: str,
        initial_query: str,
        *,
        tenant: str = "default",
        session_id: str | None = None,
        scopes: frozenset[str] = frozenset(),
    ) -> SessionState:
        """Open a session; the initial query passes the gateway before it is kept.

        Idempotent: starting a session id that is open for the same user and tenant
        returns that session as it stands (a client retrying a start it never saw
        answered gets the session, not an error); the same id open for another user
        or tenant is a :class:`ConflictError`."""
        check_id("user_id", user_id)
        check_text("initial_query", initial_query, max_chars=8_000)
        sid = check_id("session_id", session_id) if session_id is not None else f"s_{uuid4().hex}"
        state = SessionState(
            session_id=sid,
            user_id=user_id,
            started_at=self._clock.now(),
            initial_query=self._sanitize(initial_query, f"l1:{sid}:initial_query"),
            auth_context=AuthContext(tenant=tenant, principal=user_id, scopes=scopes),
        )
        with self._lock:
            existing = self._sessions.get(sid)
            if existing is None:
                self._sessions[sid] = state
                return state
        if existing.user_id == user_id and existing.tenant == tenant:
            return existing
        raise ConflictError(f"session {sid!r} is open for another user", field="session_id")

    def get(self, session_id: str) -> SessionState:
        """The current value of a session."""
        check_id("session_id", session_id)
        with self._lock:
            state = self._sessions.get(session_id)
        if state is None:
            raise NotFoundError(f"session {session_id!r} is not open in this process")
        return state

    def compare_and_set(self, expected: SessionState, new: SessionState) -> bool:
        """Install ``new`` only if the entry is still ``expected`` (by identity).

        A refusal here is a stale write: the caller's update is not applied (counted
        in :attr:`stale_writes`)."""
        return self._swap(expected, new, stale_write=True)

    def _swap(self, expected: SessionState, new: SessionState, *, stale_write: bool) -> bool:
        """``stale_write``: whether a refusal loses the write (:meth:`update` retries
        its refusals from the newer state, so no update is lost and none is counted)."""
        if new.session_id != expected.session_id:
            raise ValidationError("session_id", "an update cannot change the session id")
        if new.auth_context != expected.auth_context:
            raise ValidationError("auth_context", "cannot be changed by a state update")
        with self._lock:
            current = self._sessions.get(expected.session_id)
            if current is not expected:
                if stale_write and current is not None:  # a newer state (not an ended one)
                    self._stale_writes += 1
                return False
            self._sessions[expected.session_id] = new
            return True

    def update(
        self, session_id: str, change: Callable[[SessionState], SessionState]
    ) -> SessionState:
        """Apply ``change`` atomically; retried on contention, so no update is lost.

        ``change`` must be a pure function of the state it receives.
        """
        for _ in range(MAX_CAS_RETRIES):
            current = self.get(session_id)
            new = change(current)
            if not isinstance(new, SessionState):
                raise ValidationError("change", "must return a SessionState")
            self._check_ids(current, new)
            if self._swap(current, new, stale_write=False):
                return new
        raise ConflictError(f"session {session_id!r}: too much contention, update not applied")

    def _check_ids(self, old: SessionState, new: SessionState) -> None:
        """ValidationError when an id the update set holds what the gateway would
        redact (the parts ``old`` had already passed when they were set)."""
        where = f"l1:{new.session_id}"
        if new.last_entity_id is not None and new.last_entity_id != old.last_entity_id:
            self._check_id("entity_id", new.last_entity_id, where)
        if new.pointers is not old.pointers:
            for name, target in new.pointers.items():
                if old.pointers.get(name) != target:
                    self._check_id("pointer", name, where)
                    self._check_id(f"pointers.{name}", target, where)
        if new.action_trace is not old.action_trace:
            known = {id(entry) for entry in old.action_trace}
            for entry in new.action_trace:
                if id(entry) not in known:
                    self._check_id("action_id", entry.action_id, where)

    def _check_id(self, field: str, value: str, where: str) -> None:
        if self._sanitize(value, f"{where}:{field.split('.')[0]}") != value:
            raise ValidationError(
                field,
                "holds a credential or personal data: L1 keeps ids as they are, so they "
                "must be opaque",
            )

    def end(self, session_id: str) -> SessionState:
        """Close a session and forget its state."""
        check_id("session_id", session_id)
        with self._lock:
            state = self._sessions.pop(session_id, None)
        if state is None:
            raise NotFoundError(f"session {session_id!r} is not open in this process")
        return state

    @property
    def stale_writes(self) -> int:
        """How many :meth:`compare_and_set` writes were refused because the entry had
        changed since the writer read it: each would have overwritten a newer state,
        and was not applied (the health report's immutable-violation count). The
        retries of :meth:`update` are not counted: it reapplies its change to the
        newer state, so no update is lost."""
        with self._lock:
            return self._stale_writes

    def session_ids(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._sessions)
