"""LongTermStore: the L3 facade over one VectorIndex, one Embedder, one BM25 encoder.

Validation, embedding and payload building are written here once, above the index
role, so the embedded and the server adapters cannot drift apart. The store writes,
reads by id and filter, and runs one route's raw searches (dense top-N, BM25 top-N,
both filtered by tenant inside the engine); ranking what they find is the reader's
(:mod:`memstrata.retrieval`), the one place L3 results are ordered.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from memstrata.clock import Clock, SystemClock
from memstrata.config import LongTermSettings
from memstrata.embed.protocol import Embedder
from memstrata.errors import ValidationError
from memstrata.language import detect_language
from memstrata.longterm.adjacent import add_context_terms, blend_adjacent, turn_position
from memstrata.longterm.catchup import CatchUpState, MultilingualCoverage
from memstrata.longterm.layout import check_ids
from memstrata.longterm.points import (
    COLLECTIONS,
    DENSE_VECTOR,
    MEMORIES,
    MULTILINGUAL_VECTOR,
    RESERVED_KEYS,
    Filter,
    Point,
    Record,
    ScoredPoint,
    SparseVector,
    check_point_id,
)
from memstrata.longterm.protocol import VectorIndex
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.tracing import span
from memstrata.validation import MAX_TEXT_CHARS, check_id, check_positive_int, check_text

MAX_K = 1000
_log = logging.getLogger(__name__)


class PayloadSanitizer(Protocol):
    """The gateway role L3 needs (``memstrata.gateway.Sanitizer`` fits)."""

    def text(self, text: str, *, location: str, field: str | None = None) -> str:
        """``text`` with credentials and PII replaced."""
        ...

    def value(self, obj: Any, *, location: str) -> Any:
        """A JSON-like value with credentials and PII replaced; never mutates it."""
        ...


class _NoSanitizer:
    def text(self, text: str, *, location: str, field: str | None = None) -> str:
        return text

    def value(self, obj: Any, *, location: str) -> Any:
        return obj


@dataclass(frozen=True, slots=True)
class NewItem:
    """An item to store. ``id`` defaults to a fresh UUID; ``created_at`` to now.

    ``extra`` keys the retriever reads: ``thread`` + ``seq`` place a conversation
    turn (turns written in one call are indexed with their nearby turns' vectors and
    words, and lend each other context at retrieval), ``importance`` (0..1),
    ``speaker``.
    """

    text: str
    tenant: str
    user: str | None = None
    type: str = "fact"
    source: str = ""
    id: str | None = None
    created_at: float | None = None
    updated_at: float | None = None
    """When the content last changed at its source (e.g. a file's mtime); default: now."""
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, eq=False)
class IndexedItem:
    """An item whose index vectors the caller built: ``dense`` (any non-zero length,
    stored normalized) and ``sparse`` (BM25 terms; None: the item's own text's).

    The write path builds them for episodes, whose vectors carry their neighbours'
    context as the conversation streams in (:mod:`memstrata.memory.episodes`).
    """

    item: NewItem
    dense: NDArray[np.float32]
    sparse: SparseVector | None = None
    multilingual: NDArray[np.float32] | None = None
    """The second model's vector of ``item.text`` when the caller has it (from
    :meth:`LongTermStore.multilingual_vectors`): written as given, not embedded again."""


def _tenant_position(item: NewItem) -> tuple[str, str, int] | None:
    position = turn_position(item.extra)
    return None if position is None else (item.tenant, *position)


def _check_item(index: int, item: NewItem) -> None:
    prefix = f"items[{index}]"
    if not isinstance(item, NewItem):
        raise ValidationError(prefix, f"must be a NewItem, got {type(item).__name__}")
    try:
        check_text("text", item.text, max_chars=MAX_TEXT_CHARS)
        check_id("tenant", item.tenant)
        if item.user is not None:
            check_id("user", item.user)
        check_id("type", item.type)
        if not isinstance(item.source, str):
            raise ValidationError("source", "must be a string")
        if item.id is not None:
            check_point_id("id", item.id)
        for name in ("created_at", "updated_at"):
            stamp = getattr(item, name)
            if stamp is not None and (
                isinstance(stamp, bool)
                or not isinstance(stamp, int | float)
                or not np.isfinite(stamp)
            ):
                raise ValidationError(name, "must be finite epoch seconds")
        clash = RESERVED_KEYS.intersection(item.extra)
        if clash:
            raise ValidationError("extra", f"reserved keys {sorted(clash)}")
    except ValidationError as exc:
        # Name the item and the field, so a batch error is actionable.
        raise ValidationError(f"{prefix}.{exc.field}", exc.reason) from exc


