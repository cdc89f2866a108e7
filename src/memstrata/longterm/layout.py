"""The collection layout and the argument checks both adapters share.

Written once so the embedded and the server adapter cannot drift: they raise the
same ``ValidationError`` / ``NotFoundError`` before the engine is ever called.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from memstrata.errors import NotFoundError, ValidationError
from memstrata.longterm.points import (
    COLLECTIONS,
    DENSE_VECTOR,
    DENSE_VECTORS,
    MULTILINGUAL_VECTOR,
    SPARSE_VECTOR,
    Point,
    SparseVector,
    check_point_id,
)

IndexKind = Literal["tenant", "keyword", "float"]

# Payload indexes of every collection. ``tenant`` is a keyword index flagged as the
# tenant key, so the engine co-locates each tenant's points and plans per-tenant.
PAYLOAD_INDEXES: tuple[tuple[str, IndexKind], ...] = (
    ("tenant", "tenant"),
    ("user", "keyword"),
    ("type", "keyword"),
    ("created_at", "float"),
    ("updated_at", "float"),
    # Memory versioning reads slots and dedupes by hash with exact payload filters
    # (memstrata.memory); unindexed, each would be a full scan of the tenant.
    ("slot", "keyword"),
    ("content_hash", "keyword"),
    ("kind", "keyword"),
    # The text's language (memstrata.language): the English query's cross-language
    # route searches only the Chinese and mixed points.
    ("lang", "keyword"),
)

_U32 = 0xFFFFFFFF


@functools.lru_cache(maxsize=4096)
def _tenant_key(tenant: str) -> int:
    digest = hashlib.blake2b(tenant.encode("utf-8"), digest_size=4, person=b"bm25term").digest()
    return int.from_bytes(digest, "little")


def tenant_term_ids(sparse: SparseVector, tenant: str) -> list[int]:
    """``sparse``'s term ids as stored and queried for ``tenant``: each tenant's own
    32-bit term space.

    Every query is tenant-filtered and its IDF counted over the tenant's points, so
    a posting list holding every tenant's documents made the engine walk and filter
    ~100x the postings it used (100 tenants): BM25 with the tenant IDF 0.76 -> 0.53
    ms, the fused query 1.19 -> 0.96 ms at 100k points. The map is a bijection per
    tenant (xor with a key from the tenant, then murmur3's finalizer, whose every
    step is invertible), so a tenant's terms never merge and scores are unchanged;
    two tenants' terms may share an id, which the tenant filter and the tenant IDF
    corpus already keep apart.
    """
    key = _tenant_key(tenant)
    ids = []
    for index in sparse.indices:
        h = index ^ key
        h ^= h >> 16
        h = (h * 0x85EBCA6B) & _U32
        h ^= h >> 13
        h = (h * 0xC2B2AE35) & _U32
        h ^= h >> 16
        ids.append(h)
    return ids


# A filtered dense search whose matches in a segment hold fewer kilobytes of vectors
# than this scores them all (exactly) instead of walking the tenant's HNSW graph.
# Measured (384 dims, k 50, ef 256, int8 + rescoring): a tenant of 1,000 / 2,000 /
# 4,000 / 8,000 points takes 0.19 / 0.33 / 0.79 / 1.78 ms scored in full against
# 0.34 / 0.46 / 0.59 / 0.72 ms through its graph, so the cut is near 2,800 points
# (4,000 KB of float32 vectors). The engine's default (1,000 KB, ~670 points) sent
# a 1,000-point tenant through its graph: 0.40 ms where a full scan takes 0.27.
FULL_SCAN_KB = 4000

# Upserts are sent in slices so 100k-point loads do not build one giant request.
UPSERT_BATCH = 1024


def check_collection(collection: str, known: Sequence[str]) -> str:
    """``collection`` must be one of the layout's names and already created."""
    if collection not in COLLECTIONS:
        raise NotFoundError(f"collection {collection!r}: not one of {', '.join(COLLECTIONS)}")
    if collection not in known:
        raise NotFoundError(f"collection {collection!r}: not created (call ensure_collections)")
    return collection


