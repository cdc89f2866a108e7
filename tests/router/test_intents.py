from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from memstrata.errors import UnknownIntentError, ValidationError
from memstrata.router.bundle import ContextBundle, ContextItem, MissingContext, Provenance
from memstrata.router.intents import (
    SEED_INTENTS,
    IntentRegistry,
    IntentSpec,
    L2Need,
    L3Need,
    resolve_placeholders,
)


def test_seed_intents_are_registrations_not_branches() -> None:
    registry = IntentRegistry(SEED_INTENTS)
    assert registry.names() == ("call_api", "fetch_sensor_data", "generate_report")
    registry.register(IntentSpec("diagnose", l2=(L2Need("series", "vibration"),)))
    assert registry.get("diagnose").l2[0].name == "vibration"


def test_unknown_intent_names_the_field_and_the_known_ones() -> None:
    registry = IntentRegistry(SEED_INTENTS)
    with pytest.raises(UnknownIntentError) as info:
        registry.get("fly_to_mars")
    assert info.value.field == "step_intent"
    assert "generate_report" in str(info.value)
    with pytest.raises(ValidationError, match="step_intent"):
        registry.get(42)  # type: ignore[arg-type]


def test_duplicate_registration_is_refused_unless_replacing() -> None:
    registry = IntentRegistry(SEED_INTENTS)
    with pytest.raises(ValidationError, match=r"intent\.name"):
        registry.register(IntentSpec("call_api"))
    registry.register(IntentSpec("call_api", l1=("session_id",)), replace=True)
    assert registry.get("call_api").l1 == ("session_id",)


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: L2Need("blob", "x"), "l2.kind"),  # type: ignore[arg-type]
        (lambda: L2Need("api"), "l2.name"),
        (lambda: L2Need("api", "e", {"id": "$password"}), "l2.params"),
        (lambda: L3Need("secrets"), "l3.collection"),  # type: ignore[arg-type]
        (lambda: L3Need("knowledge", k=0), "l3.k"),
        (lambda: IntentSpec("bad name"), "intent.name"),
        (lambda: IntentSpec("ok", l1=("auth_context",)), "intent.l1"),
    ],
)
def test_bad_specs_are_rejected_by_field(build: object, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        build()  # type: ignore[operator]
    assert info.value.field == field


def test_placeholders_resolve_from_l1() -> None:
    assert resolve_placeholders("$last_entity_id/x", {"last_entity_id": "D1"}) == "D1/x"
    assert resolve_placeholders("$last_entity_id", {"last_entity_id": None}) == ""


def test_bundle_is_immutable_and_serializes_with_provenance() -> None:
    item = ContextItem.of(
        "reading", {"temp": [1, 2]}, Provenance("L2", "wm:{s1}:api:ab", "api:sensor", 1.0, 0.25)
    )
    bundle = ContextBundle(
        "s1",
        "call_api",
        2,
        datetime(2025, 1, 1, tzinfo=UTC),
        (item,),
        (MissingContext("x", "L2", "wm:{s1}:result:step5", "missing or expired"),),
    )
    with pytest.raises(TypeError):
        item.content["temp"] = 3  # read-only mapping
    data = json.loads(json.dumps(bundle.as_dict()))
    assert data["items"][0]["content"] == {"temp": [1, 2]}
    assert data["context_used"] == [
        {
            "id": "reading",
            "source": "L2:wm:{s1}:api:ab",
            "relevance": 1.0,
            "freshness_hours": 0.25,
            "low_confidence": False,
        }
    ]
    assert bundle.item("reading") is item and bundle.layer("L3") == ()
