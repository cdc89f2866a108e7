from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from memstrata.errors import ValidationError
from memstrata.hashing import sha256_hex
from memstrata.session import AuthContext, SessionState
from memstrata.session.state import MAX_TRACE_ENTRIES

T0 = datetime(2025, 4, 1, 8, 0, tzinfo=UTC)


def make_state(**overrides: object) -> SessionState:
    fields: dict[str, object] = {
        "session_id": "sess_abc123",
        "user_id": "u_789",
        "started_at": T0,
        "initial_query": "compare device A and B",
        "auth_context": AuthContext(tenant="acme", principal="u_789"),
    }
    fields.update(overrides)
    return SessionState(**fields)  # type: ignore[arg-type]


def test_state_is_frozen_and_slotted() -> None:
    state = make_state()
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.current_step = 3  # type: ignore[misc]
    assert not hasattr(state, "__dict__")


def test_updates_return_new_values_and_leave_the_old_intact() -> None:
    state = make_state()
    later = state.advance().with_entity("D123").with_api_result("success", {"t": [1, 2]})
    assert state.current_step == 0 and state.last_entity_id is None
    assert later.current_step == 1 and later.last_entity_id == "D123"
    assert later.last_api_result is not None
    assert later.last_api_result.as_dict() == {
        "status": "success",
        "data_hash": sha256_hex({"t": [1, 2]}),
    }


def test_trace_keeps_hashes_never_payloads() -> None:
    state = make_state().record_action("call_api", {"secret_body": "xyz"}, T0)
    (entry,) = state.action_trace
    assert entry.payload_hash == sha256_hex({"secret_body": "xyz"})
    assert "xyz" not in repr(state.as_dict())


def test_trace_is_bounded() -> None:
    state = make_state()
    for i in range(MAX_TRACE_ENTRIES + 10):
        state = state.record_action(f"a{i}", i, T0)
    assert len(state.action_trace) == MAX_TRACE_ENTRIES
    assert state.action_trace[0].action_id == "a10"


def test_auth_context_is_apart_from_business_fields() -> None:
    data = make_state().as_dict()
    assert data["auth_context"] == {"tenant": "acme", "principal": "u_789", "scopes": []}
    assert "tenant" not in {k for k in data if k != "auth_context"}


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"session_id": ""}, "session_id"),
        ({"session_id": "a{b}"}, "session_id"),
        ({"user_id": 42}, "user_id"),
        ({"initial_query": "   "}, "initial_query"),
        ({"initial_query": "x" * 9000}, "initial_query"),
        ({"started_at": datetime(2025, 1, 1)}, "started_at"),
        ({"current_step": -1}, "current_step"),
        ({"current_step": True}, "current_step"),
        ({"last_entity_id": "bad id"}, "last_entity_id"),
    ],
)
def test_bad_fields_are_rejected_by_name(overrides: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        make_state(**overrides)
    assert info.value.field == field


def test_bad_updates_are_rejected_by_name() -> None:
    state = make_state()
    with pytest.raises(ValidationError, match="status"):
        state.with_api_result("maybe", {})
    with pytest.raises(ValidationError, match="entity_id"):
        state.with_entity("x:y")
    with pytest.raises(ValidationError, match="steps"):
        state.advance(0)
