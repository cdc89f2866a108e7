"""Shared namespaces (seed 000 §6.3) and permission levels (seed 000 §2.1) on a real
engine: who may see what, and nothing about a namespace for an agent without access."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memstrata.engine import ContextEngine
from memstrata.errors import ConflictError, NotFoundError, PermissionDeniedError
from memstrata.knowledge import Document

Factory = Callable[..., ContextEngine]
WARNING = {"alert": "storm warning for line 7", "severity": "high"}


@pytest.fixture
def grid(engine_factory: Factory, tmp_path: Path) -> ContextEngine:
    engine = engine_factory(data_dir=tmp_path / "data")
    engine.create_namespace(
        "weather", tenant="grid", owner="forecaster", purpose="weather for load", ttl_s=3600
    )
    return engine


def test_an_agent_asks_is_granted_and_sees_the_shared_item_in_its_bundle(
    grid: ContextEngine, tmp_path: Path
) -> None:
    grid.put_shared("weather", "w1", WARNING, tenant="grid", agent="forecaster")
    state = grid.start_session("ops", "plan the load", tenant="grid")
    assert not any(
        i.provenance.source.startswith("namespace:")
        for i in grid.route(state, "respond", "storm", agent="load-planner").items
    )

    grid.request_namespace_access(
        "weather", tenant="grid", agent="load-planner", purpose="weather_forecast_for_load"
    )
    pending = grid.namespace_access_requests("weather", tenant="grid", by="forecaster")
    assert [(r.agent, r.purpose) for r in pending] == [
        ("load-planner", "weather_forecast_for_load")
    ]
    grid.grant_namespace_access("weather", "load-planner", tenant="grid", by="forecaster")

    bundle = grid.route(state, "respond", "storm", agent="load-planner")
    shared = [i for i in bundle.items if i.provenance.source == "namespace:weather"]
    assert len(shared) == 1 and shared[0].as_dict()["content"] == WARNING
    assert shared[0].provenance.layer == "L2" and shared[0].provenance.level == "medium"
    built = grid.build_context(
        state, "respond", "Any storm risk?", system_prompt="You plan load.", agent="load-planner"
    )
    assert "storm warning for line 7" in "\n".join(m["content"] for m in built.messages())

    events = [json.loads(line) for line in (tmp_path / "data" / "audit.jsonl").open()]
    kinds = [(e.get("event"), e.get("agent")) for e in events if "event" in e]
    assert ("namespace.create", "forecaster") in kinds
    assert ("namespace.request", "load-planner") in kinds
    assert ("namespace.grant", "load-planner") in kinds


def test_an_agent_without_access_learns_nothing_not_even_existence(grid: ContextEngine) -> None:
    grid.put_shared("weather", "w1", WARNING, tenant="grid", agent="forecaster")

    def refusal(call: Callable[[], object]) -> str:
        with pytest.raises(NotFoundError) as refused:
            call()
        return str(refused.value)

    for name in ("weather", "no-such-namespace"):
        messages = {
            refusal(lambda n=name: grid.namespace(n, tenant="grid", agent="outsider")),
            refusal(lambda n=name: grid.put_shared(n, "x", 1, tenant="grid", agent="outsider")),
            refusal(
                lambda n=name: grid.grant_namespace_access(
                    n, "outsider", tenant="grid", by="outsider"
                )
            ),
            refusal(lambda n=name: grid.namespace_access_requests(n, tenant="grid", by="outsider")),
        }
        assert messages == {f"namespace {name!r} does not exist"}
    assert grid.namespaces(tenant="grid", agent="outsider") == ()
    assert grid.shared_items(tenant="grid", agent="outsider") == ()
    # Another tenant's agent of the same name sees nothing either.
    assert grid.shared_items(tenant="other", agent="forecaster") == ()
    # Asking is answered the same way whether the namespace exists or not.
    asked = grid.request_namespace_access("weather", tenant="grid", agent="o", purpose="p")
    ghost = grid.request_namespace_access("ghost", tenant="grid", agent="o", purpose="p")
    assert (asked.mode, asked.purpose) == (ghost.mode, ghost.purpose)


def test_readers_cannot_write_and_only_the_owner_grants(grid: ContextEngine) -> None:
    grid.grant_namespace_access("weather", "reader-bot", tenant="grid", by="forecaster")
    with pytest.raises(PermissionDeniedError):
        grid.put_shared("weather", "x", 1, tenant="grid", agent="reader-bot")
    with pytest.raises(PermissionDeniedError):
        grid.grant_namespace_access("weather", "friend", tenant="grid", by="reader-bot")
    grid.grant_namespace_access("weather", "friend", tenant="grid", by="someone", admin=True)
    assert grid.namespace("weather", tenant="grid", agent="friend").owner == "forecaster"
    grid.revoke_namespace_access("weather", "friend", tenant="grid", by="forecaster")
    with pytest.raises(NotFoundError):
        grid.namespace("weather", tenant="grid", agent="friend")
    with pytest.raises(ConflictError) as taken:  # a taken name is a conflict (409)
        grid.create_namespace("weather", tenant="grid", owner="x", purpose="again", ttl_s=60)
    assert taken.value.field == "namespace"


def test_items_live_the_namespace_ttl_and_pass_the_gateway(grid: ContextEngine) -> None:
    # Two seconds: a stall of the shared VM between the put and the first read must
    # not expire the item before it is seen.
    grid.create_namespace("flash", tenant="grid", owner="forecaster", purpose="p", ttl_s=2)
    secret = "sk-live-0123456789abcdefghijklmnop"
    stored = grid.put_shared(
        "flash", "k", {"note": f"api key {secret}"}, tenant="grid", agent="forecaster"
    )
    assert secret not in json.dumps(stored.value)
    assert [i.item_id for i in grid.shared_items(tenant="grid", agent="forecaster")] == ["k"]
    time.sleep(2.3)
    assert grid.shared_items(tenant="grid", agent="forecaster") == ()


def test_clearance_filters_every_layer_from_bundle_and_messages(grid: ContextEngine) -> None:
    grid.put_shared(
        "weather",
        "top",
        {"plan": "evacuate substation 4"},
        tenant="grid",
        agent="forecaster",
        level="high",
    )
    grid.put_shared(
        "weather",
        "pub",
        {"note": "public forecast: rain"},
        tenant="grid",
        agent="forecaster",
        level="low",
    )
    grid.ingest_documents(
        [Document("manual.md", "# Manual\n\nSubstations reset at dawn.", "markdown")],
        tenant="grid",
    )
    grid.ingest_documents(
        [Document("secret.md", "# Codes\n\nThe vault combination is kept offline.", "markdown")],
        tenant="grid",
        level="high",
    )
    state = grid.start_session("ops", "substation status", tenant="grid")
    grid.remember("ops", "My shift ends at six and I live near substation 4.", tenant="grid")
    grid.flush()

    full = grid.route(state, "respond", "substation", agent="forecaster")
    levels = {i.provenance.layer: set() for i in full.items}
    for item in full.items:
        levels[item.provenance.layer].add(item.provenance.level)
    assert "high" in levels["L1"]

    low = grid.route(state, "respond", "substation", agent="forecaster", clearance="low")
    assert low.items and all(i.provenance.level == "low" for i in low.items)
    assert not low.layer("L1")

    built = grid.build_context(
        state,
        "respond",
        "What about the substation and the vault?",
        system_prompt="You run the grid.",
        agent="forecaster",
        clearance="low",
    )
    text = "\n".join(m["content"] for m in built.messages())
    assert "public forecast: rain" in text
    # Nothing above "low": no high shared item, no memory, no high document, no L1.
    for hidden in ("evacuate substation 4", "shift ends at six", "vault combination", '"ops"'):
        assert hidden not in text, hidden
    medium = grid.build_context(
        state,
        "respond",
        "What about the substation?",
        system_prompt="s",
        agent="forecaster",
        clearance="medium",
    )
    medium_text = "\n".join(m["content"] for m in medium.messages())
    assert "evacuate substation 4" not in medium_text and "public forecast" in medium_text
