"""route(): load what a step intent needs from L1, L2 and L3, with provenance.

The router reads only; it never writes. L3 confidence follows seed 000 §4.3:
an item whose cosine to the query is below ``low_confidence_cosine`` is flagged,
and when every L3 candidate of the step is below ``skip_below_cosine`` L3 is
skipped altogether (the bundle says so).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from memstrata.clock import Clock
from memstrata.config import LongTermSettings
from memstrata.errors import ContextMissError, ValidationError
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import MEMORIES, Hit
from memstrata.permissions import level_of_payload
from memstrata.retrieval.links import EPISODE, follow
from memstrata.router.bundle import ContextBundle, ContextItem, MissingContext, Provenance
from memstrata.router.intents import (
    IntentRegistry,
    IntentSpec,
    L2Need,
    L3Need,
    resolve_placeholders,
)
from memstrata.session.state import SessionState
from memstrata.validation import check_text
from memstrata.working.keys import pending_key, pref_key, series_key
from memstrata.working.memory import SessionWorkingMemory, WorkingMemory

QueryEmbedder = Callable[[str], NDArray[np.float32]]


def _hours_between(earlier: datetime | None, later: datetime) -> float | None:
    if earlier is None:
        return None
    return max(0.0, (later - earlier).total_seconds() / 3600)


class ContextRouter:
    """Builds a :class:`ContextBundle` per step from registered intents."""

    def __init__(
        self,
        intents: IntentRegistry,
        working: WorkingMemory,
        longterm: LongTermStore,
        settings: LongTermSettings,
        clock: Clock,
        embed_query: QueryEmbedder,
    ) -> None:
        self._intents = intents
        self._working = working
        self._longterm = longterm
        self._settings = settings
        self._clock = clock
        self._embed_query = embed_query

    @property
    def intents(self) -> IntentRegistry:
        return self._intents

    def route(
        self,
        session: SessionState,
        step_intent: str,
        query: str | None = None,
        *,
        query_vector: NDArray[np.float32] | None = None,
    ) -> ContextBundle:
        """The context bundle for one step of ``session``.

        ``query`` feeds L3 needs without a fixed query; ``query_vector`` lets a caller
        that already embedded ``query`` skip the embedding.
        """
        if not isinstance(session, SessionState):
            raise ValidationError(
                "session", f"must be a SessionState, got {type(session).__name__}"
            )
        spec = self._intents.get(step_intent)
        if query is not None:
            check_text("query", query, max_chars=8_000)
        if query_vector is not None and query is None:
            raise ValidationError("query_vector", "needs the query it was computed from")
        now = self._clock.now()
        l1_values = self._l1_values(session)
        items: list[ContextItem] = [self._l1_item(session, spec, l1_values)]
        missing: list[MissingContext] = []
        wm = self._working.session(session.session_id)
        for need in spec.l2:
            item = self._l2_item(wm, session, need, l1_values, now)
            if isinstance(item, MissingContext):
                missing.append(item)
            else:
                items.append(item)
        l3_items, l3_missing, skipped = self._l3_items(
            session, spec, query, query_vector, l1_values, now
        )
        items.extend(l3_items)
        missing.extend(l3_missing)
        return ContextBundle(
            session_id=session.session_id,
            step_intent=spec.name,
            step=session.current_step,
            built_at=now,
            items=tuple(items),
            missing=tuple(missing),
            l3_skipped=skipped,
        )

    # -- L1 -----------------------------------------------------------------

    @staticmethod
    def _l1_values(session: SessionState) -> dict[str, Any]:
        data = session.as_dict()
        data.pop("auth_context")  # never part of the model's context
        return data

    @staticmethod
    def _l1_item(session: SessionState, spec: IntentSpec, values: dict[str, Any]) -> ContextItem:
        return ContextItem.of(
            "session",
            {name: values[name] for name in spec.l1},
            Provenance("L1", f"session:{session.session_id}", "session", 1.0, 0.0, level="high"),
        )

    # -- L2 -----------------------------------------------------------------

    def _l2_item(
        self,
        wm: SessionWorkingMemory,
        session: SessionState,
        need: L2Need,
        l1_values: dict[str, Any],
        now: datetime,
    ) -> ContextItem | MissingContext:
        sid = session.session_id
        try:
            if need.kind == "api":
                params = {k: resolve_placeholders(v, l1_values) for k, v in need.params.items()}
                got = wm.get_api_response(need.name, params)
                return ContextItem.of(
                    need.item_name,
                    got.value,
                    Provenance(
                        "L2", got.key, f"api:{need.name}", 1.0, _hours_between(got.stored_at, now)
                    ),
                )
            if need.kind == "result":
                # Steps are named step<N> by convention: a dependent reader extends the TTL.
                got = wm.get_step_result(need.name, reader_step=f"step{session.current_step}")
                return ContextItem.of(
                    need.item_name,
                    got.value,
                    Provenance(
                        "L2", got.key, f"step:{need.name}", 1.0, _hours_between(got.stored_at, now)
                    ),
                )
            if need.kind == "series":
                ref = series_key(sid, need.name)
                points = wm.read_series(need.name)
                if not points:
                    raise ContextMissError(ref, "empty or expired series")
                newest = max(p.timestamp for p in points)
                return ContextItem.of(
                    need.item_name,
                    {"points": [[p.timestamp, p.value] for p in points], "count": len(points)},
                    Provenance(
                        "L2",
                        ref,
                        f"series:{need.name}",
                        1.0,
                        max(0.0, (now.timestamp() - newest) / 3600),
                    ),
                )
            if need.kind == "pending":
                ref = pending_key(sid)
                return ContextItem.of(
                    need.item_name,
                    sorted(wm.pending()),
                    Provenance("L2", ref, "pending_tasks", 1.0, 0.0),
                )
            ref = pref_key(session.tenant, session.user_id, need.name)
            pref = self._working.get_preference(session.user_id, need.name, tenant=session.tenant)
            return ContextItem.of(
                need.item_name,
                {"value": pref.value, "confidence": pref.confidence},
                Provenance(
                    "L2",
                    ref,
                    f"preference:{need.name}",
                    pref.confidence,
                    _hours_between(pref.last_updated, now),
                    low_confidence=pref.confidence < self._settings.low_confidence_cosine,
                ),
            )
        except ContextMissError as miss:
            if need.required:
                raise
            return MissingContext(need.item_name, "L2", miss.key, "missing or expired")

    # -- L3 -----------------------------------------------------------------

    def _l3_items(
        self,
        session: SessionState,
        spec: IntentSpec,
        query: str | None,
        query_vector: NDArray[np.float32] | None,
        l1_values: dict[str, Any],
        now: datetime,
    ) -> tuple[list[ContextItem], list[MissingContext], bool]:
        found: list[tuple[L3Need, _Found]] = []
        missing: list[MissingContext] = []
        vectors: dict[str, NDArray[np.float32]] = {}
        if query is not None and query_vector is not None:
            vectors[query] = query_vector
        for need in spec.l3:
            text = resolve_placeholders(need.query, l1_values) if need.query else query
            if not text or not text.strip():
                missing.append(MissingContext(need.item_prefix, "L3", need.collection, "no query"))
                continue
            if text not in vectors:
                vectors[text] = self._embed_query(text)
            hits = self._longterm.search(
                need.collection,
                text,
                tenant=session.tenant,
                user=session.user_id if need.per_user else None,
                types=need.types,
                k=need.k,
                query_vector=vectors[text],
            )
            if not hits:
                missing.append(MissingContext(need.item_prefix, "L3", need.collection, "no match"))
            entries = (
                self._linked(session.tenant, vectors[text], hits)
                if need.collection == MEMORIES
                else [_Found(h.id, h.cosine, h.payload, None) for h in hits]
            )
            found.extend((need, entry) for entry in entries)
        floor = self._settings.skip_below_cosine
        skipped = bool(found) and all(entry.cosine < floor for _, entry in found)
        items = []
        counters: dict[str, int] = {}
        for need, entry in found:
            if entry.cosine < floor:
                # Noise costs tokens and misleads the model (seed 000 §4.3): below the
                # floor an item is reported, never served.
                reason = f"cosine {entry.cosine:.3f} below {floor}" + (
                    ": L3 skipped" if skipped else ""
                )
                missing.append(MissingContext(need.item_prefix, "L3", entry.id, reason))
                continue
            rank = counters.get(need.item_prefix, 0)
            counters[need.item_prefix] = rank + 1
            items.append(self._l3_item(need, entry, rank, now))
        return items, missing, skipped

    def _linked(
        self, tenant: str, vector: NDArray[np.float32], hits: Sequence[Hit]
    ) -> list[_Found]:
        """Memories with their episode links followed (:mod:`memstrata.retrieval.links`):
        an episode's current facts come right before it (a fact found on its own and
        also carried comes once), and an episode whose fact was superseded names the
        current one."""
        links = follow(
            self._longterm, tenant, vector, [(h.id, h.payload) for h in hits if _is_episode(h)]
        )
        carried = {p.id for points in links.facts.values() for p in points}
        out: list[_Found] = []
        emitted: set[str] = set()
        for hit in hits:
            if hit.id in emitted or (not _is_episode(hit) and hit.id in carried):
                continue
            replaced_by = None
            for point in links.facts.get(hit.id, ()):
                if point.id == links.superseded.get(hit.id):
                    replaced_by = str(point.payload.get("text", ""))
                if point.id not in emitted:
                    emitted.add(point.id)
                    out.append(_Found(point.id, max(point.score, hit.cosine), point.payload, None))
            emitted.add(hit.id)
            out.append(_Found(hit.id, hit.cosine, hit.payload, replaced_by))
        return out

    def _l3_item(self, need: L3Need, found: _Found, rank: int, now: datetime) -> ContextItem:
        payload = found.payload
        # Age from when it was said, like retrieve(): the write time depends on when an
        # ingest worker got to the turn, and would make the same session age differently.
        stamp = payload.get("created_at")
        freshness = None if stamp is None else max(0.0, (now.timestamp() - float(stamp)) / 3600)
        content: dict[str, Any] = {
            "text": payload.get("text", ""),
            "type": payload.get("type"),
            **{k: payload[k] for k in ("section", "title") if k in payload},
        }
        if payload.get("type") == EPISODE:
            content["said_at"] = payload.get("observed_at")
            content["said_by"] = payload.get("speaker") or payload.get("role")
            if found.replaced_by:
                content["replaced_by"] = found.replaced_by
        return ContextItem.of(
            f"{need.item_prefix}_{rank}",
            content,
            Provenance(
                "L3",
                found.id,
                str(payload.get("source") or need.collection),
                found.cosine,
                freshness,
                low_confidence=found.cosine < self._settings.low_confidence_cosine,
                level=level_of_payload(payload),
            ),
        )


class _Found(NamedTuple):
    """One L3 point a need found: its cosine to the query, its payload and, for an
    episode a newer fact replaced, that fact's text."""

    id: str
    cosine: float
    payload: Mapping[str, Any]
    replaced_by: str | None


def _is_episode(hit: Hit) -> bool:
    return hit.payload.get("type") == EPISODE
