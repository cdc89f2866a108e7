"""Pure parts: the versioning rule, value merging, as-of lookup, forgetting, the codec."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstrata.config import MemorySettings
from memstrata.errors import BackendError, ValidationError
from memstrata.memory.codec import from_payload, point_type, slot_string, to_item, unit_id
from memstrata.memory.retention import bumped_importance, has_faded, retention_score
from memstrata.memory.units import FEEDBACK_KEPT, noted_feedback
from memstrata.memory.versioning import (
    SlotState,
    decide,
    merged_value,
    older_valid_to,
    slot_key,
    version_at,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)
DAY = timedelta(days=1)
SETTINGS = MemorySettings()


def test_decide_order_of_rules(make_unit: Any) -> None:
    active = replace(make_unit("city", "Paris", T0), id="a")
    same = make_unit("city", "Paris", T0 + DAY)
    assert decide(same, active, cosine=0.1, merge=False, settings=SETTINGS).action == (
        "deduplicated"
    )
    near = make_unit("city", "Paris, France", T0 + DAY)
    assert decide(near, active, cosine=0.95, merge=False, settings=SETTINGS).action == (
        "deduplicated"
    )
    new = make_unit("city", "Rome", T0 + DAY)
    out = decide(new, active, cosine=0.5, merge=False, settings=SETTINGS)
    assert (out.action, out.becomes_active) == ("superseded", True)
    old = make_unit("city", "Rome", T0 - DAY)
    out = decide(old, active, cosine=0.5, merge=False, settings=SETTINGS)
    assert (out.action, out.becomes_active) == ("ignored_older", False)
    assert out.final is not None and out.final.active is False
    assert decide(new, None, cosine=None, merge=False, settings=SETTINGS).action == "inserted"


def test_decide_merges_multi_valued_and_explicit(make_unit: Any) -> None:
    active = replace(make_unit("likes", "tea", T0, importance=0.8), id="a")
    out = decide(
        make_unit("likes", "jazz", T0 - DAY), active, cosine=0.99, merge=False, settings=SETTINGS
    )
    # Set semantics win over time order and over the near-duplicate test.
    assert out.action == "merged" and out.final is not None
    assert out.final.value == "tea; jazz" and out.final.valid_from == T0
    assert out.final.importance == 0.8
    single = replace(make_unit("channel", "email", T0), id="b")
    merged = decide(
        make_unit("channel", "sms", T0 + DAY), single, cosine=0.1, merge=True, settings=SETTINGS
    )
    assert merged.final is not None and merged.final.value == "email; sms"


def test_merged_value() -> None:
    assert merged_value("a; b", "B; c", "; ") == "a; b; c"
    assert merged_value("a; b", "b;a", "; ") is None
    assert merged_value("x", "  y  ;; ", "; ") == "x; y"


def test_version_at_and_older_valid_to(make_unit: Any) -> None:
    v1 = replace(make_unit("city", "A", T0), version=1, active=False, valid_to=T0 + 10 * DAY)
    v2 = replace(make_unit("city", "B", T0 + 10 * DAY), version=2)
    # A back-dated observation inside v1's interval, ending where v2 starts.
    v3 = replace(
        make_unit("city", "C", T0 + 5 * DAY),
        version=3,
        active=False,
        valid_to=older_valid_to(T0 + 5 * DAY, [T0, T0 + 10 * DAY]),
    )
    versions = [v1, v2, v3]
    assert version_at(versions, T0 - DAY) is None
    assert version_at(versions, T0 + DAY).value == "A"
    assert version_at(versions, T0 + 6 * DAY).value == "C"
    assert version_at(versions, T0 + 10 * DAY).value == "B"
    assert older_valid_to(T0 + 20 * DAY, [T0, T0 + 10 * DAY]) is None


def test_retention_decays_and_pinning_stops_it(make_unit: Any) -> None:
    unit = make_unit("x", "y", T0, importance=0.8)
    assert retention_score(unit, T0) == pytest.approx(0.8)
    assert retention_score(unit, T0 + 17 * DAY) == pytest.approx(0.8 * 0.96**17)
    assert retention_score(unit, T0 + 17 * DAY) < 0.41  # about half after 17 days
    pinned = replace(unit, pinned=True)
    assert retention_score(pinned, T0 + 1000 * DAY) == pytest.approx(0.8)
    used = replace(unit, last_accessed=T0 + 30 * DAY)
    assert retention_score(used, T0 + 30 * DAY) == pytest.approx(0.8)
    assert has_faded(unit, T0 + 400 * DAY, floor=0.01)
    assert not has_faded(pinned, T0 + 400 * DAY, floor=0.01)
    assert bumped_importance(0.5) == pytest.approx(0.525)
    assert bumped_importance(1.0) == 1.0


def test_codec_round_trip(make_unit: Any) -> None:
    unit = make_unit(
        "order",
        "ORD-1 for ¥5",
        T0,
        kind="event",
        importance=0.7,
        pinned=True,
        extras=(("order_id", "ORD-1"),),
        derived_from=("x", "y"),
        last_accessed=T0 + DAY,
        access_count=3,
    )
    unit = replace(unit, id=unit_id(unit)).with_feedback("ev-1").with_feedback("ev-2")
    item = to_item(unit)
    payload = {**item.extra, "tenant": item.tenant, "user": item.user}
    assert from_payload(unit.id or "", payload) == unit
    assert unit.feedback_applied == ("ev-1", "ev-2")
    assert item.type == "event" and item.text == unit.text
    assert point_type(replace(unit, active=False)) == "history"
    assert payload["slot"] == slot_string("t1", unit.slot)
    # Derived ids are stable and depend on what was observed and when.
    assert unit_id(make_unit("a", "b", T0)) == unit_id(make_unit("a", "b", T0))
    assert unit_id(make_unit("a", "b", T0)) != unit_id(make_unit("a", "b", T0 + DAY))


def test_slot_state_parse() -> None:
    state = SlotState.parse(
        {
            b"rev": b"3",
            "version": "2",
            "v:1": "a",
            "v:2": "b",
            "active_id": "b",
            "active_from": "1735689600.0",
            "active_hash": "h",
        }
    )
    assert (state.rev, state.version, state.active_id) == (3, 2, "b")
    assert state.active_from == T0 and state.id_of_version(1) == "a"
    assert SlotState.parse({}) == SlotState()
    with pytest.raises(BackendError):
        SlotState.parse({"rev": "x"})
    assert slot_key("mv", "t1", "u1", "s") == "mv:{t1:u1}:slot:s"


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("near_duplicate_cosine", {"near_duplicate_cosine": 0.0}),
        ("near_duplicate_cosine", {"near_duplicate_cosine": 1.5}),
        ("multi_valued_attributes", {"multi_valued_attributes": frozenset({"Likes"})}),
        ("max_write_attempts", {"max_write_attempts": 0}),
        ("decay_per_day", {"decay_per_day": float("nan")}),
        ("redis_prefix", {"redis_prefix": "mv:{x}"}),
        ("value_separator", {"value_separator": " "}),
    ],
)
def test_settings_are_validated(field: str, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValidationError) as info:
        MemorySettings(**kwargs)
    assert info.value.field == field


def test_a_unit_remembers_the_newest_feedback_events_it_took(make_unit: Any) -> None:
    ids = tuple(f"ev-{n}" for n in range(FEEDBACK_KEPT + 5))
    applied: tuple[str, ...] = ()
    for event_id in ids:
        applied = noted_feedback(applied, event_id)
    assert applied == ids[-FEEDBACK_KEPT:]
    # Taking an event again moves it last instead of repeating it.
    assert noted_feedback(("a", "b"), "a") == ("b", "a")
    with pytest.raises(ValidationError, match="feedback_applied"):
        replace(make_unit("a", "b", T0), feedback_applied=("",))
