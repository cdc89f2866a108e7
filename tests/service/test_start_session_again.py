"""``start_session`` with an id already open, through every transport: the same user
gets the session (idempotent), another user a typed conflict naming the field."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
from tests.service.support import Caller, CallFailed, RunningServer


def test_starting_an_open_session_again(
    server: RunningServer, transport: str, caller_for: Callable[[str | None], Caller]
) -> None:
    call = caller_for(server.admin_keys["acme"])
    sid = f"again-{transport}-{uuid.uuid4().hex[:8]}"
    first = call("start_session", {"user_id": "ines", "initial_query": "hi", "session_id": sid})
    call("update_session", {"session_id": sid, "advance": 3})
    again = call("start_session", {"user_id": "ines", "initial_query": "retry", "session_id": sid})
    assert again["session_id"] == sid and again["initial_query"] == first["initial_query"]
    assert again["current_step"] == first["current_step"] + 3
    with pytest.raises(CallFailed) as taken:
        call("start_session", {"user_id": "other", "initial_query": "hi", "session_id": sid})
    assert taken.value.code == "aborted" and taken.value.body["field"] == "session_id"
    # Another tenant's same id is its own session (ids live in the caller's tenant).
    theirs = caller_for(server.admin_keys["globex"])(
        "start_session", {"user_id": "other", "initial_query": "hi", "session_id": sid}
    )
    assert theirs["session_id"] == sid and theirs["current_step"] == 0
