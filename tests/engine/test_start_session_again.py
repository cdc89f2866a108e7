"""``start_session`` with an id already open: the same user's start returns that
session (a retried start is safe); another user's or tenant's is a typed conflict."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memstrata.engine import ContextEngine
from memstrata.errors import ConflictError


def test_starting_an_open_session_again(engine_opener: Callable[..., ContextEngine]) -> None:
    engine = engine_opener()
    engine.start_session("u1", "where is my order", session_id="desk-1", tenant="acme")
    moved = engine.update_session("desk-1", lambda state: state.with_entity("order-7"))
    again = engine.start_session("u1", "retry", session_id="desk-1", tenant="acme")
    assert again == moved and again.last_entity_id == "order-7"
    assert again.initial_query == "where is my order"
    with pytest.raises(ConflictError) as other_user:
        engine.start_session("u2", "hi", session_id="desk-1", tenant="acme")
    with pytest.raises(ConflictError) as other_tenant:
        engine.start_session("u1", "hi", session_id="desk-1", tenant="globex")
    for taken in (other_user.value, other_tenant.value):
        assert taken.field == "session_id" and "desk-1" in str(taken)
    assert engine.session("desk-1") == moved
