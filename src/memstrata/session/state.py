"""L1 session state: an immutable value per session, never persisted.

Only pointers live here (ids and hashes); payloads belong to L2 (docs/architecture.md,
"The layers").
Every change returns a new value.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from types import MappingProxyType
from typing import Any, Literal

from memstrata.errors import ValidationError
from memstrata.hashing import sha256_hex
from memstrata.validation import check_id, check_text

MAX_TRACE_ENTRIES = 256
MAX_HISTORY_ENTRIES = 256
ApiStatus = Literal["success", "error", "timeout"]
_API_STATUSES: frozenset[str] = frozenset({"success", "error", "timeout"})


@dataclass(frozen=True, slots=True)
class ApiResultRef:
    """What L1 keeps of an API call: its status and a hash of its data, never the body."""

    status: str
    data_hash: str

    def as_dict(self) -> dict[str, str]:
        return {"status": self.status, "data_hash": self.data_hash}


@dataclass(frozen=True, slots=True)
class TraceEntry:
    """One action the agent took: ids and a payload hash only."""

    step: int
    action_id: str
    payload_hash: str
    at: datetime


@dataclass(frozen=True, slots=True)
class TurnRef:
    """One observed conversation turn as L1 keeps it: its id, who spoke, and a hash.

    The (sanitized) text itself goes to the write queue and, once extracted, to L3;
    L1 keeps pointers only, so the hash identifies the turn without holding it.
    """

    turn_id: str
    role: str
    text_hash: str
    chars: int
    at: datetime


@dataclass(frozen=True, slots=True)
class AuthContext:
    """Who acts in this session; kept apart from business fields."""

    tenant: str
    principal: str
    scopes: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        check_id("auth_context.tenant", self.tenant)
        check_id("auth_context.principal", self.principal)
        for scope in self.scopes:
            check_id("auth_context.scopes", scope)


@dataclass(frozen=True, slots=True)
class SessionState:
    """The agent's workbench for one session."""

    session_id: str
    user_id: str
    started_at: datetime
    initial_query: str
    auth_context: AuthContext
    current_step: int = 0
    last_entity_id: str | None = None
    last_api_result: ApiResultRef | None = None
    action_trace: tuple[TraceEntry, ...] = ()
    # Free-form pointers (ids only), read-only to callers.
    pointers: MappingProxyType[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # Observed turns (ids and hashes), newest last; bounded like the action trace.
    history: tuple[TurnRef, ...] = ()
    turns_observed: int = 0
    episodes_observed: int = 0
    """Episodes stored for this session: one per turn, or one per chunk of a turn
    split for length. Each episode's ``seq`` in :attr:`thread` is its number."""

    def __post_init__(self) -> None:
        check_id("session_id", self.session_id)
        check_id("user_id", self.user_id)
        check_text("initial_query", self.initial_query, max_chars=8_000)
        if self.started_at.tzinfo is None:
            raise ValidationError("started_at", "must be timezone-aware")
        if isinstance(self.current_step, bool) or not isinstance(self.current_step, int):
            raise ValidationError("current_step", "must be an integer")
        if self.current_step < 0:
            raise ValidationError("current_step", "must be >= 0")
        if self.last_entity_id is not None:
            check_id("last_entity_id", self.last_entity_id)
        if not isinstance(self.auth_context, AuthContext):
            raise ValidationError("auth_context", "must be an AuthContext")

    @property
    def tenant(self) -> str:
        return self.auth_context.tenant

    @property
    def thread(self) -> str:
        """The conversation this session's episodes belong to in L3: the session id
        and its start, so a session id reused later starts a new thread instead of
        numbering its turns over the old ones."""
        return f"{self.session_id}#{int(self.started_at.timestamp() * 1000)}"

    def advance(self, steps: int = 1) -> SessionState:
        """Move to a later step."""
        if isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0:
            raise ValidationError("steps", "must be a positive integer")
        return replace(self, current_step=self.current_step + steps)

    def with_entity(self, entity_id: str) -> SessionState:
        """Remember the entity (device, order, ...) the agent works on."""
        return replace(self, last_entity_id=check_id("entity_id", entity_id))

    def with_api_result(self, status: str, data: Any) -> SessionState:
        """Keep an API result as ``{status, data_hash}``; the data itself goes to L2."""
        if status not in _API_STATUSES:
            raise ValidationError("status", f"must be one of {sorted(_API_STATUSES)}")
        return replace(self, last_api_result=ApiResultRef(status, sha256_hex(data)))

    def with_pointer(self, name: str, target_id: str) -> SessionState:
        """Point ``name`` at an id (e.g. ``report_template -> doc_17``)."""
        check_id("pointer", name)
        check_id("target_id", target_id)
        merged = {**self.pointers, name: target_id}
        return replace(self, pointers=MappingProxyType(merged))

    def record_action(self, action_id: str, payload: Any, at: datetime) -> SessionState:
        """Append an action to the trace, storing only the payload's hash.

        The trace is bounded: the oldest entries fall off after MAX_TRACE_ENTRIES.
        """
        check_id("action_id", action_id)
        if at.tzinfo is None:
            raise ValidationError("at", "must be timezone-aware")
        entry = TraceEntry(self.current_step, action_id, sha256_hex(payload), at)
        trace = (*self.action_trace, entry)[-MAX_TRACE_ENTRIES:]
        return replace(self, action_trace=trace)

    def record_turn(self, role: str, text: str, at: datetime, *, parts: int = 1) -> SessionState:
        """Append an observed turn (its id and a hash of ``text``, never the text),
        stored as ``parts`` episodes (a long text is split into chunks).

        Turn ids are ``t<n>``, numbered per session from 1. The history is bounded:
        the oldest entries fall off after MAX_HISTORY_ENTRIES.
        """
        check_id("role", role)
        if at.tzinfo is None:
            raise ValidationError("at", "must be timezone-aware")
        if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
            raise ValidationError("parts", "must be a positive integer")
        number = self.turns_observed + 1
        ref = TurnRef(f"t{number}", role, sha256_hex(text), len(text), at)
        history = (*self.history, ref)[-MAX_HISTORY_ENTRIES:]
        return replace(
            self,
            history=history,
            turns_observed=number,
            episodes_observed=self.episodes_observed + parts,
        )

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (auth context reported apart, scopes sorted)."""
        return {
            "session_id": self.session_id,
            "user_id": self.user_id,
            "started_at": self.started_at.isoformat(),
            "initial_query": self.initial_query,
            "current_step": self.current_step,
            "last_entity_id": self.last_entity_id,
            "last_api_result": self.last_api_result.as_dict() if self.last_api_result else None,
            "action_trace": [
                {
                    "step": e.step,
                    "action_id": e.action_id,
                    "payload_hash": e.payload_hash,
                    "at": e.at.isoformat(),
                }
                for e in self.action_trace
            ],
            "pointers": dict(self.pointers),
            "history": [
                {
                    "turn_id": t.turn_id,
                    "role": t.role,
                    "text_hash": t.text_hash,
                    "chars": t.chars,
                    "at": t.at.isoformat(),
                }
                for t in self.history
            ],
            "auth_context": {
                "tenant": self.auth_context.tenant,
                "principal": self.auth_context.principal,
                "scopes": sorted(self.auth_context.scopes),
            },
        }