def check_existing_layout(
    where: str, dense_size: int | None, sparse_names: Sequence[str], dim: int
) -> None:
    """An existing collection must have this release's dense size and BM25 vectors."""
    if dense_size != dim:
        raise ValidationError("dim", f"{where} has dense size {dense_size}, not {dim}")
    if SPARSE_VECTOR not in sparse_names:
        found = ", ".join(sorted(sparse_names)) or "none"
        raise ValidationError(
            "sparse_vectors",
            f"{where} holds BM25 vectors of another tokenizer version ({found}); this "
            f"release reads and writes {SPARSE_VECTOR!r}: rebuild the index from its "
            "source data",
        )


def check_dim_value(dim: int) -> int:
    """The dense dimension must be a positive int."""
    if isinstance(dim, bool) or not isinstance(dim, int) or dim <= 0:
        raise ValidationError("dim", f"must be a positive int, got {dim!r}")
    return dim


def check_query_vector(vector: NDArray[np.float32], dim: int) -> list[float]:
    """A query vector of the collection's size, as the list the engines take."""
    array = np.asarray(vector, dtype=np.float32)
    if array.shape != (dim,):
        raise ValidationError("vector", f"expected shape ({dim},), got {array.shape}")
    if not np.isfinite(array).all():
        raise ValidationError("vector", "contains NaN or infinity")
    return array.tolist()  # type: ignore[no-any-return]


def check_points(points: Sequence[Point], dim: int, multilingual_dim: int | None = None) -> None:
    """Every point's dense vector has the collection's size, and its multilingual one
    (when it has one) the size of the collection's multilingual vector, which it must
    have (``multilingual_dim`` None: it has none)."""
    for point in points:
        if point.dense.shape != (dim,):
            raise ValidationError(
                "dense", f"point {point.id}: expected {dim} dims, got {point.dense.shape[0]}"
            )
        vector = point.multilingual
        if vector is None:
            continue
        if multilingual_dim is None:
            raise ValidationError(
                MULTILINGUAL_VECTOR,
                f"point {point.id}: the collection has no {MULTILINGUAL_VECTOR!r} vector",
            )
        if vector.shape != (multilingual_dim,):
            raise ValidationError(
                MULTILINGUAL_VECTOR,
                f"point {point.id}: expected {multilingual_dim} dims, got {vector.shape[0]}",
            )


def check_vector_name(using: str, sizes: Mapping[str, int]) -> int:
    """The size of the named dense vector ``using`` in a collection whose dense vectors
    are ``sizes``; ValidationError naming it when it is not one of the layout's names,
    NotFoundError when this collection was created without it."""
    if using not in DENSE_VECTORS:
        raise ValidationError("using", f"must be one of {', '.join(DENSE_VECTORS)}")
    size = sizes.get(using)
    if size is None:
        raise NotFoundError(
            f"vector {using!r}: this index was created without it (rebuild the index "
            "from its source data to add it)"
        )
    return size


def check_extra_vectors(vectors: Mapping[str, int] | None) -> dict[str, int]:
    """The named dense vectors besides ``dense`` asked of new collections, checked."""
    found: dict[str, int] = {}
    for name, size in (vectors or {}).items():
        if name not in DENSE_VECTORS or name == DENSE_VECTOR:
            raise ValidationError("vectors", f"{name!r} is not an extra dense vector name")
        found[name] = check_dim_value(size)
    return found


def check_ids(ids: Sequence[str]) -> list[str]:
    """Canonical UUID strings of ``ids`` (a bare string is rejected, not iterated)."""
    if isinstance(ids, str):
        raise ValidationError("ids", "must be a sequence of ids, not a single string")
    return [check_point_id("ids", i) for i in ids]


def check_limit(limit: int) -> int:
    """Result limits are positive ints (bools rejected)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit <= 0:
        raise ValidationError("limit", f"must be a positive int, got {limit!r}")
    return limit
