"""Stage 6 of the write path: the versioned facts and events of one queue batch, committed together.

:meth:`MemoryStore.write` commits one unit in about five engine and Redis round trips.
A queue batch goes through :class:`FactBatch` instead:

1. one pipelined round of slot-record reads (every fact slot of the batch);
2. one engine read of the points the decisions need: the units themselves (a replay
   of a stored observation), the events (the same event is one point) and the slots'
   active versions with their vectors;
3. the decisions, in memory, slot by slot (several units of one slot in the order
   they became true, each deciding against the one before);
4. one upsert of the pending points: a committed version's point exists before its
   commit, so a crash after the commit is repaired from L3 (see ``repair``);
5. one pipelined round of compare-and-swaps, one per slot;
6. the final points, returned for the caller to write in its one upsert with the
   batch's episodes, and a check of the facts rewritten only to count a use.

A slot whose record and points disagree (a writer died mid-write), whose swap lost to
a concurrent writer, or whose unit arrived older than the active version is written
by :meth:`MemoryStore.write` instead, which repairs and retries until it wins; the
guarantees (one active version per slot, versions 1..N without gaps, replays
idempotent) are the store's either way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from memstrata.longterm.facade import IndexedItem
from memstrata.longterm.points import MEMORIES, Filter, Record
from memstrata.memory.codec import UNIT_TYPES, from_payload, is_pending, slot_string, to_item
from memstrata.memory.store import MemoryStore, WriteOutcome, fresh
from memstrata.memory.units import MemoryUnit
from memstrata.memory.versioning import SlotState, active_fields, decide

Vector = NDArray[np.float32]
SlotKey = tuple[str, str, str]
"""``(tenant, user, slot string)``."""


@dataclass(frozen=True, slots=True)
class StagedWrite:
    """What :meth:`FactBatch.stage` committed: an outcome per unit (in order), the
    points still to write, and the active facts among them (checked against their
    slot records by :meth:`FactBatch.settle` once written)."""

    outcomes: tuple[WriteOutcome, ...]
    points: tuple[IndexedItem, ...]
    touched: tuple[tuple[SlotKey, str], ...]


@dataclass(slots=True)
class _SlotPlan:
    """One slot's decisions: the swap to make and the points it writes."""

    key: SlotKey
    rev: int
    members: list[int]
    fields: dict[str, str]
    pending: dict[str, IndexedItem]
    final: dict[str, IndexedItem]


