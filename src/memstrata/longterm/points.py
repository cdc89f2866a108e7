"""Immutable values exchanged between the L3 facade, the index adapters and callers.

Dense vectors are numpy arrays (copying 100k x 384 floats into tuples would cost
gigabytes); every constructor copies them and marks the copy read-only, so a value
can never change after it is built and no caller's array is mutated.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from memstrata.errors import ValidationError
from memstrata.frozen import freeze
from memstrata.memo import remember
from memstrata.validation import check_id

# Names shared by both adapters and the facade: one source of truth for the layout.
MEMORIES = "memories"
KNOWLEDGE = "knowledge"
HOT_KNOWLEDGE = "hot_knowledge"
# Memories moved out of the hot path by consolidation (superseded, invalidated,
# forgotten); restorable, never searched by default.
MEMORIES_COLD = "memories_cold"
COLLECTIONS: tuple[str, ...] = (MEMORIES, KNOWLEDGE, HOT_KNOWLEDGE, MEMORIES_COLD)
DENSE_VECTOR = "dense"
# The second dense route: a model that puts Chinese and English in one space
# (memstrata.embed.multilingual). Optional per collection: a store created before it
# existed has ``dense`` alone and serves the English routes only.
MULTILINGUAL_VECTOR = "multilingual"
DENSE_VECTORS: tuple[str, ...] = (DENSE_VECTOR, MULTILINGUAL_VECTOR)
# The name carries the BM25 tokenizer's version (memstrata.longterm.sparse): an index
# whose sparse vectors another tokenizer built would match fewer words without a
# sign, so both adapters refuse to open it. Bump with any change to ``tokenize`` or
# to how term ids are stored (v3: each tenant's own term space, ``tenant_term_ids``).
SPARSE_VECTOR = "bm25_v3"

# Payload keys the facade always writes; ``Filter.extras`` may not shadow them.
RESERVED_KEYS = frozenset({"tenant", "user", "type", "text", "created_at", "updated_at", "source"})

# No bool: qdrant-edge-py 0.9.0 turns MatchValue(True) into the integer 1, which
# matches no boolean payload, so a bool filter would silently find nothing there.
ExtraValue = str | int | tuple[str, ...]
"""A value to match exactly, or a tuple of strings any of which matches (an array
payload field matches when any of its elements does)."""

# Shared by every payload-less result: freezing an empty dict per hit showed up in
# the hybrid search profile.
EMPTY_PAYLOAD: Mapping[str, Any] = MappingProxyType({})


def frozen_vector(values: Any, field_name: str = "dense") -> NDArray[np.float32]:
    """Return a read-only float32 1-d copy of ``values`` (rejecting NaN/inf)."""
    try:
        array = np.array(values, dtype=np.float32, copy=True)
    except (TypeError, ValueError) as exc:
        raise ValidationError(field_name, f"not a numeric vector: {exc}") from exc
    if array.ndim != 1 or array.size == 0:
        raise ValidationError(
            field_name, f"must be a non-empty 1-d vector, got shape {array.shape}"
        )
    if not np.isfinite(array).all():
        raise ValidationError(field_name, "contains NaN or infinity")
    array.setflags(write=False)
    return array


_SCALARS = (str, int, float, bool, type(None))


def engine_payload(payload: dict[str, Any] | None) -> Mapping[str, Any]:
    """Read-only view of a payload dict fresh from an engine (which nobody else holds).

    Flat payloads - the common case - are wrapped without the recursive walk of
    :func:`freeze`, which dominated the cost of reading hits back.
    """
    if not payload:
        return EMPTY_PAYLOAD
    if all(type(v) in _SCALARS for v in payload.values()):
        return MappingProxyType(payload)
    frozen: Mapping[str, Any] = freeze(payload)
    return frozen


def engine_vector(values: Any) -> NDArray[np.float32]:
    """Read-only float32 array of a vector returned by an engine (already validated)."""
    array = np.array(values, dtype=np.float32)
    array.setflags(write=False)
    return array


# Ids read back from an engine are already canonical; matching the canonical form
# costs ~0.5 us against ~4.6 us for a parse and re-format (200 ids per retrieval).
_CANONICAL_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


# Canonical ids that passed the check: a retrieval checks the same ~200 ids at each
# layer it passes (store, adapter, filter), ~0.85 us per regex match against ~0.05
# for a dict hit. Bounded (65,536 ids, a few MB); cleared when full.
_CHECKED_IDS: dict[str, None] = {}
_CHECKED_IDS_MAX = 1 << 16


def check_point_id(field_name: str, value: Any) -> str:
    """Return ``value`` in canonical form if it is a UUID string (Qdrant's id format)."""
    if type(value) is str and value in _CHECKED_IDS:
        return value
    if not isinstance(value, str):
        raise ValidationError(field_name, f"must be a UUID string, got {type(value).__name__}")
    if _CANONICAL_UUID.fullmatch(value):
        remember(_CHECKED_IDS, value, None, _CHECKED_IDS_MAX)
        return value
    try:
        return str(uuid.UUID(value))
    except ValueError as exc:
        raise ValidationError(field_name, f"{value!r} is not a UUID") from exc


@dataclass(frozen=True, slots=True)
class SparseVector:
    """A sparse vector: parallel, index-sorted ``indices`` (u32) and ``values``."""

    indices: tuple[int, ...]
    values: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.indices) != len(self.values):
            raise ValidationError("sparse", "indices and values differ in length")
        if len(set(self.indices)) != len(self.indices):
            raise ValidationError("sparse", "indices must be unique")
        if any(not 0 <= i < 2**32 for i in self.indices):
            raise ValidationError("sparse", "indices must be unsigned 32-bit integers")
        if any(not math.isfinite(v) for v in self.values):
            raise ValidationError("sparse", "values must be finite")

    @property
    def is_empty(self) -> bool:
        """True when the text had no indexable token (e.g. only stopwords)."""
        return not self.indices


