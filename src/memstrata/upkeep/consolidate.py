"""Consolidation: the offline pass that keeps long-term memory small and right.

One pass per tenant, in a fixed order (so the same input gives the same report):

1. repair every fact slot against its Redis record (crash leftovers);
2. merge duplicates left by races (same content, several active points);
3. compress old, low-value events into one summary per (user, month) whose value
   keeps ids, amounts and dates verbatim; a summary is never summarized again
   (no nested summaries: docs/architecture.md, "Upkeep");
4. move superseded history older than the horizon, invalidated units and
   faded units (retention below the floor, not pinned) to ``memories_cold``,
   from where :func:`restore` brings them back.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.errors import BackendError
from memstrata.extract.verbatim import find_extras
from memstrata.longterm.facade import NewItem
from memstrata.longterm.points import MEMORIES, MEMORIES_COLD, RESERVED_KEYS, Filter, Record
from memstrata.memory.codec import (
    UNIT_TYPES,
    from_payload,
    is_pending,
    slot_string,
    to_item,
    unit_id,
)
from memstrata.memory.retention import has_faded, retention_score
from memstrata.memory.store import MemoryStore
from memstrata.memory.units import MAX_VALUE_CHARS, MemoryUnit, UnitSource
from memstrata.memory.versioning import active_fields
from memstrata.validation import check_id

SUMMARY_SUBJECT = "events"
PENDING_GRACE = timedelta(hours=1)
"""How long an uncommitted point may wait for its writer before it is dropped."""
_LINE_LIMIT = 500


@dataclass(frozen=True, slots=True)
class ConsolidationReport:
    """What one pass did; every tuple is sorted, so equal inputs give equal reports."""

    now: datetime
    repaired_slots: tuple[str, ...] = ()
    dropped_pending: tuple[str, ...] = ()
    """Ids of points written by writers that died before committing."""
    merged_duplicates: tuple[str, ...] = ()
    """Ids of duplicate points folded into their twin and removed."""
    summaries: tuple[str, ...] = ()
    """Ids of the summary units created."""
    compressed: tuple[str, ...] = ()
    """Ids of the events a summary replaced (moved to cold storage)."""
    cold_superseded: tuple[str, ...] = ()
    cold_invalidated: tuple[str, ...] = ()
    cold_faded: tuple[str, ...] = ()

    @property
    def counts(self) -> Mapping[str, int]:
        """Number of ids per action."""
        return {
            "repaired_slots": len(self.repaired_slots),
            "dropped_pending": len(self.dropped_pending),
            "merged_duplicates": len(self.merged_duplicates),
            "summaries": len(self.summaries),
            "compressed": len(self.compressed),
            "cold_superseded": len(self.cold_superseded),
            "cold_invalidated": len(self.cold_invalidated),
            "cold_faded": len(self.cold_faded),
        }


@dataclass(frozen=True, slots=True)
class _Loaded:
    unit: MemoryUnit
    invalidated: bool


def _load(store: MemoryStore, tenant: str) -> list[_Loaded]:
    # Units only: episodes share the collection and are never consolidated (only
    # forget removes what a user said).
    records = store.longterm.iter_records(MEMORIES, Filter(tenant=tenant, types=UNIT_TYPES))
    loaded = [
        _Loaded(from_payload(r.id, r.payload), bool(r.payload.get("invalidated", False)))
        for r in records
        if not is_pending(r.payload)
    ]
    return sorted(loaded, key=lambda x: x.unit.id or "")


def consolidate(
    store: MemoryStore, now: datetime, *, tenants: Sequence[str] | None = None
) -> ConsolidationReport:
    """Run one pass over ``tenants`` (default: every tenant that wrote a memory)."""
    names = sorted(
        store.slots.tenants() if tenants is None else {check_id("tenants", t) for t in tenants}
    )
    report: dict[str, list[str]] = defaultdict(list)
    for tenant in names:
        _repair(store, tenant, now, report)
        _merge_duplicates(store, tenant, report)
        _compress(store, tenant, now, report)
        _to_cold(store, tenant, now, report)
    return ConsolidationReport(now=now, **{k: tuple(sorted(v)) for k, v in report.items()})


def _repair(store: MemoryStore, tenant: str, now: datetime, report: dict[str, list[str]]) -> None:
    records = list(
        store.longterm.iter_records(
            MEMORIES, Filter(tenant=tenant, types=("fact", "history", "pending"))
        )
    )
    slots = sorted(
        {
            (str(r.payload["user"]), str(r.payload["slot"]))
            for r in records
            if r.payload.get("kind") == "fact"
        }
    )
    for user, slot in slots:
        if store.slots.read(tenant, user, slot).rev == 0:
            store.rebuild_slot(tenant, user, slot)
            report["repaired_slots"].append(slot)
        elif store.repair_slot(tenant, user, slot):
            report["repaired_slots"].append(slot)
    # A pending point no version log names, untouched for a while, belongs to a
    # writer that died before committing: nothing refers to it.
    stale_before = (now - PENDING_GRACE).timestamp()
    stale = []
    for record in records:
        payload = record.payload
        if not is_pending(payload) or float(payload.get("updated_at", 0.0)) >= stale_before:
            continue
        state = store.slots.read(tenant, str(payload["user"]), str(payload["slot"]))
        if record.id not in {point_id for _, point_id in state.log}:
            stale.append(record.id)
    if stale:
        store.longterm.delete(MEMORIES, stale, tenant=tenant)
        report["dropped_pending"].extend(stale)


def _merge_duplicates(store: MemoryStore, tenant: str, report: dict[str, list[str]]) -> None:
    groups: dict[tuple[str, str], list[MemoryUnit]] = defaultdict(list)
    for loaded in _load(store, tenant):
        if loaded.unit.active:
            groups[(loaded.unit.source.user, loaded.unit.content_hash)].append(loaded.unit)
    for units in groups.values():
        if len(units) < 2:
            continue
        keeper, *twins = sorted(units, key=lambda u: (u.observed_at, u.id or ""))
        accessed = [u.last_accessed for u in units if u.last_accessed is not None]
        merged = replace(
            keeper,
            access_count=sum(u.access_count for u in units),
            importance=max(u.importance for u in units),
            pinned=any(u.pinned for u in units),
            last_accessed=max(accessed) if accessed else None,
        )
        _rewrite(store, tenant, [merged])
        twin_ids = [u.id or "" for u in twins]
        store.longterm.delete(MEMORIES, twin_ids, tenant=tenant)
        report["merged_duplicates"].extend(twin_ids)


def summary_value(events: Sequence[MemoryUnit]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A summary text of ``events`` and the verbatim values it must keep.

    Each event becomes one dated line; ids, amounts and dates (the events' own
    ``extras`` and whatever the verbatim patterns find) are listed once more, as
    written, on a closing line, so they survive even when a long line is cut.
    """
    tokens: dict[tuple[str, str], None] = {}
    lines: list[str] = []
    for event in sorted(events, key=lambda u: (u.observed_at, u.id or "")):
        for pair in (*event.extras, *find_extras(event.value)):
            tokens.setdefault(pair, None)
        day = event.observed_at.date().isoformat()
        line = f"{day} {event.subject} {event.attribute}: {event.value}"
        lines.append(line if len(line) <= _LINE_LIMIT else line[: _LINE_LIMIT - 1] + "…")
    extras = tuple(tokens)
    if extras:
        lines.append("verbatim: " + ", ".join(value for _, value in extras))
    return "\n".join(lines), extras


