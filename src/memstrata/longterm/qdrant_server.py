"""Production adapter: a Qdrant server (or cluster) through ``qdrant-client``.

Same layout as the embedded adapter: one collection per name, a cosine ``dense``
vector, an IDF ``bm25`` sparse vector and the shared payload indexes, with the
tenant key flagged ``is_tenant``. The client is injected, so tests hand in
``QdrantClient(location=":memory:")`` (local mode) in place of a server.

A server that does not answer at start does not stop the start
(docs/service.md, "When L3 is slow or down"): :meth:`QdrantServerIndex.
ensure_collections` waits ``start_wait_s`` for its first answer, then goes on with
the index unready; until the collections are checked every call raises
``BackendUnavailableError`` at once (the reader answers from L2), and a background
attempt every ``retry_s`` makes the index ready as soon as the server answers.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from numpy.typing import NDArray
from qdrant_client import QdrantClient
from qdrant_client import models as qm
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from memstrata.errors import (
    BackendError,
    BackendUnavailableError,
    MemstrataError,
    NotFoundError,
)
from memstrata.frozen import thaw
from memstrata.longterm.fusion import rrf
from memstrata.longterm.layout import (
    FULL_SCAN_KB,
    PAYLOAD_INDEXES,
    UPSERT_BATCH,
    IndexKind,
    check_collection,
    check_dim_value,
    check_existing_layout,
    check_extra_vectors,
    check_ids,
    check_limit,
    check_points,
    check_query_vector,
    check_vector_name,
    tenant_term_ids,
)
from memstrata.longterm.points import (
    COLLECTIONS,
    DENSE_VECTOR,
    MULTILINGUAL_VECTOR,
    SPARSE_VECTOR,
    Filter,
    Point,
    Record,
    ScoredPoint,
    SparseVector,
    check_filter,
    engine_payload,
    engine_vector,
)

log = logging.getLogger("memstrata.longterm")

START_WAIT_S = 2.0
"""How long the start waits for a server's first answer before going on without it."""
RETRY_S = 5.0
"""How often an unready index tries the server again (in the background)."""


def tenant_filter(tenant: str) -> qm.Filter:
    """The tenant condition alone (also the IDF corpus of sparse searches)."""
    return qm.Filter(must=[qm.FieldCondition(key="tenant", match=qm.MatchValue(value=tenant))])


def client_filter(flt: Filter) -> qm.Filter:
    """Translate a :class:`Filter` into a qdrant-client filter; tenant always first."""
    must: list[qm.Condition] = [
        qm.FieldCondition(key="tenant", match=qm.MatchValue(value=flt.tenant))
    ]
    if flt.user is not None:
        must.append(qm.FieldCondition(key="user", match=qm.MatchValue(value=flt.user)))
    if flt.types is not None:
        must.append(qm.FieldCondition(key="type", match=qm.MatchAny(any=list(flt.types))))
    if flt.created_after is not None or flt.created_before is not None:
        after = None if flt.created_after is None else float(flt.created_after)
        before = None if flt.created_before is None else float(flt.created_before)
        must.append(qm.FieldCondition(key="created_at", range=qm.Range(gt=after, lt=before)))
    for key, value in flt.extras:
        match: qm.MatchAny | qm.MatchValue = (
            qm.MatchAny(any=list(value)) if isinstance(value, tuple) else qm.MatchValue(value=value)
        )
        must.append(qm.FieldCondition(key=key, match=match))
    if flt.ids is not None:
        must.append(qm.HasIdCondition(has_id=list(flt.ids)))
    if flt.lacks_vector is not None:
        return qm.Filter(must=must, must_not=[qm.HasVectorCondition(has_vector=flt.lacks_vector)])
    return qm.Filter(must=must)


def ids_filter(ids: Sequence[str], tenant: str) -> qm.Filter:
    """Points among ``ids`` that belong to ``tenant``."""
    return qm.Filter(
        must=[
            qm.HasIdCondition(has_id=list(ids)),
            qm.FieldCondition(key="tenant", match=qm.MatchValue(value=tenant)),
        ]
    )


def _index_schema(kind: IndexKind) -> Any:
    # Same layout as the embedded adapter: per-tenant graphs only.
    if kind == "tenant":
        return qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, is_tenant=True)
    if kind == "keyword":
        return qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, enable_hnsw=False)
    return qm.FloatIndexParams(type=qm.FloatIndexType.FLOAT, enable_hnsw=False)


