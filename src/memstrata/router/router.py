"""route(): load what a step intent needs from L1, L2 and L3, with provenance.

The router reads only; it never writes. Its L3 needs are read through the reader
(:class:`~memstrata.retrieval.Retriever`: a need's query searched, episode links
followed), or taken from a retrieval the caller already made (``build_context``
reads memories once). Confidence follows the reader's rules
(:mod:`memstrata.retrieval.confidence`): an item below ``low_confidence_cosine`` is
flagged; one below ``skip_below_cosine`` is reported in ``missing``, never served,
and when every L3 candidate of the step is below it, L3 is skipped (the bundle says so).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.clock import Clock
from memstrata.config import LongTermSettings
from memstrata.errors import ContextMissError, ValidationError
from memstrata.longterm.points import MEMORIES
from memstrata.permissions import level_of_payload
from memstrata.retrieval.confidence import below_floor, is_low_confidence, skips_l3
from memstrata.retrieval.links import EPISODE, LinkedHit
from memstrata.retrieval.results import RetrievalResult, RetrievedItem
from memstrata.retrieval.retriever import Retriever
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
MAX_QUERY_CHARS = 8_000


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
        reader: Retriever,
        clock: Clock,
        embed_query: QueryEmbedder,
    ) -> None:
        self._intents = intents
        self._working = working
        self._reader = reader
        self._settings: LongTermSettings = reader.longterm
        self._clock = clock
        self._embed_query = embed_query

    @property
    def intents(self) -> IntentRegistry:
        return self._intents

    def checked(self, step_intent: str, query: str | None) -> IntentSpec:
        """The spec of ``step_intent`` once the step's query is checked: what
        :meth:`route` refuses, refused before anything is read."""
        spec = self._intents.get(step_intent)
        if query is not None:
            check_text("query", query, max_chars=MAX_QUERY_CHARS)
        return spec

    def route(
        self,
        session: SessionState,
        step_intent: str,
        query: str | None = None,
        *,
        query_vector: NDArray[np.float32] | None = None,
        memories: RetrievalResult | None = None,
    ) -> ContextBundle:
        """The context bundle for one step of ``session``.

        ``query`` feeds L3 needs without a fixed query; ``query_vector`` lets a caller
        that already embedded ``query`` skip the embedding. ``memories``: a retrieval
        of the user's memories for ``query`` the caller made already; the intent's
        ``memories`` needs without a fixed query take their items from it instead of
        searching again.
        """
        if not isinstance(session, SessionState):
            raise ValidationError(
                "session", f"must be a SessionState, got {type(session).__name__}"
            )
        spec = self.checked(step_intent, query)
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
            session, spec, query, query_vector, l1_values, now, memories
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
        memories: RetrievalResult | None,
    ) -> tuple[list[ContextItem], list[MissingContext], bool]:
        found: list[tuple[L3Need, LinkedHit]] = []
        missing: list[MissingContext] = []
        vectors: dict[str, NDArray[np.float32]] = {}
        if query is not None and query_vector is not None:
            vectors[query] = query_vector
        for need in spec.l3:
            text = resolve_placeholders(need.query, l1_values) if need.query else query
            if not text or not text.strip():
                missing.append(MissingContext(need.item_prefix, "L3", need.collection, "no query"))
                continue
            if memories is not None and need.collection == MEMORIES and not need.query:
                entries = _taken(memories, need)
            else:
                if text not in vectors:
                    vectors[text] = self._embed_query(text)
                entries = self._searched(session, need, text, vectors[text])
            if not entries:
                missing.append(MissingContext(need.item_prefix, "L3", need.collection, "no match"))
            found.extend((need, entry) for entry in entries)
        skipped = skips_l3((entry.cosine for _, entry in found), self._settings)
        floor = self._settings.skip_below_cosine
        items = []
        counters: dict[str, int] = {}
        for need, entry in found:
            if below_floor(entry.cosine, self._settings):
                # Below the floor an item is reported, never served.
                reason = f"cosine {entry.cosine:.3f} below {floor}" + (
                    ": L3 skipped" if skipped else ""
                )
                missing.append(MissingContext(need.item_prefix, "L3", entry.id, reason))
                continue
            rank = counters.get(need.item_prefix, 0)
            counters[need.item_prefix] = rank + 1
            items.append(self._l3_item(need, entry, rank, now))
        return items, missing, skipped

    def _searched(
        self, session: SessionState, need: L3Need, text: str, vector: NDArray[np.float32]
    ) -> list[LinkedHit]:
        """One need's items, searched by the reader (episode links followed for
        memories)."""
        hits = self._reader.search(
            need.collection,
            text,
            tenant=session.tenant,
            user=session.user_id if need.per_user else None,
            types=need.types,
            k=need.k,
            query_vector=vector,
        )
        if need.collection == MEMORIES:
            return self._reader.linked(session.tenant, vector, hits)
        return [LinkedHit(h.id, h.cosine, h.payload, None) for h in hits]

    def _l3_item(self, need: L3Need, found: LinkedHit, rank: int, now: datetime) -> ContextItem:
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
                low_confidence=is_low_confidence(found.cosine, self._settings),
                level=level_of_payload(payload),
            ),
        )


def _taken(memories: RetrievalResult, need: L3Need) -> list[LinkedHit]:
    """A ``memories`` need's items from a retrieval made already: its first ``k``
    items of the need's types, each episode's current facts right before it (as a
    search's links give them), a superseded episode marked with the current fact."""
    found = memories.items or memories.below_threshold
    chosen = [i for i in found if need.types is None or i.kind in need.types][: need.k]
    out: list[LinkedHit] = []
    emitted: set[str] = set()
    for item in chosen:
        replaced_by = None
        for fact in item.facts:
            if fact.id == item.superseded_by:
                replaced_by = fact.text
            if fact.id not in emitted:
                emitted.add(fact.id)
                out.append(_linked(fact, None))
        if item.id not in emitted:
            emitted.add(item.id)
            out.append(_linked(item, replaced_by))
    return out


def _linked(item: RetrievedItem, replaced_by: str | None) -> LinkedHit:
    return LinkedHit(item.id, item.cosine, item.payload, replaced_by)
