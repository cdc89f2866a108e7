"""Which dense route reads a question, and how its cosine is read (docs/architecture.md,
"Languages").

L3 holds two dense vectors per point: ``dense`` (all-MiniLM-L6-v2, English only: a
Chinese text scores 0.6-0.8 against nearly anything) and ``multilingual`` (USE v3,
Chinese and English in one space). The question's language picks the routes:

* English: MiniLM over every point, exactly as without the second model, plus a
  cross-language route - the multilingual vector over the Chinese and mixed points
  only (a store without any ranks as it always did);
* Chinese or mixed: the multilingual vector over every point (with BM25, jieba);
  MiniLM is not used. A Chinese question's BM25 cannot match an English point, so
  each English point gets the lexical half's share at its dense value
  (:func:`lexical_share`).

Every cosine a reader reports is on MiniLM's scale: a multilingual cosine is mapped
through the calibrated knots of the question's language
(``LongTermSettings.multilingual_knots``), so the low-confidence and skip thresholds,
and the decision layer's, mean the same whichever route measured it. Each item
says which route its cosine comes from.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from itertools import pairwise
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from memstrata.config import LongTermSettings
from memstrata.language import Language, detect_language
from memstrata.longterm.catchup import CROSS_LANGS
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import (
    DENSE_VECTOR,
    MULTILINGUAL_VECTOR,
    Filter,
    Hit,
    ScoredPoint,
)
from memstrata.memo import remember
from memstrata.retrieval.links import ScoredRead
from memstrata.retrieval.search import HybridSearch

_log = logging.getLogger(__name__)

# CROSS_LANGS (memstrata.longterm.catchup): the ``lang`` values an English question's
# cross-language route searches, the same that make a tenant cross-language.

_COUNTS_MAX = 4096


class DenseSpace(NamedTuple):
    """The dense routes of one question."""

    lang: Language
    """The question's language."""
    using: str
    """The named vector its routes search over every point."""
    cross: bool
    """Also the multilingual vector over the Chinese and mixed points (an English
    question while the multilingual route is on)."""


ENGLISH = DenseSpace("en", DENSE_VECTOR, False)


def dense_space(text: str, multilingual_on: bool) -> DenseSpace:
    """The routes for a question ``text``."""
    lang = detect_language(text)
    if not multilingual_on:
        return DenseSpace(lang, DENSE_VECTOR, False)
    if lang == "en":
        return DenseSpace(lang, DENSE_VECTOR, True)
    return DenseSpace(lang, MULTILINGUAL_VECTOR, False)


def cross_filter(flt: Filter) -> Filter:
    """``flt`` restricted to the points the cross-language route searches."""
    return replace(flt, extras=(*flt.extras, ("lang", CROSS_LANGS)))


def interpolate(x: float, knots: Sequence[tuple[float, float]]) -> float:
    """``x`` mapped through the piecewise-linear ``knots`` (held flat past the ends)."""
    if x <= knots[0][0]:
        return float(knots[0][1])
    for (x0, y0), (x1, y1) in pairwise(knots):
        if x <= x1:
            return float(y0 + (y1 - y0) * (x - x0) / (x1 - x0))
    return float(knots[-1][1])


def point_lang(payload: Mapping[str, Any]) -> str:
    """A stored point's language as calibration reads it: ``en``, or ``zh`` (Chinese
    or mixed)."""
    lang = payload.get("lang")
    if lang is None:
        lang = detect_language(str(payload.get("text", "")))
    return "en" if lang == "en" else "zh"


class Calibration:
    """Maps a route's cosine onto MiniLM's scale, per question and memory language."""

    def __init__(self, settings: LongTermSettings) -> None:
        self._knots: dict[str, tuple[tuple[float, float], ...]] = {
            pair: tuple((float(x), float(y)) for x, y in knots)
            for pair, knots in settings.multilingual_knots
        }

    def cosine(self, route: str, lang: str, cosine: float, memory: str = "zh") -> float:
        """``cosine`` measured by ``route`` between a question in ``lang`` and a memory
        in ``memory`` (``en`` or ``zh``), on MiniLM's scale (a MiniLM cosine as it is;
        a pair without knots: as it is)."""
        if route == DENSE_VECTOR:
            return cosine
        knots = self._knots.get(f"{lang}-{memory}")
        return cosine if knots is None else interpolate(cosine, knots)