def _chunks(events: list[MemoryUnit]) -> list[list[MemoryUnit]]:
    """Split a period's events so each summary value fits ``MAX_VALUE_CHARS``."""
    chunks: list[list[MemoryUnit]] = [[]]
    for event in events:
        candidate = [*chunks[-1], event]
        if chunks[-1] and len(summary_value(candidate)[0]) > MAX_VALUE_CHARS:
            chunks.append([event])
        else:
            chunks[-1] = candidate
    return chunks


def _compress(store: MemoryStore, tenant: str, now: datetime, report: dict[str, list[str]]) -> None:
    settings = store.settings
    cutoff = now - timedelta(days=settings.compress_after_days)
    groups: dict[tuple[str, str], list[MemoryUnit]] = defaultdict(list)
    for loaded in _load(store, tenant):
        unit = loaded.unit
        if (
            unit.kind == "event"
            and unit.active
            and not unit.is_summary
            and not unit.pinned
            and unit.observed_at < cutoff
            and retention_score(unit, now, decay_per_day=settings.decay_per_day)
            < settings.compress_below_retention
        ):
            groups[(unit.source.user, unit.observed_at.strftime("%Y-%m"))].append(unit)
    for (user, period), events in sorted(groups.items()):
        if len(events) < 2:
            continue  # a summary of one event saves nothing
        events.sort(key=lambda u: (u.observed_at, u.id or ""))
        chunks = _chunks(events)
        for part, chunk in enumerate(chunks, start=1):
            value, extras = summary_value(chunk)
            suffix = f" part {part}" if len(chunks) > 1 else ""
            summary = MemoryUnit(
                subject=SUMMARY_SUBJECT,
                attribute=f"summary {period}{suffix}",
                value=value,
                kind="event",
                source=UnitSource(tenant=tenant, user=user),
                # Made now: its retention clock starts now, or the pass that wrote it
                # would find it already forgotten.
                observed_at=now,
                valid_from=min(u.valid_from for u in chunk),
                importance=max(u.importance for u in chunk),
                extras=extras,
                derived_from=tuple(sorted(u.id or "" for u in chunk)),
            )
            summary = replace(summary, id=unit_id(summary))
            store.longterm.add(MEMORIES, [to_item(summary)])
            report["summaries"].append(summary.id or "")
        ids = [u.id or "" for u in events]
        move(store, tenant, ids, MEMORIES, MEMORIES_COLD)
        report["compressed"].extend(ids)


