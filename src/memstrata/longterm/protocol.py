"""The VectorIndex role: what the L3 facade needs from a vector engine.

Two adapters implement it (embedded qdrant-edge and a Qdrant server through
qdrant-client) and both pass one contract suite. Rules every adapter follows:

* collections ``memories``, ``knowledge``, ``hot_knowledge``, ``memories_cold``,
  each with a cosine dense vector ``dense``, optionally a second cosine dense vector
  ``multilingual`` (a store created before it existed has none: it opens and serves
  as it was, and :meth:`VectorIndex.named_vectors` says so), and a sparse vector
  ``bm25`` whose IDF the engine applies;
* payload indexes on ``tenant`` (keyword, tenant-optimized), ``user``, ``type``
  (keyword), ``created_at`` / ``updated_at`` (float), and for memory versioning
  ``slot``, ``content_hash``, ``kind`` (keyword), and ``lang`` (keyword: the text's
  language, ``en`` / ``zh`` / ``mixed``);
* every read and delete carries the tenant condition inside the engine request -
  nothing is ever filtered in Python after the fact;
* a vector whose size differs from the collection's raises ``ValidationError``,
  an unknown / not-yet-created collection ``NotFoundError``, any other engine
  failure ``BackendError`` (chained with ``raise ... from``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from memstrata.longterm.points import (
    DENSE_VECTOR,
    Filter,
    Point,
    Record,
    ScoredPoint,
    SparseVector,
)


class VectorIndex(Protocol):
    """A vector engine holding the three L3 collections."""

    def ensure_collections(self, dim: int, vectors: Mapping[str, int] | None = None) -> None:
        """Create missing collections (``dense`` of ``dim`` and the named dense
        ``vectors`` besides it, name: size) and payload indexes; check existing ones'
        size. An existing collection keeps the vectors it was created with."""
        ...

    def named_vectors(self) -> dict[str, int]:
        """The named dense vectors every collection has (name: size), ``dense`` first."""
        ...

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        """Insert or replace ``points`` (durable when this returns)."""
        ...

    def update_vectors(
        self,
        collection: str,
        tenant: str,
        using: str,
        vectors: Mapping[str, NDArray[np.float32]],
    ) -> None:
        """Set the named dense vector ``using`` of the points of ``vectors`` (id: row)
        that belong to ``tenant`` and lack it; nothing else of a point changes (its
        payload, its other vectors: no race with a payload written meanwhile). A point
        that has the vector already, another tenant's, or one deleted meanwhile is
        left alone (durable when this returns)."""
        ...

    def delete(self, collection: str, ids: Sequence[str], tenant: str) -> None:
        """Delete those of ``ids`` that belong to ``tenant``; others are untouched."""
        ...

    def delete_where(self, collection: str, filter: Filter) -> int:
        """Delete every point matching ``filter`` (its tenant always, its user, types,
        times, extras and ids when set) inside the engine; how many were deleted.
        A forgotten user is ``Filter(tenant=..., user=...)``."""
        ...

    def purge(self, tenants: Collection[str] | None = None) -> None:
        """Make points deleted (or replaced) so far unrecoverable from the storage this
        index controls; what that covers is the adapter's to say (its docstring).
        ``tenants``: at least these tenants' (a forget's); None: every tenant's."""
        ...

    def retrieve(
        self,
        collection: str,
        ids: Sequence[str],
        tenant: str,
        *,
        with_vectors: bool = False,
        using: str = DENSE_VECTOR,
    ) -> list[Record]:
        """The points of ``ids`` that belong to ``tenant`` (a foreign id yields nothing);
        with their ``using`` vector in ``Record.dense`` when ``with_vectors``."""
        ...

    def search_dense(
        self,
        collection: str,
        vector: NDArray[np.float32],
        filter: Filter,
        limit: int,
        ef: int | None = None,
        *,
        with_payload: bool = True,
        reuse: bool = True,
        using: str = DENSE_VECTOR,
    ) -> list[ScoredPoint]:
        """Nearest neighbours by cosine of the named dense vector ``using`` (a point
        without it is never found; a collection without it: ``NotFoundError``);
        ``score`` is the cosine similarity. The language condition is a filter extra,
        ``("lang", ("zh", "mixed"))``.

        ``with_payload=False`` leaves ``payload`` empty: the hybrid route reads
        payloads only for the fused top k, which is most of its latency budget.
        ``reuse=False``: never answered from, nor kept in, an answer cache of the
        adapter (for callers that keep whole answers themselves); likewise below.
        """
        ...

    def search_sparse(
        self,
        collection: str,
        sparse: SparseVector,
        filter: Filter,
        limit: int,
        *,
        with_payload: bool = True,
        reuse: bool = True,
    ) -> list[ScoredPoint]:
        """Best BM25 matches; IDF is computed over the filter's tenant only."""
        ...

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
        reuse: bool = True,
        using: str = DENSE_VECTOR,
    ) -> list[ScoredPoint]:
        """Dense (``using``) top ``dense_limit`` and BM25 top ``sparse_limit`` fused by RRF in the
        engine (scores as :func:`memstrata.longterm.fusion.rrf`); ids and scores only,
        ``payload`` empty. An empty sparse query fuses the dense route alone."""
        ...

    def scroll(
        self, collection: str, filter: Filter, *, limit: int, offset: str | None = None
    ) -> tuple[list[Record], str | None]:
        """Points matching ``filter`` in id order, a page at a time (``None``: last page)."""
        ...

    def count(self, collection: str, filter: Filter) -> int:
        """Exact number of points matching ``filter``."""
        ...

    def point_count(self, collection: str) -> int:
        """Points in ``collection``, every tenant together, as the engine keeps the
        number (no filter evaluated: cheap enough for every metrics scrape; a server
        may answer an approximate count)."""
        ...

    @property
    def shared(self) -> bool:
        """True when other processes write the same points (a server): the counts it
        reports are the server's, the same for every process reading them."""
        ...

    @property
    def remote(self) -> bool:
        """True when its reads wait on another process (a server, over the network):
        they run under the read deadlines. False for an engine in this process, whose
        reads wait only on this process's CPU and are never abandoned for it
        (docs/architecture.md, "Deadlines")."""
        ...

    def answer_generation(self, collection: str) -> int | None:
        """A number that changes whenever ``collection`` is written through this
        index; ``None`` when it can change unseen (written by another process), so no
        answer about it may be reused. A closed index raises, as a search would."""
        ...

    def optimize(self) -> None:
        """Let the engine build indexes / merge segments now (after bulk writes)."""
        ...

    def close(self) -> None:
        """Release the engine; later calls raise ``BackendUnavailableError``."""
        ...
