"""Versioning at the store level: supersede, history, as_of, older observations, merge."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memstrata.errors import ValidationError
from memstrata.longterm.points import MEMORIES
from memstrata.memory.units import MemoryUnit, UnitSource

T0 = datetime(2025, 1, 1, tzinfo=UTC)
DAY = timedelta(days=1)


@pytest.mark.parametrize(
    ("attribute", "old", "new", "query"),
    [
        ("city", "Hangzhou", "Chengdu", "which city does the user live in"),
        ("所在城市", "杭州", "成都", "用户 所在城市"),
    ],
)
def test_seed_example_city_moves(
    env: Any, fact: Any, attribute: str, old: str, new: str, query: str
) -> None:
    store = env.store
    first = store.write(fact(attribute, old, T0))
    env.clock.advance(90 * DAY)
    second = store.write(fact(attribute, new, T0 + 90 * DAY))
    assert (first.action, first.version) == ("inserted", 1)
    assert (second.action, second.version) == ("superseded", 2)

    active = store.active_fact(env.tenant, "u1", "user", attribute)
    assert active is not None and active.value == new and active.version == 2
    then = store.as_of(env.tenant, "u1", "user", attribute, T0 + 10 * DAY)
    assert then is not None and then.value == old
    assert store.as_of(env.tenant, "u1", "user", attribute, T0 - DAY) is None
    assert store.as_of(env.tenant, "u1", "user", attribute, T0 + 90 * DAY).value == new

    history = store.history(env.tenant, "u1", "user", attribute)
    assert [u.value for u in history] == [old, new]
    assert history[0].active is False and history[0].valid_to == T0 + 90 * DAY
    assert history[1].active is True and history[1].valid_to is None

    hits = store.search(env.tenant, "u1", f"{query} {old} {new}", k=10)
    assert [h.unit.value for h in hits] == [new]
    # The superseded point is still in L3 (history), only filtered out of search.
    assert env.longterm.count(MEMORIES, tenant=env.tenant) == 2


def test_older_observation_becomes_history(env: Any, fact: Any) -> None:
    store = env.store
    store.write(fact("employer", "Acme", T0 + 30 * DAY))
    late = store.write(fact("employer", "Globex", T0))
    assert late.action == "ignored_older" and late.version == 2
    active = store.active_fact(env.tenant, "u1", "user", "employer")
    assert active is not None and active.value == "Acme"
    older = store.as_of(env.tenant, "u1", "user", "employer", T0 + DAY)
    assert older is not None and older.value == "Globex" and older.valid_to == T0 + 30 * DAY
    history = store.history(env.tenant, "u1", "user", "employer")
    assert [(u.value, u.version) for u in history] == [("Globex", 2), ("Acme", 1)]


def test_slot_is_normalized_and_scoped_per_user(env: Any, fact: Any) -> None:
    store = env.store
    store.write(fact("City", "Paris", T0, subject="User"))
    store.write(fact("city", "Rome", T0 + DAY))
    store.write(fact("city", "Oslo", T0, user="u2"))
    assert store.active_fact(env.tenant, "u1", "USER", "CITY").value == "Rome"
    assert store.active_fact(env.tenant, "u2", "user", "city").value == "Oslo"
    assert store.active_fact(env.tenant + "x", "u1", "user", "city") is None


def test_multi_valued_attribute_accumulates(env: Any, fact: Any) -> None:
    store = env.store
    assert store.write(fact("likes", "coffee", T0)).action == "inserted"
    out = store.write(fact("likes", "green tea; Coffee", T0 + DAY))
    assert (out.action, out.version) == ("merged", 2)
    again = store.write(fact("likes", "green tea", T0 + 2 * DAY))
    assert again.action == "deduplicated"
    active = store.active_fact(env.tenant, "u1", "user", "likes")
    assert active is not None and active.value == "coffee; green tea"
    assert store.as_of(env.tenant, "u1", "user", "likes", T0 + DAY / 2).value == "coffee"
    assert len(store.search(env.tenant, "u1", "likes coffee tea")) == 1


def test_explicit_merge_of_complementary_detail(env: Any, fact: Any) -> None:
    store = env.store
    store.write(fact("contact_channel", "email", T0))
    out = store.write(fact("contact_channel", "phone after 6pm", T0 + DAY), merge=True)
    assert out.action == "merged"
    active = store.active_fact(env.tenant, "u1", "user", "contact_channel")
    assert active is not None and active.value == "email; phone after 6pm"
    # Without merge a single-valued attribute supersedes.
    assert store.write(fact("contact_channel", "wechat", T0 + 2 * DAY)).action == "superseded"
    assert store.active_fact(env.tenant, "u1", "user", "contact_channel").value == "wechat"


def test_exact_duplicate_refreshes_instead_of_adding(env: Any, fact: Any) -> None:
    store = env.store
    first = store.write(fact("diet", "vegetarian", T0, importance=0.4))
    env.clock.advance(5 * DAY)
    again = store.write(fact("diet", "vegetarian", T0 + 5 * DAY, importance=0.7))
    assert again.action == "deduplicated" and again.unit_id == first.unit_id
    assert env.longterm.count(MEMORIES, tenant=env.tenant) == 1
    active = store.active_fact(env.tenant, "u1", "user", "diet")
    assert active.access_count == 1 and active.last_accessed == T0 + 5 * DAY
    assert active.importance == pytest.approx(0.7)


def test_replayed_write_is_idempotent(env: Any, fact: Any) -> None:
    store = env.store
    unit = fact("city", "Lyon", T0)
    store.write(unit)
    store.write(fact("city", "Nice", T0 + DAY))
    # The queue delivers the first write again (at-least-once): nothing changes.
    replay = store.write(unit)
    assert replay.action == "deduplicated" and replay.version == 1
    assert store.active_fact(env.tenant, "u1", "user", "city").value == "Nice"
    assert len(store.history(env.tenant, "u1", "user", "city")) == 2


def test_events_are_deduped_by_hash_never_superseded(env: Any, fact: Any) -> None:
    store = env.store
    a = store.write(fact("refund", "requested refund for ORD-1", T0, kind="event"))
    b = store.write(fact("refund", "requested refund for ORD-2", T0 + DAY, kind="event"))
    c = store.write(fact("refund", "requested refund for ORD-1", T0 + 2 * DAY, kind="event"))
    assert (a.action, b.action, c.action) == ("inserted", "inserted", "deduplicated")
    assert c.unit_id == a.unit_id
    events = store.search(env.tenant, "u1", "refund", kinds=("event",))
    assert sorted(h.unit.value for h in events) == [
        "requested refund for ORD-1",
        "requested refund for ORD-2",
    ]
    assert all(h.unit.active for h in events)


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("importance", {"importance": 1.5}),
        ("attribute", {"attribute": " city"}),
        ("valid_from", {"valid_from": datetime(2025, 1, 1)}),
        ("kind", {"kind": "rumour"}),
        ("value", {"value": ""}),
        ("extras", {"extras": (("id",),)}),
    ],
)
def test_invalid_unit_names_field_and_writes_nothing(
    env: Any, field: str, kwargs: dict[str, Any]
) -> None:
    base: dict[str, Any] = {
        "subject": "user",
        "attribute": "city",
        "value": "Paris",
        "kind": "fact",
        "source": UnitSource(tenant=env.tenant, user="u1"),
        "observed_at": T0,
        "valid_from": T0,
    }
    with pytest.raises(ValidationError) as info:
        env.store.write(MemoryUnit(**{**base, **kwargs}))
    assert info.value.field == field
    assert env.longterm.count(MEMORIES, tenant=env.tenant) == 0


def test_write_rejects_non_units(env: Any) -> None:
    with pytest.raises(ValidationError) as info:
        env.store.write({"subject": "user"})
    assert info.value.field == "unit"
    with pytest.raises(ValidationError):
        env.store.as_of(env.tenant, "u1", "user", "city", datetime(2025, 1, 1))
