"""Sessions (L1): start, read, change, end, inspect."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from memstrata.errors import ConflictError, NotFoundError
from memstrata.permissions import L1_LEVEL
from memstrata.service import convert
from memstrata.service import wire as m
from memstrata.service.capability import (
    SESSION_ERRORS,
    Call,
    Operation,
)
from memstrata.service.ops.clearance import require
from memstrata.session import SessionState


def _start_session(call: Call, req: m.StartSessionRequest) -> m.Session:
    sid = req.session_id or f"s_{uuid.uuid4().hex}"
    begun = call.clock.now()
    if req.session_id is not None and _is_open(call, sid):
        # Starting an open session again returns its state: the clearance reading it needs.
        require(call, L1_LEVEL, "an open session's L1 state (starting it again returns it)")
    try:
        state = call.engine.start_session(
            req.user_id,
            req.initial_query,
            tenant=call.caller.tenant,
            session_id=call.engine_session_id(sid),
        )
    except ConflictError as exc:
        if exc.field == "session_id":  # the engine's message names its own id
            raise ConflictError(
                f"session {sid!r} is open for another user", field="session_id"
            ) from None
        raise
    if state.started_at < begun:  # opened meanwhile by another call: not this one's
        require(call, L1_LEVEL, "an open session's L1 state (starting it again returns it)")
    return convert.session_out(state, sid)


def _is_open(call: Call, sid: str) -> bool:
    try:
        call.session(sid)
    except NotFoundError:
        return False
    return True


def _get_session(call: Call, req: m.SessionRef) -> m.Session:
    require(call, L1_LEVEL, "a session's L1 state")
    return convert.session_out(call.session(req.session_id), req.session_id)


def _apply_update(
    req: m.UpdateSessionRequest, now: datetime
) -> Callable[[SessionState], SessionState]:
    def change(state: SessionState) -> SessionState:
        if req.advance is not None:
            state = state.advance(req.advance)
        if req.entity_id is not None:
            state = state.with_entity(req.entity_id)
        for name, target in (req.pointers or {}).items():
            state = state.with_pointer(name, target)
        if req.api_result is not None:
            state = state.with_api_result(req.api_result.status, req.api_result.data)
        if req.action is not None:
            state = state.record_action(req.action.action_id, req.action.payload, now)
        return state

    return change


def _update_session(call: Call, req: m.UpdateSessionRequest) -> m.Session:
    require(call, L1_LEVEL, "a session's L1 state (the update returns it)")
    call.session(req.session_id)
    state = call.engine.update_session(
        call.engine_session_id(req.session_id), _apply_update(req, call.clock.now())
    )
    return convert.session_out(state, req.session_id)


def _end_session(call: Call, req: m.SessionRef) -> m.Session:
    require(call, L1_LEVEL, "a session's L1 state (ending returns it)")
    call.session(req.session_id)
    state = call.engine.end_session(call.engine_session_id(req.session_id))
    return convert.session_out(state, req.session_id)


def _inspect(call: Call, req: m.SessionRef) -> m.InspectOut:
    require(call, L1_LEVEL, "what is held for a session (L1 and L2)")
    # L1 lives in the serving process only: a session closed (or opened by another
    # process, e.g. an application on the CLI's data directory) still has its L2 keys
    # until their TTLs. They are read under the id keyed for the caller's tenant, so
    # another tenant's session reads as empty, exactly as one never opened.
    try:
        state: SessionState | None = call.session(req.session_id)
    except NotFoundError:
        state = None
    engine_id = call.engine_session_id(req.session_id)
    report = call.engine.inspect(engine_id)
    return convert.inspect_out(report, state, req.session_id, engine_id)


OPERATIONS: tuple[Operation[Any, Any], ...] = (
    Operation(
        "start_session",
        "Open a session (L1 state lives in the serving process); starting an id that "
        "is open for the same user returns that session.",
        m.StartSessionRequest,
        m.Session,
        "writer",
        _start_session,
        (ConflictError,),
    ),
    Operation(
        "get_session",
        "A session's L1 state.",
        m.SessionRef,
        m.Session,
        "reader",
        _get_session,
        SESSION_ERRORS,
    ),
    Operation(
        "update_session",
        "Advance a session, point it at an entity, record a result.",
        m.UpdateSessionRequest,
        m.Session,
        "writer",
        _update_session,
        SESSION_ERRORS,
    ),
    Operation(
        "end_session",
        "Close a session; its L2 keys expire on their TTLs.",
        m.SessionRef,
        m.Session,
        "writer",
        _end_session,
        SESSION_ERRORS,
    ),
    Operation(
        "inspect",
        "What memstrata holds for a session: L1 (while open) and its live L2 keys "
        "(none for a session never opened, or another tenant's).",
        m.SessionRef,
        m.InspectOut,
        "reader",
        _inspect,
    ),
)
