"""Multi-route retrieval over L3 (DESIGN "Retrieval and context building").

For one :class:`RetrievalQuery`:

1. routes - the raw query, its entities, the recent conversation - embedded in one
   batch; each route searched hybrid (dense + BM25, tenant filter in the engine);
2. per route, normalized-score fusion; across routes, duplicates merged keeping the
   best score;
3. the best ``pool_size`` candidates get their payload and exact cosine to the raw
   query in one engine call, then the adjustments: conversational context (adjacent
   turns and the thread, when payloads carry ``thread`` / ``seq``), the question's
   time window (observed inside it -> boost, or filter), informativeness, entity
   match on ``entity_fields``, time decay, importance and memory type;
4. an optional reranker blended in; confidence flags; L3 skipped when every item
   is below the skip threshold.

Payload conventions read here: ``created_at`` (epoch seconds: when it was
observed), ``importance`` (0..1), ``type``, ``thread`` + ``seq`` (position in a
conversation), and the ``entity_fields`` (default ``speaker``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.config import LongTermSettings, RetrievalSettings
from memstrata.embed.protocol import Embedder
from memstrata.errors import BackendError
from memstrata.extract.filter import is_pure_question
from memstrata.longterm.models import Filter, ScoredPoint
from memstrata.longterm.store import LongTermStore
from memstrata.retrieval.models import RetrievalQuery, RetrievalResult, RetrievedItem
from memstrata.retrieval.rerank import Reranker
from memstrata.retrieval.routes import Route, build_routes, entities
from memstrata.retrieval.scoring import (
    SECONDS_PER_DAY,
    Candidate,
    decay_factor,
    fuse_route,
    importance_factor,
    merge_routes,
    type_factor,
)
from memstrata.retrieval.timeexpr import TimeWindow, resolve


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
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._settings = settings or RetrievalSettings()
        self._longterm = longterm or LongTermSettings()
        self._reranker = reranker
        self._type_weights = dict(self._settings.type_weights)

    @property
    def settings(self) -> RetrievalSettings:
        """The retrieval parameters in use."""
        return self._settings

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
        vectors = self._embedder.embed([route.text for route in routes])
        window = None if query.now is None else resolve(query.text, query.now)
        flt = self._filter(query, window)
        merged = self._merge(query, routes, vectors, flt)
        pool = merged[: max(cfg.pool_size, query.k)]
        points = self._store.read_scored(
            query.collection, [c.id for c in pool], vectors[0], tenant=query.tenant
        )
        ranked = self._adjust(query, pool, points, window, frozenset(e.lower() for e in named))
        if self._reranker is not None and cfg.rerank_weight > 0 and ranked:
            ranked = self._rerank(query, vectors[0], ranked)
        top = ranked[: query.k]
        if top and all(item.cosine < self._longterm.skip_below_cosine for item in top):
            return RetrievalResult((), tuple(top), True, window, routes)
        return RetrievalResult(tuple(top), (), False, window, routes)

    def _filter(self, query: RetrievalQuery, window: TimeWindow | None) -> Filter:
        after = before = None
        if window is not None and self._settings.time_filter:
            slack = timedelta(days=self._settings.time_slack_days)
            after = (window.start - slack).timestamp()
            before = (window.end + slack).timestamp()
        return Filter(
            tenant=query.tenant,
            user=query.user,
            types=query.types,
            created_after=after,
            created_before=before,
        )

    def _merge(
        self,
        query: RetrievalQuery,
        routes: Sequence[Route],
        vectors: NDArray[np.float32],
        flt: Filter,
    ) -> list[Candidate]:
        cfg = self._settings
        per_route: list[tuple[str, float, Mapping[str, float]]] = []
        for route, vector in zip(routes, vectors, strict=True):
            dense, sparse = self._store.route_lists(
                query.collection,
                route.text,
                vector,
                flt,
                dense_depth=cfg.route_depth,
                sparse_depth=cfg.route_depth,
            )
            fused = fuse_route(
                dense, sparse, dense_weight=cfg.dense_weight, sparse_weight=cfg.sparse_weight
            )
            per_route.append((route.name, route.weight, fused))
        return merge_routes(per_route)

    def _adjust(
        self,
        query: RetrievalQuery,
        pool: Sequence[Candidate],
        points: Mapping[str, ScoredPoint],
        window: TimeWindow | None,
        named: frozenset[str],
    ) -> list[RetrievedItem]:
        cfg = self._settings
        live = [c for c in pool if c.id in points]  # a point deleted since the route query
        base = {c.id: c.score for c in live}
        context = _context_bonus(live, points, base, cfg.neighbor_weight, cfg.thread_weight)
        now_s = None if query.now is None else query.now.timestamp()
        items: list[RetrievedItem] = []
        for cand in live:
            point = points[cand.id]
            payload = point.payload
            observed = _observed_at(payload)
            score = base[cand.id] + context.get(cand.id, 0.0)
            inside: bool | None = None
            if window is not None:
                inside = observed is not None and _near(window, observed, cfg.time_slack_days)
                if inside:
                    score *= 1.0 + cfg.time_boost
            score *= _informativeness(payload, cfg)
            if named and any(str(payload.get(f, "")).lower() in named for f in cfg.entity_fields):
                score *= 1.0 + cfg.entity_field_boost
            if now_s is not None and observed is not None:
                age_days = (now_s - observed.timestamp()) / SECONDS_PER_DAY
                score *= decay_factor(age_days, cfg.decay_per_day, cfg.decay_weight)
            importance = payload.get("importance")
            score *= importance_factor(
                float(importance)
                if isinstance(importance, int | float) and not isinstance(importance, bool)
                else None,
                cfg.importance_weight,
            )
            item_type = payload.get("type")
            score *= type_factor(
                item_type if isinstance(item_type, str) else None, self._type_weights
            )
            items.append(
                RetrievedItem(
                    id=cand.id,
                    score=score,
                    cosine=point.score,
                    low_confidence=point.score < self._longterm.low_confidence_cosine,
                    routes=cand.routes,
                    payload=payload,
                    observed_at=observed,
                    in_time_window=inside,
                )
            )
        items.sort(key=lambda item: (-item.score, item.id))
        return items

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


def _observed_at(payload: Mapping[str, Any]) -> datetime | None:
    stamp = payload.get("created_at")
    if isinstance(stamp, int | float) and not isinstance(stamp, bool):
        return datetime.fromtimestamp(float(stamp), tz=UTC)
    return None


def _near(window: TimeWindow, moment: datetime, slack_days: float) -> bool:
    slack = timedelta(days=slack_days)
    return window.start - slack <= moment < window.end + slack


def _informativeness(payload: Mapping[str, Any], cfg: RetrievalSettings) -> float:
    text = str(payload.get("text", ""))
    # Turns are stored as "Speaker: text"; judge the utterance itself.
    speaker = payload.get("speaker")
    if isinstance(speaker, str) and text.startswith(speaker + ":"):
        text = text[len(speaker) + 1 :].strip()
    return _utterance_factor(text, cfg.question_penalty, cfg.short_penalty, cfg.short_words)


@lru_cache(maxsize=65_536)
def _utterance_factor(
    text: str, question_penalty: float, short_penalty: float, words: int
) -> float:
    # Cached: the same memories come back query after query, and sentence splitting
    # was a third of a retrieval's Python time.
    factor = 1.0
    if is_pure_question(text):
        factor *= 1.0 - question_penalty
    if len(text.split()) < words:
        factor *= 1.0 - short_penalty
    return factor


def _context_bonus(
    pool: Sequence[Candidate],
    points: Mapping[str, ScoredPoint],
    base: Mapping[str, float],
    neighbor_weight: float,
    thread_weight: float,
) -> dict[str, float]:
    """Score added from the item's conversational context (pure).

    Neighbors are pool items of the same ``thread`` at ``seq`` +-1; the thread's
    score is the mean of its best three pool scores.
    """
    by_position: dict[tuple[str, int], str] = {}
    by_thread: dict[str, list[float]] = {}
    for cand in pool:
        key = _position(points[cand.id].payload)
        if key is None:
            continue
        by_position[key] = cand.id
        by_thread.setdefault(key[0], []).append(base[cand.id])
    thread_score = {t: float(np.mean(sorted(s, reverse=True)[:3])) for t, s in by_thread.items()}
    bonus: dict[str, float] = {}
    for cand in pool:
        key = _position(points[cand.id].payload)
        if key is None:
            continue
        thread, seq = key
        adjacent = [by_position.get((thread, seq + step)) for step in (-1, 1)]
        best = max((base[i] for i in adjacent if i is not None), default=0.0)
        bonus[cand.id] = neighbor_weight * best + thread_weight * thread_score[thread]
    return bonus


def _position(payload: Mapping[str, Any]) -> tuple[str, int] | None:
    thread, seq = payload.get("thread"), payload.get("seq")
    if thread is None or isinstance(seq, bool) or not isinstance(seq, int):
        return None
    return str(thread), seq
