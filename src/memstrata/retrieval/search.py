"""One hybrid search of L3: the single-route stage of the reader.

:class:`HybridSearch` runs the raw query as one route: a dense top-N and a BM25
top-N, both filtered inside the engine (tenant, user, types, age), fused (RRF in the
engine, or RRF / normalized scores in Python when each hit's rank in each route is
asked for), then every hit scored against the query vector (its exact cosine, the
confidence the reader reports) with its payload. It is what ``engine.search``, the
router's L3 needs, hot knowledge and the item store read with; the multi-route
:class:`~memstrata.retrieval.retriever.Retriever` builds on the same store calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.errors import ValidationError
from memstrata.longterm.facade import MAX_K, LongTermStore
from memstrata.longterm.fusion import Fused
from memstrata.longterm.fusion import normalized as fuse_normalized
from memstrata.longterm.fusion import rrf as fuse_rrf
from memstrata.longterm.points import (
    COLLECTIONS,
    DENSE_VECTOR,
    Filter,
    Hit,
    ScoredPoint,
    SparseVector,
)
from memstrata.memo import remember
from memstrata.validation import check_positive_int, check_text

SEARCH_MODES = ("hybrid", "dense", "sparse")
ANSWERS_MAX = 256
"""Answers of identical searches kept (see :meth:`HybridSearch.search`)."""

Keep = Any
"""A predicate over a payload (``Callable[[Mapping[str, Any]], bool]``)."""


def hybrid_route_depth(top_n: int, k: int) -> int:
    """How deep each route searches: the configured top-N, but no deeper than 5 x k
    (at least 20) - a router asking for 3 items gains nothing from fusing 2 x 50
    candidates, and every candidate costs an id conversion in Python."""
    return max(k, min(top_n, max(5 * k, 20)))


def _cut_in_tie(ranked: Sequence[ScoredPoint], k: int, limit: int) -> bool:
    """Whether points tied with the k-th may lie beyond the ``limit`` fetched."""
    if len(ranked) < limit or len(ranked) <= k:
        return False  # everything there is was fetched
    return round(ranked[-1].score, 6) == round(ranked[k - 1].score, 6)


class HybridSearch:
    """Tenant-filtered hybrid search over one :class:`LongTermStore`."""

    def __init__(self, store: LongTermStore) -> None:
        self._store = store
        self._settings = store.settings
        if self._settings.fusion not in ("rrf", "normalized"):
            raise ValidationError("settings.fusion", "must be 'rrf' or 'normalized'")
        # Keyed by the index's answer generation too: a write makes every older
        # answer unreachable (they leave when the dict is emptied at ANSWERS_MAX).
        self._answers: dict[tuple[Any, ...], tuple[Hit, ...]] = {}

    @property
    def store(self) -> LongTermStore:
        """The store searched."""
        return self._store

    def clear_caches(self) -> None:
        """Drop the answers kept (texts of deleted memories among them)."""
        self._answers.clear()

    def search(
        self,
        collection: str,
        query: str,
        *,
        tenant: str,
        user: str | None = None,
        types: Sequence[str] | None = None,
        k: int = 10,
        fusion: str | None = None,
        query_vector: NDArray[np.float32] | None = None,
        mode: str = "hybrid",
        explain: bool = False,
        created_after: float | None = None,
        using: str = DENSE_VECTOR,
        lang: tuple[str, ...] | None = None,
    ) -> list[Hit]:
        """Tenant-filtered search, best first; every hit carries its cosine to the query.

        ``mode``: 'hybrid' (dense top-N and BM25 top-N fused), 'dense' or 'sparse'
        (one route alone, e.g. as evaluation baselines). ``fusion`` overrides the
        settings ('rrf' or 'normalized'). RRF runs inside the engine unless
        ``explain`` asks for each hit's rank in each route, which needs both route
        lists in Python (about twice the latency). ``query_vector`` skips embedding
        the query (benchmarks, callers that embedded already). ``created_after``
        (epoch seconds, exclusive) keeps younger points only. ``using``: the named
        dense vector searched (``query_vector`` then from its model; cosines are its
        own, unmapped); ``lang``: only points whose ``lang`` is one of these.
        """
        if collection not in COLLECTIONS:
            raise ValidationError("collection", f"must be one of {', '.join(COLLECTIONS)}")
        check_text("query", query)
        check_positive_int("k", k, maximum=MAX_K)
        method = self._settings.fusion if fusion is None else fusion
        if method not in ("rrf", "normalized"):
            raise ValidationError("fusion", "must be 'rrf' or 'normalized'")
        if mode not in SEARCH_MODES:
            raise ValidationError("mode", f"must be one of {', '.join(SEARCH_MODES)}")
        flt = Filter(
            tenant=tenant,
            user=user,
            types=None if types is None else tuple(types),
            created_after=created_after,
            extras=() if lang is None else (("lang", tuple(lang)),),
        )
        qvec = self._store.query_vector(query, query_vector, using=using)
        with self._store.searching(collection):
            # Agents repeat some searches word for word at every step (an intent's
            # fixed knowledge query): until the collection is written, the answer is
            # the same. Kept here whole, the adapter keeps none of its parts
            # (reuse=False below): its cache's bookkeeping cost ~0.12 ms a search in
            # a loop of new queries.
            generation = self._store.index.answer_generation(collection)
            if generation is None:
                return self._search(collection, query, qvec, flt, k, method, mode, explain, using)
            key = (
                collection,
                generation,
                query,
                qvec.tobytes(),
                flt,
                k,
                method,
                mode,
                explain,
                using,
            )
            found = self._answers.get(key)
            if found is None:
                hits = self._search(collection, query, qvec, flt, k, method, mode, explain, using)
                found = remember(self._answers, key, tuple(hits), ANSWERS_MAX)
            return list(found)

    def ranked_page(
        self,
        collection: str,
        query: str,
        flt: Filter,
        keep: Keep,
        *,
        limit: int,
        offset: int = 0,
    ) -> list[ScoredPoint]:
        """Points matching ``flt`` and the payload predicate ``keep``, ranked by RRF
        of the dense and BM25 routes, ``offset`` to ``offset + limit``; each point's
        score is its exact cosine to the query. The routes search deeper (x4) until
        enough points pass ``keep`` or the collection has no more."""
        wanted = offset + limit
        qvec = self._store.query_vector(query, None)
        depth = min(MAX_K, max(50, 4 * wanted))
        while True:
            dense, sparse = self._store.route_lists(
                collection, query, qvec, flt, dense_depth=depth, sparse_depth=depth
            )
            fused = fuse_rrf([dense, sparse])
            scored = self._store.read_scored(
                collection,
                [f.id for f in fused],
                qvec,
                tenant=flt.tenant,
                known_cosines=dict(dense),
            )
            found = [
                point
                for f in fused
                if (point := scored.get(f.id)) is not None and keep(point.payload)
            ]
            exhausted = len(dense) < depth and len(sparse) < depth
            if len(found) >= wanted or exhausted or depth >= MAX_K:
                return found[offset:wanted]
            depth = min(MAX_K, depth * 4)

    def _search(
        self,
        collection: str,
        query: str,
        qvec: NDArray[np.float32],
        flt: Filter,
        k: int,
        method: str,
        mode: str,
        explain: bool,
        using: str = DENSE_VECTOR,
    ) -> list[Hit]:
        index = self._store.index
        if mode == "dense":
            found = index.search_dense(
                collection, qvec, flt, k, self._settings.hnsw_ef, reuse=False, using=using
            )
            return [
                Hit(p.id, p.score, p.score, rank, None, p.payload, using)
                for rank, p in enumerate(found, start=1)
            ]
        sparse_query = self._store.encode_query(query)
        if mode == "sparse":
            ranked = index.search_sparse(
                collection, sparse_query, flt, k, with_payload=False, reuse=False
            )
            fused = [Fused(p.id, p.score, (None, rank)) for rank, p in enumerate(ranked, start=1)]
        elif method == "rrf" and not explain:
            fused = self._engine_rrf(collection, qvec, sparse_query, flt, k, using)
        else:
            fused = self._fuse_in_python(collection, qvec, sparse_query, flt, k, method, using)
        return self._with_cosines(collection, qvec, flt, fused, using)

    def _engine_rrf(
        self,
        collection: str,
        qvec: NDArray[np.float32],
        sparse_query: SparseVector,
        flt: Filter,
        k: int,
        using: str = DENSE_VECTOR,
    ) -> list[Fused]:
        """The top ``k`` of the engine's RRF fusion, ties ordered by id.

        RRF ties are common (dense rank r alone vs BM25 rank r alone) and the engine
        cuts them arbitrarily, so the same query could return different hits. Every
        point tied with the k-th must be seen to order them: fetch k + 2 and, in the
        rare case the last fetched still ties with the k-th, fetch twice as many.
        (A fixed 2k cost ~40 us a query in id conversions for nothing.)
        """
        limit = min(k + 2, MAX_K)
        while True:
            engine_fused = self._store.index.search_fused(
                collection,
                qvec,
                sparse_query,
                flt,
                dense_limit=hybrid_route_depth(self._settings.dense_top_n, k),
                sparse_limit=hybrid_route_depth(self._settings.sparse_top_n, k),
                limit=limit,
                ef=self._settings.hnsw_ef,
                reuse=False,
                using=using,
            )
            if not _cut_in_tie(engine_fused, k, limit) or limit == MAX_K:
                break
            limit = min(2 * limit, MAX_K)
        ordered = sorted(engine_fused, key=lambda p: (-round(p.score, 6), p.id))[:k]
        return [Fused(p.id, p.score, (None, None)) for p in ordered]

    def _fuse_in_python(
        self,
        collection: str,
        qvec: NDArray[np.float32],
        sparse_query: SparseVector,
        flt: Filter,
        k: int,
        method: str,
        using: str = DENSE_VECTOR,
    ) -> list[Fused]:
        # Routes return ids and scores only; payloads are read for the fused top k.
        index = self._store.index
        dense = index.search_dense(
            collection,
            qvec,
            flt,
            hybrid_route_depth(self._settings.dense_top_n, k),
            self._settings.hnsw_ef,
            with_payload=False,
            reuse=False,
            using=using,
        )
        sparse = index.search_sparse(
            collection,
            sparse_query,
            flt,
            hybrid_route_depth(self._settings.sparse_top_n, k),
            with_payload=False,
            reuse=False,
        )
        lists = [[(p.id, p.score) for p in dense], [(p.id, p.score) for p in sparse]]
        return fuse_rrf(lists, limit=k) if method == "rrf" else fuse_normalized(lists, limit=k)

    def _with_cosines(
        self,
        collection: str,
        qvec: NDArray[np.float32],
        flt: Filter,
        fused: Sequence[Fused],
        using: str = DENSE_VECTOR,
    ) -> list[Hit]:
        """Hits for ``fused`` with their payloads and exact cosines, in fused order."""
        if not fused:
            return []
        # One engine call scores every fused id against the query vector (exact cosine,
        # whichever route found it; same tenant condition) and brings its payload.
        scored: Mapping[str, ScoredPoint] = {
            p.id: p
            for p in self._store.index.search_dense(
                collection,
                qvec,
                Filter(tenant=flt.tenant, ids=tuple(f.id for f in fused)),
                len(fused),
                self._settings.hnsw_ef,
                with_payload=True,
                reuse=False,
                using=using,
            )
        }
        hits: list[Hit] = []
        for f in fused:
            record = scored.get(f.id)
            if record is None:
                continue  # deleted between the route query and this read
            hits.append(
                Hit(f.id, f.score, record.score, f.ranks[0], f.ranks[1], record.payload, using)
            )
        return hits
