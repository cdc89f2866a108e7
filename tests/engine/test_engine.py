"""End to end through ContextEngine on the real embedded backends."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.errors import ContextMissError, NotFoundError, UnknownIntentError, ValidationError
from memstrata.router import IntentSpec, L2Need, L3Need
from memstrata.working.stepgraph import StepGraph, StepSpec

Factory = Callable[..., ContextEngine]


def test_route_loads_each_layer_with_provenance(engine: ContextEngine) -> None:
    engine.add_knowledge(
        ["Device health report template: summary, anomaly windows, root cause, action."],
        tenant="acme",
        source="sop/report",
        section="report_template",
    )
    engine.remember("u1", "The user wants every report to include charts.", tenant="acme")
    engine.flush()
    engine.set_preference("u1", "report_format", "pdf", 0.9, tenant="acme")
    state = engine.start_session("u1", "write the D123 report", tenant="acme", session_id="s1")
    wm = engine.working("s1")
    wm.plan_steps(StepGraph((StepSpec("step5", 60), StepSpec("step7", 60, ("step5",)))))
    wm.put_step_result("step5", {"device": "D123", "delta": 1.7})
    state = engine.update_session("s1", lambda s: s.advance(7).with_entity("D123"))

    bundle = engine.route(state, "generate_report", "a report with charts for the devices")

    assert bundle.step == 7 and bundle.step_intent == "generate_report"
    session = bundle.item("session")
    assert session.provenance.layer == "L1" and session.content["current_step"] == 7
    result = bundle.item("analysis_result")
    assert result.provenance.layer == "L2"
    assert result.provenance.ref == "wm:{s1}:result:step5"
    assert dict(result.content) == {"device": "D123", "delta": 1.7}
    assert result.provenance.freshness_hours is not None
    pref = bundle.item("report_preference")
    assert pref.content["value"] == "pdf" and pref.provenance.ref == "pref:{acme:u1}:report_format"
    template = bundle.item("report_template_0")
    assert template.provenance.layer == "L3" and template.provenance.source == "sop/report"
    assert 0.0 < template.provenance.relevance <= 1.0
    memory = bundle.item("user_memory_0")
    assert "charts" in memory.content["text"]
    assert not memory.provenance.low_confidence
    assert {u["id"] for u in bundle.context_used()} >= {
        "session",
        "analysis_result",
        "user_memory_0",
    }


def test_missing_l2_is_reported_not_invented(engine: ContextEngine) -> None:
    state = engine.start_session("u1", "check the sensor", session_id="s2")
    state = engine.update_session("s2", lambda s: s.with_entity("D9"))
    bundle = engine.route(state, "fetch_sensor_data")
    names = {m.name for m in bundle.missing}
    assert names == {"sensor_reading", "temperature_window"}
    assert all(m.layer == "L2" for m in bundle.missing)


def test_required_l2_miss_raises_a_typed_error_naming_the_key(engine: ContextEngine) -> None:
    engine.register_intent(IntentSpec("strict", l2=(L2Need("result", "step1", required=True),)))
    state = engine.start_session("u1", "go", session_id="s3")
    with pytest.raises(ContextMissError) as info:
        engine.route(state, "strict")
    assert info.value.key == "wm:{s3}:result:step1"


def test_unrelated_memories_are_low_confidence_or_skipped(engine: ContextEngine) -> None:
    engine.register_intent(IntentSpec("recall", l3=(L3Need("memories", k=2),)))
    engine.remember("u1", "Quarterly revenue of the Lyon bakery rose by four percent.")
    engine.flush()
    state = engine.start_session("u1", "hello", session_id="s4")
    bundle = engine.route(state, "recall", "how do I recalibrate the vibration sensor on D123")
    if bundle.l3_skipped:
        assert not bundle.layer("L3") and any(m.layer == "L3" for m in bundle.missing)
    else:
        assert all(item.provenance.low_confidence for item in bundle.layer("L3"))


def test_tenants_never_see_each_other(engine: ContextEngine) -> None:
    engine.remember("u1", "The launch code word is pineapple.", tenant="red")
    engine.remember("u1", "The launch code word is mango.", tenant="blue")
    engine.flush()
    red = engine.search("u1", "launch code word", tenant="red", k=10)
    assert [h.payload["tenant"] for h in red] == ["red"]
    assert "pineapple" in red[0].payload["text"]


def test_bad_input_is_typed_and_names_the_field(engine: ContextEngine) -> None:
    state = engine.start_session("u1", "go", session_id="s5")
    with pytest.raises(UnknownIntentError):
        engine.route(state, "teleport")
    with pytest.raises(ValidationError, match="text"):
        engine.remember("u1", "")
    with pytest.raises(ValidationError, match="text"):
        engine.remember("u1", "x" * 400_000)
    with pytest.raises(ValidationError, match="user_id"):
        engine.remember("bad user", "hi")
    with pytest.raises(ValidationError, match="tenant"):
        engine.remember("u1", "hi", tenant="a:b")
    with pytest.raises(ValidationError, match="query"):
        engine.route(state, "generate_report", "")
    with pytest.raises(ValidationError, match="k"):
        engine.search("u1", "x", k=0)
    with pytest.raises(NotFoundError):
        engine.route("no_such_session", "call_api")
    assert engine.count_memories("default") == 0


def test_restart_keeps_l2_and_l3(engine_factory: Factory, tmp_path: Path) -> None:
    data_dir = tmp_path / "persist"
    first = engine_factory(data_dir)
    first.remember("u1", "I moved to Chengdu in March.")
    first.flush()
    first.start_session("u1", "go", session_id="keep")
    first.working("keep").put_api_response("weather", {"city": "Chengdu"}, {"temp_c": 18})
    first.working("keep").add_pending("task_a")
    first.close()

    second = engine_factory(data_dir)
    assert second.working("keep").get_api_response("weather", {"city": "Chengdu"}).value == {
        "temp_c": 18
    }
    assert second.working("keep").pending() == frozenset({"task_a"})
    found = second.search("u1", "where does the user live", k=3)
    # What was said (the episode) and the fact extracted from it both survived.
    kept = sorted(h.payload["type"] for h in found if "Chengdu" in h.payload["text"])
    assert kept == ["episode", "fact"]
    assert {h.payload["user"] for h in found} == {"u1"}
    with pytest.raises(NotFoundError):
        second.session("keep")  # L1 is never persisted


def test_freshness_follows_the_injected_clock(engine_factory: Factory) -> None:
    clock = FakeClock(datetime(2025, 3, 1, tzinfo=UTC))
    engine = engine_factory(clock=clock)
    engine.start_session("u1", "go", session_id="s6")
    engine.working("s6").put_api_response("sensor_api", {"device_id": "D1"}, {"t": 40})
    engine.update_session("s6", lambda s: s.with_entity("D1"))
    clock.advance(timedelta(minutes=30))
    bundle = engine.route("s6", "call_api")
    assert bundle.item("api_cache").provenance.freshness_hours == pytest.approx(0.5, abs=0.01)


def test_inspect_lists_l1_and_l2(engine: ContextEngine) -> None:
    engine.start_session("u1", "go", session_id="s7")
    engine.working("s7").put_api_response("ep", {}, {"ok": True})
    engine.working("s7").add_pending("t1")
    report = engine.inspect("s7")
    assert report["l1"]["session_id"] == "s7"
    assert {row["type"] for row in report["l2"]} >= {"string", "set"}
    assert report["pending_tasks"] == ["t1"]


def test_items_below_the_floor_are_reported_not_served(engine: ContextEngine) -> None:
    engine.register_intent(IntentSpec("recall2", l3=(L3Need("memories", k=2),)))
    engine.remember("u1", "The user's vibration sensor on D123 needs recalibration monthly.")
    engine.remember("u1", "Quarterly revenue of the Lyon bakery rose by four percent.")
    engine.flush()
    state = engine.start_session("u1", "hello", session_id="s8")
    bundle = engine.route(state, "recall2", "how often do I recalibrate the vibration sensor")
    served = [item.content["text"] for item in bundle.layer("L3")]
    assert served and all("vibration" in text for text in served)
    assert not bundle.l3_skipped
    assert any(m.layer == "L3" and "below" in m.reason for m in bundle.missing)
