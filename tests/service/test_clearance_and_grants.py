"""Clearance applies to every read, and a key grants at most its own role and
clearance (issue 23, "Why" case 6), through the service in this process.

The service is the one every transport calls (``Service.call``), over a real engine:
embedded Valkey, qdrant-edge and MiniLM.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memstrata.config import Settings
from memstrata.engine import ContextEngine
from memstrata.errors import NotFoundError, PermissionDeniedError
from memstrata.service.auth import KeyStore
from memstrata.service.core import Service
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