def _to_cold(store: MemoryStore, tenant: str, now: datetime, report: dict[str, list[str]]) -> None:
    settings = store.settings
    horizon = now - timedelta(days=settings.history_horizon_days)
    moves: dict[str, list[MemoryUnit]] = defaultdict(list)
    for loaded in _load(store, tenant):
        unit = loaded.unit
        if loaded.invalidated:
            moves["cold_invalidated"].append(unit)
        elif not unit.active and unit.valid_to is not None and unit.valid_to < horizon:
            moves["cold_superseded"].append(unit)
        elif unit.active and has_faded(
            unit, now, floor=settings.forget_below_retention, decay_per_day=settings.decay_per_day
        ):
            if unit.kind == "fact":
                slot = slot_string(tenant, unit.slot)
                if not store.slots.clear_active(tenant, unit.source.user, slot, unit.id or ""):
                    continue  # superseded meanwhile: history now, handled next pass
            moves["cold_faded"].append(unit)
    for action in sorted(moves):
        ids = [u.id or "" for u in moves[action]]
        move(store, tenant, ids, MEMORIES, MEMORIES_COLD)
        report[action].extend(ids)


def _rewrite(store: MemoryStore, tenant: str, units: Sequence[MemoryUnit]) -> None:
    ids = [u.id or "" for u in units]
    records = {
        r.id: r for r in store.longterm.index.retrieve(MEMORIES, ids, tenant, with_vectors=True)
    }
    pairs = [(u, _dense(records[u.id])) for u in units if u.id in records]
    store.put([u for u, _ in pairs], [v for _, v in pairs])


def _dense(record: Record) -> NDArray[np.float32]:
    """The stored vector of a record read ``with_vectors`` (always present then)."""
    if record.dense is None:
        raise BackendError(f"point {record.id}: the engine returned no vector")
    return record.dense


def _raw_item(record: Record) -> NewItem:
    payload: Mapping[str, Any] = record.payload
    return NewItem(
        text=str(payload["text"]),
        tenant=str(payload["tenant"]),
        user=payload.get("user"),
        type=str(payload["type"]),
        source=str(payload.get("source", "")),
        id=record.id,
        created_at=float(payload["created_at"]),
        extra={k: v for k, v in payload.items() if k not in RESERVED_KEYS},
    )


def move(store: MemoryStore, tenant: str, ids: Sequence[str], src: str, dst: str) -> list[str]:
    """Copy points verbatim (payload and vector) from ``src`` to ``dst``, then delete them.

    Copy before delete: a crash in between leaves a twin, never a loss, and a
    second run of the same move is harmless.
    """
    if not ids:
        return []
    records = [
        r
        for r in store.longterm.index.retrieve(src, list(ids), tenant, with_vectors=True)
        if r.dense is not None
    ]
    if not records:
        return []
    store.longterm.add_vectors(
        dst, [_raw_item(r) for r in records], np.stack([_dense(r) for r in records])
    )
    moved = [r.id for r in records]
    store.longterm.delete(src, moved, tenant=tenant)
    return moved


def restore(store: MemoryStore, tenant: str, ids: Sequence[str]) -> tuple[str, ...]:
    """Bring units back from cold storage into ``memories``.

    A fact that was active when it left becomes active again only if its slot has
    no active version now; otherwise it returns as history, closed where the
    current version starts.
    """
    check_id("tenant", tenant)
    records = [
        r
        for r in store.longterm.index.retrieve(MEMORIES_COLD, list(ids), tenant, with_vectors=True)
        if r.dense is not None
    ]
    restored: list[str] = []
    for record in records:
        unit = from_payload(record.id, record.payload)
        if unit.kind == "fact" and unit.active:
            user, slot = unit.source.user, slot_string(tenant, unit.slot)
            if not store.slots.set_active_if_empty(tenant, user, slot, active_fields(unit)):
                start = store.slots.read(tenant, user, slot).active_from or unit.valid_from
                unit = unit.superseded(start)
        store.put([unit], [_dense(record)])
        store.longterm.delete(MEMORIES_COLD, [record.id], tenant=tenant)
        restored.append(record.id)
    return tuple(restored)
