"""Sessions: L1 session state (in process) and each session's L2 working memory."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from memstrata.errors import NotFoundError
from memstrata.session import SessionRegistry, SessionState
from memstrata.validation import check_id
from memstrata.working.memory import SessionWorkingMemory, WorkingMemory
from memstrata.working.values import Preference


class Sessions:
    """Open, read, change and end sessions; their working memory; users' preferences."""

    def __init__(self, registry: SessionRegistry, working: WorkingMemory) -> None:
        self._registry = registry
        self._working = working

    def start_session(
        self,
        user_id: str,
        initial_query: str,
        *,
        tenant: str = "default",
        session_id: str | None = None,
    ) -> SessionState:
        """Open a session (its state lives in this process only). An id open for the
        same user and tenant returns that session (a retried start is safe); for
        another, :class:`~memstrata.errors.ConflictError` (field ``session_id``)."""
        return self._registry.start(user_id, initial_query, tenant=tenant, session_id=session_id)

    def session(self, session_id: str) -> SessionState:
        """The current state of a session open in this process."""
        return self._registry.get(session_id)

    def state_of(self, session: SessionState | str) -> SessionState:
        """``session`` itself, or the state of the session of that id."""
        return self._registry.get(session) if isinstance(session, str) else session

    def update_session(
        self, session_id: str, change: Callable[[SessionState], SessionState]
    ) -> SessionState:
        """Apply a pure change to a session's state without losing concurrent updates."""
        return self._registry.update(session_id, change)

    def end_session(self, session_id: str) -> SessionState:
        """Close a session open in this process and return its last state."""
        return self._registry.end(session_id)

    def end_sessions_of(self, user_id: str, tenant: str) -> list[SessionState]:
        """End every session of ``tenant``'s user open here; their last states."""
        return [
            self._registry.end(sid)
            for sid in self._registry.session_ids()
            if (state := self._registry.get(sid)).user_id == user_id and state.tenant == tenant
        ]

    def working(self, session_id: str) -> SessionWorkingMemory:
        """The session's working memory (every write passes the gateway)."""
        return self._working.session(session_id)

    def set_preference(
        self,
        user_id: str,
        pref_type: str,
        value: Any,
        confidence: float,
        updated_at: datetime | None = None,
        *,
        tenant: str = "default",
    ) -> Preference:
        """Store a long-lived preference of ``tenant``'s user (replacing any previous
        one of ``pref_type``)."""
        return self._working.set_preference(
            user_id, pref_type, value, confidence, updated_at, tenant=tenant
        )

    def get_preference(
        self, user_id: str, pref_type: str, *, tenant: str = "default"
    ) -> Preference:
        """One preference of ``tenant``'s user; ContextMissError when there is none."""
        return self._working.get_preference(user_id, pref_type, tenant=tenant)

    def list_preferences(self, user_id: str, *, tenant: str = "default") -> tuple[Preference, ...]:
        """Every preference of ``tenant``'s user, ordered by type."""
        return self._working.list_preferences(user_id, tenant=tenant)

    def inspect(self, session_id: str) -> dict[str, Any]:
        """What memstrata holds for a session: L1 (if open here) and its live L2 keys."""
        check_id("session_id", session_id)
        try:
            l1: dict[str, Any] | None = self._registry.get(session_id).as_dict()
        except NotFoundError:
            l1 = None
        wm = self._working.session(session_id)
        return {
            "session_id": session_id,
            "l1": l1,
            "l2": [
                {"key": k.key, "type": k.kind, "ttl_remaining_s": k.ttl_remaining_s}
                for k in wm.keys()  # noqa: SIM118 - a method, not a dict
            ],
            "pending_tasks": sorted(wm.pending()),
        }