def _client_point(point: Point) -> qm.PointStruct:
    vectors: dict[str, Any] = {
        DENSE_VECTOR: point.dense.tolist(),
        SPARSE_VECTOR: qm.SparseVector(
            indices=tenant_term_ids(point.sparse, point.payload["tenant"]),
            values=list(point.sparse.values),
        ),
    }
    if point.multilingual is not None:
        vectors[MULTILINGUAL_VECTOR] = point.multilingual.tolist()
    return qm.PointStruct(id=point.id, vector=vectors, payload=thaw(point.payload))


@contextmanager
def _engine_errors(action: str) -> Iterator[None]:
    """Translate qdrant-client errors (HTTP, gRPC, local mode) into ours."""
    try:
        yield
    except MemstrataError:
        raise
    except ResponseHandlingException as exc:
        # Raised when the request never got a response: connection refused, timeout.
        raise BackendUnavailableError(f"qdrant {action}: server unreachable: {exc}") from exc
    except UnexpectedResponse as exc:
        if exc.status_code == 404:
            raise NotFoundError(f"qdrant {action}: {exc}") from exc
        raise BackendError(f"qdrant {action} failed: {exc}") from exc
    except Exception as exc:
        raise BackendError(f"qdrant {action} failed: {exc}") from exc


class QdrantServerIndex:
    """:class:`~memstrata.longterm.protocol.VectorIndex` on a Qdrant server."""

    def __init__(
        self,
        client: QdrantClient,
        *,
        where: str = "the Qdrant server",
        start_wait_s: float = START_WAIT_S,
        retry_s: float = RETRY_S,
    ) -> None:
        self._client = client
        self._where = where
        self._start_wait_s = start_wait_s
        self._retry_s = retry_s
        self._dim: int | None = None
        # The named dense vectors besides ``dense`` every collection has (name: size).
        self._extra: dict[str, int] = {}
        self._wanted: dict[str, int] = {}
        self._closed = False
        # Unready: the dimension the collections await, the last attempt and its error.
        self._pending_dim: int | None = None
        self._lock = threading.Lock()
        self._attempt: threading.Thread | None = None
        self._attempted_at = -float("inf")
        self._last_error = ""

    @property
    def ready(self) -> bool:
        """Whether the collections are checked (False while the server has not
        answered since the start)."""
        return self._dim is not None

    def ensure_collections(self, dim: int, vectors: Mapping[str, int] | None = None) -> None:
        """Create missing collections (with ``dense`` and the named dense ``vectors``,
        name: size) and payload indexes; check existing sizes. An existing collection
        keeps the vectors it was created with (see :meth:`named_vectors`).

        A server that is unreachable, or does not answer within ``start_wait_s``,
        leaves the index unready instead of failing (see the module docstring); any
        other answer (a layout that does not fit, a refused key) raises.
        """
        check_dim_value(dim)
        self._wanted = check_extra_vectors(vectors)
        self._check_open()
        self._pending_dim = dim
        failed: list[BaseException] = []
        done = threading.Event()

        def attempt() -> None:
            try:
                self._ensure(dim)
            except BaseException as exc:  # handed to the start below, or logged
                failed.append(exc)
                self._last_error = str(exc)
            finally:
                done.set()

        thread = threading.Thread(target=attempt, name="memstrata-qdrant-start", daemon=True)
        with self._lock:
            self._attempt, self._attempted_at = thread, time.monotonic()
        thread.start()
        if not done.wait(self._start_wait_s):
            log.warning(
                "%s did not answer within %.1f s: starting with L3 unavailable "
                "(reads are answered from L2; retrying in the background)",
                self._where,
                self._start_wait_s,
            )
            return
        if not failed:
            return
        if isinstance(failed[0], BackendUnavailableError):
            log.warning(
                "%s is unreachable: starting with L3 unavailable (reads are answered "
                "from L2; retrying every %.1f s): %s",
                self._where,
                self._retry_s,
                failed[0],
            )
            return
        raise failed[0]

    def named_vectors(self) -> dict[str, int]:
        """The named dense vectors every collection has (name: size), ``dense`` first;
        empty while the server has not answered."""
        self._check_open()
        if self._dim is None:
            return {}
        return {DENSE_VECTOR: self._dim, **self._extra}

    def _sizes(self, dim: int) -> dict[str, int]:
        return {DENSE_VECTOR: dim, **self._extra}

    def _ensure(self, dim: int) -> None:
        extras: list[dict[str, int]] = []
        with _engine_errors("ensure_collections"):
            for name in COLLECTIONS:
                if self._client.collection_exists(name):
                    extras.append(self._check_existing(name, dim))
                    # Indexes added by later releases (``lang``) on an existing one.
                    schema = self._client.get_collection(name).payload_schema or {}
                    for field_name, kind in PAYLOAD_INDEXES:
                        if field_name not in schema:
                            self._client.create_payload_index(
                                name, field_name, _index_schema(kind), wait=True
                            )
                    continue
                extras.append(dict(self._wanted))
                dense = {DENSE_VECTOR: dim, **self._wanted}
                self._client.create_collection(
                    name,
                    vectors_config={
                        vector: qm.VectorParams(size=size, distance=qm.Distance.COSINE)
                        for vector, size in dense.items()
                    },
                    sparse_vectors_config={
                        SPARSE_VECTOR: qm.SparseVectorParams(modifier=qm.Modifier.IDF)
                    },
                    # Qdrant's multitenancy layout: no global graph, one per tenant.
                    hnsw_config=qm.HnswConfigDiff(
                        m=0, payload_m=16, full_scan_threshold=FULL_SCAN_KB
                    ),
                    quantization_config=qm.ScalarQuantization(
                        scalar=qm.ScalarQuantizationConfig(type=qm.ScalarType.INT8, always_ram=True)
                    ),
                )
                for field_name, kind in PAYLOAD_INDEXES:
                    self._client.create_payload_index(
                        name, field_name, _index_schema(kind), wait=True
                    )
        if self._pending_dim is not None and self._dim is None and self._last_error:
            log.warning("%s answers: L3 is available again", self._where)
        self._extra = {
            vector: size
            for vector, size in extras[0].items()
            if all(extra.get(vector) == size for extra in extras)
        }
        self._dim = dim
        self._last_error = ""

    def _retry(self) -> None:
        """Start a background attempt to check the collections, unless one is under
        way or the last began less than ``retry_s`` ago."""
        dim = self._pending_dim
        if dim is None:
            return
        with self._lock:
            running = self._attempt is not None and self._attempt.is_alive()
            if running or time.monotonic() - self._attempted_at < self._retry_s:
                return
            self._attempted_at = time.monotonic()
            self._attempt = threading.Thread(
                target=self._retry_in_background,
                args=(dim,),
                name="memstrata-qdrant-retry",
                daemon=True,
            )
            self._attempt.start()

    def _retry_in_background(self, dim: int) -> None:
        try:
            self._ensure(dim)
        except Exception as exc:  # the next call says so, and the next attempt retries
            self._last_error = str(exc)
            log.debug("%s still unavailable", self._where, exc_info=True)

    def _check_existing(self, name: str, dim: int) -> dict[str, int]:
        """Check an existing collection's layout; its named vectors besides ``dense``."""
        params = self._client.get_collection(name).config.params
        vectors = params.vectors
        size = vectors[DENSE_VECTOR].size if isinstance(vectors, dict) else None
        check_existing_layout(f"collection {name!r}", size, list(params.sparse_vectors or {}), dim)
        if not isinstance(vectors, dict):
            return {}
        return {n: int(v.size) for n, v in vectors.items() if n != DENSE_VECTOR}

    def _check_open(self) -> None:
        if self._closed:
            raise BackendUnavailableError("QdrantServerIndex is closed")

    def _ready(self, collection: str) -> int:
        self._check_open()
        if self._dim is None and self._pending_dim is not None:
            self._retry()
            if self._dim is None:
                detail = f": {self._last_error}" if self._last_error else ""
                raise BackendUnavailableError(
                    f"{self._where} has not answered since the start (retrying every "
                    f"{self._retry_s:g} s){detail}"
                )
        check_collection(collection, COLLECTIONS if self._dim is not None else ())
        assert self._dim is not None
        return self._dim

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        """Insert or replace ``points``; waits until the server applied them."""
        dim = self._ready(collection)
        check_points(points, dim, self._extra.get(MULTILINGUAL_VECTOR))
        with _engine_errors("upsert"):
            for start in range(0, len(points), UPSERT_BATCH):
                batch = [_client_point(p) for p in points[start : start + UPSERT_BATCH]]
                self._client.upsert(collection, batch, wait=True)

    def update_vectors(
        self,
        collection: str,
        tenant: str,
        using: str,
        vectors: Mapping[str, NDArray[np.float32]],
    ) -> None:
        """Set the named vector ``using`` of the tenant's points among ``vectors`` that
        lack it (an update conditioned on the tenant and on the vector still missing);
        waits until the server applied it."""
        Filter(tenant=tenant)
        dim = check_vector_name(using, self._sizes(self._ready(collection)))
        rows = {check_ids([i])[0]: check_query_vector(v, dim) for i, v in vectors.items()}
        if not rows:
            return
        condition = client_filter(Filter(tenant=tenant, lacks_vector=using))
        ids = list(rows)
        with _engine_errors("update_vectors"):
            for start in range(0, len(ids), UPSERT_BATCH):
                batch = [
                    qm.PointVectors(id=i, vector={using: rows[i]})
                    for i in ids[start : start + UPSERT_BATCH]
                ]
                try:
                    self._client.update_vectors(
                        collection, batch, wait=True, update_filter=condition
                    )
                except KeyError:
                    # Local mode: a point deleted since it was read (the others were
                    # written first, as a server does before its 404).
                    continue
                except UnexpectedResponse as exc:
                    if exc.status_code != 404:
                        raise

    def delete(self, collection: str, ids: Sequence[str], tenant: str) -> None:
        """Delete the tenant's points among ``ids`` (filter-scoped, never by id alone)."""
        point_ids = check_ids(ids)
        Filter(tenant=tenant)
        self._ready(collection)
        if not point_ids:
            return
        with _engine_errors("delete"):
            self._client.delete(
                collection, qm.FilterSelector(filter=ids_filter(point_ids, tenant)), wait=True
            )

    def delete_where(self, collection: str, filter: Filter) -> int:
        """Delete every point matching ``filter`` (tenant pushed down) with one
        delete-by-filter request; returns the exact count taken just before it (other
        clients writing meanwhile can make it differ from what the server removed)."""
        flt = client_filter(check_filter(filter))
        self._ready(collection)
        with _engine_errors("delete_where"):
            found = int(self._client.count(collection, count_filter=flt, exact=True).count)
            if found:
                self._client.delete(collection, qm.FilterSelector(filter=flt), wait=True)
        return found

    def purge(self, tenants: Collection[str] | None = None) -> None:
        """Nothing to do from a client: the server's storage is the operator's.

        After a delete a Qdrant server still holds the points' data in its WAL
        (until its segments are flushed and the WAL truncated), in segments until
        the vacuum optimizer rewrites them (``optimizers_config.deleted_threshold``,
        default 0.2, and ``vacuum_min_vector_number``, default 1000), and in any
        snapshot or backup taken before. Erasing those is the operator's job
        (optimizer settings, snapshot retention, disk encryption); this adapter only
        checks that it is open. Local mode keeps points in memory or in its own file.
        """
        self._check_open()

    def retrieve(
        self,
        collection: str,
        ids: Sequence[str],
        tenant: str,
        *,
        with_vectors: bool = False,
        using: str = DENSE_VECTOR,
    ) -> list[Record]:
        """The tenant's points among ``ids``, in the order of ``ids`` (with their
        ``using`` vector in ``Record.dense`` when ``with_vectors``)."""
        point_ids = check_ids(ids)
        Filter(tenant=tenant)
        dim = self._ready(collection)
        if with_vectors:
            check_vector_name(using, self._sizes(dim))
        if not point_ids:
            return []
        with _engine_errors("retrieve"):
            records, _ = self._client.scroll(
                collection,
                scroll_filter=ids_filter(point_ids, tenant),
                limit=len(point_ids),
                with_payload=True,
                with_vectors=[using] if with_vectors else False,
            )
        found: dict[str, Record] = {}
        for r in records:
            vector = r.vector
            dense = (
                engine_vector(vector[using])
                if isinstance(vector, dict) and using in vector
                else None
            )
            found[str(r.id)] = Record(str(r.id), engine_payload(dict(r.payload or {})), dense)
        return [found[i] for i in dict.fromkeys(point_ids) if i in found]

    def search_dense(
        self,
        collection: str,
        vector: NDArray[np.float32],
        filter: Filter,
        limit: int,
        ef: int | None = None,
        *,
        with_payload: bool = True,
        reuse: bool = True,  # no answer cache here: nothing to skip
        using: str = DENSE_VECTOR,
    ) -> list[ScoredPoint]:
        """Filtered HNSW search of the named dense vector ``using``; ``ef`` trades
        latency for recall. A point without that vector is never found."""
        dim = check_vector_name(using, self._sizes(self._ready(collection)))
        query = check_query_vector(vector, dim)
        check_limit(limit)
        with _engine_errors("dense search"):
            response = self._client.query_points(
                collection,
                query=query,
                using=using,
                query_filter=client_filter(filter),
                limit=limit,
                with_payload=with_payload,
                search_params=_dense_params(ef),
            )
        return [_scored(p) for p in response.points]

    def search_sparse(
        self,
        collection: str,
        sparse: SparseVector,
        filter: Filter,
        limit: int,
        *,
        with_payload: bool = True,
        reuse: bool = True,  # no answer cache here: nothing to skip
    ) -> list[ScoredPoint]:
        """BM25 search; IDF statistics come from the tenant's own points only."""
        self._ready(collection)
        check_limit(limit)
        if sparse.is_empty:
            return []
        with _engine_errors("sparse search"):
            response = self._client.query_points(
                collection,
                query=qm.SparseVector(
                    indices=tenant_term_ids(sparse, filter.tenant), values=list(sparse.values)
                ),
                using=SPARSE_VECTOR,
                query_filter=client_filter(filter),
                limit=limit,
                with_payload=with_payload,
                search_params=_sparse_params(filter.tenant),
            )
        return [_scored(p) for p in response.points]

    def search_fused(
        self,
        collection: str,
        vector: NDArray[np.float32],
        sparse: SparseVector,
        filter: Filter,
        *,
        dense_limit: int,
        sparse_limit: int,
        limit: int,
        ef: int | None = None,
        reuse: bool = True,  # no answer cache here: nothing to skip
        using: str = DENSE_VECTOR,
    ) -> list[ScoredPoint]:
        """Both routes (dense: the named vector ``using``) as two queries, fused by RRF
        here.

        Not a prefetch + RRF query, nor one batched request: qdrant-client's local
        mode (the stand-in the contract suite runs against) drops the tenant-scoped
        IDF in both, and we cannot prove a server keeps it without a server.
        """
        check_limit(limit)
        dense = self.search_dense(
            collection, vector, filter, dense_limit, ef, with_payload=False, using=using
        )
        ranked = self.search_sparse(collection, sparse, filter, sparse_limit, with_payload=False)
        lists = [[(p.id, p.score) for p in dense], [(p.id, p.score) for p in ranked]]
        return [ScoredPoint(f.id, f.score, {}) for f in rrf(lists, limit=limit)]

    def scroll(
        self, collection: str, filter: Filter, *, limit: int, offset: str | None = None
    ) -> tuple[list[Record], str | None]:
        """Points matching ``filter`` (tenant pushed down), one page, in id order."""
        self._ready(collection)
        with _engine_errors("scroll"):
            records, next_id = self._client.scroll(
                collection,
                scroll_filter=client_filter(filter),
                limit=limit,
                offset=None if offset is None else check_ids([offset])[0],
                with_payload=True,
                with_vectors=False,
            )
        page = [Record(str(r.id), engine_payload(dict(r.payload or {}))) for r in records]
        return page, None if next_id is None else str(next_id)

    def count(self, collection: str, filter: Filter) -> int:
        """Exact count of the points matching ``filter``."""
        self._ready(collection)
        with _engine_errors("count"):
            result = self._client.count(collection, count_filter=client_filter(filter), exact=True)
        return int(result.count)

    def point_count(self, collection: str) -> int:
        """Points in ``collection`` as the server's collection info says (approximate
        while it indexes; no filter evaluated)."""
        self._ready(collection)
        with _engine_errors("point_count"):
            return int(self._client.get_collection(collection).points_count or 0)

    @property
    def shared(self) -> bool:
        """True: every replica reads and writes the same server."""
        return True

    @property
    def remote(self) -> bool:
        """True: every read waits on the server: the read deadlines apply."""
        return True

    def answer_generation(self, collection: str) -> int | None:
        """None: other clients write to a server unseen, so answers are never reused."""
        self._check_open()
        return None

    def optimize(self) -> None:
        """A server optimizes in the background on its own; nothing to trigger."""
        self._check_open()

    def close(self) -> None:
        """Close the injected client; idempotent."""
        if self._closed:
            return
        self._closed = True
        with _engine_errors("close"):
            self._client.close()


def _dense_params(ef: int | None) -> qm.SearchParams:
    # Rescored with original vectors: ``score`` stays an exact cosine.
    return qm.SearchParams(
        hnsw_ef=ef, quantization=qm.QuantizationSearchParams(rescore=True, oversampling=2.0)
    )


def _sparse_params(tenant: str) -> qm.SearchParams:
    # Tenant-scoped IDF: other tenants' documents must not move these scores.
    return qm.SearchParams(idf=qm.IdfCorpusParams(corpus=tenant_filter(tenant)))


def _scored(point: qm.ScoredPoint) -> ScoredPoint:
    # Copied: local mode may hand out the dict it stores.
    return ScoredPoint(str(point.id), float(point.score), engine_payload(dict(point.payload or {})))
