"""Production adapter: a Qdrant server (or cluster) through ``qdrant-client``.

Same layout as the embedded adapter: one collection per name, a cosine ``dense``
vector, an IDF ``bm25`` sparse vector and the shared payload indexes, with the
tenant key flagged ``is_tenant``. The client is injected, so tests hand in
``QdrantClient(location=":memory:")`` (local mode) in place of a server.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
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
    check_ids,
    check_limit,
    check_points,
    check_query_vector,
    tenant_term_ids,
)
from memstrata.longterm.points import (
    COLLECTIONS,
    DENSE_VECTOR,
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
    return qm.PointStruct(
        id=point.id,
        vector={
            DENSE_VECTOR: point.dense.tolist(),
            SPARSE_VECTOR: qm.SparseVector(
                indices=tenant_term_ids(point.sparse, point.payload["tenant"]),
                values=list(point.sparse.values),
            ),
        },
        payload=thaw(point.payload),
    )


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

    def __init__(self, client: QdrantClient) -> None:
        self._client = client
        self._dim: int | None = None
        self._closed = False

    def ensure_collections(self, dim: int) -> None:
        """Create missing collections and payload indexes; check existing sizes."""
        check_dim_value(dim)
        self._check_open()
        with _engine_errors("ensure_collections"):
            for name in COLLECTIONS:
                if self._client.collection_exists(name):
                    self._check_existing(name, dim)
                    continue
                self._client.create_collection(
                    name,
                    vectors_config={
                        DENSE_VECTOR: qm.VectorParams(size=dim, distance=qm.Distance.COSINE)
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
        self._dim = dim

    def _check_existing(self, name: str, dim: int) -> None:
        params = self._client.get_collection(name).config.params
        vectors = params.vectors
        size = vectors[DENSE_VECTOR].size if isinstance(vectors, dict) else None
        check_existing_layout(f"collection {name!r}", size, list(params.sparse_vectors or {}), dim)

    def _check_open(self) -> None:
        if self._closed:
            raise BackendUnavailableError("QdrantServerIndex is closed")

    def _ready(self, collection: str) -> int:
        self._check_open()
        check_collection(collection, COLLECTIONS if self._dim is not None else ())
        assert self._dim is not None
        return self._dim

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        """Insert or replace ``points``; waits until the server applied them."""
        dim = self._ready(collection)
        check_points(points, dim)
        with _engine_errors("upsert"):
            for start in range(0, len(points), UPSERT_BATCH):
                batch = [_client_point(p) for p in points[start : start + UPSERT_BATCH]]
                self._client.upsert(collection, batch, wait=True)

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

    def purge(self) -> None:
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
        self, collection: str, ids: Sequence[str], tenant: str, *, with_vectors: bool = False
    ) -> list[Record]:
        """The tenant's points among ``ids``, in the order of ``ids``."""
        point_ids = check_ids(ids)
        Filter(tenant=tenant)
        self._ready(collection)
        if not point_ids:
            return []
        with _engine_errors("retrieve"):
            records, _ = self._client.scroll(
                collection,
                scroll_filter=ids_filter(point_ids, tenant),
                limit=len(point_ids),
                with_payload=True,
                with_vectors=[DENSE_VECTOR] if with_vectors else False,
            )
        found: dict[str, Record] = {}
        for r in records:
            vector = r.vector
            dense = (
                engine_vector(vector[DENSE_VECTOR])
                if isinstance(vector, dict) and DENSE_VECTOR in vector
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
    ) -> list[ScoredPoint]:
        """Filtered HNSW search; ``ef`` trades latency for recall."""
        dim = self._ready(collection)
        query = check_query_vector(vector, dim)
        check_limit(limit)
        with _engine_errors("dense search"):
            response = self._client.query_points(
                collection,
                query=query,
                using=DENSE_VECTOR,
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
    ) -> list[ScoredPoint]:
        """Both routes as two queries, fused by RRF here.

        Not a prefetch + RRF query, nor one batched request: qdrant-client's local
        mode (the stand-in the contract suite runs against) drops the tenant-scoped
        IDF in both, and we cannot prove a server keeps it without a server.
        """
        check_limit(limit)
        dense = self.search_dense(collection, vector, filter, dense_limit, ef, with_payload=False)
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
