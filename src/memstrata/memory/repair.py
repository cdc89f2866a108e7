"""Repairs after a crash: L3 is brought in line with the Redis slot record.

A writer commits in Redis first and rewrites L3 after, closing the old version
before finalizing its new (pending) point. A crash in between leaves, at worst,
a committed point still marked pending and the previous version already
closed or still typed active; the slot record's version log and ``active_id``
say what the writer meant, so any reader or the next writer can finish its work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import MEMORIES, Filter
from memstrata.memory.codec import from_payload, is_pending
from memstrata.memory.slots import SlotRecords
from memstrata.memory.units import MemoryUnit
from memstrata.memory.versioning import SlotState, active_fields


class SlotStore(Protocol):
    """What a repair reads and rewrites (``memstrata.memory.store.MemoryStore``)."""

    @property
    def slots(self) -> SlotRecords:
        """The Redis slot records."""
        ...

    @property
    def longterm(self) -> LongTermStore:
        """The L3 facade."""
        ...

    def find(
        self, tenant: str, user: str, *, types: tuple[str, ...] | None = None, **extras: str
    ) -> list[MemoryUnit]:
        """Committed units of one user matching exact payload fields."""
        ...

    def vectors(self, tenant: str, ids: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        """Stored dense vectors of ``ids``."""
        ...

    def put(
        self,
        units: Sequence[MemoryUnit],
        vectors: Sequence[NDArray[np.float32]],
        *,
        invalidated: bool = False,
    ) -> None:
        """Rewrite units whose vectors are known."""
        ...


def repair_slot(store: SlotStore, tenant: str, user: str, slot: str) -> bool:
    """Rewrite the slot's points that disagree with its record; True if any did."""
    state = store.slots.read(tenant, user, slot)
    flt = Filter(tenant=tenant, user=user, extras=(("slot", slot),))
    logged = {point_id: version for version, point_id in state.log}
    fixes: list[MemoryUnit] = []
    for record in store.longterm.iter_records(MEMORIES, flt):
        unit = from_payload(record.id, record.payload)
        pending = is_pending(record.payload)
        if pending and record.id not in logged:
            continue  # a writer still deciding, or one that died before committing
        version = logged.get(record.id, unit.version)
        typed_active = record.payload.get("type") == "fact"
        if record.id == state.active_id:
            if pending or not typed_active or unit.version != version:
                fixes.append(replace(unit, active=True, valid_to=None, version=version))
        elif pending or typed_active:
            # Closed where the active version starts (when it started later), by the
            # version committed after it.
            end = state.active_from if typed_active and state.active_from else unit.valid_to
            valid_to = None if end is None else max(end, unit.valid_from)
            by = unit.superseded_by or next(
                (point_id for v, point_id in state.log if v > version), None
            )
            fixes.append(
                replace(unit, active=False, version=version, valid_to=valid_to, superseded_by=by)
            )
    if fixes:
        ids = [u.id or "" for u in fixes]
        vectors = store.vectors(tenant, ids)
        store.put(fixes, [vectors[i] for i in ids])
    return bool(fixes)


def rebuild_slot(store: SlotStore, tenant: str, user: str, slot: str) -> SlotState:
    """Recreate a lost slot record from L3 (the latest-starting active unit wins)."""
    units = store.find(tenant, user, slot=slot)
    if not units:
        return store.slots.read(tenant, user, slot)
    active = [u for u in units if u.active]
    winner = max(active, key=lambda u: (u.valid_from, u.version)) if active else None
    fields = {"version": str(max(u.version for u in units))}
    fields.update({f"v:{u.version}": u.id or "" for u in units})
    fields.update(active_fields(winner))
    # Expected rev 0: if another process rebuilt it first, its record stands.
    store.slots.swap(tenant, user, slot, 0, fields)
    repair_slot(store, tenant, user, slot)
    return store.slots.read(tenant, user, slot)
