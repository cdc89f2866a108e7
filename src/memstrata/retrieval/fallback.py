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
import threading
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
# Keeps waiting for the background writer (one per owner, collection and question):
# a caller finding it full waits for room rather than dropping a keep.
PENDING_MAX = 1024

CACHED_ROUTE = "l2_cache"
"""The route (and provenance source) of an item answered from the cached reads."""

Terms = Callable[[str], SparseVector]
Where = tuple[str, str | None, str, str]
"""One kept read: tenant, user, collection and the question's key."""


def query_key(collection: str, text: str, types: Sequence[str] | None) -> str:
    """What identifies one question: collection, types and the text (a hash)."""
    spec = "\x1f".join((collection, ",".join(types or ()), text))
    return hashlib.sha256(spec.encode("utf-8")).hexdigest()[:24]


def entry(item: RetrievedItem, key: str) -> dict[str, Any]:
    """``item`` (and the facts it carries) as one cached JSON object, for the
    question ``key``. ``superseded_by`` only when set: a ``null`` sends L2's JSON
    encoder down its slow path (~5 us an entry against ~1), and an absent one reads
    back as None."""
    kept = {
        "id": item.id,
        "q": key,
        "score": float(item.score),
        "cosine": float(item.cosine),
        "low": bool(item.low_confidence),
        "payload": thaw(item.payload),
        "facts": [entry(fact, key) for fact in item.facts],
    }
    if item.superseded_by is not None:
        kept["superseded_by"] = item.superseded_by
    return kept


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
        background: bool = False,
        pending_max: int = PENDING_MAX,
    ) -> None:
        """``refresh_s``: how soon the same entries are kept again (default
        :data:`KEEP_REFRESH_S`, at most a tenth of the store's ``ttl_s`` when it says).
        ``background``: keeps are written by one writer thread, off the reader's path
        (at most ``pending_max`` waiting, the newest keep of a question replacing one
        still waiting); :meth:`serve`, :meth:`clear` and :meth:`close` write what is
        waiting first."""
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
        self._background = background
        self._pending_max = max(1, pending_max)
        # Guards _kept, _pending and _busy; writers and flushers wait on it.
        self._cond = threading.Condition()
        self._pending: dict[Where, tuple[Sequence[RetrievedItem], float]] = {}
        self._busy = False
        self._thread: threading.Thread | None = None
        self._closed = False

    def keep(
        self,
        tenant: str,
        user: str | None,
        collection: str,
        key: str,
        items: Sequence[RetrievedItem],
        at: float,
    ) -> None:
        """Keep what a read served (for the question ``key``): at once, or queued for
        the background writer."""
        if not items or not self._store.enabled:
            return
        where = (tenant, user, collection, key)
        if not self._background:
            self._write(where, items, at)
            return
        with self._cond:
            if self._closed:
                return  # closing: the engine is going away, and L2 with it
            while where not in self._pending and len(self._pending) >= self._pending_max:
                self._cond.wait()
            # A question read again before its last keep was written: only the newest
            # answer is worth keeping (the items are immutable).
            self._pending.pop(where, None)
            self._pending[where] = (items, at)
            if self._thread is None or not self._thread.is_alive():
                # (gone only in a forked child: no keep waits for a writer that is not)
                self._thread = threading.Thread(
                    target=self._drain, name="memstrata-read-keep", daemon=True
                )
                self._thread.start()
            self._cond.notify_all()

    def _drain(self) -> None:
        """The background writer: writes the waiting keeps, oldest first."""
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if not self._pending:
                    return  # closed and nothing left
                where = next(iter(self._pending))
                items, at = self._pending.pop(where)
                self._busy = True
                self._cond.notify_all()
            try:
                self._write(where, items, at)
            except Exception:  # the writer must outlive one bad keep; report it
                log.exception("a read could not be kept in L2 for the L3 fallback")
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()

    def flush(self) -> None:
        """Wait until every queued keep is written (nothing to wait for without the
        background writer)."""
        with self._cond:
            while self._pending or self._busy:
                if self._thread is None or not self._thread.is_alive():
                    break  # never started, or gone: nothing will drain it
                self._cond.wait()

    def close(self) -> None:
        """Write what is queued and stop the writer; later keeps are dropped.
        Idempotent."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _write(self, where: Where, items: Sequence[RetrievedItem], at: float) -> None:
        """Write one keep to L2, unless the same entries were written just now."""
        tenant, user, collection, key = where
        entries = [entry(i, key) for i in items]
        # A repeated read (a step's fixed knowledge query, the same question again)
        # serves the same entries: rewriting them only moves their time by seconds
        # and costs an L2 round trip on every read.
        served = orjson.dumps(entries, option=orjson.OPT_SORT_KEYS)
        with self._cond:
            last = self._kept.get(where)
        if last is not None and last[0] == served and 0 <= at - last[1] < self._refresh_s:
            return
        try:
            self._store.remember(tenant, user, collection, entries, at)
        except MemstrataError:
            log.warning("a read could not be cached in L2 for the L3 fallback", exc_info=True)
            return
        with self._cond:
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
        self.flush()  # a keep still queued is part of what was read
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
        """Drop every cached read (a forget: no copy outlives what it deleted); a keep
        still queued is written first, so that none lands after the drop."""
        self.flush()
        with self._cond:
            self._kept.clear()
        self._store.clear()
