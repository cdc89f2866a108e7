"""The collection layout and the argument checks both adapters share.

Written once so the embedded and the server adapter cannot drift: they raise the
same ``ValidationError`` / ``NotFoundError`` before the engine is ever called.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from memstrata.errors import NotFoundError, ValidationError
from memstrata.longterm.models import COLLECTIONS, SPARSE_VECTOR, Point, check_point_id

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
)

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


def check_points(points: Sequence[Point], dim: int) -> None:
    """Every point's dense vector has the collection's size."""
    for point in points:
        if point.dense.shape != (dim,):
            raise ValidationError(
                "dense", f"point {point.id}: expected {dim} dims, got {point.dense.shape[0]}"
            )


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