@dataclass(frozen=True, slots=True, eq=False)
class Point:
    """One stored item: id, dense and sparse vectors, payload (frozen copies);
    ``multilingual`` the optional second dense vector (:data:`MULTILINGUAL_VECTOR`)."""

    id: str
    dense: NDArray[np.float32]
    sparse: SparseVector
    payload: Mapping[str, Any]
    multilingual: NDArray[np.float32] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", check_point_id("id", self.id))
        object.__setattr__(self, "dense", frozen_vector(self.dense))
        if self.multilingual is not None:
            object.__setattr__(
                self, "multilingual", frozen_vector(self.multilingual, MULTILINGUAL_VECTOR)
            )
        tenant = self.payload.get("tenant")
        check_id("tenant", tenant)
        object.__setattr__(self, "payload", freeze(dict(self.payload)))


@dataclass(frozen=True, slots=True)
class Filter:
    """What a read may see. ``tenant`` is mandatory: every engine query carries it.

    ``ids`` restricts a read to those points (still within the tenant).
    """

    tenant: str
    user: str | None = None
    types: tuple[str, ...] | None = None
    created_after: float | None = None
    created_before: float | None = None
    extras: tuple[tuple[str, ExtraValue], ...] = field(default=())
    ids: tuple[str, ...] | None = None
    lacks_vector: str | None = None
    """Only the points without this named dense vector (the background catch-up of
    the ``multilingual`` vector: :mod:`memstrata.longterm.catchup`)."""

    def __post_init__(self) -> None:
        check_id("tenant", self.tenant)
        if self.lacks_vector is not None and self.lacks_vector not in DENSE_VECTORS:
            raise ValidationError("lacks_vector", f"must be one of {', '.join(DENSE_VECTORS)}")
        if self.ids is not None:
            if not isinstance(self.ids, tuple):
                raise ValidationError("ids", "must be a tuple of point ids or None")
            object.__setattr__(self, "ids", tuple(check_point_id("ids", i) for i in self.ids))
        if self.user is not None:
            check_id("user", self.user)
        if self.types is not None:
            if not isinstance(self.types, tuple) or not self.types:
                raise ValidationError("types", "must be a non-empty tuple or None")
            for type_name in self.types:
                check_id("types", type_name)
        for name in ("created_after", "created_before"):
            bound = getattr(self, name)
            if bound is not None and (
                isinstance(bound, bool)
                or not isinstance(bound, int | float)
                or not math.isfinite(bound)
            ):
                raise ValidationError(name, "must be a finite epoch-seconds number or None")
        for key, value in self.extras:
            if not isinstance(key, str) or not key or key in RESERVED_KEYS:
                raise ValidationError("extras", f"key {key!r} is empty or reserved")
            if isinstance(value, tuple):
                if not value or not all(isinstance(v, str) for v in value):
                    raise ValidationError(
                        "extras", f"a tuple for {key!r} must hold one or more strings"
                    )
            elif isinstance(value, bool) or not isinstance(value, str | int):
                raise ValidationError(
                    "extras",
                    f"value for {key!r} must be str, int or a tuple of str (the embedded "
                    "engine cannot match booleans)",
                )


def check_filter(value: Any) -> Filter:
    """Return ``value`` if it is a :class:`Filter` (whose tenant is then set): a bulk
    delete must never run without one."""
    if not isinstance(value, Filter):
        raise ValidationError("filter", f"must be a Filter, got {type(value).__name__}")
    return value


class ScoredPoint(NamedTuple):
    """One engine result of a single route (dense or sparse).

    A NamedTuple, not a frozen dataclass: a retrieval builds ~500 of them and a
    frozen dataclass costs ~1.3 us each to construct, a tuple ~0.3.
    """

    id: str
    score: float
    payload: Mapping[str, Any]


@dataclass(frozen=True, slots=True, eq=False)
class Record:
    """A point read back by id; ``dense`` only when vectors were requested (the
    named vector asked for: ``dense`` unless another was named)."""

    id: str
    payload: Mapping[str, Any]
    dense: NDArray[np.float32] | None = None


@dataclass(frozen=True, slots=True, eq=False)
class Hit:
    """A fused hybrid result.

    ``score`` is the fusion score (comparable only within one result list);
    ``cosine`` is the dense similarity to the query, whichever route found the item,
    so callers can flag low confidence (on the ``dense`` model's scale: a
    ``multilingual`` cosine is mapped onto it, :mod:`memstrata.retrieval.languages`);
    ``cosine_route`` the named vector it was measured with; ranks are 1-based,
    ``None`` when the route did not return the item.
    """

    id: str
    score: float
    cosine: float
    dense_rank: int | None
    sparse_rank: int | None
    payload: Mapping[str, Any]
    cosine_route: str = DENSE_VECTOR
