"""The reader's single-route reads of an intent's needs, and the reads answered from
L2 when L3 cannot be read (docs/service.md, "When L3 is slow or down").

A router need is one hybrid search of its text (:class:`~memstrata.retrieval.search.
HybridSearch`) with the episode links followed for memories, within
``search_deadline_s`` (:mod:`memstrata.retrieval.guard`); a need whose query could
not be embedded is searched by BM25 alone. What a read served is kept in L2
(:mod:`memstrata.retrieval.fallback`), and served from there when a later read of the
same user cannot reach L3.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from memstrata.config import LongTermSettings
from memstrata.longterm.points import MEMORIES, Hit
from memstrata.retrieval.fallback import ReadFallback, query_key
from memstrata.retrieval.guard import GuardedCalls, checkpoint
from memstrata.retrieval.languages import LanguageRoutes
from memstrata.retrieval.links import EPISODE, LinkedHit, Links, episode_links, flatten, fold
from memstrata.retrieval.results import RetrievedItem
from memstrata.retrieval.search import HybridSearch


class NeedRead(NamedTuple):
    """One intent need's read (:meth:`NeedReader.read`): its linked hits, and why L3
    was skipped (then the hits are cached reads from L2) or why the dense route was
    (then BM25 alone ranked: every cosine is unknown, 0)."""

    hits: list[LinkedHit]
    l3_skip_reason: str | None
    dense_skip_reason: str | None


def neutral_vector(dim: int) -> NDArray[np.float32]:
    """A stand-in query vector when there is none: the engine calls that need one
    run, and every cosine they give is then discarded."""
    return np.full(dim, 1.0 / math.sqrt(dim), dtype=np.float32)


class NeedReader:
    """Reads of the router's needs, with the cached reads in L2 behind them."""

    def __init__(
        self,
        hybrid: HybridSearch,
        calls: GuardedCalls,
        fallback: ReadFallback | None,
        settings: LongTermSettings,
        dim: int,
        languages: LanguageRoutes | None = None,
    ) -> None:
        """``languages``: the question's routes by its language (None: MiniLM and
        BM25 only)."""
        self._hybrid = hybrid
        self._languages = languages
        self._store = hybrid.store
        self._calls = calls
        self._fallback = fallback
        self._settings = settings
        self._dim = dim

    def read(
        self,
        collection: str,
        text: str,
        *,
        tenant: str,
        user: str | None,
        types: Sequence[str] | None,
        k: int,
        query_vector: NDArray[np.float32] | None,
        dense_skip_reason: str | None = None,
        l3_skip_reason: str | None = None,
    ) -> NeedRead:
        """See :meth:`memstrata.retrieval.Retriever.read_need`."""
        key = query_key(collection, text, types)
        found: tuple[list[LinkedHit], list[RetrievedItem]] | None = None
        if l3_skip_reason is None:
            got = self._calls.l3(
                lambda: self._items(collection, text, tenant, user, types, k, query_vector),
                self._settings.search_deadline_s,
            )
            found, l3_skip_reason = got.value, got.skip
        if found is None:
            cached = self.cached(tenant, user, collection, text, key, types, k)
            return NeedRead(flatten(cached), l3_skip_reason, dense_skip_reason)
        hits, grouped = found
        if query_vector is None:
            return NeedRead([h._replace(cosine=0.0) for h in hits], None, dense_skip_reason)
        self.keep(tenant, user, collection, key, grouped, None)
        return NeedRead(hits, None, None)

    def _items(
        self,
        collection: str,
        text: str,
        tenant: str,
        user: str | None,
        types: Sequence[str] | None,
        k: int,
        query_vector: NDArray[np.float32] | None,
    ) -> tuple[list[LinkedHit], list[RetrievedItem]]:
        """The need's hits as the router reads them, and grouped (each episode with
        its facts) as the cache keeps them."""
        vector = neutral_vector(self._dim) if query_vector is None else query_vector
        languages = self._languages
        read = None
        if languages is not None and languages.on and query_vector is not None:
            found = languages.search(
                self._hybrid,
                collection,
                text,
                tenant=tenant,
                user=user,
                types=types,
                k=k,
                query_vector=query_vector,
            )
            read = languages.linked_read(collection, text, tenant, query_vector, found)
        else:
            found = self._hybrid.search(
                collection,
                text,
                tenant=tenant,
                user=user,
                types=types,
                k=k,
                query_vector=vector,
                mode="hybrid" if query_vector is not None else "sparse",
            )
        floor = self._settings.low_confidence_cosine
        if collection != MEMORIES:
            hits = [LinkedHit(h.id, h.cosine, h.payload, None) for h in found]
            return hits, [hit_item(h, Links(), floor) for h in found]
        checkpoint()
        links = episode_links(self._store, tenant, vector, found, read)
        carried = {p.id for points in links.facts.values() for p in points}
        grouped = [
            hit_item(h, links, floor)
            for h in found
            if h.payload.get("type") == EPISODE or h.id not in carried
        ]
        return fold(found, links), grouped

    def cached(
        self,
        tenant: str,
        user: str | None,
        collection: str,
        text: str,
        key: str,
        types: Sequence[str] | None,
        k: int,
    ) -> tuple[RetrievedItem, ...]:
        """The cached reads that fit ``text`` (none without a fallback)."""
        if self._fallback is None:
            return ()
        return self._fallback.serve(
            tenant, user, collection, question=text, key=key, types=types, k=k
        )

    def keep(
        self,
        tenant: str,
        user: str | None,
        collection: str,
        key: str,
        items: Sequence[RetrievedItem],
        now: datetime | None,
    ) -> None:
        """Keep what a read served, for a later read L3 cannot answer."""
        if self._fallback is not None:
            at = (now or datetime.now(UTC)).timestamp()
            self._fallback.keep(tenant, user, collection, key, items, at)


def hit_item(hit: Hit, links: Links, floor: float) -> RetrievedItem:
    """A plain search's hit as a retrieved item (an episode with the current facts it
    carries), as the cached reads keep it."""
    facts = tuple(
        RetrievedItem(
            id=point.id,
            score=hit.score,
            cosine=max(point.score, hit.cosine),
            low_confidence=max(point.score, hit.cosine) < floor,
            routes=("episode",),
            payload=point.payload,
            observed_at=_observed_at(point.payload),
            in_time_window=None,
        )
        for point in links.facts.get(hit.id, ())
    )
    return RetrievedItem(
        id=hit.id,
        score=hit.score,
        cosine=hit.cosine,
        low_confidence=hit.cosine < floor,
        routes=("query",),
        payload=hit.payload,
        observed_at=_observed_at(hit.payload),
        in_time_window=None,
        superseded_by=links.superseded.get(hit.id),
        facts=facts,
        cosine_route=hit.cosine_route,
    )


def _observed_at(payload: Mapping[str, Any]) -> datetime | None:
    stamp = payload.get("created_at")
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        return datetime.fromtimestamp(float(stamp), tz=UTC)
    return None
