"""The router's L1 and L2 rules, through ``engine.route()`` on the real backends.

An intent declares what a step needs; the bundle holds exactly that, each item with
its provenance, and says what it could not load instead of inventing it.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest
from tests.router.stage import LOW_CONFIDENCE, Stage

from memstrata.errors import ContextMissError
from memstrata.router import IntentSpec, L2Need
from memstrata.router.intents import L1_FIELDS
from memstrata.session.state import AuthContext
from memstrata.working.stepgraph import StepGraph, StepSpec

# -- L1 ------------------------------------------------------------------------------------


def test_l1_item_holds_exactly_the_fields_the_intent_names(stage: Stage) -> None:
    name = stage.intent("l1_some")
    stage.engine.register_intent(
        IntentSpec(name, l1=("session_id", "current_step", "last_entity_id"))
    )
    state = stage.session("inspect pump P7")
    state = stage.engine.update_session(state.session_id, lambda s: s.advance(3).with_entity("P7"))

    bundle = stage.engine.route(state, name)

    session = bundle.item("session")
    assert dict(session.content) == {
        "session_id": state.session_id,
        "current_step": 3,
        "last_entity_id": "P7",
    }
    assert bundle.layer("L1") == (session,)
    assert session.provenance.layer == "L1"
    assert session.provenance.ref == f"session:{state.session_id}"
    assert session.provenance.level == "high"


def test_l1_item_never_carries_the_auth_context(stage: Stage) -> None:
    name = stage.intent("l1_all")
    stage.engine.register_intent(IntentSpec(name, l1=tuple(sorted(L1_FIELDS))))
    state = stage.session("plan the audit")
    scoped = replace(
        state,
        auth_context=AuthContext(
            tenant=stage.tenant, principal="operator-zq", scopes=frozenset({"refunds-admin"})
        ),
    )

    bundle = stage.engine.route(scoped, name)

    session = bundle.item("session")
    assert set(session.content) == L1_FIELDS
    text = json.dumps(session.as_dict())
    for secret in ("auth_context", "operator-zq", "refunds-admin", stage.tenant):
        assert secret not in text


# -- L2 ------------------------------------------------------------------------------------


def test_api_need_reads_the_response_of_the_current_entity(stage: Stage) -> None:
    name = stage.intent("api")
    stage.engine.register_intent(
        IntentSpec(
            name,
            l2=(L2Need("api", "sensor_api", {"device_id": "$last_entity_id"}, label="reading"),),
        )
    )
    state = stage.session("check the sensors")
    wm = stage.engine.working(state.session_id)
    d7 = wm.put_api_response("sensor_api", {"device_id": "D7"}, {"temp_c": 41.5})
    d8 = wm.put_api_response("sensor_api", {"device_id": "D8"}, {"temp_c": 77.0})

    unset = stage.engine.route(state, name)
    assert [m.name for m in unset.missing] == ["reading"]  # "$last_entity_id" is empty

    state = stage.engine.update_session(state.session_id, lambda s: s.with_entity("D7"))
    stage.clock.advance(timedelta(minutes=45))
    reading = stage.engine.route(state, name).item("reading")
    assert dict(reading.content) == {"temp_c": 41.5}
    assert reading.provenance.layer == "L2"
    assert reading.provenance.ref == d7.key
    assert reading.provenance.source == "api:sensor_api"
    assert reading.provenance.level == "medium"
    assert reading.provenance.freshness_hours == pytest.approx(0.75, abs=1e-6)

    state = stage.engine.update_session(state.session_id, lambda s: s.with_entity("D8"))
    reading = stage.engine.route(state, name).item("reading")
    assert dict(reading.content) == {"temp_c": 77.0} and reading.provenance.ref == d8.key


def test_result_need_read_by_a_dependent_step_extends_the_results_ttl(stage: Stage) -> None:
    name = stage.intent("result")
    stage.engine.register_intent(IntentSpec(name, l2=(L2Need("result", "step5", label="found"),)))
    state = stage.session("compare the two devices")
    wm = stage.engine.working(state.session_id)
    # step7 reads step5's result; the result must live until step7's end x 2.
    wm.plan_steps(StepGraph((StepSpec("step5", 60), StepSpec("step7", 600, ("step5",)))))
    stage.clock.advance(timedelta(seconds=1000))  # stored late: 2 x 660 - 1000 = 320 s left
    wm.put_step_result("step5", {"device": "A", "alert_ts": "2025-03-01T08:22:00Z"})
    assert wm.get_step_result("step5").ttl_remaining_s == pytest.approx(320, abs=5)
    state = stage.engine.update_session(state.session_id, lambda s: s.advance(7))

    found = stage.engine.route(state, name).item("found")

    assert dict(found.content) == {"device": "A", "alert_ts": "2025-03-01T08:22:00Z"}
    assert found.provenance.ref == f"wm:{{{state.session_id}}}:result:step5"
    assert found.provenance.source == "step:step5"
    # The reader (step7, from the session's current step) covers its own run x 2.
    assert wm.get_step_result("step5").ttl_remaining_s == pytest.approx(1200, abs=5)


def test_series_need_serves_the_window_and_the_newest_points_age(stage: Stage) -> None:
    name = stage.intent("series")
    stage.engine.register_intent(
        IntentSpec(name, l2=(L2Need("series", "temperature", label="window"),))
    )
    state = stage.session("watch the temperature")
    wm = stage.engine.working(state.session_id)

    empty = stage.engine.route(state, name)
    assert not empty.layer("L2")
    assert [(m.name, m.layer) for m in empty.missing] == [("window", "L2")]

    newest = stage.clock.now().timestamp() - 1800  # the last point is half an hour old
    wm.append_series("temperature", [(newest - 3600 * k, 40.0 + k) for k in range(4)], window=3)
    window = stage.engine.route(state, name).item("window")

    assert window.content["count"] == 3
    assert sorted(tuple(p) for p in window.content["points"]) == [
        (newest - 7200, 42.0),
        (newest - 3600, 41.0),
        (newest, 40.0),
    ]
    assert window.provenance.ref == f"wm:{{{state.session_id}}}:ts:temperature"
    assert window.provenance.source == "series:temperature"
    assert window.provenance.freshness_hours == pytest.approx(0.5, abs=1e-6)


def test_pending_need_lists_the_sessions_task_ids_sorted(stage: Stage) -> None:
    name = stage.intent("pending")
    stage.engine.register_intent(IntentSpec(name, l2=(L2Need("pending", label="tasks"),)))
    state = stage.session("wait for the uploads")
    wm = stage.engine.working(state.session_id)

    assert stage.engine.route(state, name).item("tasks").content == ()
    wm.add_pending("task_b2", "task_a1")
    tasks = stage.engine.route(state, name).item("tasks")

    assert list(tasks.content) == ["task_a1", "task_b2"]
    assert tasks.provenance.ref == f"wm:{{{state.session_id}}}:pending_tasks"
    assert tasks.provenance.source == "pending_tasks"


def test_preference_need_carries_its_confidence_and_flags_a_weak_one(stage: Stage) -> None:
    name = stage.intent("pref")
    stage.engine.register_intent(
        IntentSpec(
            name,
            l2=(
                L2Need("preference", "report_format", label="format"),
                L2Need("preference", "ui_color", label="color"),
            ),
        )
    )
    engine, user, tenant = stage.engine, stage.user, stage.tenant
    engine.set_preference(user, "report_format", "pdf with charts", 0.92, tenant=tenant)
    engine.set_preference(user, "ui_color", "blue", LOW_CONFIDENCE - 0.1, tenant=tenant)
    state = stage.session("write the report")
    stage.clock.advance(timedelta(hours=2))

    bundle = engine.route(state, name)

    fmt, color = bundle.item("format"), bundle.item("color")
    assert dict(fmt.content) == {"value": "pdf with charts", "confidence": 0.92}
    assert fmt.provenance.ref == f"pref:{{{tenant}:{user}}}:report_format"
    assert fmt.provenance.source == "preference:report_format"
    assert fmt.provenance.relevance == pytest.approx(0.92)
    assert fmt.provenance.freshness_hours == pytest.approx(2.0, abs=1e-6)
    assert not fmt.provenance.low_confidence
    assert color.content["value"] == "blue"
    assert color.provenance.low_confidence  # below low_confidence_cosine


def test_required_miss_raises_naming_the_key(stage: Stage) -> None:
    name = stage.intent("strict")
    stage.engine.register_intent(
        IntentSpec(name, l2=(L2Need("result", "step1", required=True, label="plan"),))
    )
    state = stage.session("go")

    with pytest.raises(ContextMissError) as info:
        stage.engine.route(state, name)

    assert info.value.key == f"wm:{{{state.session_id}}}:result:step1"


def test_optional_miss_is_listed_in_missing_and_never_invented(stage: Stage) -> None:
    name = stage.intent("lenient")
    stage.engine.register_intent(
        IntentSpec(
            name,
            l2=(
                L2Need("result", "step1", label="plan"),
                L2Need("preference", "report_format", label="format"),
            ),
        )
    )
    state = stage.session("go")

    bundle = stage.engine.route(state, name)

    assert not bundle.layer("L2")
    with pytest.raises(KeyError):
        bundle.item("plan")
    assert {(m.name, m.layer, m.ref) for m in bundle.missing} == {
        ("plan", "L2", f"wm:{{{state.session_id}}}:result:step1"),
        ("format", "L2", f"pref:{{{stage.tenant}:{stage.user}}}:report_format"),
    }
    assert all(m.reason for m in bundle.missing)
