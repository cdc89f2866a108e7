"""MemoryStore: versioned, deduplicated long-term memory over L3 and a Redis slot record.

Reads of "the current value" never use vector search: the active version of a
slot is found by an exact payload filter and checked against the Redis slot
record (see :mod:`memstrata.memory.versioning`), which decides ties and repairs
what a crash between the Redis commit and the L3 write left behind.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from memstrata.clock import Clock
from memstrata.config import MemorySettings
from memstrata.errors import ConfigError, ConflictError, NotFoundError, ValidationError
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import MEMORIES, Filter, Hit
from memstrata.memory.codec import (
    ACTIVE_TYPES,
    from_payload,
    is_pending,
    slot_string,
    to_item,
    unit_id,
)
from memstrata.memory.repair import rebuild_slot, repair_slot
from memstrata.memory.retention import bumped_importance
from memstrata.memory.slots import SlotRecords
from memstrata.memory.units import Dispute, MemoryUnit
from memstrata.memory.versioning import (
    Decision,
    SlotState,
    WriteAction,
    active_fields,
    decide,
    older_valid_to,
    version_at,
)
from memstrata.validation import check_id, check_positive_int

Vector = NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class WriteOutcome:
    """What :meth:`MemoryStore.write` did: the action, the unit it concerns, its version."""

    action: WriteAction
    unit_id: str
    version: int


@dataclass(frozen=True, slots=True)
class MemoryHit:
    """A search result: the unit, its fused score and dense cosine to the query."""

    unit: MemoryUnit
    score: float
    cosine: float


class HitSearch(Protocol):
    """The reader role a memory store searches with (:class:`memstrata.retrieval.Retriever`)."""

    def search(
        self,
        collection: str,
        query: str,
        *,
        tenant: str,
        user: str | None = None,
        types: Sequence[str] | None = None,
        k: int = 10,
    ) -> list[Hit]:
        """Hits best first, each with its cosine to the query."""
        ...


class MemoryStore:
    """Long-term memory that stays correct over months (docs/architecture.md, "The writer")."""

    def __init__(
        self,
        longterm: LongTermStore,
        redis_client: Any,
        clock: Clock,
        *,
        settings: MemorySettings | None = None,
        reader: HitSearch | None = None,
    ) -> None:
        self._lt = longterm
        self._reader = reader
        self._clock = clock
        self._settings = settings or MemorySettings()
        self._redis = redis_client
        self._slots = SlotRecords(redis_client, self._settings.redis_prefix)
        # Jitter only spreads retries; a seeded generator keeps runs reproducible.
        self._rng = random.Random(0)

    @property
    def settings(self) -> MemorySettings:
        """The settings this store runs with."""
        return self._settings

    @property
    def longterm(self) -> LongTermStore:
        """The L3 facade (consolidation and maintenance tools)."""
        return self._lt

    @property
    def redis(self) -> Any:
        """The Redis client of the slot records (a server or a cluster)."""
        return self._redis

    @property
    def slots(self) -> SlotRecords:
        """The Redis slot records (consolidation and maintenance tools)."""
        return self._slots

    # --- writes ------------------------------------------------------------------

    def write(
        self, unit: MemoryUnit, *, merge: bool = False, replaces: bool = False
    ) -> WriteOutcome:
        """Store ``unit``: insert, supersede, merge, dedupe, or keep an older one as history.

        ``replaces``: an explicit correction (or what a removal leaves of a set) that
        supersedes the active value however close, and replaces a set rather than adds
        to it (:func:`~memstrata.memory.versioning.decide`). The store owns
        ``version``, ``active`` and ``valid_to``; the unit's values for them are
        ignored. Raises ``ConflictError`` only when ``settings.max_write_attempts``
        optimistic commits all lost.
        """
        if not isinstance(unit, MemoryUnit):
            raise ValidationError("unit", f"must be a MemoryUnit, got {type(unit).__name__}")
        if not isinstance(merge, bool):
            raise ValidationError("merge", "must be a bool")
        if not isinstance(replaces, bool):
            raise ValidationError("replaces", "must be a bool")
        unit = fresh(unit)
        assert unit.id is not None
        self._slots.register_tenant(unit.source.tenant)
        if unit.kind == "event":
            return self._write_event(unit)
        return self._write_fact(unit, merge, replaces)

    def _write_event(self, unit: MemoryUnit) -> WriteOutcome:
        # Events never supersede each other: the same event twice is one event.
        same = self.find(unit.source.tenant, unit.source.user, content_hash=unit.content_hash)
        if same:
            kept = self._touch(same[0], unit)
            return WriteOutcome("deduplicated", kept.id or "", kept.version)
        self._lt.add(MEMORIES, [to_item(unit)])
        return WriteOutcome("inserted", unit.id or "", 1)

    def _write_fact(self, unit: MemoryUnit, merge: bool, replaces: bool = False) -> WriteOutcome:
        tenant, user = unit.source.tenant, unit.source.user
        slot = slot_string(tenant, unit.slot)
        assert unit.id is not None
        state = self._slots.read(tenant, user, slot)
        if state.active_id and state.active_hash == unit.content_hash:
            # Exact duplicate of the active version: no embedding, no new point.
            kept = self._touch_id(tenant, state.active_id, unit)
            if kept is not None:
                return WriteOutcome("deduplicated", state.active_id, kept.version)
        existing = self._lt.get(MEMORIES, [unit.id], tenant=tenant)
        if existing and not is_pending(existing[0].payload):
            # A replay of an observation already stored (at-least-once delivery).
            stored = from_payload(existing[0].id, existing[0].payload)
            return WriteOutcome("deduplicated", unit.id, stored.version)
        # Written before the commit so its vector exists for the near-duplicate test
        # and a crash after the commit leaves a point that repair can finalize.
        self._lt.add(MEMORIES, [to_item(unit, pending=True)])
        pending, vector = unit, self.vectors(tenant, [unit.id])[unit.id]
        for attempt in range(self._settings.max_write_attempts):
            state = self._slots.read(tenant, user, slot)
            if state.rev == 0:
                state = self.rebuild_slot(tenant, user, slot)
            active, active_vec, lagging = self._load_active(tenant, state)
            if lagging:
                # A writer died between its commit and its L3 write: finish its work
                # first, so the version it committed is closed properly by this one.
                self.repair_slot(tenant, user, slot)
                continue
            cosine = None if active_vec is None else float(np.dot(vector, active_vec))
            decision = decide(
                unit,
                active,
                cosine=cosine,
                merge=merge,
                settings=self._settings,
                replaces=replaces,
            )
            if decision.final is None:
                assert active is not None
                if active.id != unit.id:
                    # Replays derive the same id: when a concurrent copy of this very
                    # write won, the "pending" point is the winner's - keep it.
                    self._lt.delete(MEMORIES, [unit.id], tenant=tenant)
                kept = self._touch(active, unit)
                return WriteOutcome("deduplicated", kept.id or "", kept.version)
            final = replace(decision.final, version=state.version + 1)
            if decision.action == "ignored_older":
                assert active is not None
                # The active version began after this one (that is why it is older);
                # it closes it at the latest, even before L3's history lists it.
                versions = [*self.history(tenant, user, unit.subject, unit.attribute), active]
                end = older_valid_to(final.valid_from, [u.valid_from for u in versions])
                # Closed by the first version that began after it.
                by = next((u.id for u in versions if u.valid_from == end), None)
                final = replace(final, valid_to=end, superseded_by=by)
            if final.value != pending.value:
                # The pending point always holds what this write commits (a merge
                # changes the text), so a repair after a crash finishes it exactly.
                self._lt.add(MEMORIES, [to_item(final, pending=True)])
                pending, vector = final, self.vectors(tenant, [unit.id])[unit.id]
            fields = {"version": str(final.version), f"v:{final.version}": unit.id}
            if decision.becomes_active:
                fields.update(active_fields(final))
            if self._slots.swap(tenant, user, slot, state.rev, fields):
                self._apply(decision, final, vector, active, active_vec)
                return WriteOutcome(decision.action, unit.id, final.version)
            self._backoff(attempt)
        self._lt.delete(MEMORIES, [unit.id], tenant=tenant)
        raise ConflictError(
            f"memory slot {slot}: {self._settings.max_write_attempts} commits lost to "
            "concurrent writers"
        )

    def _apply(
        self,
        decision: Decision,
        final: MemoryUnit,
        vector: Vector,
        active: MemoryUnit | None,
        active_vec: Vector | None,
    ) -> None:
        """Bring L3 in line with a committed decision (the commit already won)."""
        # Close the old version first: a crash in between leaves the new one pending,
        # which the next reader or writer sees and finishes (see repair_slot).
        if decision.becomes_active and active is not None and active_vec is not None:
            self.put([active.superseded(final.valid_from, by=final.id)], [active_vec])
        self.put([final], [vector])
        if decision.becomes_active:
            # L3 writes are last-writer-wins and a rewrite embeds the text again
            # (the multilingual vector), so a newer writer may have closed this
            # version while it was being put back as active: the slot record decides.
            tenant, user = final.source.tenant, final.source.user
            slot = slot_string(tenant, final.slot)
            if self._slots.read(tenant, user, slot).active_id != final.id:
                self.repair_slot(tenant, user, slot)

    def _backoff(self, attempt: int) -> None:
        ceiling = min(self._settings.retry_backoff_max_s, 0.0005 * 2 ** min(attempt, 10))
        time.sleep(self._rng.uniform(0, ceiling))

    def _touch(self, stored: MemoryUnit, seen: MemoryUnit | None = None) -> MemoryUnit:
        """Record a use (or a repeated observation) of ``stored``."""
        assert stored.id is not None
        bumped = self.touched(stored, seen)
        tenant, user = stored.source.tenant, stored.source.user
        vec = self.vectors(tenant, [stored.id]).get(stored.id)
        if vec is not None:
            self.put([bumped], [vec])
        if stored.kind == "fact" and stored.active:
            # Access stats are last-writer-wins, but activeness is not: had a writer
            # superseded this version meanwhile, the rewrite above revived it in L3.
            slot = slot_string(tenant, stored.slot)
            if self._slots.read(tenant, user, slot).active_id != stored.id:
                self.repair_slot(tenant, user, slot)
        return bumped

    def touched(self, stored: MemoryUnit, seen: MemoryUnit | None = None) -> MemoryUnit:
        """``stored`` as a use (or a repeated observation ``seen``) leaves it: access
        stats and importance up, and the episodes that said it again (pure)."""
        step = self._settings.access_importance_step
        importance = bumped_importance(stored.importance, step=step)
        if seen is not None:
            importance = max(importance, seen.importance)
            stored = stored.with_episodes(seen.episodes)
            if stored.disputed is not None and seen.observed_at >= stored.disputed.at:
                stored = stored.confirmed()  # said again after the doubt: current again
        return replace(stored.accessed(self._clock.now()), importance=importance)

    def _touch_id(self, tenant: str, point_id: str, seen: MemoryUnit) -> MemoryUnit | None:
        found = self.get(tenant, [point_id])
        return self._touch(found[0], seen) if found else None

    def record_access(self, tenant: str, ids: Sequence[str]) -> tuple[MemoryUnit, ...]:
        """Mark units as used now: access stats up, importance up a little."""
        return tuple(self._touch(u) for u in self.get(tenant, ids))

    def adjust_importance(
        self, tenant: str, steps: Mapping[str, float], *, event_id: str | None = None
    ) -> tuple[MemoryUnit, ...]:
        """Move the importance of current units (feedback): a positive step moves it
        that fraction of the way to 1, a negative one that fraction of the way to 0.
        Ids that are not current units (history, episodes, gone) are skipped; returns
        the units as rewritten (vectors kept, access stats untouched).

        ``event_id``: the feedback event the steps come from. A unit records it with
        the step, in the same write, and skips an event it already took: a replayed
        event (a worker that crashed before marking it done) moves nothing twice."""
        check_id("tenant", tenant)
        if event_id is not None:
            check_id("event_id", event_id)
        for point_id, step in steps.items():
            check_id("steps", point_id)
            if isinstance(step, bool) or not isinstance(step, int | float) or abs(step) > 1:
                raise ValidationError("steps", f"{point_id}: a step must be within [-1, 1]")
        units = [
            u
            for u in self.get(tenant, list(steps))
            if u.active and (event_id is None or event_id not in u.feedback_applied)
        ]
        if not units:
            return ()
        vectors = self.vectors(tenant, [u.id or "" for u in units])
        changed = [
            replace(
                u if event_id is None else u.with_feedback(event_id),
                importance=stepped_importance(u.importance, steps[u.id or ""]),
            )
            for u in units
            if u.id in vectors
        ]
        if changed:
            self.put(changed, [vectors[u.id or ""] for u in changed])
        for unit in changed:
            if unit.kind == "fact":
                # As in _touch: had a writer superseded this version meanwhile, the
                # rewrite above revived it in L3; the slot record decides.
                slot = slot_string(tenant, unit.slot)
                if self._slots.read(tenant, unit.source.user, slot).active_id != unit.id:
                    self.repair_slot(tenant, unit.source.user, slot)
        return tuple(changed)

    def dispute(self, tenant: str, point_id: str, dispute: Dispute) -> MemoryUnit | None:
        """Put the current fact ``point_id`` in doubt (a newer episode said it changed
        without saying to what): it keeps its slot, marked and with its confidence
        lowered, until a new value supersedes it or the user says it again. A fact
        that is no longer current, or was stated after the dispute, is left alone
        (None)."""
        check_id("tenant", tenant)
        if not isinstance(dispute, Dispute):
            raise ValidationError("dispute", "must be a Dispute")
        found = self.get(tenant, [point_id])
        if not found or found[0].kind != "fact" or not found[0].active:
            return None
        unit = found[0]
        if unit.observed_at >= dispute.at or dispute.episode in unit.episodes:
            return None
        vectors = self.vectors(tenant, [point_id])
        if point_id not in vectors:
            return None
        doubted = unit.doubted(dispute)
        self.put([doubted], [vectors[point_id]])
        # As in _touch: had a writer superseded it meanwhile, the rewrite revived it.
        slot = slot_string(tenant, unit.slot)
        if self._slots.read(tenant, unit.source.user, slot).active_id != point_id:
            self.repair_slot(tenant, unit.source.user, slot)
        return doubted

    def invalidate(self, tenant: str, point_id: str) -> MemoryUnit:
        """Close a unit found wrong (a correction): no longer active, moved cold later."""
        found = self.get(tenant, [point_id])
        if not found:
            raise NotFoundError(f"memory {point_id} of tenant {tenant}")
        unit = found[0]
        now = self._clock.now()
        if unit.kind == "fact" and unit.active:
            slot = slot_string(tenant, unit.slot)
            self._slots.clear_active(tenant, unit.source.user, slot, point_id)
        closed = replace(unit, active=False, valid_to=max(now, unit.valid_from))
        vec = self.vectors(tenant, [point_id])[point_id]
        self.put([closed], [vec], invalidated=True)
        return closed

    # --- reads -------------------------------------------------------------------

    def get(self, tenant: str, ids: Sequence[str]) -> list[MemoryUnit]:
        """Stored (committed) units among ``ids``, in their order."""
        records = self._lt.get(MEMORIES, ids, tenant=tenant)
        return [from_payload(r.id, r.payload) for r in records if not is_pending(r.payload)]

    def active_fact(
        self, tenant: str, user: str, subject: str, attribute: str
    ) -> MemoryUnit | None:
        """The one active version of a slot, by exact payload filter (no vector search)."""
        slot = self._slot(tenant, user, subject, attribute)
        state = self._slots.read(tenant, user, slot)
        if state.rev == 0:
            state = self.rebuild_slot(tenant, user, slot)
        # Active units are typed "fact" in the payload (history is "history"), an
        # exact, indexed filter; the slot record decides if the two ever disagree.
        flagged = self.find(tenant, user, types=("fact",), slot=slot)
        if [u.id for u in flagged] != ([state.active_id] if state.active_id else []):
            self.repair_slot(tenant, user, slot)
            flagged = self.find(tenant, user, types=("fact",), slot=slot)
        return flagged[0] if flagged else None

    def history(
        self, tenant: str, user: str, subject: str, attribute: str
    ) -> tuple[MemoryUnit, ...]:
        """Every committed version of a slot in ``memories``, oldest first.

        Oldest by validity (``valid_from``, then version): a late-arriving older
        observation has a higher version but sorts where it was true.
        """
        slot = self._slot(tenant, user, subject, attribute)
        units = self.find(tenant, user, slot=slot)
        return tuple(sorted(units, key=lambda u: (u.valid_from, u.version)))

    def as_of(
        self, tenant: str, user: str, subject: str, attribute: str, at: datetime
    ) -> MemoryUnit | None:
        """The version whose ``[valid_from, valid_to)`` contains ``at``."""
        if not isinstance(at, datetime) or at.tzinfo is None:
            raise ValidationError("at", "must be a timezone-aware datetime")
        return version_at(self.history(tenant, user, subject, attribute), at)

    def search(
        self,
        tenant: str,
        user: str,
        query: str,
        *,
        k: int = 10,
        kinds: Sequence[str] = ACTIVE_TYPES,
    ) -> list[MemoryHit]:
        """Hybrid search over active units only (history is filtered in the engine), by
        the reader this store was given; a hit whose slot record names another active
        version is repaired and left out."""
        if self._reader is None:
            raise ConfigError("this memory store was built without a reader to search with")
        check_positive_int("k", k)
        kinds = tuple(kinds)
        if not kinds or any(kind not in ACTIVE_TYPES for kind in kinds):
            raise ValidationError("kinds", f"must be a non-empty subset of {ACTIVE_TYPES}")
        hits = self._reader.search(MEMORIES, query, tenant=tenant, user=user, types=kinds, k=k)
        out: list[MemoryHit] = []
        for hit in hits:
            unit = from_payload(hit.id, hit.payload)
            if unit.kind == "fact":
                slot = slot_string(tenant, unit.slot)
                if self._slots.read(tenant, user, slot).active_id != unit.id:
                    # L3 lags the slot record (crash mid-write): fix it, drop the stale hit.
                    self.repair_slot(tenant, user, slot)
                    continue
            out.append(MemoryHit(unit, hit.score, hit.cosine))
        return out

    # --- maintenance ---------------------------------------------------------------

    def repair_slot(self, tenant: str, user: str, slot: str) -> bool:
        """Make L3 agree with the slot record; True when anything was rewritten."""
        return repair_slot(self, tenant, user, slot)

    def rebuild_slot(self, tenant: str, user: str, slot: str) -> SlotState:
        """Recreate a lost slot record from L3 (the latest-starting active unit wins)."""
        return rebuild_slot(self, tenant, user, slot)

    # --- helpers shared with consolidation -------------------------------------------

    def put(
        self, units: Sequence[MemoryUnit], vectors: Sequence[Vector], *, invalidated: bool = False
    ) -> None:
        """Rewrite units whose vectors are known (no re-embedding)."""
        if units:
            items = [to_item(u, invalidated=invalidated) for u in units]
            self._lt.add_vectors(MEMORIES, items, np.stack(vectors))

    def vectors(self, tenant: str, ids: Sequence[str]) -> dict[str, Vector]:
        """Stored dense vectors of ``ids`` (missing ids are absent from the result)."""
        records = self._lt.index.retrieve(MEMORIES, list(ids), tenant, with_vectors=True)
        return {r.id: r.dense for r in records if r.dense is not None}

    def _load_active(
        self, tenant: str, state: SlotState
    ) -> tuple[MemoryUnit | None, Vector | None, bool]:
        """The active version named by the slot record, its vector, and whether L3 lags."""
        if not state.active_id:
            return None, None, False
        records = self._lt.index.retrieve(MEMORIES, [state.active_id], tenant, with_vectors=True)
        if not records:
            return None, None, False
        payload = records[0].payload
        unit = from_payload(records[0].id, payload)
        lagging = is_pending(payload) or payload.get("type") != "fact"
        return unit, records[0].dense, lagging

    def find(
        self, tenant: str, user: str, *, types: tuple[str, ...] | None = None, **extras: str
    ) -> list[MemoryUnit]:
        """Committed units of one user matching exact payload fields (engine-filtered)."""
        flt = _flt(tenant, user, types=types, **extras)
        records = self._lt.iter_records(MEMORIES, flt)
        return [from_payload(r.id, r.payload) for r in records if not is_pending(r.payload)]

    def _slot(self, tenant: str, user: str, subject: str, attribute: str) -> str:
        check_id("tenant", tenant)
        check_id("user", user)
        for name, value in (("subject", subject), ("attribute", attribute)):
            if not isinstance(value, str) or not value.strip():
                raise ValidationError(name, "must be a non-empty string")
        return slot_string(tenant, (user, subject.casefold(), attribute.casefold()))


def stepped_importance(importance: float, step: float) -> float:
    """Importance moved ``step`` of the way to 1 (``step`` > 0) or ``-step`` of the way
    to 0 (``step`` < 0); always within [0, 1] (pure)."""
    if step >= 0:
        return bumped_importance(importance, step=step)
    return max(0.0, importance * (1.0 + step))


def fresh(unit: MemoryUnit) -> MemoryUnit:
    """``unit`` as a write receives it: its id derived if unset, and version, activity,
    end and successor cleared (the store assigns them when it versions the unit)."""
    return replace(
        unit, id=unit_id(unit), version=1, active=True, valid_to=None, superseded_by=None
    )


def _flt(tenant: str, user: str, *, types: tuple[str, ...] | None = None, **extras: str) -> Filter:
    return Filter(tenant=tenant, user=user, types=types, extras=tuple(sorted(extras.items())))
