"""Clearance applies to every read, and a key grants at most its own role and
clearance (issue 23, "Why" case 6), through the service in this process.

The service is the one every transport calls (``Service.call``), over a real engine:
embedded Valkey, qdrant-edge and MiniLM.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Settings
from memstrata.engine import ContextEngine
from memstrata.errors import MemstrataError, NotFoundError, PermissionDeniedError
from memstrata.service.auth import KeyStore
from memstrata.service.core import Service, error_body
from memstrata.service.operations import OPERATIONS
from memstrata.service.server import open_service
from memstrata.service.wire import dump

SECRET_DOC = "Reactor 7 override code procedure: hold both levers for ten seconds."
PUBLIC_DOC = "Reactor 7 visitor hours are nine to five on weekdays."


@dataclass
class Desk:
    service: Service
    keys: KeyStore
    admin: str

    def key(self, role: str, clearance: str, agent: str = "agent") -> str:
        return self.keys.create("default", agent, role, clearance=clearance).key

    def call(self, key: str, name: str, payload: dict[str, Any]) -> dict[str, Any]:
        return dump(self.service.call(name, key, payload))


@pytest.fixture
def desk(engine_opener: Callable[..., ContextEngine], tmp_path: Path) -> Iterator[Desk]:
    data_dir = tmp_path / "data"
    engine = engine_opener(data_dir)
    running = open_service(Settings(data_dir=data_dir), engine=engine)
    assert running.admin_key_file is not None
    admin = running.admin_key_file.read_text().strip()
    yield Desk(running.service, running.keys, admin)
    running.close()


def _denied(desk: Desk, key: str, name: str, payload: dict[str, Any]) -> PermissionDeniedError:
    with pytest.raises(PermissionDeniedError) as refused:
        desk.call(key, name, payload)
    return refused.value


def test_retrieve_on_knowledge_keeps_a_high_document_from_a_low_reader(desk: Desk) -> None:
    desk.call(
        desk.admin,
        "ingest_documents",
        {"documents": [{"name": "ops/override.md", "text": f"# Override\n\n{SECRET_DOC}"}]}
        | {"level": "high"},
    )
    desk.call(
        desk.admin,
        "ingest_documents",
        {"documents": [{"name": "ops/visitors.md", "text": f"# Visitors\n\n{PUBLIC_DOC}"}]},
    )
    query = {"query": "reactor 7 override code procedure", "collection": "knowledge", "k": 10}
    seen = {
        clearance: str(desk.call(desk.key("reader", clearance), "retrieve", query))
        for clearance in ("low", "medium", "high")
    }
    assert "override code" in seen["high"]  # the scan is not blind
    for clearance in ("low", "medium"):
        assert "override code" not in seen[clearance], clearance
        assert "visitor hours" in seen[clearance]  # its own level still comes back


def test_retrieve_on_memories_follows_the_memory_level(desk: Desk) -> None:
    desk.call(desk.admin, "remember", {"user_id": "u1", "text": "I keep bees.", "wait": True})
    query = {"query": "what do I keep", "user_id": "u1"}
    low = desk.call(desk.key("reader", "low"), "retrieve", query)
    medium = desk.call(desk.key("reader", "medium"), "retrieve", query)
    assert not low["items"] and not low["below_threshold"]  # memories are medium
    assert any("bees" in item["text"] for item in medium["items"])


def test_a_low_reader_reads_neither_l1_nor_l2_directly(desk: Desk) -> None:
    sid = "ops-1"
    desk.call(
        desk.admin, "start_session", {"user_id": "u1", "initial_query": "q", "session_id": sid}
    )
    desk.call(desk.admin, "put_api_response", {"session_id": sid, "endpoint": "crm", "value": 7})
    desk.call(
        desk.admin, "put_step_result", {"session_id": sid, "step_id": "s1", "fields": {"a": 1}}
    )
    desk.call(
        desk.admin,
        "append_series",
        {"session_id": sid, "metric": "temp", "points": [{"timestamp": 1.0, "value": 3}]},
    )
    l1 = [
        ("get_session", {"session_id": sid}),
        ("inspect", {"session_id": sid}),
        ("update_session", {"session_id": sid, "advance": 1}),
        ("end_session", {"session_id": sid}),
    ]
    l2 = [
        ("get_api_response", {"session_id": sid, "endpoint": "crm"}),
        ("get_step_result", {"session_id": sid, "step_id": "s1"}),
        ("read_series", {"session_id": sid, "metric": "temp"}),
        ("add_pending", {"session_id": sid, "task_ids": ["t"]}),
        ("complete_pending", {"session_id": sid, "task_ids": ["t"]}),
        ("trace_cards", {"session_id": sid}),
        ("feedback_report", {}),
    ]
    low = desk.key("writer", "low", "low-agent")
    medium = desk.key("writer", "medium", "medium-agent")
    for name, payload in [*l1, *l2]:
        refused = _denied(desk, low, name, payload)
        assert refused.field == "clearance" and "low" in refused.reason, name
        # The same answer for a session nobody opened: nothing about existence leaks.
        other = {**payload, "session_id": "never-opened"} if "session_id" in payload else payload
        assert str(_denied(desk, low, name, other)) == str(refused), name
    for name, payload in l1:
        assert _denied(desk, medium, name, payload).field == "clearance", name
    # Medium clearance reads L2 (medium), as a bundle would give it.
    assert desk.call(medium, "get_api_response", l2[0][1])["value"] == 7
    assert desk.call(medium, "read_series", l2[2][1])["points"]
    # The high key (the default) reads L1 as before.
    assert desk.call(desk.key("reader", "high"), "get_session", {"session_id": sid})
    # A low key still writes into a session it may not read back.
    assert desk.call(low, "observe", {"session_id": sid, "role": "user", "text": "hello"})


def test_the_item_store_needs_medium_clearance(desk: Desk) -> None:
    item = {"namespace": ["notes", "u1"], "key": "k"}
    desk.call(desk.admin, "store_put", {**item, "value": {"text": "door code 4471"}})
    low = desk.key("reader", "low")
    for name, payload in (
        ("store_get", item),
        ("store_search", {"namespace_prefix": ["notes"], "query": "door code"}),
        ("store_list_namespaces", {}),
    ):
        assert _denied(desk, low, name, payload).field == "clearance", name
    medium = desk.key("reader", "medium")
    assert desk.call(medium, "store_get", item)["item"]["value"]["text"] == "door code 4471"


def test_a_key_grants_at_most_its_own_role_and_clearance(desk: Desk) -> None:
    low_admin = desk.key("admin", "low", "low-admin")
    refused = _denied(desk, low_admin, "create_key", {"agent": "up", "role": "admin"})
    assert refused.field == "clearance"  # the default clearance, high, is above low
    refused = _denied(
        desk, low_admin, "create_key", {"agent": "up", "role": "reader", "clearance": "medium"}
    )
    assert refused.field == "clearance"
    made = desk.call(
        low_admin, "create_key", {"agent": "down", "role": "writer", "clearance": "low"}
    )
    assert made["info"]["clearance"] == "low" and made["info"]["role"] == "writer"
    medium_admin = desk.key("admin", "medium", "medium-admin")
    assert (
        desk.call(
            medium_admin, "create_key", {"agent": "peer", "role": "admin", "clearance": "medium"}
        )["info"]["role"]
        == "admin"
    )
    # Below admin no key is made at all (the role check comes first).
    writer = desk.key("writer", "high", "writer")
    assert _denied(desk, writer, "create_key", {"agent": "x", "role": "reader"}).field == "role"


def test_shared_items_and_bundles_stay_within_clearance(desk: Desk) -> None:
    desk.call(desk.admin, "create_namespace", {"namespace": "ops", "purpose": "ops", "ttl_s": 600})
    desk.call(desk.admin, "grant_access", {"namespace": "ops", "agent": "low-agent"})
    desk.call(desk.admin, "put_shared", {"namespace": "ops", "item_id": "h", "value": "vault 9"})
    desk.call(
        desk.admin,
        "put_shared",
        {"namespace": "ops", "item_id": "l", "value": "lobby open", "level": "low"},
    )
    low = desk.key("reader", "low", "low-agent")
    shared = str(desk.call(low, "shared_items", {}))
    assert "lobby open" in shared and "vault 9" not in shared
    desk.call(
        desk.admin, "start_session", {"user_id": "u", "initial_query": "q", "session_id": "b"}
    )
    bundle = desk.call(low, "route", {"session_id": "b", "step_intent": "respond", "query": "x"})
    assert {item["level"] for item in bundle["items"]} == {"low"}
    with pytest.raises(NotFoundError):  # not a clearance matter: no such session
        desk.call(low, "route", {"session_id": "none", "step_intent": "respond"})


def test_a_low_writer_waiting_on_remember_gets_no_value_of_a_medium_memory(desk: Desk) -> None:
    """Issue 31, "Why" case 5: the merged fact "tangerinemarble; red; purple" came back
    to a low-clearance writer, two of its values from a medium-level memory."""
    medium = desk.key("writer", "medium", "medium-writer")
    desk.call(medium, "remember", {"user_id": "u1", "text": "I like red and purple.", "wait": True})
    said = {"user_id": "u1", "text": "My favorite color is tangerinemarble.", "wait": True}
    low = desk.call(desk.key("writer", "low", "low-writer"), "remember", said)
    assert low["queued"] and low["episode_ids"]  # the write is acknowledged as ever
    assert low["facts"] == [] and low["episodes"] == []  # memories are medium-level
    assert "purple" not in json.dumps(low) and "red" not in json.dumps(low)
    # A key cleared for memories reads the merged fact back, as before.
    again = desk.call(medium, "remember", {**said, "text": "My favorite color is teal."})
    likes = [f["value"] for f in again["facts"] if f["attribute"] == "likes" and f["active"]]
    assert likes and {"purple", "teal"} <= set(likes[0].split("; ")), again["facts"]


MARK = "zebrine"
"""Every value a high-clearance key stores below starts with it."""


def test_no_answer_of_any_operation_carries_what_a_low_key_may_not_read(desk: Desk) -> None:
    """Issue 31, "Why" case 5: a low-clearance writer's ``remember`` (wait) answered
    the merged fact with a value a medium-level memory held. Every operation of the
    capability table, called through the lowest clearance after a high-clearance key
    stored a marker in each layer (a memory, L1, L2, a trace card, a high document, a
    shared item, the item store, feedback), answers nothing that carries the marker:
    neither its result nor its error."""
    high, sid = desk.admin, "hi-1"
    # -- the high key stores a marker everywhere a leveled value lives
    desk.call(
        high, "remember", {"user_id": "u1", "text": f"I like red and {MARK}violet.", "wait": True}
    )
    desk.call(
        high,
        "start_session",
        {"user_id": "u1", "initial_query": f"plan {MARK}query", "session_id": sid},
    )
    desk.call(
        high,
        "update_session",
        {"session_id": sid, "entity_id": f"{MARK}entity", "pointers": {"order": f"{MARK}pointer"}},
    )
    desk.call(
        high, "put_api_response", {"session_id": sid, "endpoint": "crm", "value": f"{MARK}api"}
    )
    desk.call(
        high,
        "put_step_result",
        {"session_id": sid, "step_id": "s1", "fields": {"a": f"{MARK}step"}},
    )
    desk.call(high, "add_pending", {"session_id": sid, "task_ids": [f"{MARK}task"]})
    tool = {
        "name": "lookup",
        "description": "Look the device up",
        "parameters": {"type": "object", "properties": {"device_id": {"type": "string"}}},
        "bound": {"device_id": "l1.last_entity_id"},
    }
    desk.call(high, "register_tool", tool)
    desk.call(
        high, "register_tool", {**tool, "name": "refund", "high_impact": True, "risk": "high"}
    )
    desk.call(
        high,
        "register_policy",
        {
            "intent": "call_api",
            "evidence": ["api_cache"],
            "slots": [{"name": "device", "sources": ["l1.last_entity_id"], "question": "Which?"}],
            "tool": "lookup",
            "tool_params": {"device_id": "device"},
        },
    )
    card = desk.call(
        high,
        "decide",
        {"session_id": sid, "step_intent": "call_api", "question": f"{MARK}question?"},
    )["card_id"]
    held = desk.call(
        high,
        "call_tool",
        {"card_id": card, "tool": "refund", "params": {"device_id": f"{MARK}entity"}},
    )
    desk.call(
        high, "feedback", {"card_id": card, "kind": "corrected", "correction": f"{MARK}correction"}
    )
    desk.call(
        high,
        "ingest_documents",
        {
            "documents": [
                {"name": "ops/secret.md", "text": f"# Vault\n\nThe vault word is {MARK}vault."}
            ],
            "level": "high",
        },
    )
    desk.call(high, "create_namespace", {"namespace": "ops", "purpose": "ops", "ttl_s": 600})
    desk.call(high, "grant_access", {"namespace": "ops", "agent": "low-admin"})
    desk.call(high, "put_shared", {"namespace": "ops", "item_id": "h", "value": f"{MARK}shared"})
    desk.call(
        high,
        "store_put",
        {"namespace": ["notes", "u1"], "key": "k", "value": {"text": f"{MARK}item"}},
    )
    desk.call(high, "flush", {"timeout_s": 60})

    # -- the lowest clearance calls every operation on the same tenant, session and card
    low = desk.key("admin", "low", "low-admin")
    payloads: dict[str, dict[str, Any]] = {
        "start_session": {"user_id": "u1", "initial_query": "hello", "session_id": sid},
        "get_session": {"session_id": sid},
        "update_session": {"session_id": sid, "advance": 1},
        "end_session": {"session_id": sid},
        "observe": {"session_id": sid, "role": "user", "text": "hello"},
        # The case: the merged fact held the medium memory's value.
        "remember": {
            "user_id": "u1",
            "text": "My favorite color is tangerinemarble.",
            "wait": True,
        },
        "flush": {"timeout_s": 60},
        "forget": {"ids": ["00000000-0000-0000-0000-000000000000"], "wait": True},
        "forget_status": {"job_id": "none"},
        "retrieve": {"query": "what do I like", "user_id": "u1", "k": 10},
        "list_memories": {"user_id": "u1"},
        "history": {"fact_id": "00000000-0000-0000-0000-000000000000"},
        "list_users": {},
        "export_memories": {"user_id": "u1"},
        "import_memories": {"content": '{"format": "memstrata-export", "version": 1}'},
        "route": {"session_id": sid, "step_intent": "respond", "query": "what do I like"},
        "build_context": {
            "session_id": sid,
            "step_intent": "respond",
            "user_input": "what do I like and which device",
            "system_prompt": "You help.",
        },
        "consolidate": {},
        "restore": {"ids": ["00000000-0000-0000-0000-000000000000"]},
        "put_api_response": {"session_id": sid, "endpoint": "other", "value": 1},
        "get_api_response": {"session_id": sid, "endpoint": "crm"},
        "put_step_result": {"session_id": sid, "step_id": "s2", "fields": {"b": 1}},
        "get_step_result": {"session_id": sid, "step_id": "s1"},
        "append_series": {
            "session_id": sid,
            "metric": "t",
            "points": [{"timestamp": 1.0, "value": 1}],
        },
        "read_series": {"session_id": sid, "metric": "t"},
        "add_pending": {"session_id": sid, "task_ids": ["t2"]},
        "complete_pending": {"session_id": sid, "task_ids": ["t2"]},
        "inspect": {"session_id": sid},
        "ingest_documents": {"documents": [{"name": "pub.md", "text": "# Lobby\n\nOpen at nine."}]},
        "confirm_knowledge": {"query": "when is the lobby open", "response": "nine", "source": "t"},
        "create_namespace": {"namespace": "low-ns", "purpose": "p", "ttl_s": 600},
        "list_namespaces": {},
        "request_access": {"namespace": "ops", "purpose": "read", "mode": "read"},
        "access_requests": {"namespace": "ops"},
        "grant_access": {"namespace": "low-ns", "agent": "x"},
        "revoke_access": {"namespace": "low-ns", "agent": "x"},
        "put_shared": {"namespace": "ops", "item_id": "l", "value": "low note", "level": "low"},
        "shared_items": {},
        "store_put": {"namespace": ["notes", "u2"], "key": "k", "value": {"text": "low"}},
        "store_get": {"namespace": ["notes", "u1"], "key": "k"},
        "store_delete": {"namespace": ["notes", "u2"], "key": "k"},
        "store_search": {"namespace_prefix": ["notes"], "query": "item"},
        "store_list_namespaces": {},
        "register_tool": {**tool, "name": "lowtool"},
        "list_tools": {},
        "register_policy": {"intent": "low_intent"},
        "decide": {"session_id": sid, "step_intent": "call_api", "question": "status?"},
        "call_tool": {"card_id": card},
        "confirm_tool": {"pending_id": held["pending_id"], "confirmed": False},
        "report_tool_result": {"card_id": card, "tool": "lookup", "ok": True},
        "check_reply": {"card_id": card, "reply": "You like blue; the device is d-1."},
        "feedback": {"card_id": card, "kind": "rating", "rating": 3},
        "trace_cards": {"session_id": sid},
        "feedback_report": {},
        "health_report": {"since": "1h"},
        "create_key": {"agent": "low-made", "role": "reader", "clearance": "low"},
        "list_keys": {},
        "revoke_key": {"key_id": "0123456789abcdef"},
        "list_dead_letters": {},
        "replay_dead_letter": {"dead_id": "1-0"},
    }
    assert set(payloads) == {op.name for op in OPERATIONS}, "an operation is not called"
    leaks = {}
    for name, payload in payloads.items():
        try:
            body: Any = desk.call(low, name, payload)
        except MemstrataError as exc:
            body = error_body(exc)
        if MARK in json.dumps(body, default=str):
            leaks[name] = body
    assert not leaks, leaks
    # The scan is not blind: the same reads by a high key do carry the marker.
    for name in (
        "remember",
        "decide",
        "get_session",
        "inspect",
        "get_api_response",
        "get_step_result",
        "trace_cards",
        "feedback_report",
        "store_get",
        "store_search",
        "build_context",
        "list_memories",
        "export_memories",
    ):
        assert MARK in json.dumps(desk.call(high, name, payloads[name]), default=str), name
    vault = {"query": "the vault word", "collection": "knowledge"}
    assert f"{MARK}vault" in json.dumps(desk.call(high, "retrieve", vault))
    assert f"{MARK}vault" not in json.dumps(desk.call(low, "retrieve", vault))
    assert f"{MARK}shared" in json.dumps(
        desk.call(desk.key("reader", "high", "low-admin"), "shared_items", {})
    )