class FactBatch:
    """Commits the units of a batch with a handful of round trips (module docstring)."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store

    def stage(
        self,
        units: Sequence[MemoryUnit],
        vectors: Sequence[Vector],
        *,
        merge: bool = False,
        replaces: Sequence[bool] | None = None,
        second: Sequence[Vector | None] | None = None,
    ) -> StagedWrite:
        """Decide and commit ``units`` (their dense ``vectors`` in the same order;
        ``replaces[i]``: unit ``i`` replaces its slot's value, see
        :func:`~memstrata.memory.versioning.decide`; ``second[i]``: unit ``i``'s
        multilingual vector when the caller has it, written with its pending and
        final points instead of being embedded for each).

        Pending points and the swaps are written here; the final points are returned
        for the caller to write (then call :meth:`settle`).
        """
        if len(units) != len(vectors):
            raise ValueError(f"vectors: expected {len(units)}, got {len(vectors)}")
        flags = tuple(replaces) if replaces is not None else (False,) * len(units)
        if len(flags) != len(units):
            raise ValueError(f"replaces: expected {len(units)}, got {len(flags)}")
        if second is not None and len(second) != len(units):
            raise ValueError(f"second: expected {len(units)}, got {len(second)}")
        store = self._store
        batch = [fresh(unit) for unit in units]
        # One thread's call (the handler's workers share this object): kept local.
        seconds = {batch[i].id or "": row for i, row in enumerate(second or ()) if row is not None}
        for tenant in sorted({u.source.tenant for u in batch}):
            store.slots.register_tenant(tenant)
        keys = {i: _slot_key(u) for i, u in enumerate(batch) if u.kind == "fact"}
        slot_keys = list(dict.fromkeys(keys.values()))
        states = dict(zip(slot_keys, store.slots.read_many(slot_keys), strict=True))
        wanted: dict[str, set[str]] = {}
        for unit in batch:
            wanted.setdefault(unit.source.tenant, set()).add(unit.id or "")
        for (tenant, _, _), state in states.items():
            if state.active_id:
                wanted.setdefault(tenant, set()).add(state.active_id)
        records = self._read(wanted)
        # A slot without a record but with points lost its record (Redis data loss):
        # the unit-by-unit path rebuilds it first.
        orphaned = self._orphaned([k for k, s in states.items() if s.rev == 0])
        outcomes: dict[int, WriteOutcome] = {}
        points: dict[str, IndexedItem] = {}
        touched: list[tuple[SlotKey, str]] = []
        self._events(batch, vectors, records, outcomes, points, seconds)
        plans: list[_SlotPlan] = []
        slow: list[int] = []
        for key in slot_keys:
            members = [i for i, k in keys.items() if k == key]
            plan = (
                None
                if key in orphaned
                else self._plan(
                    key,
                    members,
                    batch,
                    vectors,
                    states[key],
                    records,
                    merge,
                    flags,
                    outcomes,
                    seconds,
                )
            )
            if plan is None:
                slow.extend(members)
                continue
            if plan.fields:
                plans.append(plan)
            else:  # only uses of the active version: nothing to commit
                points.update(plan.final)
                touched.extend((key, point_id) for point_id in plan.final)
        pending = [item for plan in plans for item in plan.pending.values()]
        if pending:
            store.longterm.add_points(MEMORIES, pending)
        won = store.slots.swap_many([(p.key, p.rev, p.fields) for p in plans])
        for plan, ok in zip(plans, won, strict=True):
            if ok:
                points.update(plan.final)
                # Every active version these points write, the newly committed ones
                # too: another writer may close one before the caller writes it back.
                touched.extend(
                    (plan.key, point_id)
                    for point_id, item in plan.final.items()
                    if item.item.type == "fact"
                )
            else:
                slow.extend(plan.members)
        for i in sorted(slow, key=lambda i: (batch[i].valid_from, batch[i].observed_at, i)):
            outcomes[i] = store.write(batch[i], merge=merge, replaces=flags[i])
        return StagedWrite(
            tuple(outcomes[i] for i in range(len(batch))), tuple(points.values()), tuple(touched)
        )

    def settle(self, staged: StagedWrite) -> None:
        """After the points are written: an active fact (new, or rewritten to count a
        use) that a concurrent writer closed meanwhile was revived in L3; repair its
        slot from the record."""
        if not staged.touched:
            return
        states = self._store.slots.read_many([key for key, _ in staged.touched])
        for ((tenant, user, slot), point_id), state in zip(staged.touched, states, strict=True):
            if state.active_id != point_id:
                self._store.repair_slot(tenant, user, slot)

    # --- reads -------------------------------------------------------------------------

    def _read(self, wanted: Mapping[str, set[str]]) -> dict[str, Record]:
        records: dict[str, Record] = {}
        for tenant, ids in wanted.items():
            for record in self._store.longterm.index.retrieve(
                MEMORIES, sorted(ids), tenant, with_vectors=True
            ):
                records[record.id] = record
        return records

    def _orphaned(self, keys: Sequence[SlotKey]) -> set[SlotKey]:
        by_tenant: dict[str, list[SlotKey]] = {}
        for key in keys:
            by_tenant.setdefault(key[0], []).append(key)
        found: set[SlotKey] = set()
        for tenant, members in by_tenant.items():
            slots = tuple(sorted({slot for _, _, slot in members}))
            flt = Filter(tenant=tenant, types=UNIT_TYPES, extras=(("slot", slots),))
            page, _ = self._store.longterm.index.scroll(MEMORIES, flt, limit=len(members) + 1)
            stored = {(str(r.payload.get("user")), str(r.payload.get("slot"))) for r in page}
            if len(page) > len(members):  # more than a page: check each one the slow way
                found.update(members)
                continue
            found.update(key for key in members if (key[1], key[2]) in stored)
        return found

    # --- decisions ---------------------------------------------------------------------

    def _events(
        self,
        batch: Sequence[MemoryUnit],
        vectors: Sequence[Vector],
        records: Mapping[str, Record],
        outcomes: dict[int, WriteOutcome],
        points: dict[str, IndexedItem],
        seconds: Mapping[str, Vector],
    ) -> None:
        """Events never supersede each other: a new one is inserted, a known one (its id
        is its content) counts one more observation."""
        seen: dict[str, tuple[MemoryUnit, Vector]] = {}
        for i, unit in enumerate(batch):
            if unit.kind != "event":
                continue
            point_id = unit.id or ""
            known = seen.get(point_id)
            if known is None:
                record = records.get(point_id)
                if (
                    record is not None
                    and record.dense is not None
                    and not is_pending(record.payload)
                ):
                    known = (from_payload(record.id, record.payload), record.dense)
            if known is None:
                seen[point_id] = (unit, vectors[i])
                outcomes[i] = WriteOutcome("inserted", point_id, 1)
            else:
                kept = self._store.touched(known[0], unit)
                seen[point_id] = (kept, known[1])
                outcomes[i] = WriteOutcome("deduplicated", point_id, kept.version)
            points[point_id] = IndexedItem(
                to_item(seen[point_id][0]), seen[point_id][1], multilingual=seconds.get(point_id)
            )

    def _plan(
        self,
        key: SlotKey,
        members: Sequence[int],
        batch: Sequence[MemoryUnit],
        vectors: Sequence[Vector],
        state: SlotState,
        records: Mapping[str, Record],
        merge: bool,
        flags: Sequence[bool],
        outcomes: dict[int, WriteOutcome],
        seconds: Mapping[str, Vector],
    ) -> _SlotPlan | None:
        """The slot's decisions, or None when the unit-by-unit path must write it."""
        store = self._store
        active: MemoryUnit | None = None
        active_vec: Vector | None = None
        if state.active_id:
            record = records.get(state.active_id)
            if (
                record is None
                or record.dense is None
                or is_pending(record.payload)
                or record.payload.get("type") != "fact"
            ):
                return None  # L3 lags the record: repair first
            active, active_vec = from_payload(record.id, record.payload), record.dense
        # The active version's multilingual vector when this batch committed it (one
        # read from L3 has none: its rewrite embeds its text).
        active_second: Vector | None = None
        plan = _SlotPlan(key, state.rev, list(members), {}, {}, {})
        decided: dict[int, WriteOutcome] = {}
        version = state.version
        order = sorted(members, key=lambda i: (batch[i].valid_from, batch[i].observed_at, i))
        for i in order:
            unit, vector = batch[i], vectors[i]
            point_id = unit.id or ""
            record = records.get(point_id)
            if record is not None and not is_pending(record.payload):
                # A replay of an observation already stored (at-least-once delivery).
                stored = from_payload(record.id, record.payload)
                decided[i] = WriteOutcome("deduplicated", point_id, stored.version)
                continue
            if point_id in plan.pending:
                decided[i] = WriteOutcome("deduplicated", point_id, version)
                continue
            cosine = None if active_vec is None else float(np.dot(vector, active_vec))
            decision = decide(
                unit, active, cosine=cosine, merge=merge, settings=store.settings, replaces=flags[i]
            )
            if decision.action == "ignored_older":
                return None  # its end comes from the slot's history: the slow path reads it
            if decision.final is None:
                assert active is not None and active_vec is not None
                active = store.touched(active, unit)
                plan.final[active.id or ""] = IndexedItem(
                    to_item(active), active_vec, multilingual=active_second
                )
                decided[i] = WriteOutcome("deduplicated", active.id or "", active.version)
                continue
            version += 1
            final = replace(decision.final, version=version)
            final_vec, final_second = vector, seconds.get(point_id)
            if final.value != unit.value:  # a merge: the text indexed is the union
                final_vec = store.longterm.embedder.embed([final.text])[0]
                final_second = None
            plan.fields["version"] = str(version)
            plan.fields[f"v:{version}"] = point_id
            if active is not None and active_vec is not None:
                closed = active.superseded(final.valid_from, by=point_id)
                plan.final[closed.id or ""] = IndexedItem(
                    to_item(closed), active_vec, multilingual=active_second
                )
                if closed.id in plan.pending:
                    # Committed and closed in this same batch: the pending point holds
                    # the closed version, which is what a repair must finish.
                    plan.pending[closed.id] = IndexedItem(
                        to_item(closed, pending=True), active_vec, multilingual=active_second
                    )
            active, active_vec, active_second = final, final_vec, final_second
            plan.pending[point_id] = IndexedItem(
                to_item(final, pending=True), final_vec, multilingual=final_second
            )
            plan.final[point_id] = IndexedItem(to_item(final), final_vec, multilingual=final_second)
            plan.fields.update(active_fields(final))
            decided[i] = WriteOutcome(decision.action, point_id, version)
        outcomes.update(decided)
        return plan


def _slot_key(unit: MemoryUnit) -> SlotKey:
    tenant = unit.source.tenant
    return tenant, unit.source.user, slot_string(tenant, unit.slot)
