"""Crash windows: the Redis slot record decides, L3 is repaired to match."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from memstrata.longterm.points import MEMORIES
from memstrata.memory.codec import slot_string, to_item, unit_id
from memstrata.memory.versioning import active_fields
from memstrata.upkeep.consolidate import consolidate

T0 = datetime(2025, 1, 1, tzinfo=UTC)
DAY = timedelta(days=1)


def _crash_after_commit(env: Any, unit: Any, version: int) -> str:
    """What a writer leaves when it dies after winning the swap, before touching L3."""
    unit = replace(unit, id=unit_id(unit), version=version)
    env.longterm.add(MEMORIES, [to_item(unit, pending=True)])
    slot = slot_string(env.tenant, unit.slot)
    state = env.store.slots.read(env.tenant, "u1", slot)
    fields = {"version": str(version), f"v:{version}": unit.id, **active_fields(unit)}
    assert env.store.slots.swap(env.tenant, "u1", slot, state.rev, fields)
    return unit.id or ""


def test_reader_repairs_a_crash_between_commit_and_l3(env: Any, fact: Any) -> None:
    store = env.store
    store.write(fact("city", "Hangzhou", T0))
    new_id = _crash_after_commit(env, fact("city", "Chengdu", T0 + 90 * DAY), 2)

    # Search runs before any repair: the stale point is typed active in L3, but the
    # slot record says otherwise, so it is never returned.
    hits = store.search(env.tenant, "u1", "city Hangzhou Chengdu")
    assert "Hangzhou" not in [h.unit.value for h in hits]

    active = store.active_fact(env.tenant, "u1", "user", "city")
    assert active is not None and active.id == new_id and active.value == "Chengdu"
    history = store.history(env.tenant, "u1", "user", "city")
    assert [(u.value, u.version, u.active) for u in history] == [
        ("Hangzhou", 1, False),
        ("Chengdu", 2, True),
    ]
    assert history[0].valid_to == T0 + 90 * DAY
    assert [h.unit.value for h in store.search(env.tenant, "u1", "city Chengdu")] == ["Chengdu"]


def test_next_write_after_crash_continues_the_versions(env: Any, fact: Any) -> None:
    store = env.store
    store.write(fact("city", "Hangzhou", T0))
    _crash_after_commit(env, fact("city", "Chengdu", T0 + 90 * DAY), 2)
    out = store.write(fact("city", "Xiamen", T0 + 100 * DAY))
    assert (out.action, out.version) == ("superseded", 3)
    history = store.history(env.tenant, "u1", "user", "city")
    assert [u.version for u in history] == [1, 2, 3]
    assert [u.value for u in history if u.active] == ["Xiamen"]


def test_lost_slot_record_is_rebuilt_from_l3(env: Any, fact: Any) -> None:
    store = env.store
    store.write(fact("city", "Hangzhou", T0))
    store.write(fact("city", "Chengdu", T0 + 90 * DAY))
    slot = slot_string(env.tenant, ("u1", "user", "city"))
    env.redis.delete(store.slots.key(env.tenant, "u1", slot))  # e.g. a Redis without AOF

    assert store.active_fact(env.tenant, "u1", "user", "city").value == "Chengdu"
    out = store.write(fact("city", "Xiamen", T0 + 100 * DAY))
    assert (out.action, out.version) == ("superseded", 3)
    assert [u.value for u in store.history(env.tenant, "u1", "user", "city") if u.active] == [
        "Xiamen"
    ]


def test_invalidate_closes_the_active_version(env: Any, fact: Any) -> None:
    store = env.store
    out = store.write(fact("pet", "cat", T0))
    env.clock.advance(DAY)
    closed = store.invalidate(env.tenant, out.unit_id)
    assert closed.active is False and closed.valid_to == T0 + DAY
    assert store.active_fact(env.tenant, "u1", "user", "pet") is None
    assert store.search(env.tenant, "u1", "pet cat") == []
    # The slot is free again: the correction becomes version 2.
    again = store.write(fact("pet", "dog", T0 + 2 * DAY))
    assert (again.action, again.version) == ("inserted", 2)


def test_record_access_bumps_importance_a_little(env: Any, fact: Any) -> None:
    out = env.store.write(fact("diet", "vegan", T0, importance=0.5))
    env.clock.advance(DAY)
    (touched,) = env.store.record_access(env.tenant, [out.unit_id])
    assert touched.access_count == 1 and touched.last_accessed == T0 + DAY
    assert 0.5 < touched.importance <= 0.55


def test_consolidation_repairs_and_drops_orphans(env: Any, fact: Any) -> None:
    store = env.store
    store.write(fact("city", "Hangzhou", T0))
    crashed = _crash_after_commit(env, fact("city", "Chengdu", T0 + 90 * DAY), 2)
    # A writer that died before its commit: a pending point no log names.
    orphan = replace(fact("city", "Lhasa", T0 + 95 * DAY), id=unit_id(fact("city", "Lhasa", T0)))
    env.longterm.add(MEMORIES, [to_item(orphan, pending=True)])

    report = consolidate(store, T0 + 91 * DAY, tenants=[env.tenant])
    assert report.repaired_slots == (slot_string(env.tenant, ("u1", "user", "city")),)
    assert report.dropped_pending == (orphan.id,)
    assert store.get(env.tenant, [crashed])[0].active is True
    assert env.longterm.count(MEMORIES, tenant=env.tenant) == 2
    # Nothing left to do on a second pass.
    again = consolidate(store, T0 + 91 * DAY, tenants=[env.tenant])
    assert again.repaired_slots == () and again.dropped_pending == ()