class LanguageRoutes:
    """The language-aware parts of the reader's L3 calls, over one store."""

    def __init__(self, store: LongTermStore, settings: LongTermSettings) -> None:
        self._store = store
        self._settings = settings
        self.calibration = Calibration(settings)
        # Whether a tenant's collection holds Chinese or mixed points, per answer
        # generation: an English question over an English store skips the second
        # model entirely.
        self._has_cross: dict[tuple[Any, ...], bool] = {}

    @property
    def on(self) -> bool:
        """Whether the multilingual route serves (configured, and the index has it)."""
        return self._store.multilingual is not None

    @property
    def dim(self) -> int:
        """The multilingual model's dimension (0 when the route is off)."""
        model = self._store.multilingual
        return 0 if model is None else model.dim

    def space(self, text: str) -> DenseSpace:
        """The routes for a question ``text``."""
        return dense_space(text, self.on)

    def embed(self, space: DenseSpace, texts: Sequence[str]) -> NDArray[np.float32]:
        """``texts`` embedded by the model of ``space.using`` (the multilingual one)."""
        return self._store.embed_multilingual(texts)

    def has_cross_points(
        self,
        collection: str,
        tenant: str,
        user: str | None = None,
        types: Sequence[str] | None = None,
    ) -> bool:
        """Whether any point of the tenant (the user's, of those types) is Chinese or
        mixed."""
        kinds = None if types is None else tuple(types)
        generation = self._store.index.answer_generation(collection)
        key = None if generation is None else (collection, generation, tenant, user, kinds)
        if key is not None:
            known = self._has_cross.get(key)
            if known is not None:
                return known
        scope = Filter(tenant=tenant, user=user, types=kinds)
        found = self._store.index.count(collection, cross_filter(scope)) > 0
        if key is not None:
            remember(self._has_cross, key, found, _COUNTS_MAX)
        return found

    def before_read(self, collection: str, flt: Filter) -> int:
        """Before a Chinese or mixed question reads ``flt``'s scope by the
        multilingual vector (which it reads over every point): its tenant turns
        cross-language, up to :data:`~memstrata.longterm.catchup.SYNC_MAX` of its
        points still lacking the vector get it now and the rest in the background;
        how many in scope this read cannot find (0 when the route is off)."""
        coverage = self._store.coverage
        if coverage is None:
            return 0
        lacking = coverage.before_read(collection, flt)
        if lacking:
            _log.warning(
                "%d points of tenant %s lack the multilingual vector: a Chinese question "
                "cannot find them until the background catch-up reaches them",
                lacking,
                flt.tenant,
            )
        return lacking

    def cross_vector(self, text: str) -> NDArray[np.float32] | None:
        """The multilingual vector of an English question, or None when the model
        failed (the cross-language route is then left out, with a warning)."""
        try:
            return self._store.query_vector(text, None, using=MULTILINGUAL_VECTOR)
        except Exception as exc:  # the English routes still answer
            _log.warning("multilingual query embedding failed, cross-language route off: %s", exc)
            return None

    def cross_dense(
        self,
        collection: str,
        vector: NDArray[np.float32],
        flt: Filter,
        depth: int,
        lang: str,
    ) -> list[tuple[str, float]]:
        """The cross-language route: ``(id, cosine on MiniLM's scale)``, best first."""
        found = self._store.index.search_dense(
            collection,
            vector,
            cross_filter(flt),
            depth,
            self._settings.hnsw_ef,
            with_payload=False,
            using=MULTILINGUAL_VECTOR,
        )
        return [(p.id, self.calibration.cosine(MULTILINGUAL_VECTOR, lang, p.score)) for p in found]

    def mapped(
        self,
        space: DenseSpace,
        ranked: Sequence[tuple[str, float]],
        collection: str,
        vector: NDArray[np.float32],
        tenant: str,
    ) -> list[tuple[str, float]]:
        """A dense list of ``space.using`` (searched with ``vector``) with its cosines
        on MiniLM's scale, best first; which of its points are English is read from
        the engine (one call on their ids)."""
        return self.mapped_with_unseen(space, ranked, collection, vector, tenant)[0]

    def mapped_with_unseen(
        self,
        space: DenseSpace,
        ranked: Sequence[tuple[str, float]],
        collection: str,
        vector: NDArray[np.float32],
        tenant: str,
    ) -> tuple[list[tuple[str, float]], frozenset[str]]:
        """:meth:`mapped`, and the ids of its points the question's BM25 cannot see:
        the English points of a Chinese question (no term of one can be a term of
        the other; a mixed question's Latin words can still match them)."""
        if space.using == DENSE_VECTOR or not ranked:
            return list(ranked), frozenset()
        english = {
            p.id
            for p in self._store.index.search_dense(
                collection,
                vector,
                Filter(tenant=tenant, ids=tuple(i for i, _ in ranked), extras=(("lang", "en"),)),
                len(ranked),
                self._settings.hnsw_ef,
                with_payload=False,
                using=space.using,
            )
        }
        cal = self.calibration
        mapped = [
            (i, cal.cosine(space.using, space.lang, c, "en" if i in english else "zh"))
            for i, c in ranked
        ]
        mapped.sort(key=lambda entry: (-entry[1], entry[0]))
        return mapped, frozenset(english) if space.lang == "zh" else frozenset()

    def mapped_hits(self, space: DenseSpace, hits: Sequence[Hit]) -> list[Hit]:
        """Hits searched with ``space.using``, their cosines on MiniLM's scale."""
        if space.using == DENSE_VECTOR:
            return list(hits)
        cal = self.calibration
        return [
            replace(h, cosine=cal.cosine(space.using, space.lang, h.cosine, point_lang(h.payload)))
            for h in hits
        ]

    def cross_cosines(
        self,
        collection: str,
        ids: Sequence[str],
        vector: NDArray[np.float32],
        tenant: str,
        lang: str,
        known: Mapping[str, float],
    ) -> dict[str, float]:
        """Cosines on MiniLM's scale of the Chinese and mixed points among ``ids`` to
        an English question's multilingual ``vector`` (``known``: mapped already)."""
        cosines = {i: known[i] for i in ids if i in known}
        unknown = [i for i in ids if i not in known]
        if unknown:
            scored = self._store.read_scored(
                collection, unknown, vector, tenant=tenant, using=MULTILINGUAL_VECTOR
            )
            for point_id, point in scored.items():
                cosines[point_id] = self.calibration.cosine(MULTILINGUAL_VECTOR, lang, point.score)
        return cosines

    def cross_for(
        self, collection: str, flt: Filter, text: str, space: DenseSpace
    ) -> NDArray[np.float32] | None:
        """An English question's multilingual vector when its cross-language route
        has anything to search (None: no Chinese or mixed point, or not English)."""
        if not space.cross or not self.has_cross_points(
            collection, flt.tenant, flt.user, flt.types
        ):
            return None
        return self.cross_vector(text)

    def read_scored(
        self,
        collection: str,
        ids: Sequence[str],
        space: DenseSpace,
        vector: NDArray[np.float32],
        cross: NDArray[np.float32] | None,
        *,
        tenant: str,
        known: Mapping[str, float] | None = None,
    ) -> dict[str, ScoredPoint]:
        """:meth:`LongTermStore.read_scored` by the question's routes: ``vector`` is of
        ``space.using`` (``known``: its raw cosines), ``cross`` an English question's
        multilingual vector; every score on MiniLM's scale (see :meth:`route_of`)."""
        points = self._store.read_scored(
            collection, ids, vector, tenant=tenant, known_cosines=known, using=space.using
        )
        if space.using != DENSE_VECTOR:
            cal = self.calibration
            return {
                i: p._replace(
                    score=cal.cosine(space.using, space.lang, p.score, point_lang(p.payload))
                )
                for i, p in points.items()
            }
        if cross is None:
            return points
        foreign = [i for i, p in points.items() if p.payload.get("lang") in CROSS_LANGS]
        if foreign:
            cosines = self.cross_cosines(collection, foreign, cross, tenant, space.lang, {})
            for point_id in foreign:
                points[point_id] = points[point_id]._replace(score=cosines.get(point_id, 0.0))
        return points

    def linked_read(
        self,
        collection: str,
        text: str,
        tenant: str,
        query_vector: NDArray[np.float32],
        hits: Sequence[Hit],
    ) -> ScoredRead | None:
        """How the episode links of a :meth:`search`'s ``hits`` read their cosines:
        by the question's routes (None: as MiniLM reads them, an English question
        over English points)."""
        space = self.space(text)
        cross = None
        if space.using == DENSE_VECTOR:
            if not any(h.cosine_route != DENSE_VECTOR for h in hits):
                return None
            cross = self.cross_vector(text)
            vector = query_vector
        else:
            vector = self._store.query_vector(text, None, using=space.using)

        def read(ids: Sequence[str]) -> dict[str, ScoredPoint]:
            return self.read_scored(collection, ids, space, vector, cross, tenant=tenant)

        return read

    @staticmethod
    def route_of(space: DenseSpace, crossed: bool, payload: Mapping[str, Any]) -> str:
        """The named vector a point's cosine came from (``crossed``: an English
        question's cross-language vector was used)."""
        if space.using != DENSE_VECTOR:
            return space.using
        if crossed and payload.get("lang") in CROSS_LANGS:
            return MULTILINGUAL_VECTOR
        return DENSE_VECTOR

    def search(
        self,
        hybrid: HybridSearch,
        collection: str,
        query: str,
        *,
        tenant: str,
        user: str | None,
        types: Sequence[str] | None,
        k: int,
        query_vector: NDArray[np.float32] | None,
        created_after: float | None = None,
        fusion: str | None = None,
        space: DenseSpace | None = None,
    ) -> list[Hit]:
        """A hybrid search by the question's language (see the module docstring),
        every cosine on MiniLM's scale. ``query_vector``: the question's MiniLM vector
        (read for an English question; embedded here when None); ``space``: its
        routes, when the caller has them."""
        if space is None:
            space = self.space(query)
        multilingual = space.using == MULTILINGUAL_VECTOR
        if multilingual:
            kinds = None if types is None else tuple(types)
            self.before_read(collection, Filter(tenant=tenant, user=user, types=kinds))
        hits = hybrid.search(
            collection,
            query,
            tenant=tenant,
            user=user,
            types=types,
            k=k,
            fusion=fusion,
            # A MiniLM vector is no query for the multilingual route.
            query_vector=None if multilingual else query_vector,
            created_after=created_after,
            using=space.using,
        )
        if multilingual:
            return self.mapped_hits(space, hits)
        if not space.cross or not self.has_cross_points(collection, tenant, user, types):
            return hits
        vector = self.cross_vector(query)
        if vector is None:
            return hits
        cross = hybrid.search(
            collection,
            query,
            tenant=tenant,
            user=user,
            types=types,
            k=k,
            query_vector=vector,
            mode="dense",
            created_after=created_after,
            using=MULTILINGUAL_VECTOR,
            lang=CROSS_LANGS,
        )
        cross = [
            replace(h, cosine=self.calibration.cosine(MULTILINGUAL_VECTOR, space.lang, h.cosine))
            for h in cross
        ]
        # A Chinese point the English routes found has a MiniLM cosine, which means
        # nothing for Chinese: its multilingual one replaces it.
        foreign = [h.id for h in hits if h.payload.get("lang") in CROSS_LANGS]
        if foreign:
            known = {h.id: h.cosine for h in cross}
            cosines = self.cross_cosines(collection, foreign, vector, tenant, space.lang, known)
            hits = [
                replace(h, cosine=cosines.get(h.id, 0.0), cosine_route=MULTILINGUAL_VECTOR)
                if h.id in cosines or h.payload.get("lang") in CROSS_LANGS
                else h
                for h in hits
            ]
        return merge_cross_hits(hits, cross, self._settings.multilingual_cross_weight, k)


