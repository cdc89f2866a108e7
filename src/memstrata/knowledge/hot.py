"""The hot path: confirmed query/response pairs learned online, kept 72 h, merged daily.

A pair is stored in ``hot_knowledge`` only when the user confirmed it; both texts
pass the gateway first. An item's age is its ``created_at`` (the time it was last
learned): searches see only items younger than the TTL (the age condition is part
of the engine filter, not a post-filter), :meth:`HotKnowledge.expire` deletes the
older ones, and :meth:`HotKnowledge.merge_into_knowledge` moves the survivors into
``knowledge``, skipping any whose text is already there.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import datetime

from memstrata.clock import Clock
from memstrata.errors import ValidationError
from memstrata.hashing import sha256_hex
from memstrata.longterm.facade import MAX_K, LongTermStore, NewItem, PayloadSanitizer
from memstrata.longterm.points import HOT_KNOWLEDGE, KNOWLEDGE, Filter, Hit, Record
from memstrata.retrieval.retriever import Retriever
from memstrata.validation import check_id, check_positive_float, check_positive_int, check_text

DEFAULT_TTL_S = 72 * 3600
CONFIRMED_FEEDBACK = frozenset({"user_confirmed"})
HOT_TYPE = "knowledge"
_HOT_NS = uuid.uuid5(uuid.NAMESPACE_URL, "memstrata:knowledge:hot")
_MERGED_NS = uuid.uuid5(uuid.NAMESPACE_URL, "memstrata:knowledge:merged")
_LOCATION = f"L3:{HOT_KNOWLEDGE}"
_DELETE_BATCH = 512


@dataclass(frozen=True, slots=True)
class MergeReport:
    """What one merge did: items moved, items dropped as already known, items expired."""

    merged: int
    duplicates: int
    expired: int


def pair_text(query: str, response: str) -> str:
    """The stored (and embedded) text of a pair."""
    return f"Q: {query}\nA: {response}"


class HotKnowledge:
    """Online-learned knowledge with a TTL, searchable at once, merged into ``knowledge``.

    Searches go through the reader (``reader``, over the same store), the age
    condition travelling with the tenant filter into the engine.
    """

    def __init__(
        self,
        store: LongTermStore,
        sanitizer: PayloadSanitizer,
        clock: Clock,
        ttl_s: float = DEFAULT_TTL_S,
        *,
        reader: Retriever,
    ) -> None:
        self._store = store
        self._sanitizer = sanitizer
        self._clock = clock
        self._ttl_s = check_positive_float("ttl_s", ttl_s)
        self._reader = reader

    @property
    def ttl_s(self) -> float:
        """How long a learned item stays searchable, in seconds."""
        return self._ttl_s

    def _now(self, now: datetime | None) -> float:
        return (now if now is not None else self._clock.now()).timestamp()

    def learn(
        self,
        tenant: str,
        query: str,
        response: str,
        *,
        feedback: str = "user_confirmed",
        source: str,
    ) -> str:
        """Store a confirmed pair; returns its id.

        Learning the same (sanitized) pair again refreshes it in place: the id is
        derived from tenant and content, so its TTL restarts instead of duplicating.
        """
        check_id("tenant", tenant)
        check_text("query", query)
        check_text("response", response)
        if feedback not in CONFIRMED_FEEDBACK:
            allowed = ", ".join(sorted(CONFIRMED_FEEDBACK))
            raise ValidationError(
                "feedback", f"{feedback!r} is not a confirmation; only {allowed} is learned"
            )
        if not isinstance(source, str) or not source.strip():
            raise ValidationError("source", "must be a non-empty string")
        clean_query = self._sanitizer.text(query, location=_LOCATION, field="query")
        clean_response = self._sanitizer.text(response, location=_LOCATION, field="response")
        text = pair_text(clean_query, clean_response)
        content_hash = sha256_hex(text)
        now = self._clock.now().timestamp()
        item = NewItem(
            text=text,
            tenant=tenant,
            type=HOT_TYPE,
            source=source,
            id=str(uuid.uuid5(_HOT_NS, f"{tenant}\0{content_hash}")),
            created_at=now,
            extra={
                "query": clean_query,
                "response": clean_response,
                "feedback": feedback,
                "content_hash": content_hash,
                "expires_at": now + self._ttl_s,
            },
        )
        return self._store.add(HOT_KNOWLEDGE, [item])[0]

    def search(
        self, tenant: str, query: str, *, k: int = 5, now: datetime | None = None
    ) -> list[Hit]:
        """Hybrid search (dense + BM25, RRF-fused) of the tenant's unexpired items."""
        check_id("tenant", tenant)
        check_text("query", query)
        check_positive_int("k", k, maximum=MAX_K)
        cutoff = self._now(now) - self._ttl_s
        return self._reader.search(HOT_KNOWLEDGE, query, tenant=tenant, k=k, created_after=cutoff)

    def expire(self, tenant: str, *, now: datetime | None = None) -> int:
        """Delete the tenant's items older than the TTL; returns how many."""
        check_id("tenant", tenant)
        cutoff = self._now(now) - self._ttl_s
        # ``created_before`` is exclusive and ``search`` sees only created_at > cutoff:
        # an item exactly at the cutoff is expired for both.
        flt = Filter(tenant=tenant, created_before=math.nextafter(cutoff, math.inf))
        ids = [r.id for r in self._store.iter_records(HOT_KNOWLEDGE, flt)]
        self._delete(HOT_KNOWLEDGE, tenant, ids)
        return len(ids)

    def merge_into_knowledge(self, tenant: str, *, now: datetime | None = None) -> MergeReport:
        """Expire, then move every surviving item into ``knowledge`` and out of hot.

        An item whose text is already in ``knowledge`` (same content hash) is not
        added again. Knowledge is written before hot items are deleted, so a failure
        in between only repeats work on the next merge (the merged ids are derived
        from the content, and the duplicate check catches them).
        """
        expired = self.expire(tenant, now=now)
        cutoff = self._now(now) - self._ttl_s
        survivors = list(
            self._store.iter_records(HOT_KNOWLEDGE, Filter(tenant=tenant, created_after=cutoff))
        )
        items: list[NewItem] = []
        seen: set[str] = set()
        for record in survivors:
            content_hash = str(record.payload["content_hash"])
            if content_hash in seen or self._known(tenant, content_hash):
                continue
            seen.add(content_hash)
            items.append(self._merged_item(tenant, record, content_hash))
        if items:
            self._store.add(KNOWLEDGE, items)
        self._delete(HOT_KNOWLEDGE, tenant, [r.id for r in survivors])
        return MergeReport(
            merged=len(items), duplicates=len(survivors) - len(items), expired=expired
        )

    def _known(self, tenant: str, content_hash: str) -> bool:
        flt = Filter(tenant=tenant, extras=(("content_hash", content_hash),))
        return next(iter(self._store.iter_records(KNOWLEDGE, flt, page_size=1)), None) is not None

    @staticmethod
    def _merged_item(tenant: str, record: Record, content_hash: str) -> NewItem:
        payload = record.payload
        return NewItem(
            text=str(payload["text"]),
            tenant=tenant,
            type=HOT_TYPE,
            source=str(payload.get("source", "")),
            id=str(uuid.uuid5(_MERGED_NS, f"{tenant}\0{content_hash}")),
            created_at=float(payload["created_at"]),
            extra={
                "section": "learned",
                "origin": HOT_KNOWLEDGE,
                "query": str(payload.get("query", "")),
                "response": str(payload.get("response", "")),
                "feedback": str(payload.get("feedback", "")),
                "content_hash": content_hash,
            },
        )

    def _delete(self, collection: str, tenant: str, ids: list[str]) -> None:
        for start in range(0, len(ids), _DELETE_BATCH):
            self._store.delete(collection, ids[start : start + _DELETE_BATCH], tenant=tenant)
