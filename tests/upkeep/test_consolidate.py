"""Consolidation on a scripted history: races merged, events summarized, cold and back."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from memstrata.longterm.points import MEMORIES, MEMORIES_COLD, Filter
from memstrata.memory.codec import to_item
from memstrata.upkeep.consolidate import ConsolidationReport, consolidate, restore, summary_value

T0 = datetime(2025, 3, 1, tzinfo=UTC)
DAY = timedelta(days=1)
NOW = T0 + 400 * DAY


def _script(env: Any, make_unit: Any, tenant: str) -> dict[str, str]:
    """Write the same scripted history into ``env``; returns named unit ids."""
    store = env.store
    ids: dict[str, str] = {}

    def unit(*args: Any, **kw: Any) -> Any:
        return make_unit(*args, tenant=tenant, **kw)

    # Low-value events of one month (compressible), one with never-compress values.
    ids["order"] = store.write(
        unit(
            "order",
            "placed ORD-2024-000123 for ¥1,299.00, delivery 2025-03-24",
            T0 + 2 * DAY,
            kind="event",
            importance=0.3,
            extras=(("order_id", "ORD-2024-000123"), ("amount", "¥1,299.00")),
        )
    ).unit_id
    ids["ticket"] = store.write(
        unit("support", "asked about shipping times", T0 + 5 * DAY, kind="event", importance=0.2)
    ).unit_id
    ids["pinned_event"] = store.write(
        unit("milestone", "signed the annual contract", T0 + 6 * DAY, kind="event", pinned=True)
    ).unit_id
    # A fact superseded long ago (history beyond the horizon) and its successor.
    ids["old_city"] = store.write(unit("city", "Hangzhou", T0, importance=0.9, pinned=True)).unit_id
    ids["new_city"] = store.write(
        unit("city", "Chengdu", T0 + 90 * DAY, importance=0.9, pinned=True)
    ).unit_id
    # An unimportant fact nobody used for a year (forgotten).
    ids["stale"] = store.write(unit("shoe_size", "42", T0, importance=0.1)).unit_id
    # A fact the user corrected (invalidated).
    ids["wrong"] = store.write(unit("pet", "cat", T0 + 300 * DAY, pinned=True)).unit_id
    store.invalidate(tenant, ids["wrong"])
    # A duplicate event left by a race: two points with the same content.
    race = unit("visit", "visited the Shanghai store", T0 + 390 * DAY, kind="event", pinned=True)
    ids["race_a"] = store.write(race).unit_id
    twin = replace(
        race, id="00000000-0000-4000-8000-000000000001", observed_at=race.observed_at + DAY
    )
    env.longterm.add(MEMORIES, [to_item(twin)])
    ids["race_b"] = twin.id or ""
    return ids


def test_consolidation_pass(env: Any, make_unit: Any) -> None:
    ids = _script(env, make_unit, env.tenant)
    store = env.store
    report = consolidate(store, NOW, tenants=[env.tenant])

    assert report.merged_duplicates == (ids["race_b"],)
    assert report.compressed == tuple(sorted([ids["order"], ids["ticket"]]))
    assert len(report.summaries) == 1
    assert report.cold_superseded == (ids["old_city"],)
    assert report.cold_invalidated == (ids["wrong"],)
    assert report.cold_faded == (ids["stale"],)
    assert report.counts["summaries"] == 1

    summary = store.get(env.tenant, list(report.summaries))[0]
    assert summary.is_summary and summary.kind == "event"
    for verbatim in ("ORD-2024-000123", "¥1,299.00", "2025-03-24"):
        assert verbatim in summary.value
    assert set(summary.derived_from) == {ids["order"], ids["ticket"]}
    assert ("order_id", "ORD-2024-000123") in summary.extras

    # The pinned event is never compressed; the slot keeps its active version.
    assert store.get(env.tenant, [ids["pinned_event"]])
    assert store.active_fact(env.tenant, "u1", "user", "city").value == "Chengdu"
    assert store.active_fact(env.tenant, "u1", "user", "shoe_size") is None
    cold = {r.id for r in env.longterm.iter_records(MEMORIES_COLD, Filter(tenant=env.tenant))}
    assert cold == {ids[k] for k in ("order", "ticket", "old_city", "stale", "wrong")}

    # A later pass finds nothing new: a summary is never summarized again, even
    # when it has become old and unimportant itself.
    later = consolidate(store, NOW + 60 * DAY, tenants=[env.tenant])
    assert later.summaries == () and later.compressed == ()
    assert store.get(env.tenant, list(report.summaries))

    # Restore round trip: back in memories, gone from cold, active again if free.
    restored = restore(store, env.tenant, [ids["stale"], ids["old_city"]])
    assert set(restored) == {ids["stale"], ids["old_city"]}
    assert store.active_fact(env.tenant, "u1", "user", "shoe_size").value == "42"
    old_city = store.get(env.tenant, [ids["old_city"]])[0]
    assert old_city.active is False and old_city.valid_to == T0 + 90 * DAY
    assert store.active_fact(env.tenant, "u1", "user", "city").value == "Chengdu"
    assert env.longterm.count(MEMORIES_COLD, tenant=env.tenant) == 3


def test_consolidation_is_deterministic(make_store: Any, make_unit: Any) -> None:
    reports: list[ConsolidationReport] = []
    for name in ("copy-a", "copy-b"):
        env = make_store(name=name)  # same tenant, separate index and Redis prefix
        _script(env, make_unit, "t1")
        reports.append(consolidate(env.store, NOW))
    assert reports[0] == reports[1]
    assert reports[0].summaries and reports[0].cold_faded


def test_summary_value_keeps_verbatim_fields(make_unit: Any) -> None:
    long_text = "x " * 400 + "paid ¥88.50 on 2025-04-01 for INV-2025-7777"
    events = [
        make_unit("note", long_text, T0, kind="event"),
        make_unit("note", "refund 300元 for ORD-2024-000999", T0 + DAY, kind="event"),
    ]
    value, extras = summary_value(events)
    for verbatim in ("¥88.50", "2025-04-01", "INV-2025-7777", "300元", "ORD-2024-000999"):
        assert verbatim in value
        assert verbatim in {v for _, v in extras}
    assert value.index("2025-03-01") < value.index("2025-03-02")  # chronological lines


def test_summaries_are_never_summarized_again(env: Any, fact: Any) -> None:
    store = env.store
    for month in (0, 1):  # two months -> two summaries made by the same pass
        for day in (1, 2):
            at = T0 + (31 * month + day) * DAY
            store.write(
                fact("browse", f"viewed item SKU-{month}{day}00", at, kind="event", importance=0.1)
            )
    first = consolidate(store, NOW, tenants=[env.tenant])
    assert len(first.summaries) == 2 and len(first.compressed) == 4
    # Both summaries are now old, unimportant events of one month: were they
    # ordinary events, this pass would fold them into one.
    later = consolidate(store, NOW + 40 * DAY, tenants=[env.tenant])
    assert later.summaries == () and later.compressed == ()
    kept = store.get(env.tenant, list(first.summaries))
    assert len(kept) == 2 and all(u.is_summary for u in kept)
    values = " ".join(u.value for u in kept)
    for sku in ("SKU-0100", "SKU-0200", "SKU-1100", "SKU-1200"):
        assert sku in values
