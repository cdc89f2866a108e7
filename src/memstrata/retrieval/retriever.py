"""The reader: every ranking of L3 (docs/architecture.md, "The reader").

:class:`Retriever` is the one object that orders what L3 holds. :meth:`Retriever.search`
is its single-route stage (:mod:`memstrata.retrieval.search`: the raw query, dense +
BM25 fused, exact cosines), what the router's L3 needs, ``engine.search``, hot
knowledge and the item store read with; :meth:`Retriever.retrieve` is the multi-route
retrieval agents get. For one :class:`RetrievalQuery`:

1. routes - the raw query, its entities, the recent conversation - embedded (the
   entities' vector pooled from the query's own token vectors when the embedder has
   them: one forward pass for both); each route searched hybrid (dense + BM25,
   tenant filter in the engine); the raw query's dense route also searches the window
   keys of long episodes, each lending its cosine to its episode (the dense model
   reads only a text's beginning);
2. per route, normalized-score fusion; across routes, duplicates merged keeping the
   best score;
3. the best ``pool_size`` candidates get their payload and exact cosine to the raw
   query in one engine call, then the adjustments: conversational context (adjacent
   turns and the thread, when payloads carry ``thread`` / ``seq``), the question's
   time window (observed inside it -> boost, or filter), informativeness, entity
   match on ``entity_fields``, time decay, importance and memory type, and small
   talk lowered (unless the question asks about it);
4. an optional reranker blended in; after the links, a plan's standing facts first
   (:mod:`memstrata.retrieval.standing`); one calibrated confidence per item
   (:mod:`memstrata.retrieval.confidence`); L3 skipped only when every item is below
   the skip floor (nothing said inside a window the question names ever is).

Every read has a deadline and a breaker (:mod:`memstrata.retrieval.guard`): the
query's embedding, and the L3 part (its engine calls and the scoring between them),
each run where they can be abandoned (the L3 part only when the index is remote; no
deadline counts a model's loading). A read whose embedding failed ranks by BM25
alone; one that cannot reach L3 in time is answered from the cached reads in L2
(:mod:`memstrata.retrieval.fallback`); the result says which and why.

Payload conventions read here: ``created_at`` (epoch seconds: when it was
observed), ``importance`` (0..1), ``type``, ``thread`` + ``seq`` (position in a
conversation), ``small_talk`` (set at write time: :mod:`memstrata.extract.smalltalk`)
and the ``entity_fields`` (default ``speaker``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, TypeVar

import numpy as np
from numpy.typing import NDArray

from memstrata.config import LongTermSettings, RetrievalSettings
from memstrata.embed.protocol import Embedder, TokenEmbedder
from memstrata.errors import BackendError
from memstrata.extract.smalltalk import asks_about_small_talk, flagged_small_talk
from memstrata.longterm.adjacent import Position, turn_position
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import (
    DENSE_VECTOR,
    MEMORIES,
    MULTILINGUAL_VECTOR,
    Filter,
    Hit,
    ScoredPoint,
)
from memstrata.memo import remember
from memstrata.memory.versioning import valid_at
from memstrata.retrieval.confidence import (
    TermsMemo,
    grade,
    question_signals,
    skips_graded,
)
from memstrata.retrieval.currency import current_first
from memstrata.retrieval.fallback import ReadFallback, bm25_only, query_key
from memstrata.retrieval.followups import forget_texts, with_followups
from memstrata.retrieval.guard import (
    BELOW_THRESHOLD,
    Guarded,
    GuardedCalls,
    ReadGuard,
    checkpoint,
    required,
)
from memstrata.retrieval.languages import (
    ENGLISH,
    DenseSpace,
    LanguageRoutes,
    lexical_share,
    unsearchable_warnings,
)
from memstrata.retrieval.links import (
    EPISODE,
    EPISODE_WINDOW,
    LinkedHit,
    ScoredRead,
    fold_hits,
    follow,
)
from memstrata.retrieval.reads import NeedRead, NeedReader, neutral_vector
from memstrata.retrieval.rerank import Reranker
from memstrata.retrieval.results import RetrievalQuery, RetrievalResult, RetrievedItem
from memstrata.retrieval.routes import Route, build_routes, entities, entity_spans
from memstrata.retrieval.scoring import (
    SECONDS_PER_DAY,
    Candidate,
    context_bonus,
    decay_factor,
    fuse_route,
    importance_factor,
    informativeness,
    merge_routes,
    number,
    type_factor,
)
from memstrata.retrieval.search import HybridSearch, Keep
from memstrata.retrieval.standing import with_standing
from memstrata.retrieval.timeexpr import TimeWindow
from memstrata.retrieval.timesteer import (
    first_session_lookup,
    lead_with_window,
    question_window,
    window_route,
    window_weight,
)
from memstrata.tracing import span, traced_stage
from memstrata.validation import check_text

_FACTOR_CACHE_ENTRIES = 65_536
_VECTORS_MAX = 8_192  # ~12 MB of MiniLM vectors at most
MAX_SEARCH_K = 1000
T = TypeVar("T")


class Retriever:
    """Multi-route hybrid retrieval with context, time awareness and confidence."""

    def __init__(
        self,
        store: LongTermStore,
        embedder: Embedder,
        settings: RetrievalSettings | None = None,
        longterm: LongTermSettings | None = None,
        *,
        reranker: Reranker | None = None,
        guard: ReadGuard | None = None,
        fallback: ReadFallback | None = None,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._settings = settings or RetrievalSettings()
        self._longterm = longterm or LongTermSettings()
        self._reranker = reranker
        # Without a guard every call runs inline and its errors reach the caller (a
        # reader built by hand); the wiring gives each engine one.
        self._calls = GuardedCalls(guard)
        self._fallback = fallback
        self._type_weights = dict(self._settings.type_weights)
        self._factors: dict[tuple[Any, ...], float] = {}
        self._feature_cache: dict[str, tuple[Mapping[str, Any], _Features]] = {}
        self._terms = TermsMemo()  # the confidence model's item terms, by text
        # Diversity's vectors, by (vector name, point id), with the payload read with them.
        self._vectors: dict[tuple[str, str], tuple[Mapping[str, Any], NDArray[np.float32]]] = {}
        self._hybrid = HybridSearch(store)
        self._languages = LanguageRoutes(store, self._longterm)
        self._needs = NeedReader(
            self._hybrid, self._calls, fallback, self._longterm, embedder.dim, self._languages
        )

    @property
    def settings(self) -> RetrievalSettings:
        """The retrieval parameters in use."""
        return self._settings

    @property
    def longterm(self) -> LongTermSettings:
        """The L3 parameters in use (confidence thresholds among them)."""
        return self._longterm

    @property
    def store(self) -> LongTermStore:
        """The store read."""
        return self._store

    @property
    def guard(self) -> ReadGuard | None:
        """The deadlines and breakers of this reader's calls (None: none)."""
        return self._calls.guard

    def clear_caches(self) -> None:
        """Drop what scoring and search remember of payloads (texts of deleted memories
        among them), the cached reads in L2 included."""
        self._factors.clear()
        self._feature_cache.clear()
        self._terms.clear()
        self._vectors.clear()
        forget_texts()
        self._hybrid.clear_caches()
        if self._fallback is not None:
            self._fallback.clear()

    def flush_keeps(self) -> None:
        """Wait until the reads queued for L2 (the L3 fallback's copies) are written."""
        if self._fallback is not None:
            self._fallback.flush()

    def close(self) -> None:
        """Write the reads still queued for L2 and stop their writer (before L2 goes)."""
        if self._fallback is not None:
            self._fallback.close()

    def embed_guarded(self, fn: Callable[[], T]) -> Guarded[T]:
        """``fn()`` (a query embedding) under the embedder's deadline and breaker;
        ``skip`` says why there is no vector."""
        return self._calls.embed(fn)

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
        as_of: datetime | None = None,
    ) -> list[Hit]:
        """The single-route hybrid search (:meth:`HybridSearch.search`), best first.
        ``as_of`` keeps the points :func:`~memstrata.memory.versioning.valid_at` that
        instant (over-fetching: validity is an interval, which the engine filter cannot
        express next to the type condition)."""
        depth = k if as_of is None else min(4 * k, MAX_SEARCH_K)
        check_text("query", query)  # bad input is refused, never blamed on the model
        # A plain hybrid search follows the question's language (the modes and the
        # explained ranks are the single routes' own, for evaluations and debugging).
        by_language = mode == "hybrid" and not explain and self._languages.on
        space = self._languages.space(query) if by_language else ENGLISH
        if space.using == MULTILINGUAL_VECTOR:
            query_vector = required(
                self.embed_guarded(
                    lambda: self._store.query_vector(query, None, using=MULTILINGUAL_VECTOR)
                ),
                "the query could not be embedded",
            )
        elif query_vector is None:
            query_vector = required(
                self.embed_guarded(lambda: self._store.query_vector(query, None)),
                "the query could not be embedded",
            )
        vector = query_vector
        if by_language:
            return self._search_by_language(
                space,
                collection,
                query,
                tenant,
                user,
                types,
                depth,
                fusion,
                vector,
                created_after,
                as_of,
                k,
            )
        hits = required(
            self._calls.l3(
                lambda: self._hybrid.search(
                    collection,
                    query,
                    tenant=tenant,
                    user=user,
                    types=types,
                    k=depth,
                    fusion=fusion,
                    query_vector=vector,
                    mode=mode,
                    explain=explain,
                    created_after=created_after,
                ),
                self._longterm.search_deadline_s,
            ),
            "L3 did not answer this search",
        )
        if as_of is None:
            return hits
        at = as_of.timestamp()
        return [h for h in hits if valid_at(h.payload, at)][:k]

    def _search_by_language(
        self,
        space: DenseSpace,
        collection: str,
        query: str,
        tenant: str,
        user: str | None,
        types: Sequence[str] | None,
        depth: int,
        fusion: str | None,
        vector: NDArray[np.float32],
        created_after: float | None,
        as_of: datetime | None,
        k: int,
    ) -> list[Hit]:
        """:meth:`search` by the question's routes ``space``
        (:mod:`memstrata.retrieval.languages`); ``vector``: the question's vector of
        its main route."""
        english = space.using == DENSE_VECTOR
        hits = required(
            self._calls.l3(
                lambda: self._languages.search(
                    self._hybrid,
                    collection,
                    query,
                    tenant=tenant,
                    user=user,
                    types=types,
                    k=depth,
                    query_vector=vector if english else None,
                    created_after=created_after,
                    fusion=fusion,
                    space=space,
                ),
                self._longterm.search_deadline_s,
            ),
            "L3 did not answer this search",
        )
        if as_of is None:
            return hits
        at = as_of.timestamp()
        return [h for h in hits if valid_at(h.payload, at)][:k]

    def linked(
        self, tenant: str, query_vector: NDArray[np.float32], hits: Sequence[Hit]
    ) -> list[LinkedHit]:
        """``hits`` of :meth:`search` with their episode links followed
        (:func:`~memstrata.retrieval.links.fold_hits`)."""
        return required(
            self._calls.l3(
                lambda: fold_hits(self._store, tenant, query_vector, hits),
                self._longterm.search_deadline_s,
            ),
            "L3 did not answer the episode links",
        )

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
        """Points matching ``flt`` and ``keep``, RRF-ranked, one page
        (:meth:`HybridSearch.ranked_page`)."""
        return required(
            self._calls.l3(
                lambda: self._hybrid.ranked_page(
                    collection, query, flt, keep, limit=limit, offset=offset
                ),
                self._longterm.search_deadline_s,
            ),
            "L3 did not answer this page",
        )

    def read_need(
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
        """One router need's items: ``text`` searched (hybrid; BM25 alone when
        ``query_vector`` is None, because the embedding failed for
        ``dense_skip_reason``), episode links followed for memories, within
        ``search_deadline_s``. When L3 cannot be read in time, or an earlier read of
        the step already could not (``l3_skip_reason``), the cached reads in L2 that
        fit ``text`` instead (:mod:`memstrata.retrieval.reads`)."""
        return self._needs.read(
            collection,
            text,
            tenant=tenant,
            user=user,
            types=types,
            k=k,
            query_vector=query_vector,
            dense_skip_reason=dense_skip_reason,
            l3_skip_reason=l3_skip_reason,
        )

    def retrieve(self, query: RetrievalQuery) -> RetrievalResult:
        """The best ``query.k`` items of the tenant, with provenance and confidence."""
        if not isinstance(query, RetrievalQuery):
            raise TypeError("query must be a RetrievalQuery")
        cfg = self._settings
        named = entities(query.text)  # the entity route and the entity-field match
        routes = build_routes(
            query.text,
            query.recent,
            entity_weight=cfg.entity_route_weight,
            intent_weight=cfg.intent_route_weight,
            named=named,
        )
        window = self._window(query)
        flt = self._filter(query, window)
        # The question's language picks its dense routes (memstrata.retrieval.languages).
        space = self._languages.space(query.text)
        embedded = self.embed_guarded(lambda: self._space_vectors(space, routes, named))
        dense_skip = embedded.skip
        vectors = embedded.value
        if vectors is None:  # BM25 alone: the stand-in vector's cosines are discarded
            space = ENGLISH
            vectors = np.stack([neutral_vector(self._embedder.dim)] * len(routes))
        warned: tuple[str, ...] = ()
        if space.using == MULTILINGUAL_VECTOR:
            # Points still lacking the multilingual vector get it first, up to a bound;
            # the rest are named (memstrata.longterm.catchup).
            lacking = self._calls.l3(
                lambda: self._languages.before_read(query.collection, flt),
                self._longterm.search_deadline_s,
            )
            warned = unsearchable_warnings(lacking.value or 0)
        # One hop for the whole L3 part (scoring between its engine calls included):
        # each hop to a worker thread costs a thread switch.
        ranked = self._calls.l3(
            lambda: self._rank(
                query, routes, vectors, flt, window, named, dense_skip is None, space
            ),
            self._longterm.read_deadline_s,
        )
        if ranked.value is None:
            return self._served_from_l2(query, window, routes, ranked.skip, dense_skip)
        if isinstance(ranked.value, _Refused):
            raise ranked.value.error  # the reranker's failure, not L3's
        top = ranked.value
        if dense_skip is not None:
            # No cosine to judge by: nothing is skipped for confidence, all is flagged.
            return RetrievalResult(
                tuple(bm25_only(top)), (), False, window, routes, dense_skip_reason=dense_skip
            )
        top = self._graded(query, named, window, top)
        if skips_graded(top, self._longterm):
            return RetrievalResult(
                (),
                tuple(top),
                True,
                window,
                routes,
                l3_skip_reason=BELOW_THRESHOLD,
                warnings=warned,
            )
        if query.as_of is None:
            key = query_key(query.collection, query.text, query.types)
            self._needs.keep(query.tenant, query.user, query.collection, key, top, query.now)
        return RetrievalResult(tuple(top), (), False, window, routes, warnings=warned)

    def _graded(
        self,
        query: RetrievalQuery,
        named: Sequence[str],
        window: TimeWindow | None,
        items: Sequence[RetrievedItem],
    ) -> list[RetrievedItem]:
        """``items`` with their calibrated confidence (:mod:`memstrata.retrieval.confidence`)."""
        question = question_signals(query.text, named, window, query.now)
        return grade(question, items, settings=self._longterm, terms=self._terms)

    def _gather(
        self,
        query: RetrievalQuery,
        routes: Sequence[Route],
        vectors: NDArray[np.float32],
        flt: Filter,
        dense: bool,
        window: TimeWindow | None = None,
        space: DenseSpace = ENGLISH,
        cross: NDArray[np.float32] | None = None,
    ) -> tuple[list[Candidate], dict[str, ScoredPoint]]:
        """The engine calls before scoring: the routes' candidates merged, and the
        pool's payloads with their exact cosines (on MiniLM's scale, by the routes of
        ``space``; ``cross``: an English question's multilingual vector)."""
        limit = max(self._settings.pool_size, query.k)
        pool, cosines = self._merge(
            query, routes, vectors, flt, limit, dense, window, space=space, cross=cross
        )
        checkpoint()
        with span("retrieval.pool", candidates=len(pool)):
            points = self._languages.read_scored(
                query.collection,
                [c.id for c in pool],
                space,
                vectors[0],
                cross,
                tenant=query.tenant,
                known=cosines,
            )
        return pool, points

    def _rank(
        self,
        query: RetrievalQuery,
        routes: Sequence[Route],
        vectors: NDArray[np.float32],
        flt: Filter,
        window: TimeWindow | None,
        named: Sequence[str],
        dense: bool,
        space: DenseSpace = ENGLISH,
    ) -> list[RetrievedItem] | _Refused:
        """Everything after the embedding: the engine calls before scoring, the
        scoring, the reranker, then diversity and episode links (engine calls again)."""
        cfg = self._settings
        cross = (
            self._languages.cross_for(query.collection, flt, query.text, space) if dense else None
        )
        pool, points = self._gather(
            query, routes, vectors, flt, dense, window, space=space, cross=cross
        )
        reranking = self._reranker is not None and cfg.rerank_weight > 0 and dense
        linking = query.collection == MEMORIES and query.as_of is None
        # Linking folds facts into their episodes: rank twice k so the list is still
        # k long after the folds.
        keep = None if reranking else (2 * query.k if linking else query.k)
        named_lower = frozenset(e.lower() for e in named)
        ranked = self._adjust(query, pool, points, window, named_lower, keep)
        if space.using != DENSE_VECTOR or cross is not None:
            ranked = [
                replace(item, cosine_route=LanguageRoutes.route_of(space, True, item.payload))
                for item in ranked
            ]
        if query.as_of is not None:
            at = query.as_of.timestamp()
            ranked = [item for item in ranked if valid_at(item.payload, at)]
        if reranking and ranked:
            try:
                ranked = self._rerank(query, vectors[0], ranked)
            except Exception as exc:  # raised to the caller as it was, never blamed on L3
                return _Refused(exc)
        checkpoint()
        diverse = self._diversified(query, ranked, space.using)
        checkpoint()
        if not linking:
            return diverse[: query.k]
        read = None
        if space.using != DENSE_VECTOR or cross is not None:

            def read(ids: Sequence[str]) -> dict[str, ScoredPoint]:
                return self._languages.read_scored(
                    MEMORIES, ids, space, vectors[0], cross, tenant=query.tenant
                )

        return self._linked(query, vectors[0], diverse, read)

    def _served_from_l2(
        self,
        query: RetrievalQuery,
        window: TimeWindow | None,
        routes: Sequence[Route],
        reason: str | None,
        dense_skip: str | None,
    ) -> RetrievalResult:
        """A retrieval L3 could not answer, answered from the cached reads in L2 (none
        for an ``as_of`` read: the cache holds what is current)."""
        items: tuple[RetrievedItem, ...] = ()
        if query.as_of is None:
            key = query_key(query.collection, query.text, query.types)
            items = self._needs.cached(
                query.tenant, query.user, query.collection, query.text, key, query.types, query.k
            )
        return RetrievalResult(
            items,
            (),
            True,
            window,
            tuple(routes),
            l3_skip_reason=reason,
            dense_skip_reason=dense_skip,
        )

    @traced_stage("retrieval.diversify")
    def _diversified(
        self, query: RetrievalQuery, ranked: Sequence[RetrievedItem], using: str = DENSE_VECTOR
    ) -> list[RetrievedItem]:
        """Maximal marginal relevance over the best ``2k``: each next item is the one
        whose score, less ``redundancy_penalty`` times its cosine to the closest item
        already chosen, is highest. Ten restatements of one thing are one memory and
        nine missing ones; the penalty lets a different memory through. Scores become
        those marginal scores (never above the one before, so the order holds)."""
        penalty = self._settings.redundancy_penalty
        depth = min(len(ranked), 2 * query.k)
        if penalty <= 0 or depth < 2:
            return list(ranked)
        head = ranked[:depth]
        # Similarity in the question's space: MiniLM finds any two Chinese texts alike.
        found = self._head_vectors(query, head, using)
        dim = self._embedder.dim if using == DENSE_VECTOR else self._languages.dim
        rows = np.stack([found.get(item.id, np.zeros(dim, dtype=np.float32)) for item in head])
        similarity = np.clip(rows @ rows.T, 0.0, 1.0)
        scores = np.array([item.score for item in head])
        closest = np.zeros(depth)
        left = list(range(depth))
        chosen: list[RetrievedItem] = []
        ceiling = float("inf")
        while left:
            margins = scores[left] * (1.0 - penalty * closest[left])
            pick = left[int(np.argmax(margins))]  # ties: the better-ranked one
            ceiling = min(ceiling, float(margins.max()))
            chosen.append(replace(head[pick], score=ceiling))
            closest = np.maximum(closest, similarity[pick])
            left.remove(pick)
        rest = [replace(item, score=min(item.score, ceiling)) for item in ranked[depth:]]
        return chosen + rest

    def _head_vectors(
        self, query: RetrievalQuery, head: Sequence[RetrievedItem], using: str
    ) -> dict[str, NDArray[np.float32]]:
        """The stored ``using`` vectors of ``head``, read once per point while its
        payload object is the same one (as :meth:`_features`: the adapter's payload
        cache hands out a new object once the point is rewritten); the best few of a
        read come back read after read."""
        found: dict[str, NDArray[np.float32]] = {}
        missing: list[RetrievedItem] = []
        for item in head:
            kept = self._vectors.get((using, item.id))
            if kept is not None and kept[0] is item.payload:
                found[item.id] = kept[1]
            else:
                missing.append(item)
        if missing:
            read = self._store.dense_vectors(
                query.collection, [item.id for item in missing], tenant=query.tenant, using=using
            )
            for item in missing:
                vector = read.get(item.id)
                if vector is not None:
                    found[item.id] = vector
                    remember(self._vectors, (using, item.id), (item.payload, vector), _VECTORS_MAX)
        return found

    @traced_stage("retrieval.link")
    def _linked(
        self,
        query: RetrievalQuery,
        query_vector: NDArray[np.float32],
        ranked: Sequence[RetrievedItem],
        read: ScoredRead | None = None,
    ) -> list[RetrievedItem]:
        """The best ``k`` after following episode links (:mod:`memstrata.retrieval.links`):
        an episode carries its current facts (a fact found on its own but said in a
        listed episode is folded into it, the pair ranked by the better score) and,
        when a newer fact replaced what it said, is marked ``superseded_by`` it.
        ``read``: the facts' cosines by the question's routes (None: MiniLM's)."""
        candidates = ranked[: 2 * query.k]
        links = follow(
            self._store,
            query.tenant,
            query_vector,
            [(item.id, item.payload) for item in candidates if item.kind == EPISODE],
            read,
        )
        attached = {p.id for points in links.facts.values() for p in points}
        listed = {item.id: item for item in candidates}
        floor = self._longterm.low_confidence_cosine
        grouped: list[RetrievedItem] = []
        for item in candidates:
            if item.kind != EPISODE:
                if item.id not in attached:
                    grouped.append(item)
                continue
            facts = tuple(
                _linked_fact(point, item, listed.get(point.id), floor)
                for point in links.facts.get(item.id, ())
            )
            score = max([item.score, *(f.score for f in facts if f.id in listed)])
            grouped.append(
                replace(item, score=score, facts=facts, superseded_by=links.superseded.get(item.id))
            )
        # Stable: equal scores keep the ranked order (itself deterministic).
        grouped.sort(key=lambda item: -item.score)
        # A question about a current value: its episode first, older values' marked past.
        grouped = current_first(self._store, query, query_vector, grouped, floor, read)
        # A plan's standing constraints (allergies for a meal) come first.
        grouped = with_standing(
            self._store,
            query,
            grouped,
            read
            or (
                lambda ids: self._store.read_scored(
                    MEMORIES, ids, query_vector, tenant=query.tenant
                )
            ),
        )
        # A later turn that corrects or changes a ranked one goes before it.
        grouped = with_followups(query, grouped, self._terms)
        return grouped[: query.k]

    def _space_vectors(
        self, space: DenseSpace, routes: Sequence[Route], named: Sequence[str]
    ) -> NDArray[np.float32]:
        """One vector per route, by the model of ``space.using``."""
        if space.using == DENSE_VECTOR:
            return self._route_vectors(routes, named)
        return self._languages.embed(space, [route.text for route in routes])

    @traced_stage("retrieval.embed")
    def _route_vectors(self, routes: Sequence[Route], named: Sequence[str]) -> NDArray[np.float32]:
        """One vector per route. The entity route's is pooled from the query's own
        token vectors when the embedder exposes them: the entities read in the
        question's context, from the query's forward pass instead of a second one."""
        texts = [route.text for route in routes]
        entity_at = next((i for i, r in enumerate(routes) if r.name == "entities"), None)
        spans = None if entity_at is None else entity_spans(routes[0].text, named)
        if entity_at is None or spans is None or not isinstance(self._embedder, TokenEmbedder):
            return self._embedder.embed(texts)
        tokens = self._embedder.embed_tokens(routes[0].text)
        entity = None if tokens is None else tokens.pooled_spans(spans)
        if tokens is None or entity is None:
            return self._embedder.embed(texts)
        rows = {0: tokens.pooled(), entity_at: entity}
        rest = [i for i in range(len(routes)) if i not in rows]
        if rest:
            rows.update(zip(rest, self._embedder.embed([texts[i] for i in rest]), strict=True))
        return np.stack([rows[i] for i in range(len(routes))]).astype(np.float32, copy=False)

    def _window(self, query: RetrievalQuery) -> TimeWindow | None:
        """The time the question asks about (:mod:`memstrata.retrieval.timesteer`);
        "the first time we talked" is found by counting the asker's memories."""
        cfg = self._longterm
        if query.now is None:
            return None
        window = question_window(query.text, query.now)
        lookup = (
            None
            if window
            else first_session_lookup(
                query.text,
                query.now,
                self._store.index,
                query.collection,
                self._filter(query, None),
            )
        )
        return window if lookup is None else self._calls.l3(lookup, cfg.search_deadline_s).value

    def _filter(self, query: RetrievalQuery, window: TimeWindow | None) -> Filter:
        after = before = None
        if window is not None and self._settings.time_filter:
            slack = timedelta(days=self._settings.time_slack_days)
            after = (window.start - slack).timestamp()
            before = (window.end + slack).timestamp()
        if query.as_of is not None:
            stamp = query.as_of.timestamp()
            before = stamp if before is None else min(before, stamp)
        return Filter(
            tenant=query.tenant,
            user=query.user,
            types=query.types,
            created_after=after,
            created_before=before,
        )

    @traced_stage("retrieval.search")
    def _merge(
        self,
        query: RetrievalQuery,
        routes: Sequence[Route],
        vectors: NDArray[np.float32],
        flt: Filter,
        limit: int,
        dense_routes: bool = True,
        window: TimeWindow | None = None,
        *,
        space: DenseSpace = ENGLISH,
        cross: NDArray[np.float32] | None = None,
    ) -> tuple[list[Candidate], dict[str, float]]:
        """The best ``limit`` candidates merged over the routes, and the raw query's
        dense cosines (the first route): the pool read reuses them instead of scoring
        those ids again. ``dense_routes`` False: the BM25 halves alone (no query
        vector). ``vectors`` are of ``space.using``; ``cross`` adds an English
        question's cross-language route (:mod:`memstrata.retrieval.languages`)."""
        cfg = self._settings
        per_route: list[tuple[str, float, Mapping[str, float]]] = []
        cosines: dict[str, float] = {}
        for route, vector in zip(routes, vectors, strict=True):
            depth = cfg.secondary_route_depth if per_route else cfg.route_depth
            checkpoint()
            with span("retrieval.route", route=route.name, depth=depth):
                if not dense_routes:
                    fused = self._sparse_route(query.collection, route.text, flt, depth)
                    per_route.append((route.name, route.weight, fused))
                    continue
                dense, sparse = self._store.route_lists(
                    query.collection,
                    route.text,
                    vector,
                    flt,
                    dense_depth=depth,
                    sparse_depth=depth,
                    using=space.using,
                )
                if not per_route:
                    dense = self._with_windows(query, dense, vector, flt, space.using)
                    cosines = dict(dense)
                mapped, unseen = self._languages.mapped_with_unseen(
                    space, dense, query.collection, vector, query.tenant
                )
                sparse_weight = (
                    cfg.sparse_weight
                    if space.using == DENSE_VECTOR
                    else self._longterm.multilingual_sparse_weight
                )
                fused = lexical_share(
                    fuse_route(
                        mapped, sparse, dense_weight=cfg.dense_weight, sparse_weight=sparse_weight
                    ),
                    mapped,
                    unseen,
                    sparse_weight,
                )
            per_route.append((route.name, route.weight, fused))
        if cross is not None:
            checkpoint()
            with span("retrieval.route", route=MULTILINGUAL_VECTOR, depth=cfg.route_depth):
                found = self._languages.cross_dense(
                    query.collection, cross, flt, cfg.route_depth, space.lang
                )
            fused = fuse_route(
                found, [], dense_weight=cfg.dense_weight, sparse_weight=cfg.sparse_weight
            )
            per_route.append((MULTILINGUAL_VECTOR, self._longterm.multilingual_cross_weight, fused))
        steer = window_route(self._store, query.collection, routes[0].text, flt, window, cfg)
        if steer is not None:  # a day's few turns may sit below the whole history's best
            # Its dense half reads MiniLM vectors: BM25 alone for a Chinese question.
            english = dense_routes and space.using == DENSE_VECTOR
            per_route.append(steer(vectors[0] if english else None))
        with span("retrieval.fusion", routes=len(per_route)):
            merged = merge_routes(per_route, limit)
        return merged, cosines

    def _sparse_route(
        self, collection: str, text: str, flt: Filter, depth: int
    ) -> Mapping[str, float]:
        """One route's BM25 half alone, fused as a route whose dense half found nothing."""
        with self._store.searching(collection):
            found = self._store.index.search_sparse(
                collection, self._store.encode_query(text), flt, depth, with_payload=False
            )
        cfg = self._settings
        return fuse_route(
            [],
            [(p.id, p.score) for p in found],
            dense_weight=cfg.dense_weight,
            sparse_weight=cfg.sparse_weight,
        )

    def _with_windows(
        self,
        query: RetrievalQuery,
        dense: list[tuple[str, float]],
        vector: NDArray[np.float32],
        flt: Filter,
        using: str = DENSE_VECTOR,
    ) -> list[tuple[str, float]]:
        """The raw query's dense list with each long episode at the best cosine of its
        own vector and its window keys (:mod:`memstrata.memory.episodes`): the dense
        model reads only a text's beginning, a window the rest. Best first. ``vector``
        and the cosines are of the named vector ``using``."""
        depth = self._settings.window_depth
        if (
            depth == 0
            or query.collection != MEMORIES
            or (query.types is not None and EPISODE not in query.types)
        ):
            return dense
        found = self._store.index.search_dense(
            query.collection,
            vector,
            replace(flt, types=(EPISODE_WINDOW,)),
            depth,
            self._longterm.hnsw_ef,
            with_payload=True,
            using=using,
        )
        if not found:
            return dense
        best = dict(dense)
        for point in found:
            episode = point.payload.get("episode")
            if isinstance(episode, str) and point.score > best.get(episode, -math.inf):
                best[episode] = point.score
        return sorted(best.items(), key=lambda entry: (-entry[1], entry[0]))

    @traced_stage("retrieval.score")
    def _adjust(
        self,
        query: RetrievalQuery,
        pool: Sequence[Candidate],
        points: Mapping[str, ScoredPoint],
        window: TimeWindow | None,
        named: frozenset[str],
        keep: int | None,
    ) -> list[RetrievedItem]:
        """The pool rescored, best first; only the best ``keep`` (all when None)
        become :class:`RetrievedItem` values - scoring stays on plain floats."""
        cfg = self._settings
        # A point deleted since the route query is gone; a window key (an unfiltered
        # read can meet one) counts through its episode only.
        live = [
            c for c in pool if c.id in points and points[c.id].payload.get("type") != EPISODE_WINDOW
        ]
        base = {c.id: c.score for c in live}
        features = {c.id: self._features(c.id, points[c.id].payload) for c in live}
        context = context_bonus(
            {i: f.position for i, f in features.items()},
            base,
            cfg.neighbor_weight,
            cfg.thread_weight,
        )
        now_s = None if query.now is None else query.now.timestamp()
        span = None
        slack = cfg.time_slack_days * SECONDS_PER_DAY
        bounds = (0.0, 0.0)
        if window is not None:
            bounds = (window.start.timestamp(), window.end.timestamp())
            span = (bounds[0] - slack, bounds[1] + slack)
        boost_entity = 1.0 + cfg.entity_field_boost
        per_day, decay_weight = cfg.decay_per_day, cfg.decay_weight
        # Small talk stays retrievable when asked for ("what did I say when we
        # finished?"); otherwise it weighs little against facts.
        quiet = 1.0 if asks_about_small_talk(query.text) else 1.0 - cfg.small_talk_penalty
        scored: list[tuple[float, str, Candidate, float | None, bool | None]] = []
        for cand in live:
            feature = features[cand.id]
            observed = feature.observed
            score = (base[cand.id] + context.get(cand.id, 0.0)) * feature.factor
            if feature.small_talk:
                # its context bonus too: a "thanks" right after the answer is no answer
                score *= quiet
            inside: bool | None = None
            if span is not None:
                inside = observed is not None and span[0] <= observed < span[1]
                if inside:
                    # full lift inside the window itself, fading across the slack
                    score *= 1.0 + cfg.time_boost * window_weight(*bounds, slack, observed)
            if named and any(value in named for value in feature.entity_values):
                score *= boost_entity
            if now_s is not None and observed is not None:
                score *= decay_factor((now_s - observed) / SECONDS_PER_DAY, per_day, decay_weight)
            scored.append((score, cand.id, cand, observed, inside))
        scored = lead_with_window(scored, window, query.k)
        scored.sort(key=lambda entry: (-entry[0], entry[1]))
        floor = self._longterm.low_confidence_cosine
        items: list[RetrievedItem] = []
        for score, item_id, cand, observed, inside in scored[:keep]:
            point = points[item_id]
            items.append(
                RetrievedItem(
                    id=item_id,
                    score=score,
                    cosine=point.score,
                    low_confidence=point.score < floor,
                    routes=cand.routes,
                    payload=point.payload,
                    observed_at=None
                    if observed is None
                    else datetime.fromtimestamp(observed, tz=UTC),
                    in_time_window=inside,
                )
            )
        return items

    def _features(self, point_id: str, payload: Mapping[str, Any]) -> _Features:
        """What scoring reads from a payload, kept per point while the payload object
        is the same one (an adapter's payload cache hands out the same object until
        the point is rewritten): a few hundred candidates per retrieval, mostly seen
        before."""
        entry = self._feature_cache.get(point_id)
        if entry is not None and entry[0] is payload:
            return entry[1]
        feature = _Features(
            _observed_seconds(payload),
            self._static_factor(payload),
            turn_position(payload),
            tuple(
                str(payload[name]).lower()
                for name in self._settings.entity_fields
                if name in payload
            ),
            flagged_small_talk(payload),
        )
        remember(self._feature_cache, point_id, (payload, feature), _FACTOR_CACHE_ENTRIES)
        return feature

    def _static_factor(self, payload: Mapping[str, Any]) -> float:
        """What a memory's own payload does to its score: informativeness, importance
        and memory type. Memoized per (text, speaker, importance, type): the same
        memories come back query after query."""
        key = (
            payload.get("text"),
            payload.get("speaker"),
            payload.get("importance"),
            payload.get("type"),
        )
        try:
            cached = self._factors.get(key)
        except TypeError:  # an unhashable payload value: compute, do not keep
            return self._compute_static_factor(payload)
        if cached is None:
            cached = remember(
                self._factors, key, self._compute_static_factor(payload), _FACTOR_CACHE_ENTRIES
            )
        return cached

    def _compute_static_factor(self, payload: Mapping[str, Any]) -> float:
        cfg = self._settings
        item_type = payload.get("type")
        return (
            informativeness(payload, cfg)
            * importance_factor(number(payload.get("importance")), cfg.importance_weight)
            * type_factor(item_type if isinstance(item_type, str) else None, self._type_weights)
        )

    @traced_stage("retrieval.rerank")
    def _rerank(
        self, query: RetrievalQuery, query_vector: NDArray[np.float32], items: list[RetrievedItem]
    ) -> list[RetrievedItem]:
        assert self._reranker is not None
        weight = self._settings.rerank_weight
        extra = self._reranker.scores(
            query.text, query_vector, [i.text for i in items], [i.cosine for i in items]
        )
        if len(extra) != len(items) or not all(math.isfinite(v) for v in extra):
            raise BackendError(
                f"reranker returned {len(extra)} scores for {len(items)} items, "
                "or a score that is not finite"
            )
        low, high = min(extra), max(extra)
        span = high - low or 1.0
        top = max(i.score for i in items) or 1.0
        rescored = [
            replace(item, score=(1 - weight) * item.score / top + weight * (value - low) / span)
            for item, value in zip(items, extra, strict=True)
        ]
        # Stable sort: ties (e.g. a reranker that cannot tell two texts apart) keep the
        # retrieval order (itself deterministic) instead of falling back to id order.
        rescored.sort(key=lambda item: -item.score)
        return rescored


class _Refused(NamedTuple):
    """The reranker's error, carried out of the guarded L3 call to be raised as is."""

    error: Exception


class _Features(NamedTuple):
    """A candidate's payload as scoring reads it."""

    observed: float | None
    factor: float
    position: Position | None
    entity_values: tuple[str, ...]
    """The lowercased values of the ``entity_fields`` the payload has (a tuple of
    strings: the collector stops tracking it, where it would walk a frozenset)."""
    small_talk: bool


def _linked_fact(
    point: ScoredPoint, episode: RetrievedItem, listed: RetrievedItem | None, floor: float
) -> RetrievedItem:
    """A current fact that comes with ``episode``: its own rank when it was found on
    its own, else the episode's; its confidence the better of its own cosine and the
    episode's (a fact is only as far from the question as the words it was said in)."""
    cosine = max(point.score, episode.cosine)
    observed = _observed_seconds(point.payload)
    return RetrievedItem(
        id=point.id,
        score=listed.score if listed is not None else episode.score,
        cosine=cosine,
        low_confidence=cosine < floor,
        routes=listed.routes if listed is not None else ("episode",),
        payload=point.payload,
        observed_at=None if observed is None else datetime.fromtimestamp(observed, tz=UTC),
        in_time_window=None,
    )


def _observed_seconds(payload: Mapping[str, Any]) -> float | None:
    """When the memory was observed (epoch seconds), if its payload says."""
    stamp = payload.get("created_at")
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        return float(stamp)
    return None
