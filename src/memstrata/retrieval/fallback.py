"""Reads answered from L2 while L3 is unavailable (docs/service.md, "When L3 is slow
or down"; seed 000 §5.2: an L3 search past its deadline falls back to L2's cache).

Every successful read of the reader leaves the items it served in L2
(:class:`~memstrata.working.recall.RecallCache`: per user and collection, or per
tenant for shared knowledge, for ``fallback_ttl_s``), as :func:`entry` JSON. A read
that cannot reach L3 gets the cached items that fit its question instead
(:func:`cached_items`):

* an item cached for the same question (collection, types and text) comes first,
  with the cosine and the confidence flag it had then;
* any other cached item comes when it shares a word with the question (the BM25
  terms: Chinese and English alike), ranked by the share of the question's words
  it holds, then by how recently it was read; its cosine to this question is
  unknown (0) and it is flagged low-confidence;
* an item sharing nothing with the question is left out: noise misleads the model.

Each carries the route ``l2_cache`` and a score by its place in that order (1 for
the first, falling evenly); the result says why L3 was skipped.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson

from memstrata.errors import MemstrataError
from memstrata.frozen import freeze, thaw
from memstrata.longterm.points import SparseVector
from memstrata.memo import remember
from memstrata.retrieval.results import RetrievedItem

log = logging.getLogger("memstrata.retrieval")

# A read serving what the same read kept less than this ago keeps nothing new (the
# entries' time in L2 may lag by as much; their TTL is fallback_ttl_s, an hour).
KEEP_REFRESH_S = 60.0
_KEPT_MAX = 4096

CACHED_ROUTE = "l2_cache"
"""The route (and provenance source) of an item answered from the cached reads."""

Terms = Callable[[str], SparseVector]


def query_key(collection: str, text: str, types: Sequence[str] | None) -> str:
    """What identifies one question: collection, types and the text (a hash)."""
    spec = "\x1f".join((collection, ",".join(types or ()), text))
    return hashlib.sha256(spec.encode("utf-8")).hexdigest()[:24]


def entry(item: RetrievedItem, key: str) -> dict[str, Any]:
    """``item`` (and the facts it carries) as one cached JSON object, for the
    question ``key``."""
    return {
        "id": item.id,
        "q": key,
        "score": float(item.score),
        "cosine": float(item.cosine),
        "low": bool(item.low_confidence),
        "payload": thaw(item.payload),
        "superseded_by": item.superseded_by,
        "facts": [entry(fact, key) for fact in item.facts],
    }


def cached_items(
    entries: Iterable[Mapping[str, Any]],
    *,
    question: str,
    key: str,
    types: Sequence[str] | None,
    k: int,
    query_terms: Terms,
    document_terms: Terms,
) -> tuple[RetrievedItem, ...]:
    """The best ``k`` of the cached ``entries`` (newest first) for ``question``
    (see the module docstring)."""
    wanted = set(query_terms(question).indices)
    chosen: dict[str, tuple[tuple[float, float, int], Mapping[str, Any], bool]] = {}
    for age, raw in enumerate(entries):
        item_id, payload = raw.get("id"), raw.get("payload")
        if not isinstance(item_id, str) or not isinstance(payload, Mapping):
            continue
        if types is not None and payload.get("type") not in types:
            continue
        same = raw.get("q") == key
        if same:
            rank = (1.0, _number(raw.get("score")), -age)
        else:
            text = payload.get("text")
            held = set(document_terms(text).indices) if isinstance(text, str) else set()
            share = len(wanted & held) / len(wanted) if wanted else 0.0
            if share <= 0:
                continue
            rank = (0.0, share, -age)
        best = chosen.get(item_id)
        if best is None or rank > best[0]:
            chosen[item_id] = (rank, raw, same)
    ranked = sorted(chosen.values(), key=lambda found: found[0], reverse=True)[:k]
    return tuple(
        _item(raw, same, 1.0 - place / len(ranked)) for place, (_, raw, same) in enumerate(ranked)
    )


def _item(raw: Mapping[str, Any], same: bool, score: float) -> RetrievedItem:
    """One cached entry as an item: its old cosine and flag for the same question,
    else cosine unknown (0) and low-confidence."""
    payload: Mapping[str, Any] = freeze(dict(raw["payload"]))
    facts = tuple(
        _item(fact, same, score)
        for fact in raw.get("facts") or ()
        if isinstance(fact, Mapping)
        and isinstance(fact.get("id"), str)
        and isinstance(fact.get("payload"), Mapping)
    )
    superseded = raw.get("superseded_by")
    return RetrievedItem(
        id=str(raw["id"]),
        score=score,
        cosine=_number(raw.get("cosine")) if same else 0.0,
        low_confidence=bool(raw.get("low", True)) if same else True,
        routes=(CACHED_ROUTE,),
        payload=payload,
        observed_at=_observed(payload),
        in_time_window=None,
        superseded_by=superseded if isinstance(superseded, str) else None,
        facts=facts,
    )


def _number(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return 0.0


def _observed(payload: Mapping[str, Any]) -> datetime | None:
    stamp = payload.get("created_at")
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        return datetime.fromtimestamp(float(stamp), tz=UTC)
    return None


def bm25_only(items: Sequence[RetrievedItem]) -> list[RetrievedItem]:
    """Items ranked without a query vector: their cosine to the question is unknown
    (0) and each is flagged low-confidence (facts included)."""
    return [
        replace(
            item,
            cosine=0.0,
            low_confidence=True,
            facts=tuple(replace(f, cosine=0.0, low_confidence=True) for f in item.facts),
        )
        for item in items
    ]


class RecallStore(Protocol):
    """Where the reader keeps its last reads (``memstrata.working.recall.RecallCache``
    fits)."""

    @property
    def enabled(self) -> bool:
        """False when it keeps nothing."""
        ...

    def remember(
        self,
        tenant: str,
        user: str | None,
        collection: str,
        entries: Sequence[Mapping[str, Any]],
        at: float,
    ) -> int:
        """Keep ``entries`` as read at ``at`` (epoch seconds)."""
        ...

    def recall(self, tenant: str, user: str | None, collection: str) -> list[dict[str, Any]]:
        """What was kept for this owner and collection, newest first."""
        ...

    def clear(self) -> int:
        """Drop everything kept."""
        ...


class ReadFallback:
    """The reader's side of the cached reads: what it keeps after a read, and what
    it serves when L3 cannot be read. A failing L2 never fails the read: keeping is
    best effort, and a fallback that cannot reach L2 serves nothing (the result still
    says why L3 was skipped)."""

    def __init__(
        self,
        store: RecallStore,
        query_terms: Terms,
        document_terms: Terms,
        *,
        refresh_s: float | None = None,
    ) -> None:
        """``refresh_s``: how soon the same entries are kept again (default
        :data:`KEEP_REFRESH_S`, at most a tenth of the store's ``ttl_s`` when it says)."""
        self._store = store
        self._query_terms = query_terms
        self._document_terms = document_terms
        ttl_s = getattr(store, "ttl_s", None)
        if refresh_s is None:
            refresh_s = KEEP_REFRESH_S
            if isinstance(ttl_s, int | float):
                refresh_s = min(refresh_s, ttl_s / 10)
        self._refresh_s = refresh_s
        # The entries last kept per owner, collection and question, and when: a read
        # that serves the same again within ``refresh_s`` writes nothing.
        self._kept: dict[tuple[str, str | None, str, str], tuple[bytes, float]] = {}

    def keep(
        self,
        tenant: str,
        user: str | None,
        collection: str,
        key: str,
        items: Sequence[RetrievedItem],
        at: float,
    ) -> None:
        """Keep what a read served (for the question ``key``)."""
        if not items or not self._store.enabled:
            return
        entries = [entry(i, key) for i in items]
        # A repeated read (a step's fixed knowledge query, the same question again)
        # serves the same entries: rewriting them only moves their time by seconds
        # and costs an L2 round trip on every read.
        where = (tenant, user, collection, key)
        served = orjson.dumps(entries, option=orjson.OPT_SORT_KEYS)
        last = self._kept.get(where)
        if last is not None and last[0] == served and 0 <= at - last[1] < self._refresh_s:
            return
        try:
            self._store.remember(tenant, user, collection, entries, at)
        except MemstrataError:
            log.warning("a read could not be cached in L2 for the L3 fallback", exc_info=True)
            return
        remember(self._kept, where, (served, at), _KEPT_MAX)

    def serve(
        self,
        tenant: str,
        user: str | None,
        collection: str,
        *,
        question: str,
        key: str,
        types: Sequence[str] | None,
        k: int,
    ) -> tuple[RetrievedItem, ...]:
        """The cached items that fit ``question`` (see :func:`cached_items`)."""
        try:
            entries = self._store.recall(tenant, user, collection)
        except MemstrataError:
            log.warning("the cached reads in L2 could not be read either", exc_info=True)
            return ()
        return cached_items(
            entries,
            question=question,
            key=key,
            types=types,
            k=k,
            query_terms=self._query_terms,
            document_terms=self._document_terms,
        )

    def clear(self) -> None:
        """Drop every cached read (a forget: no copy outlives what it deleted)."""
        self._kept.clear()
        self._store.clear()