def _check_collection(collection: str) -> str:
    if collection not in COLLECTIONS:
        raise ValidationError("collection", f"must be one of {', '.join(COLLECTIONS)}")
    return collection


SearchObserver = Callable[[str, float], None]
"""Called with ``(collection, seconds)`` after each search (see
:meth:`LongTermStore.observe_searches`)."""


class LongTermStore:
    """Long-term memory and knowledge: add, hybrid search, get, delete, count."""

    def __init__(
        self,
        index: VectorIndex,
        embedder: Embedder,
        sparse_encoder: Bm25Encoder,
        settings: LongTermSettings,
        *,
        clock: Clock | None = None,
        sanitizer: PayloadSanitizer | None = None,
        bulk_optimize_threshold: int = 1000,
        multilingual: Embedder | None = None,
    ) -> None:
        """``multilingual``: the second dense model (Chinese and English in one space,
        :mod:`memstrata.embed.multilingual`), stored as the ``multilingual`` vector of
        every point written; None leaves the store English-only (MiniLM and BM25)."""
        self._index = index
        self._embedder = embedder
        self._sparse = sparse_encoder
        self._settings = settings
        self._clock: Clock = clock or SystemClock()
        # Everything entering L3 passes the gateway first, before it is embedded too: a
        # vector of a secret is as much a leak as its text (docs/architecture.md, "Safety").
        self._sanitizer: PayloadSanitizer = sanitizer or _NoSanitizer()
        self._bulk_threshold = check_positive_int(
            "bulk_optimize_threshold", bulk_optimize_threshold
        )
        if settings.fusion not in ("rrf", "normalized"):
            raise ValidationError("settings.fusion", "must be 'rrf' or 'normalized'")
        wanted = None if multilingual is None else {MULTILINGUAL_VECTOR: multilingual.dim}
        self._index.ensure_collections(embedder.dim, wanted)
        self._multilingual: Embedder | None = None
        self._multilingual_status = "off: not configured (longterm.multilingual is false)"
        if multilingual is not None:
            size = self._index.named_vectors().get(MULTILINGUAL_VECTOR)
            if size == multilingual.dim:
                self._multilingual = multilingual
                self._multilingual_status = "on"
            else:
                # An index written before the second vector existed: it serves as it
                # did (MiniLM and BM25); adding the vector means rewriting every point.
                self._multilingual_status = (
                    f"off: the L3 index was created without the {MULTILINGUAL_VECTOR!r} "
                    "vector; rebuild it from the source data into a new data directory "
                    "to search Chinese and across languages by meaning"
                )
                _log.warning("multilingual dense route %s", self._multilingual_status)
        # Which points get the multilingual vector as they are written, and the
        # background catch-up of those that lack it (memstrata.longterm.catchup).
        self._coverage: MultilingualCoverage | None = None
        if self._multilingual is not None:
            self._coverage = MultilingualCoverage(self._index, self.embed_multilingual, settings)
        self._search_observer: SearchObserver | None = None
        # Per thread: seconds the writes spent in the second model (a stage clock).
        self._second_seconds = threading.local()

    def multilingual_seconds(self) -> float:
        """Seconds the calling thread's writes have spent embedding with the second
        model so far (a monotonic counter: a caller's stage clock takes differences,
        so the model's time is not counted as upsert)."""
        seconds: float = getattr(self._second_seconds, "seconds", 0.0)
        return seconds

    def multilingual_vectors(
        self,
        items: Sequence[NewItem],
        collection: str = MEMORIES,
        langs: Sequence[str] | None = None,
    ) -> list[NDArray[np.float32] | None]:
        """The second model's vectors a write of ``items`` into ``collection`` stores:
        only where the text or its tenant needs one (memstrata.longterm.catchup; None
        for the others, all None when the route is off), in one call, timed in
        :meth:`multilingual_seconds`. A caller that computes them before a write
        (outside its own locks) passes them on :class:`IndexedItem`."""
        coverage = self._coverage
        if coverage is None or not items:
            return [None] * len(items)
        if langs is None:
            langs = [detect_language(item.text) for item in items]
        wanted = coverage.plan(collection, [item.tenant for item in items], langs)
        chosen = [i for i, want in enumerate(wanted) if want]
        second: list[NDArray[np.float32] | None] = [None] * len(items)
        if not chosen:
            return second
        started = time.perf_counter()
        try:
            rows = self.embed_multilingual([items[i].text for i in chosen])
        finally:
            self._second_seconds.seconds = (
                self.multilingual_seconds() + time.perf_counter() - started
            )
        for i, row in zip(chosen, rows, strict=True):
            second[i] = row
        return second

    def observe_searches(self, observer: SearchObserver | None) -> None:
        """Call ``observer(collection, seconds)`` after each successful search timed by
        :meth:`searching` (a hybrid search, one route of a multi-route retrieval): the
        L3 search latency metric. One observer (the engine's); None removes it."""
        self._search_observer = observer

    @contextmanager
    def searching(self, collection: str) -> Iterator[None]:
        """Time one search of ``collection``: an ``l3.search`` span, and its duration
        given to the search observer when it succeeds."""
        observer = self._search_observer
        with span("l3.search", collection=collection):
            if observer is None:
                yield
                return
            started = time.perf_counter()
            yield
            observer(collection, time.perf_counter() - started)

    def point_counts(self) -> dict[str, int]:
        """Points per collection, every tenant together, as the index keeps the number
        (cheap: read at each metrics scrape)."""
        return {collection: self._index.point_count(collection) for collection in COLLECTIONS}

    @property
    def index(self) -> VectorIndex:
        """The underlying index (for maintenance tools)."""
        return self._index

    @property
    def embedder(self) -> Embedder:
        """The dense model items and queries are embedded with."""
        return self._embedder

    @property
    def multilingual(self) -> Embedder | None:
        """The second dense model (the ``multilingual`` vector), or None when that
        route is off (see :attr:`multilingual_status`)."""
        return self._multilingual

    @property
    def multilingual_status(self) -> str:
        """``on``, or ``off: <why>`` (not configured, or an index created without the
        vector)."""
        return self._multilingual_status

    @property
    def coverage(self) -> MultilingualCoverage | None:
        """Which points carry the multilingual vector, and its catch-up (None when
        the multilingual route is off)."""
        return self._coverage

    def catchup_state(self) -> CatchUpState:
        """The multilingual vector's background catch-up now (``/healthz``, metrics)."""
        if self._coverage is None:
            return CatchUpState("off", "idle", 0, 0, 0)
        return self._coverage.state()

    def settle(self, timeout_s: float = 60.0) -> bool:
        """Wait until the multilingual catch-up has nothing queued or running (an
        evaluation, before it asks); False when ``timeout_s`` passed first."""
        return True if self._coverage is None else self._coverage.settle(timeout_s)

    def embed_multilingual(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """``texts`` embedded by the second model; ValidationError when it is off."""
        if self._multilingual is None:
            raise ValidationError("multilingual", self._multilingual_status)
        return np.asarray(self._multilingual.embed(list(texts)), dtype=np.float32)

    def warm(self) -> list[str]:
        """Load and warm every model a read may use (MiniLM, the multilingual model
        when its route is on, jieba's dictionary), so the first read does not wait on
        them; what failed to load, each as ``name: error`` (logged: the read that
        needs it then says so, as it would have)."""
        failed = []
        models = [("embedder", self._embedder), ("multilingual", self._multilingual)]
        for name, model in models:
            if model is None:
                continue
            try:
                model.embed(["warm"])
            except Exception as exc:  # the read that needs it reports it
                failed.append(f"{name}: {exc}")
        self._sparse.encode_document("预热 warm")
        for failure in failed:
            _log.warning("model did not load at warm-up: %s", failure)
        return failed

    @property
    def settings(self) -> LongTermSettings:
        """The L3 parameters in use."""
        return self._settings

    def add(self, collection: str, items: Sequence[NewItem]) -> list[str]:
        """Validate, embed in one batch and store ``items``; returns their ids.

        Conversation turns (``extra`` with ``thread`` and ``seq``) written in the same
        call are indexed with their nearby turns (:mod:`memstrata.longterm.adjacent`):
        dense vectors blended with the adjacent turns' (``settings.adjacent_blend``),
        BM25 vectors with the nearby turns' terms at a discount
        (``settings.context_terms``); write a conversation's turns together to give
        each its context. Nothing is written when any item is invalid.
        """
        _check_collection(collection)
        for i, item in enumerate(items):
            _check_item(i, item)
        if not items:
            return []
        clean = self._sanitize(collection, items)
        positions = [_tenant_position(item) for item in clean]
        vectors = blend_adjacent(
            self._embedder.embed([item.text for item in clean]),
            positions,
            self._settings.adjacent_blend,
        )
        return self._write(collection, clean, vectors, positions)

    def add_vectors(
        self, collection: str, items: Sequence[NewItem], vectors: NDArray[np.float32]
    ) -> list[str]:
        """Like :meth:`add` with precomputed dense vectors (one row per item), used as
        given; BM25 vectors still get the context terms."""
        _check_collection(collection)
        for i, item in enumerate(items):
            _check_item(i, item)
        array = np.asarray(vectors, dtype=np.float32)
        if array.shape != (len(items), self._embedder.dim):
            raise ValidationError(
                "vectors", f"expected shape ({len(items)}, {self._embedder.dim}), got {array.shape}"
            )
        if not items:
            return []
        norms = np.linalg.norm(array, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0):
            raise ValidationError("vectors", "rows must be finite and non-zero")
        clean = self._sanitize(collection, items)
        return self._write(
            collection, clean, array / norms, [_tenant_position(item) for item in clean]
        )

    def add_points(self, collection: str, points: Sequence[IndexedItem]) -> list[str]:
        """Store items with the vectors their callers built, in one engine call.

        The texts must already be clean: a vector computed from a secret leaks it as
        much as the text would, so a text the gateway would still change is refused
        (ValidationError naming it) and nothing is written.
        """
        _check_collection(collection)
        for i, point in enumerate(points):
            if not isinstance(point, IndexedItem):
                raise ValidationError(f"points[{i}]", "must be an IndexedItem")
            _check_item(i, point.item)
        if not points:
            return []
        items = [point.item for point in points]
        clean = self._sanitize(collection, items)
        for i, (before, after) in enumerate(zip(items, clean, strict=True)):
            if before.text != after.text:
                raise ValidationError(
                    f"points[{i}].text", "holds what the gateway redacts; sanitize first"
                )
        array = np.stack([np.asarray(p.dense, dtype=np.float32) for p in points])
        if array.shape[1] != self._embedder.dim:
            raise ValidationError("dense", f"must have {self._embedder.dim} dimensions")
        norms = np.linalg.norm(array, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)) or np.any(norms == 0):
            raise ValidationError("dense", "rows must be finite and non-zero")
        sparse = [
            p.sparse if p.sparse is not None else self._sparse.encode_document(item.text)
            for p, item in zip(points, clean, strict=True)
        ]
        known = [p.multilingual for p in points]
        return self._upsert(collection, clean, array / norms, sparse, known)

    def clear_caches(self) -> None:
        """Drop every document encoding kept (texts of deleted memories among them):
        the next reads recompute them."""
        self._sparse.clear_cache()

    def encode_query(self, query: str) -> SparseVector:
        """The BM25 vector of a query."""
        return self._sparse.encode_query(query)

    def document_terms(self, text: str) -> SparseVector:
        """The BM25 vector of ``text`` alone (no context terms), as documents get it."""
        return self._sparse.encode_document(text)

    def _sanitize(self, collection: str, items: Sequence[NewItem]) -> list[NewItem]:
        location = f"L3:{collection}"
        clean: list[NewItem] = []
        for i, item in enumerate(items):
            text = self._sanitizer.text(item.text, location=location, field="text")
            try:
                # A placeholder may lengthen the text; the limit still holds after.
                check_text("text", text, max_chars=MAX_TEXT_CHARS)
            except ValidationError as exc:
                raise ValidationError(f"items[{i}].text", exc.reason) from exc
            extra = self._sanitizer.value(dict(item.extra), location=location) if item.extra else {}
            source = self._sanitizer.text(item.source, location=location, field="source")
            clean.append(replace(item, text=text, extra=extra, source=source))
        return clean

    def _write(
        self,
        collection: str,
        items: Sequence[NewItem],
        vectors: NDArray[np.float32],
        positions: Sequence[tuple[str, str, int] | None],
    ) -> list[str]:
        sparse = add_context_terms(
            [self._sparse.encode_document(item.text) for item in items],
            positions,
            self._settings.context_terms,
        )
        return self._upsert(collection, items, vectors, sparse)

    def _upsert(
        self,
        collection: str,
        items: Sequence[NewItem],
        vectors: NDArray[np.float32],
        sparse: Sequence[SparseVector],
        known: Sequence[NDArray[np.float32] | None] | None = None,
    ) -> list[str]:
        now = self._clock.now().timestamp()
        langs = [detect_language(item.text) for item in items]
        # Both models embed before anything is written: a failure of either leaves
        # nothing half-written (the caller's retry writes all of it). The second one
        # only where the text or its tenant needs it (memstrata.longterm.catchup);
        # ``known``: the second vectors the caller computed already (None where none).
        second: list[NDArray[np.float32] | None] = (
            list(known) if known is not None else [None] * len(items)
        )
        coverage = self._coverage
        if coverage is not None:
            todo = [i for i, row in enumerate(second) if row is None]
            rows = self.multilingual_vectors(
                [items[i] for i in todo], collection, [langs[i] for i in todo]
            )
            for i, row in zip(todo, rows, strict=True):
                second[i] = row
        points: list[Point] = []
        for item, vector, terms, other, lang in zip(
            items, vectors, sparse, second, langs, strict=True
        ):
            created = now if item.created_at is None else float(item.created_at)
            payload: dict[str, Any] = {
                **item.extra,
                "tenant": item.tenant,
                "user": item.user,
                "type": item.type,
                "text": item.text,
                "source": item.source,
                "created_at": created,
                "updated_at": now if item.updated_at is None else float(item.updated_at),
                # Which dense route reads it best (memstrata.retrieval.languages).
                "lang": lang,
            }
            point_id = item.id or str(uuid.uuid4())
            points.append(Point(point_id, vector, terms, payload, other))
        self._index.upsert(collection, points)
        if coverage is not None and any(row is None for row in second):
            without = [item.tenant for item, row in zip(items, second, strict=True) if row is None]
            coverage.written(collection, without)
        if len(points) >= self._bulk_threshold:
            # Bulk loads leave many small unindexed segments; merge and index them now
            # rather than paying brute-force search until a background pass runs.
            self._index.optimize()
        return [p.id for p in points]

    def route_lists(
        self,
        collection: str,
        query: str,
        query_vector: NDArray[np.float32],
        flt: Filter,
        *,
        dense_depth: int,
        sparse_depth: int,
        using: str = DENSE_VECTOR,
    ) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
        """One route's raw candidates: dense ``(id, cosine)`` (of the named vector
        ``using``, ``query_vector`` embedded by its model) and BM25 ``(id, score)``
        lists, best first, ids only (multi-route retrieval fuses them itself)."""
        _check_collection(collection)
        check_text("query", query)
        qvec = self.query_vector(query, query_vector, using=using)
        depth_d = check_positive_int("dense_depth", dense_depth, maximum=MAX_K)
        depth_s = check_positive_int("sparse_depth", sparse_depth, maximum=MAX_K)
        with self.searching(collection):
            with span("l3.dense", depth=depth_d):
                dense = self._index.search_dense(
                    collection,
                    qvec,
                    flt,
                    depth_d,
                    self._settings.hnsw_ef,
                    with_payload=False,
                    using=using,
                )
            with span("l3.bm25", depth=depth_s):
                sparse = self._index.search_sparse(
                    collection, self._sparse.encode_query(query), flt, depth_s, with_payload=False
                )
        return [(p.id, p.score) for p in dense], [(p.id, p.score) for p in sparse]

    def read_scored(
        self,
        collection: str,
        ids: Sequence[str],
        query_vector: NDArray[np.float32],
        *,
        tenant: str,
        known_cosines: Mapping[str, float] | None = None,
        using: str = DENSE_VECTOR,
    ) -> dict[str, ScoredPoint]:
        """The tenant's points among ``ids`` with payload and exact cosine to the vector
        (of the named vector ``using``: a point without it is left out).

        ``known_cosines``: cosines the caller already has for some ids (from a dense
        search with this same vector); only the others are scored by the engine.
        """
        _check_collection(collection)
        point_ids = tuple(dict.fromkeys(check_ids(ids)))
        if not point_ids:
            return {}
        qvec = self.query_vector("-", query_vector, using=using)
        known = known_cosines or {}
        unknown = tuple(i for i in point_ids if i not in known)
        scored: dict[str, ScoredPoint] = {}
        if unknown:
            found = self._index.search_dense(
                collection,
                qvec,
                Filter(tenant=tenant, ids=unknown),
                len(unknown),
                self._settings.hnsw_ef,
                with_payload=True,
                using=using,
            )
            scored = {p.id: p for p in found}
        if len(unknown) < len(point_ids):
            for record in self._index.retrieve(
                collection, [i for i in point_ids if i in known], tenant
            ):
                scored[record.id] = ScoredPoint(record.id, float(known[record.id]), record.payload)
        return scored

    def query_vector(
        self, query: str, query_vector: NDArray[np.float32] | None, *, using: str = DENSE_VECTOR
    ) -> NDArray[np.float32]:
        """``query_vector`` checked and normalized, or ``query`` embedded when None (by
        the model of the named vector ``using``)."""
        if using == DENSE_VECTOR:
            embedder = self._embedder
        elif using == MULTILINGUAL_VECTOR and self._multilingual is not None:
            embedder = self._multilingual
        else:
            raise ValidationError("using", f"{using!r} is not a dense route of this store")
        if query_vector is None:
            return np.asarray(embedder.embed([query])[0], dtype=np.float32)
        array = np.asarray(query_vector, dtype=np.float32)
        if array.shape != (embedder.dim,):
            raise ValidationError("query_vector", f"must be {embedder.dim} finite floats")
        # One dot product checks and normalizes: it is finite only if every element is
        # (or, rarely, huge finite elements overflowed float32: redone in float64).
        with np.errstate(over="ignore", invalid="ignore"):
            square = float(np.dot(array, array))
        if not math.isfinite(square):
            if not np.isfinite(array).all():
                raise ValidationError("query_vector", f"must be {embedder.dim} finite floats")
            wide = array.astype(np.float64)
            square = float(np.dot(wide, wide))
        if square == 0:
            raise ValidationError("query_vector", "must not be all zeros")
        normalized: NDArray[np.float32] = array / np.float32(math.sqrt(square))
        return normalized

    def dense_vectors(
        self, collection: str, ids: Sequence[str], *, tenant: str, using: str = DENSE_VECTOR
    ) -> dict[str, NDArray[np.float32]]:
        """The stored dense vectors (the named vector ``using``) of the tenant's points
        among ``ids`` (a point without it is left out)."""
        _check_collection(collection)
        records = self._index.retrieve(
            collection, check_ids(ids), check_id("tenant", tenant), with_vectors=True, using=using
        )
        return {r.id: r.dense for r in records if r.dense is not None}

    def get(self, collection: str, ids: Sequence[str], *, tenant: str) -> list[Record]:
        """The tenant's items among ``ids`` (another tenant's id yields nothing)."""
        _check_collection(collection)
        return self._index.retrieve(collection, check_ids(ids), check_id("tenant", tenant))

    def delete(self, collection: str, ids: Sequence[str], *, tenant: str) -> None:
        """Delete the tenant's items among ``ids``; other tenants' items are untouched."""
        _check_collection(collection)
        self._index.delete(collection, check_ids(ids), check_id("tenant", tenant))

    def count(
        self,
        collection: str,
        *,
        tenant: str,
        user: str | None = None,
        types: Sequence[str] | None = None,
    ) -> int:
        """Number of the tenant's items (optionally one user's, some types)."""
        _check_collection(collection)
        flt = Filter(tenant=tenant, user=user, types=None if types is None else tuple(types))
        return self._index.count(collection, flt)

    def iter_records(
        self, collection: str, flt: Filter, *, page_size: int = 256
    ) -> Iterator[Record]:
        """Every point matching ``flt`` (tenant pushed down), paged, without vectors."""
        _check_collection(collection)
        check_positive_int("page_size", page_size, maximum=10_000)
        offset: str | None = None
        while True:
            page, offset = self._index.scroll(collection, flt, limit=page_size, offset=offset)
            yield from page
            if offset is None:
                return

    def optimize(self) -> None:
        """Build indexes / merge segments now (also run after bulk writes)."""
        self._index.optimize()

    def close(self) -> None:
        """Stop the multilingual catch-up (after its current chunk), close the index."""
        if self._coverage is not None:
            self._coverage.close()
        self._index.close()
