"""Every operation of the capability table, end to end, over REST, gRPC and MCP,
against a running ``memstrata serve``."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from tests.service.support import Caller, CallFailed, RunningServer

from memstrata.service.operations import OPERATIONS


class Recording:
    """Calls operations and remembers which ones were called."""

    def __init__(self, call: Caller) -> None:
        self._call = call
        self.called: set[str] = set()

    def __call__(self, operation: str, /, **payload: Any) -> dict[str, Any]:
        self.called.add(operation)
        response = self._call(operation, payload)
        # Every response is the operation's response model.
        op = next(o for o in OPERATIONS if o.name == operation)
        op.response.model_validate(response)
        return response


def test_every_operation(
    server: RunningServer, caller_for: Callable[[str | None], Caller], transport: str
) -> None:
    call = Recording(caller_for(server.admin_keys["acme"]))
    tag = uuid.uuid4().hex[:8]
    user, sid = f"u-{transport}-{tag}", f"s-{transport}-{tag}"

    # Keys: an admin makes a writer key, lists it, revokes it.
    made = call("create_key", agent=f"bot-{tag}", role="writer")
    assert made["key"].startswith("msk_") and made["info"]["tenant"] == "acme"
    listed = call("list_keys")
    assert made["info"]["key_id"] in {k["key_id"] for k in listed["keys"]}
    assert all("hash" not in k and "key" not in k for k in listed["keys"])
    assert call("revoke_key", key_id=made["info"]["key_id"])["revoked"] is True

    # Dead letters: the tenant's (none here); an unknown id is not found.
    assert call("list_dead_letters", limit=10)["dead_letters"] == []
    with pytest.raises(CallFailed) as unknown:
        call("replay_dead_letter", dead_id="1-0")
    assert unknown.value.code == "not_found"

    # L1
    session = call("start_session", user_id=user, initial_query="plan a trip", session_id=sid)
    assert session["session_id"] == sid and session["user_id"] == user
    assert call("get_session", session_id=sid)["current_step"] == 0
    updated = call(
        "update_session",
        session_id=sid,
        advance=2,
        entity_id="device-7",
        pointers={"order": "o-1"},
        api_result={"status": "success", "data": {"ok": True}},
        action={"action_id": "lookup", "payload": {"q": 1}},
    )
    assert updated["current_step"] == 2 and updated["last_entity_id"] == "device-7"
    assert updated["pointers"] == {"order": "o-1"} and len(updated["action_trace"]) == 1

    # L3 writes
    for text in ("I live in Hangzhou.", "I'm allergic to peanuts and shellfish."):
        receipt = call("observe", session_id=sid, role="user", text=text)
        assert receipt["queued"] is True and len(receipt["episode_ids"]) == 1
    remembered = call(
        "remember", user_id=user, text="My budget for the trip is 5000 yuan.", wait=True
    )
    assert [f["attribute"] for f in remembered["facts"]] == ["budget"]
    assert remembered["episodes"][0]["text"] == "My budget for the trip is 5000 yuan."
    assert call("flush", timeout_s=60) == {"flushed": True}  # the observed turns too

    # Listing: the user's memories without a query, a fact's history, the users.
    page = call("list_memories", user_id=user, page_size=2)
    assert len(page["items"]) == 2 and page["next_page"]
    rest = call("list_memories", user_id=user, page=page["next_page"], page_size=50)
    listed = page["items"] + rest["items"]
    assert {i["kind"] for i in listed} == {"episode", "fact"}
    budget = next(i for i in listed if i["kind"] == "fact" and i["fact"]["attribute"] == "budget")
    assert budget["episodes"][0]["text"] == "My budget for the trip is 5000 yuan."
    history = call("history", fact_id=budget["id"])
    assert [v["id"] for v in history["versions"]] == [budget["id"]]
    assert user in {u["user"] for u in call("list_users")["users"]}

    # Retrieval, routing, context
    found = call("retrieve", query="what am I allergic to", user_id=user, k=3)
    assert any("peanuts" in item["text"] for item in found["items"])
    bundle = call("route", session_id=sid, step_intent="respond", query="my allergies")
    assert bundle["session_id"] == sid
    assert any(i["layer"] == "L3" and "peanuts" in str(i["content"]) for i in bundle["items"])
    built = call(
        "build_context",
        session_id=sid,
        step_intent="respond",
        user_input="Recommend a restaurant that is safe for my allergies.",
        system_prompt="You are a travel assistant.",
        history=[{"role": "user", "content": "hello"}],
        tool_results=[{"call_id": "c1", "name": "search", "content": "Two restaurants."}],
    )
    text = "\n".join(m["content"] for m in built["messages"])
    assert "peanuts" in text and built["total_tokens"] <= built["available_tokens"]

    # Decisions: the tenant's remote tools and policy, decide, the gate, the chain.
    lookup = {
        "name": "device_lookup",
        "description": "Look the device up",
        "parameters": {
            "type": "object",
            "properties": {"device_id": {"type": "string"}},
            "required": ["device_id"],
        },
        "bound": {"device_id": "l1.last_entity_id"},
    }
    assert call("register_tool", **lookup)["name"] == "device_lookup"
    refund = {**lookup, "name": "device_refund", "high_impact": True, "risk": "high"}
    call("register_tool", **refund)
    assert {"device_lookup", "device_refund"} <= {t["name"] for t in call("list_tools")["tools"]}
    policy = call(
        "register_policy",
        intent="call_api",
        risk="medium",
        evidence=["api_cache"],
        slots=[{"name": "device", "sources": ["l1.last_entity_id"], "question": "Which?"}],
        tool="device_lookup",
        tool_params={"device_id": "device"},
    )
    assert policy["tool"] == "device_lookup"
    decision = call("decide", session_id=sid, step_intent="call_api", question="status?")
    assert decision["route"] == "tool" and decision["params"] == {"device_id": "device-7"}
    assert decision["bundle"]["session_id"] == sid
    card_id = decision["card_id"]
    approved = call("call_tool", card_id=card_id)
    assert approved["outcome"] == "approved" and approved["tool"] == "device_lookup"
    retried = call("report_tool_result", card_id=card_id, tool="device_lookup", ok=False, error="x")
    assert retried["outcome"] == "approved"
    done = call("report_tool_result", card_id=card_id, tool="device_lookup", ok=True)
    assert done["outcome"] == "done" and len(done["attempts"]) == 2
    held = call(
        "call_tool", card_id=card_id, tool="device_refund", params={"device_id": "device-7"}
    )
    assert held["outcome"] == "pending_confirmation" and held["pending_id"]
    rejected = call("confirm_tool", pending_id=held["pending_id"], confirmed=False)
    assert rejected["outcome"] == "rejected"
    checked = call("check_reply", card_id=card_id, reply="The device is fine.")
    assert checked["consistent"] is True and checked["regenerate"] is False
    receipt = call("feedback", card_id=card_id, kind="rating", rating=5)
    assert receipt["queued"] is True and receipt["card_id"] == card_id
    for _ in range(100):  # applied by the queue's workers
        report = call("feedback_report")
        if report["events"]:
            break
        time.sleep(0.1)
    assert report["by_kind"].get("rating", 0) >= 1
    # The health report covers every tenant: the operator's admin key only.
    with pytest.raises(CallFailed) as tenant_admin:
        call("health_report", since="1h")
    assert tenant_admin.value.code == "permission_denied"
    operator = caller_for(server.admin_keys["default"])
    health = operator("health_report", {"since": "1h"})
    assert health["samples"] >= 1 and "<svg" in health["html"]
    assert "CER" in health["markdown"]
    cards = call("trace_cards", session_id=sid)["cards"]
    assert [c["id"] for c in cards] == [card_id] and cards[0]["session_id"] == sid
    assert cards[0]["tool_outcome"] == "rejected" and cards[0]["question"] == "status?"

    # L2
    put = call(
        "put_api_response",
        session_id=sid,
        endpoint="weather",
        params={"city": "x"},
        value={"temp": 21},
    )
    got = call("get_api_response", session_id=sid, endpoint="weather", params={"city": "x"})
    assert got["key"] == put["key"] and got["value"] == {"temp": 21}
    call("put_step_result", session_id=sid, step_id="plan", fields={"days": 3})
    assert call("get_step_result", session_id=sid, step_id="plan")["value"] == {"days": 3}
    kept = call(
        "append_series",
        session_id=sid,
        metric="temp",
        points=[{"timestamp": 1.0, "value": 20}, {"timestamp": 2.0, "value": 22}],
    )
    assert kept["kept"] == 2
    series = call("read_series", session_id=sid, metric="temp", start=1.5)
    assert [p["value"] for p in series["points"]] == [22]
    assert call("add_pending", session_id=sid, task_ids=["t1", "t2"])["pending"] == ["t1", "t2"]
    assert call("complete_pending", session_id=sid, task_ids=["t1"])["pending"] == ["t2"]
    inspected = call("inspect", session_id=sid)
    assert inspected["session"]["session_id"] == sid and inspected["pending_tasks"] == ["t2"]
    assert len(inspected["l2"]) >= 3

    # Knowledge
    report = call(
        "ingest_documents",
        documents=[{"name": f"faq-{tag}.md", "text": "# Refunds\n\nRefunds take 5 days."}],
    )
    assert report["files_added"] == 1 and report["chunks_added"] >= 1
    assert call(
        "confirm_knowledge", query="how long do refunds take", response="5 days", source="test"
    )["id"]
    knowledge = call("retrieve", query="how long do refunds take", collection="knowledge")
    assert any("Refunds take 5 days" in i["text"] for i in knowledge["items"])

    # Shared namespaces: the admin's agent owns one, writes it, and route merges it in.
    ns = f"ops-{tag}"
    created = call("create_namespace", namespace=ns, purpose="shared ops notes", ttl_s=600)
    assert created["owner"] == "admin"
    assert ns in {n["namespace"] for n in call("list_namespaces")["namespaces"]}
    asked = call("request_access", namespace=ns, purpose="read ops notes", mode="write")
    assert asked["agent"] == "admin"
    assert call("access_requests", namespace=ns)["requests"][0]["purpose"] == "read ops notes"
    assert call("grant_access", namespace=ns, agent=f"peer-{tag}")["namespace"] == ns
    assert call("revoke_access", namespace=ns, agent=f"peer-{tag}") == {}
    put = call("put_shared", namespace=ns, item_id="n1", value={"note": "line 7 down"})
    assert put["written_by"] == "admin" and put["level"] == "medium"
    assert [i["item_id"] for i in call("shared_items")["items"] if i["namespace"] == ns] == ["n1"]
    merged = call("route", session_id=sid, step_intent="respond", query="line 7")
    assert any(i["source"] == f"namespace:{ns}" for i in merged["items"])

    # The item store (LangGraph's BaseStore): put, replace, get, search, list, delete.
    ns_path = ["memories", user]
    stored = call("store_put", namespace=ns_path, key="diet", value={"text": "no peanuts"})
    assert stored["namespace"] == ns_path and stored["value"] == {"text": "no peanuts"}
    call("store_put", namespace=ns_path, key="diet", value={"text": "no peanuts, no shellfish"})
    got = call("store_get", namespace=ns_path, key="diet")["item"]
    assert got["value"] == {"text": "no peanuts, no shellfish"}
    searched = call("store_search", namespace_prefix=["memories"], query="shellfish allergy")
    assert [i["key"] for i in searched["items"] if i["namespace"] == ns_path] == ["diet"]
    listed_ns = call("store_list_namespaces", prefix=["memories"])["namespaces"]
    assert {"namespace": ns_path} in listed_ns
    assert call("store_delete", namespace=ns_path, key="diet")["deleted"] is True
    assert call("store_get", namespace=ns_path, key="diet").get("item") is None
    call("store_put", namespace=[*ns_path, "trips"], key="next", value={"text": "Lisbon"})
    dropped = call("forget", store_namespace=ns_path, wait=True)
    assert dropped["state"] == "done" and dropped["report"]["points_deleted"] == 1
    assert call("store_get", namespace=[*ns_path, "trips"], key="next").get("item") is None

    # Maintenance: one consolidation pass over the tenant; nothing is cold, so no restore.
    passed = call("consolidate")
    assert {a["action"] for a in passed["actions"]} >= {"merged_duplicates", "compressed"}
    assert call("restore", ids=["00000000-0000-0000-0000-000000000000"])["restored"] == []

    # Forget, then close.
    started = call("forget", user_id=user)  # a background job, answered at once
    assert started["kind"] == "user" and started["job_id"]
    forgotten = call("forget_status", job_id=started["job_id"], timeout_s=120)
    assert forgotten["state"] == "done", forgotten
    report = forgotten["report"]
    assert report["points_deleted"] >= 3 and report["sessions_ended"] == 1
    with pytest.raises(CallFailed) as ended:
        call("end_session", session_id=sid)
    assert ended.value.code == "not_found"
    again = call("start_session", user_id=user, initial_query="again", session_id=sid + "b")
    assert call("end_session", session_id=again["session_id"])["session_id"] == sid + "b"

    assert call.called == {op.name for op in OPERATIONS}, "an operation has no end-to-end check"
