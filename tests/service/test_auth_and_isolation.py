"""Adversarial checks on a running service: keys, roles, rate limits, bad input, and a
probe of every operation with a foreign tenant's key."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from tests.service.support import (
    Caller,
    CallFailed,
    RunningServer,
    create_key,
    rest_call,
)

from memstrata.service.auth import AUDIT_STREAM
from memstrata.service.operations import OPERATIONS
from memstrata.testing.disk import files_holding
from memstrata.working.embedded import socket_path_for

MARKER = "zebra-marker-7731"
EMPTY_EXPORT = json.dumps(
    {
        "format": "memstrata-export",
        "version": 1,
        "exported_at": "2026-01-01T00:00:00+00:00",
        "scope": {"tenant": "elsewhere", "user": None},
        "source": {},
    }
)


def _minimal_payload(
    name: str,
    session_id: str,
    user: str,
    card_id: str = "0" * 32,
    job_id: str = "0" * 32,
    fact_id: str = str(uuid.UUID(int=0)),
) -> dict[str, Any]:
    """A well-formed request for each operation, addressing ``session_id`` / ``user``
    (and the trace card ``card_id``, the forget job ``job_id``, the fact ``fact_id``)."""
    tool = {"name": "probe_tool", "description": "d", "parameters": {"type": "object"}}
    payloads: dict[str, dict[str, Any]] = {
        "start_session": {"user_id": user, "initial_query": "hello"},
        "get_session": {"session_id": session_id},
        "update_session": {"session_id": session_id, "advance": 1},
        "end_session": {"session_id": session_id},
        "observe": {"session_id": session_id, "role": "user", "text": "hi"},
        "remember": {"user_id": user, "text": "hi there"},
        "flush": {"timeout_s": 30},
        "forget": {"user_id": user},
        "forget_status": {"job_id": job_id},
        "list_memories": {"user_id": user},
        "history": {"fact_id": fact_id},
        "list_users": {},
        "export_memories": {"user_id": user},
        "import_memories": {"content": EMPTY_EXPORT},
        "consolidate": {},
        "restore": {"ids": ["00000000-0000-0000-0000-000000000000"]},
        "retrieve": {"query": MARKER, "user_id": user},
        "route": {"session_id": session_id, "step_intent": "respond", "query": MARKER},
        "build_context": {
            "session_id": session_id,
            "step_intent": "respond",
            "user_input": MARKER,
            "system_prompt": "s",
        },
        "put_api_response": {"session_id": session_id, "endpoint": "e", "value": 1},
        "get_api_response": {"session_id": session_id, "endpoint": "e"},
        "put_step_result": {"session_id": session_id, "step_id": "a", "fields": {"x": 1}},
        "get_step_result": {"session_id": session_id, "step_id": "a"},
        "append_series": {
            "session_id": session_id,
            "metric": "m",
            "points": [{"timestamp": 1.0, "value": 1}],
        },
        "read_series": {"session_id": session_id, "metric": "m"},
        "add_pending": {"session_id": session_id, "task_ids": ["t"]},
        "complete_pending": {"session_id": session_id, "task_ids": ["t"]},
        "ingest_documents": {"documents": [{"name": "d.md", "text": "# D\n\ntext"}]},
        "confirm_knowledge": {"query": "q?", "response": "a", "source": "s"},
        "inspect": {"session_id": session_id},
        "create_namespace": {"namespace": f"ns-{session_id}", "purpose": "p", "ttl_s": 60},
        "list_namespaces": {},
        "request_access": {"namespace": f"ns-{session_id}", "purpose": "p"},
        "access_requests": {"namespace": f"ns-{session_id}"},
        "grant_access": {"namespace": f"ns-{session_id}", "agent": "x"},
        "revoke_access": {"namespace": f"ns-{session_id}", "agent": "x"},
        "put_shared": {"namespace": f"ns-{session_id}", "item_id": "i", "value": 1},
        "shared_items": {},
        "store_put": {"namespace": ["notes", user], "key": "k", "value": {"text": "hi"}},
        "store_get": {"namespace": ["notes", user], "key": "k"},
        "store_delete": {"namespace": ["notes", user], "key": "k"},
        "store_search": {"namespace_prefix": ["notes"], "query": MARKER},
        "store_list_namespaces": {"prefix": ["notes"]},
        "create_key": {"agent": "x", "role": "reader"},
        "revoke_key": {"key_id": "0123456789abcdef"},
        "list_keys": {},
        "list_dead_letters": {},
        "replay_dead_letter": {"dead_id": "1-0"},
        "register_tool": tool,
        "list_tools": {},
        "register_policy": {"intent": "respond"},
        "decide": {"session_id": session_id, "step_intent": "respond", "query": MARKER},
        "call_tool": {"card_id": card_id, "tool": "probe_tool", "params": {}},
        "confirm_tool": {"pending_id": card_id},
        "report_tool_result": {"card_id": card_id, "tool": "probe_tool", "ok": False},
        "check_reply": {"card_id": card_id, "reply": MARKER},
        "trace_cards": {"session_id": session_id},
        "feedback": {"card_id": card_id, "kind": "corrected", "correction": MARKER},
        "feedback_report": {},
        "health_report": {"since": "1h"},
    }
    assert set(payloads) == {op.name for op in OPERATIONS}
    return payloads[name]


@pytest.mark.parametrize("name", [op.name for op in OPERATIONS])
def test_no_key_is_401_on_every_operation(
    server: RunningServer, caller_for: Callable[[str | None], Caller], name: str
) -> None:
    call = caller_for(None)
    with pytest.raises(CallFailed) as failed:
        call(name, _minimal_payload(name, "s1", "u1"))
    assert failed.value.code == "unauthenticated"


@pytest.mark.parametrize(
    "key",
    ["not-a-key", "msk_0123456789abcdef_" + "x" * 43, "Bearer", "msk_" + "z" * 60],
    ids=["garbage", "unknown id", "scheme only", "malformed"],
)
def test_bad_keys_are_401(server: RunningServer, key: str) -> None:
    response = httpx.post(
        f"{server.url}/v1/retrieve", json={"query": "x"}, headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"
    assert response.headers["WWW-Authenticate"] == "Bearer"


def test_revoked_and_expired_keys_are_401(
    server: RunningServer, caller_for: Callable[[str | None], Caller]
) -> None:
    admin = caller_for(server.admin_keys["acme"])
    made = admin("create_key", {"agent": "short", "role": "reader"})
    key = made["key"]
    assert caller_for(key)("retrieve", {"query": "x"})["l3_skipped"] in (True, False)
    admin("revoke_key", {"key_id": made["info"]["key_id"]})
    with pytest.raises(CallFailed) as revoked:
        caller_for(key)("retrieve", {"query": "x"})
    assert revoked.value.code == "unauthenticated" and "revoked" in revoked.value.body["message"]

    expiring = create_key(
        server, server.admin_keys["acme"], agent="brief", role="reader", ttl_s=0.5
    )
    time.sleep(1.0)
    with pytest.raises(CallFailed) as expired:
        caller_for(expiring)("retrieve", {"query": "x"})
    assert expired.value.code == "unauthenticated" and "expired" in expired.value.body["message"]


def test_a_reader_cannot_write_and_a_writer_cannot_administer(
    server: RunningServer, caller_for: Callable[[str | None], Caller]
) -> None:
    reader = caller_for(create_key(server, server.admin_keys["acme"], agent="r", role="reader"))
    writer = caller_for(create_key(server, server.admin_keys["acme"], agent="w", role="writer"))
    with pytest.raises(CallFailed) as denied:
        reader("remember", {"user_id": "u", "text": "hello"})
    assert denied.value.code == "permission_denied" and denied.value.body["field"] == "role"
    with pytest.raises(CallFailed) as denied_admin:
        writer("forget", {"user_id": "u"})
    assert denied_admin.value.code == "permission_denied"
    with pytest.raises(CallFailed):
        writer("create_key", {"agent": "escalate", "role": "admin"})


def test_rate_limit_is_a_typed_429(server: RunningServer) -> None:
    key = create_key(server, server.admin_keys["acme"], agent="slow", role="reader", rate_per_s=3)
    statuses = []
    for _ in range(12):
        response = httpx.post(
            f"{server.url}/v1/retrieve",
            json={"query": "x"},
            headers={"Authorization": f"Bearer {key}"},
        )
        statuses.append(response.status_code)
        if response.status_code == 429:
            assert response.json()["error"]["code"] == "resource_exhausted"
            assert int(response.headers["Retry-After"]) >= 1
    assert 429 in statuses and statuses[0] == 200


def test_bad_input_gets_typed_errors_naming_the_field(server: RunningServer) -> None:
    call = rest_call(server, server.admin_keys["acme"])
    with pytest.raises(CallFailed) as wrong_type:
        call("retrieve", {"query": "x", "k": "many"})
    assert wrong_type.value.status == 422 and wrong_type.value.body["field"] == "k"
    with pytest.raises(CallFailed) as unknown:
        call("retrieve", {"query": "x", "kk": 3})
    assert unknown.value.body["field"] == "kk"
    with pytest.raises(CallFailed) as missing:
        call("get_session", {"session_id": "never-opened"})
    assert missing.value.status == 404 and missing.value.code == "not_found"
    oversized = httpx.post(
        f"{server.url}/v1/remember",
        content=b'{"user_id": "u", "text": "' + b"a" * (17 * 1024 * 1024) + b'"}',
        headers={
            "Authorization": f"Bearer {server.admin_keys['acme']}",
            "Content-Type": "application/json",
        },
    )
    assert oversized.status_code == 413 and oversized.json()["error"]["field"] == "body"
    not_json = httpx.post(
        f"{server.url}/v1/retrieve",
        content=b"{not json",
        headers={
            "Authorization": f"Bearer {server.admin_keys['acme']}",
            "Content-Type": "application/json",
        },
    )
    assert not_json.status_code == 422 and not_json.json()["error"]["code"] == "invalid_argument"


def test_a_foreign_tenant_finds_nothing_through_any_operation(
    server: RunningServer, caller_for: Callable[[str | None], Caller], transport: str
) -> None:
    tag = uuid.uuid4().hex[:8]
    owner = caller_for(server.admin_keys["acme"])
    sid, user = f"private-{tag}", f"alice-{tag}"
    owner("start_session", {"user_id": user, "initial_query": "secret plans", "session_id": sid})
    owner("observe", {"session_id": sid, "role": "user", "text": f"My code word is {MARKER}."})
    owner("remember", {"user_id": user, "text": f"I keep {MARKER} in my notes.", "wait": True})
    owner("remember", {"user_id": user, "text": f"I live in {MARKER}.", "wait": True})
    owner("put_api_response", {"session_id": sid, "endpoint": "e", "value": MARKER})
    owner("put_step_result", {"session_id": sid, "step_id": "a", "fields": {"x": MARKER}})
    owner("add_pending", {"session_id": sid, "task_ids": ["t"]})
    owner("ingest_documents", {"documents": [{"name": f"{tag}.md", "text": f"# K\n\n{MARKER}"}]})
    owner("create_namespace", {"namespace": f"ns-{sid}", "purpose": MARKER, "ttl_s": 600})
    owner("put_shared", {"namespace": f"ns-{sid}", "item_id": "i", "value": MARKER})
    owner("store_put", {"namespace": ["notes", user], "key": "k", "value": {"m": MARKER}})
    owner("register_tool", {"name": f"t{tag}", "description": MARKER, "parameters": {}})
    card_id = owner("decide", {"session_id": sid, "step_intent": "respond", "question": MARKER})[
        "card_id"
    ]
    job_id = owner("forget", {"user_id": f"nobody-{tag}"})["job_id"]
    listed = owner("list_memories", {"user_id": user, "kind": "fact"})["items"]
    fact_id = next(item["id"] for item in listed if MARKER in str(item))

    probe = caller_for(server.admin_keys["globex"])
    for op in OPERATIONS:
        payload = _minimal_payload(op.name, sid, user, card_id, job_id, fact_id)
        try:
            response = probe(op.name, payload)
        except CallFailed as failed:
            if op.name == "health_report":  # the operator's only, whatever the data
                assert (failed.code, failed.body["field"]) == ("permission_denied", "tenant")
                continue
            # The same answer as for a session that was never opened.
            assert failed.code == "not_found", (op.name, failed.body)
            assert failed.body["message"] in (
                f"session {sid!r} is not open",
                "api key '0123456789abcdef' does not exist",
                f"namespace 'ns-{sid}' does not exist",
                f"no decision {card_id!r} is held: decide the step again",
                f"no pending call {card_id!r}",
                f"no trace card {card_id!r}",
                f"no forget job {job_id!r}",
                f"fact_id: no fact {fact_id} in this tenant",
                "dead letter '1-0' does not exist",
            )
            continue
        assert MARKER not in str(response), op.name
    # Forgetting the owner's store namespace from the other tenant deletes nothing.
    dropped = probe("forget", {"store_namespace": ["notes", user], "wait": True})
    assert dropped["report"]["points_deleted"] == 0
    # The owner's data survived the probe (its forget ran in the other tenant).
    found = owner("retrieve", {"query": MARKER, "user_id": user})
    assert any(MARKER in item["text"] for item in found["items"])
    assert MARKER in str(owner("get_api_response", {"session_id": sid, "endpoint": "e"}))
    assert MARKER in str(owner("store_get", {"namespace": ["notes", user], "key": "k"}))


def test_key_use_is_audited_by_id_and_no_key_reaches_disk(server: RunningServer) -> None:
    key = create_key(server, server.admin_keys["acme"], agent="audited", role="reader")
    key_id = key.split("_")[1]
    rest_call(server, key)("retrieve", {"query": "x"})
    client = redis.Redis(
        unix_socket_path=str(socket_path_for((server.data_dir / "valkey").resolve())),
        decode_responses=True,
    )
    try:
        entries = [fields for _, fields in client.xrevrange(AUDIT_STREAM, count=200)]
        assert any(e["key_id"] == key_id and e["operation"] == "retrieve" for e in entries)
        assert all(key not in str(e) for e in entries)
        client.execute_command("BGREWRITEAOF")
        time.sleep(0.5)
    finally:
        client.close()
    secret = key.split("_", 2)[2]
    assert files_holding(Path(server.data_dir), secret) == []


def test_clearance_and_namespace_access_follow_the_key(server: RunningServer) -> None:
    tag = uuid.uuid4().hex[:8]
    admin = rest_call(server, server.admin_keys["acme"])
    owner_key = create_key(server, server.admin_keys["acme"], agent=f"fc-{tag}", role="writer")
    peer_key = create_key(server, server.admin_keys["acme"], agent=f"lp-{tag}", role="writer")
    low_key = create_key(
        server, server.admin_keys["acme"], agent=f"lp-{tag}", role="reader", clearance="low"
    )
    outsider = rest_call(
        server, create_key(server, server.admin_keys["acme"], agent=f"out-{tag}", role="writer")
    )
    owner, peer, low = (
        rest_call(server, owner_key),
        rest_call(server, peer_key),
        rest_call(server, low_key),
    )
    ns = f"weather-{tag}"
    admin(
        "create_namespace",
        {"namespace": ns, "purpose": "weather", "ttl_s": 600, "owner": f"fc-{tag}"},
    )
    owner("put_shared", {"namespace": ns, "item_id": "w", "value": {"alert": MARKER}})
    owner("put_shared", {"namespace": ns, "item_id": "pub", "value": "rain", "level": "low"})

    # Before a grant the peer sees nothing; the request is recorded for the owner.
    assert peer("list_namespaces", {})["namespaces"] == []
    peer("request_access", {"namespace": ns, "purpose": "load planning"})
    assert [r["agent"] for r in owner("access_requests", {"namespace": ns})["requests"]] == [
        f"lp-{tag}"
    ]
    with pytest.raises(CallFailed) as not_owner:
        peer("grant_access", {"namespace": ns, "agent": f"lp-{tag}"})
    assert not_owner.value.code == "not_found"
    owner("grant_access", {"namespace": ns, "agent": f"lp-{tag}"})

    sid = f"plan-{tag}"
    peer("start_session", {"user_id": "ops", "initial_query": "load plan", "session_id": sid})
    bundle = peer("route", {"session_id": sid, "step_intent": "respond", "query": "weather"})
    sources = {i["source"]: i["level"] for i in bundle["items"]}
    assert sources[f"namespace:{ns}"] == "medium" and "session" in sources

    # The same agent with a low-clearance key: nothing above low, in bundle or messages.
    low_bundle = low("route", {"session_id": sid, "step_intent": "respond", "query": "weather"})
    assert low_bundle["items"] and {i["level"] for i in low_bundle["items"]} == {"low"}
    built = low(
        "build_context",
        {
            "session_id": sid,
            "step_intent": "respond",
            "user_input": "weather?",
            "system_prompt": "s",
        },
    )
    text = str(built["messages"])
    assert MARKER not in text and "rain" in text and "load plan" not in text

    # The outsider learns nothing of the namespace.
    assert outsider("list_namespaces", {})["namespaces"] == []
    assert all(i["namespace"] != ns for i in outsider("shared_items", {})["items"])
    for op, payload in (
        ("put_shared", {"namespace": ns, "item_id": "x", "value": 1}),
        ("access_requests", {"namespace": ns}),
        ("grant_access", {"namespace": ns, "agent": f"out-{tag}"}),
    ):
        with pytest.raises(CallFailed) as refused:
            outsider(op, payload)
        assert refused.value.body["message"] == f"namespace {ns!r} does not exist", op
