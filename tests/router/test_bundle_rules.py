"""What a routed bundle offers its caller: clearance and the provenance JSON.

The bundle comes from ``engine.route()`` with one item of each level: the session (L1,
high), a cached API response (L2, medium), a user's memory (L3, medium) and a knowledge
chunk (L3, low).
"""

from __future__ import annotations

import pytest
from tests.router.stage import Stage

from memstrata.router import ContextBundle, IntentSpec, L2Need, L3Need

QUESTION = "how often do I recalibrate the vibration sensor"


def _bundle(stage: Stage, *, clearance: str = "high") -> ContextBundle:
    name = stage.intent("levels")
    stage.engine.register_intent(
        IntentSpec(
            name,
            l1=("session_id", "last_entity_id"),
            l2=(
                L2Need("api", "sensor_api", {"device_id": "$last_entity_id"}, label="reading"),
                L2Need("result", "step9", label="unset"),
            ),
            l3=(
                L3Need("memories", k=1, label="memory"),
                L3Need("knowledge", k=1, per_user=False, label="manual"),
            ),
        )
    )
    stage.engine.add_knowledge(
        ["Vibration sensors are recalibrated with the shaker table, monthly."],
        tenant=stage.tenant,
        source="sop/vibration",
    )
    stage.engine.remember(
        stage.user, "I recalibrate the vibration sensor every month.", tenant=stage.tenant
    )
    stage.engine.flush()
    state = stage.session()
    stage.engine.working(state.session_id).put_api_response(
        "sensor_api", {"device_id": "D123"}, {"vibration_mm_s": 3.1}
    )
    state = stage.engine.update_session(state.session_id, lambda s: s.with_entity("D123"))
    # Nothing stored step9's result: the "unset" need is a missing entry.
    return stage.engine.route(state, name, QUESTION, clearance=clearance)  # type: ignore[arg-type]


def test_cleared_for_drops_the_items_above_the_clearance(stage: Stage) -> None:
    bundle = _bundle(stage)
    levels = {item.name: item.provenance.level for item in bundle.items}
    assert levels == {
        "session": "high",
        "reading": "medium",
        "memory_0": "medium",
        "manual_0": "low",
    }

    assert bundle.cleared_for("high") is bundle
    medium = bundle.cleared_for("medium")
    assert [i.name for i in medium.items] == ["reading", "memory_0", "manual_0"]
    low = bundle.cleared_for("low")
    assert [i.name for i in low.items] == ["manual_0"]
    # Nothing says the dropped items exist: not the items, not the provenance JSON.
    assert [entry["id"] for entry in low.context_used()] == ["manual_0"]
    assert "session" not in str(low.as_dict()["items"])
    assert low.missing == bundle.missing  # what could not be loaded is still reported


def test_route_applies_the_callers_clearance(stage: Stage) -> None:
    bundle = _bundle(stage, clearance="low")

    assert [i.name for i in bundle.items] == ["manual_0"]


def test_context_used_lists_each_served_item_with_its_source(stage: Stage) -> None:
    bundle = _bundle(stage)

    used = bundle.context_used()

    assert [entry["id"] for entry in used] == [item.name for item in bundle.items]
    for entry, item in zip(used, bundle.items, strict=True):
        p = item.provenance
        assert entry == {
            "id": item.name,
            "source": f"{p.layer}:{p.ref}",
            "relevance": pytest.approx(round(p.relevance, 4)),
            "freshness_hours": p.freshness_hours,
            "low_confidence": p.low_confidence,
        }
    sources = [entry["source"] for entry in used]
    assert sources[0] == f"L1:session:{bundle.session_id}"
    assert sources[1] == f"L2:{bundle.item('reading').provenance.ref}"
    assert sources[1].startswith(f"L2:wm:{{{bundle.session_id}}}:api:")
    assert all(s.startswith("L3:") for s in sources[2:])
    # Only what was served: the need that found nothing is in ``missing``, not here.
    assert "unset" not in {entry["id"] for entry in used}
    assert [m.name for m in bundle.missing] == ["unset"]