UNSEARCHABLE = "multilingual_pending"
"""The code of :func:`unsearchable_warnings`' warning."""


def unsearchable_warnings(lacking: int) -> tuple[str, ...]:
    """The retrieval warning for ``lacking`` points a Chinese or mixed question could
    not search (none for 0)."""
    if lacking <= 0:
        return ()
    return (
        f"{lacking} memories are not yet indexed for Chinese and cross-language "
        f"search (their multilingual vectors are being computed in the background); "
        f"this answer may miss them [{UNSEARCHABLE}]",
    )


def lexical_share(
    fused: Mapping[str, float],
    dense: Sequence[tuple[str, float]],
    unseen: frozenset[str],
    sparse_weight: float,
) -> dict[str, float]:
    """A route's fused scores with each point its BM25 cannot see (another
    language's) given the lexical half's share at its dense value: ``sparse_weight``
    times its cosine (clipped to [0, 1]) added. Without it every point of the
    question's own language may gain up to ``sparse_weight`` from any shared word
    (a character, in Chinese) that the other language's points can never match."""
    out = dict(fused)
    if not unseen or sparse_weight <= 0:
        return out
    for item_id, cosine in dense:
        if item_id in unseen:
            out[item_id] = out.get(item_id, 0.0) + sparse_weight * min(1.0, max(0.0, cosine))
    return out


def merge_cross_hits(hits: Sequence[Hit], cross: Sequence[Hit], weight: float, k: int) -> list[Hit]:
    """An English question's hits and its cross-language hits in one list: weighted
    reciprocal-rank fusion (k 60), a hit found by both keeping the better cosine."""
    scores: dict[str, float] = {}
    best: dict[str, Hit] = {}
    for ranked, w in ((hits, 1.0), (cross, weight)):
        for rank, hit in enumerate(ranked, start=1):
            scores[hit.id] = scores.get(hit.id, 0.0) + w / (60 + rank)
            prior = best.get(hit.id)
            if prior is None or hit.cosine > prior.cosine:
                best[hit.id] = hit
    order = sorted(scores, key=lambda i: (-scores[i], i))[:k]
    return [replace(best[i], score=scores[i]) for i in order]
