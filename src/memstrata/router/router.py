"""route(): load what a step intent needs from L1, L2 and L3, with provenance.

The router reads only; it never writes. Its L3 needs are read through the reader
(:class:`~memstrata.retrieval.Retriever`). An intent's ``memories`` need without a
fixed query takes the user's memories from the reader's own retrieval (``retrieve``:
made by the caller already - ``build_context`` reads memories once - or here), so
``route`` serves and flags exactly what ``retrieve`` does; other needs search their
query (episode links followed). Confidence follows the reader's rules
(:mod:`memstrata.retrieval.confidence`): an item whose calibrated confidence (its
cosine, where it was not graded) is below ``low_confidence_cosine`` is flagged; one
below ``skip_below_cosine`` (every signal calls it unrelated) is reported in
``missing``, never served, and when every L3 candidate of the step is below it, L3
is skipped (the bundle says so). An item's
relevance in the bundle is that confidence: ``decide`` reads it.

Off the happy path (docs/service.md, "When L3 is slow or down"): each need's read has
a deadline and goes through L3's breaker (:mod:`memstrata.retrieval.guard`). When L3
cannot be read, the step is answered from L2 and L1: the intent's L2 items as always,
the user's cached reads that fit each need, and the user's preferences; the first
need L3 failed skips L3 for the rest of the step, and the bundle says why. When the
query cannot be embedded, its needs are ranked by BM25 alone and flagged.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from memstrata.clock import Clock
from memstrata.config import LongTermSettings
from memstrata.errors import ContextMissError, ValidationError
from memstrata.longterm.points import MEMORIES
from memstrata.permissions import level_of_payload
from memstrata.retrieval.confidence import is_low_confidence, relevance_below
from memstrata.retrieval.fallback import CACHED_ROUTE
from memstrata.retrieval.guard import BELOW_THRESHOLD, OUTAGE_REASONS
from memstrata.retrieval.links import EPISODE, LinkedHit, flatten
from memstrata.retrieval.results import RetrievalQuery, RetrievalResult
from memstrata.retrieval.retriever import Retriever
from memstrata.router.bundle import ContextBundle, ContextItem, MissingContext, Provenance
from memstrata.router.intents import (
    IntentRegistry,
    IntentSpec,
    L2Need,
    L3Need,
    resolve_placeholders,
)
from memstrata.router.recognize import MessageUnderstanding, Recognition
from memstrata.session.state import SessionState
from memstrata.validation import check_text
from memstrata.working.keys import pending_key, pref_key, series_key
from memstrata.working.memory import SessionWorkingMemory, WorkingMemory
from memstrata.working.values import Preference

QueryEmbedder = Callable[[str], NDArray[np.float32]]
MAX_QUERY_CHARS = 8_000


class _Found(NamedTuple):
    """One L3 entry of a step: the need it answers, whether its cosine was measured
    against this query (an entry read from the cache or by BM25 alone was not: the
    floor does not apply, it is flagged low-confidence), and whether it came from
    the cached reads in L2."""

    need: L3Need
    entry: LinkedHit
    judged: bool
    cached: bool


class _L3Read(NamedTuple):
    items: list[ContextItem]
    missing: list[MissingContext]
    skip_reason: str | None
    dense_skip_reason: str | None


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
        understanding: MessageUnderstanding | None = None,
    ) -> None:
        self._intents = intents
        self._understanding = understanding
        self._working = working
        self._reader = reader
        self._settings: LongTermSettings = reader.longterm
        self._clock = clock
        self._embed_query = embed_query

    @property
    def intents(self) -> IntentRegistry:
        return self._intents

    def checked(self, step_intent: str, query: str | None, *, field: str = "query") -> IntentSpec:
        """The spec of ``step_intent`` once the step's query is checked: what
        :meth:`route` refuses, refused before anything is read."""
        spec = self._intents.get(step_intent)
        if query is not None:
            check_text(field, query, max_chars=MAX_QUERY_CHARS)
        return spec

    def resolve(
        self, step_intent: str | None, query: str | None, *, field: str = "query"
    ) -> tuple[IntentSpec, Recognition | None]:
        """The step's intent: ``step_intent`` when given (an unknown one raises
        UnknownIntentError), else the one recognized from ``query`` (the message,
        named ``field`` in errors), with the recognition."""
        if step_intent is not None:
            return self.checked(step_intent, query, field=field), None
        if query is None:
            raise ValidationError(
                field, "is required when no step_intent is given: the intent is recognized from it"
            )
        check_text(field, query, max_chars=MAX_QUERY_CHARS)
        if self._understanding is None:
            raise ValidationError("step_intent", "is required: no intent recognizer is configured")
        recognized = self._understanding.understand(query, self._intents, self._clock.now())
        return self._intents.get(recognized.intent), recognized

    def route(
        self,
        session: SessionState,
        step_intent: str | None,
        query: str | None = None,
        *,
        query_vector: NDArray[np.float32] | None = None,
        memories: RetrievalResult | None = None,
        recognized: Recognition | None = None,
    ) -> ContextBundle:
        """The context bundle for one step of ``session``.

        ``query`` feeds L3 needs without a fixed query; ``query_vector`` lets a caller
        that already embedded ``query`` skip the embedding. ``memories``: a retrieval
        of the user's memories for ``query`` the caller made already; the intent's
        ``memories`` needs without a fixed query take their items from it instead of
        searching again. Without ``step_intent`` the intent is recognized from
        ``query`` (:meth:`resolve`), or taken from ``recognized`` (a recognition the
        caller made already).
        """
        if not isinstance(session, SessionState):
            raise ValidationError(
                "session", f"must be a SessionState, got {type(session).__name__}"
            )
        if step_intent is None and recognized is not None:
            spec = self.checked(recognized.intent, query)
        else:
            spec, recognized = self.resolve(step_intent, query)
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
        l3 = self._l3_items(session, spec, query, query_vector, l1_values, now, memories)
        items.extend(l3.items)
        missing.extend(l3.missing)
        if l3.skip_reason in OUTAGE_REASONS:
            items.extend(self._preferences(session, items, now))
        return ContextBundle(
            session_id=session.session_id,
            step_intent=spec.name,
            step=session.current_step,
            built_at=now,
            items=tuple(items),
            missing=tuple(missing),
            l3_skipped=l3.skip_reason is not None,
            l3_skip_reason=l3.skip_reason,
            dense_skip_reason=l3.dense_skip_reason,
            recognized=recognized,
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
            pref = self._working.get_preference(session.user_id, need.name, tenant=session.tenant)
            return self._preference_item(need.item_name, session, pref, now)
        except ContextMissError as miss:
            if need.required:
                raise
            return MissingContext(need.item_name, "L2", miss.key, "missing or expired")

    def _preference_item(
        self, name: str, session: SessionState, pref: Preference, now: datetime
    ) -> ContextItem:
        return ContextItem.of(
            name,
            {"value": pref.value, "confidence": pref.confidence},
            Provenance(
                "L2",
                pref_key(session.tenant, session.user_id, pref.pref_type),
                f"preference:{pref.pref_type}",
                pref.confidence,
                _hours_between(pref.last_updated, now),
                low_confidence=pref.confidence < self._settings.low_confidence_cosine,
            ),
        )

    def _preferences(
        self, session: SessionState, items: list[ContextItem], now: datetime
    ) -> list[ContextItem]:
        """The user's preferences the step does not hold yet: while L3 cannot be read
        they are what L2 knows of the user (structured, never searched)."""
        held = {item.provenance.ref for item in items}
        return [
            self._preference_item(f"preference_{pref.pref_type}", session, pref, now)
            for pref in self._working.list_preferences(session.user_id, tenant=session.tenant)
            if pref_key(session.tenant, session.user_id, pref.pref_type) not in held
        ]

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
    ) -> _L3Read:
        found: list[_Found] = []
        missing: list[MissingContext] = []
        vectors: dict[str, tuple[NDArray[np.float32] | None, str | None]] = {}
        if query is not None and query_vector is not None:
            vectors[query] = (query_vector, None)
        outage = dense_skip = None
        if memories is not None and memories.l3_skip_reason in OUTAGE_REASONS:
            outage = memories.l3_skip_reason
        for need in spec.l3:
            text = resolve_placeholders(need.query, l1_values) if need.query else query
            if not text or not text.strip():
                missing.append(MissingContext(need.item_prefix, "L3", need.collection, "no query"))
                continue
            if need.collection == MEMORIES and not need.query:
                # The user's memories for the step's query: the reader's own retrieval
                # (made by the caller already, or here), so route() serves and flags
                # exactly what retrieve() does, by the same confidence.
                retrieved = memories
                if retrieved is None or (outage is not None and not need.per_user):
                    retrieved = self._reader.retrieve(
                        RetrievalQuery(
                            text=text,
                            tenant=session.tenant,
                            user=session.user_id if need.per_user else None,
                            k=need.k,
                            now=now,
                            types=need.types,
                        )
                    )
                entries = memories_taken(retrieved, need)
                from_l2 = retrieved.l3_skip_reason in OUTAGE_REASONS
                outage = outage or (retrieved.l3_skip_reason if from_l2 else None)
                judged = not from_l2 and retrieved.dense_skip_reason is None
                dense_skip = dense_skip or retrieved.dense_skip_reason
            else:
                if outage is None and text not in vectors:
                    got = self._reader.embed_guarded(partial(self._embed_query, text))
                    vectors[text] = (got.value, got.skip)
                vector, reason = vectors.get(text, (None, None))
                read = self._reader.read_need(
                    need.collection,
                    text,
                    tenant=session.tenant,
                    user=session.user_id if need.per_user else None,
                    types=need.types,
                    k=need.k,
                    query_vector=vector,
                    dense_skip_reason=reason,
                    l3_skip_reason=outage,
                )
                entries, outage = read.hits, read.l3_skip_reason
                from_l2 = outage is not None
                judged = not from_l2 and read.dense_skip_reason is None
                dense_skip = dense_skip or read.dense_skip_reason
            if not entries:
                reason_text = "no match" if not from_l2 else f"L3 skipped ({outage}): none cached"
                missing.append(MissingContext(need.item_prefix, "L3", need.collection, reason_text))
            found.extend(_Found(need, entry, judged, from_l2) for entry in entries)
        unjudged = any(not f.judged for f in found)
        floor = self._settings.skip_below_cosine

        def under(entry: LinkedHit) -> bool:
            return relevance_below(entry.confidence, entry.cosine, floor)

        below = not unjudged and bool(found) and all(under(f.entry) for f in found)
        skip_reason = outage or (BELOW_THRESHOLD if below else None)
        items = []
        counters: dict[str, int] = {}
        for need, entry, judged, cached in found:
            if judged and under(entry):
                # Below the floor on every signal an item is reported, never served.
                said = "cosine" if entry.confidence is None else "confidence"
                value = entry.cosine if entry.confidence is None else entry.confidence
                reason = f"{said} {value:.3f} below {floor}" + (": L3 skipped" if below else "")
                missing.append(MissingContext(need.item_prefix, "L3", entry.id, reason))
                continue
            rank = counters.get(need.item_prefix, 0)
            counters[need.item_prefix] = rank + 1
            items.append(self._l3_item(need, entry, rank, now, cached=cached))
        return _L3Read(items, missing, skip_reason, dense_skip)

    def _l3_item(
        self, need: L3Need, found: LinkedHit, rank: int, now: datetime, *, cached: bool
    ) -> ContextItem:
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
        if payload.get("disputed"):
            # A fact in doubt is shown with the newer episode and both dates.
            content["disputed"] = payload["disputed"]
            content["observed_at"] = payload.get("observed_at")
            content["attribute"] = payload.get("attribute")
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
                CACHED_ROUTE if cached else str(payload.get("source") or need.collection),
                found.cosine if found.confidence is None else found.confidence,
                freshness,
                low_confidence=is_low_confidence(found.cosine, self._settings)
                if found.low_confidence is None
                else found.low_confidence,
                level=level_of_payload(payload),
            ),
        )


def memories_taken(memories: RetrievalResult, need: L3Need) -> list[LinkedHit]:
    """A ``memories`` need's items from a retrieval made already: its first ``k``
    items of the need's types, each episode's current facts right before it (as a
    search's links give them), a superseded episode marked with the current fact."""
    found = memories.items or memories.below_threshold
    return flatten([i for i in found if need.types is None or i.kind in need.types][: need.k])
