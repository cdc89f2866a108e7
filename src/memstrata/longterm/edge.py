"""Embedded adapter: the Qdrant engine in process through ``qdrant-edge-py``.

Each collection is a directory under ``path`` (``<path>/memories``, ...) holding its
parts, one edge shard each, a tenant's points all in one part
(:mod:`memstrata.longterm.edge_parts`); persisted with the engine's WAL, so reopening
the same path sees every acknowledged write. Request building is done by the pure
``*_filter`` functions below; :class:`EdgeIndex` only executes.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any, overload

import numpy as np
import qdrant_edge as qe
from numpy.typing import NDArray

from memstrata.config import DEFAULT_SEARCH_THREADS, MAX_SEARCH_THREADS
from memstrata.disk import DiskPolicy
from memstrata.errors import (
    BackendUnavailableError,
    DiskSpaceError,
    ValidationError,
)
from memstrata.filemodes import restrict_tree
from memstrata.longterm.edge_parts import (
    DEFAULT_PARTS,
    PartsLayout,
    check_parts,
    existing_parts,
    is_single_shard,
    part_key,
    part_of,
    read_layout,
    split_single_shard,
    write_layout,
)
from memstrata.longterm.edge_purge import (
    CopyProcess,
    LeasedShard,
    WriteJournal,
    catch_up,
    copy_live,
    ready_marker,
    recover,
    remove_old,
    staging_dir,
    swap_in,
)
from memstrata.longterm.edge_requests import (
    dense_of,
    dense_params,
    edge_filter,
    edge_point,
    id_score_pairs,
    ids_filter,
    point_id_text,
    route_hits,
    scored,
    sparse_params,
    sparse_query,
)
from memstrata.longterm.edge_shards import (
    check_stored_config,
    create_shard,
    engine_errors,
    ensure_payload_indexes,
    shard_config,
)
from memstrata.longterm.fusion import ENGINE_RRF_K
from memstrata.longterm.layout import (
    UPSERT_BATCH,
    check_collection,
    check_dim_value,
    check_extra_vectors,
    check_ids,
    check_limit,
    check_points,
    check_query_vector,
    check_vector_name,
)
from memstrata.longterm.leases import Lease, ShardLeases
from memstrata.longterm.payload_cache import DEFAULT_PAYLOAD_CACHE_ENTRIES, PayloadCache
from memstrata.longterm.points import (
    COLLECTIONS,
    DENSE_VECTOR,
    EMPTY_PAYLOAD,
    MULTILINGUAL_VECTOR,
    Filter,
    Point,
    Record,
    ScoredPoint,
    SparseVector,
    check_filter,
    engine_payload,
)
from memstrata.longterm.query_cache import DEFAULT_QUERY_CACHE_ENTRIES, QueryCache
from memstrata.validation import check_non_negative_int, check_positive_int

_log = logging.getLogger(__name__)

# Upserts of at most this many points have their payloads read back into the cache.
_READ_BACK_MAX = UPSERT_BATCH
FLUSH_EVERY = 2048
"""A part is flushed once this many of its points were written since its last flush.
qdrant-edge's ``flush()`` (and ``close()``, which flushes) holds the GIL for a time
that grows with what it has to write (measured: 6.6 s for 60k points written in bulk
and never flushed, ~0.2 s for 2k); unbounded, a purge's swap - which closes the
part - would stop every thread that long, and a long-running process only flushed at
shutdown. Bounded, the swap's close costs a fraction of a second."""


class EdgeIndex:
    """:class:`~memstrata.longterm.protocol.VectorIndex` on embedded qdrant-edge shards."""

    def __init__(
        self,
        path: str | Path,
        *,
        payload_cache_entries: int = DEFAULT_PAYLOAD_CACHE_ENTRIES,
        query_cache_entries: int = DEFAULT_QUERY_CACHE_ENTRIES,
        search_threads: int = DEFAULT_SEARCH_THREADS,
        disk: DiskPolicy | None = None,
        parts: int = DEFAULT_PARTS,
    ) -> None:
        """``payload_cache_entries``: payloads kept after a read; ``query_cache_entries``:
        answers of identical searches kept until their collection is written (0 turns
        either cache off); ``search_threads``: each shard's search pool (see
        :attr:`~memstrata.config.LongTermSettings.search_threads`); ``disk``: free space
        checked before a shard is created or rebuilt and before each write (None: not
        checked), because the engine's writes into its mapped files on a full disk
        end the process with SIGBUS (:mod:`memstrata.disk`); ``parts``: the parts a
        new collection is split into (:mod:`memstrata.longterm.edge_parts`; an existing
        one keeps its own count)."""
        self._root = Path(path)
        self._disk = disk
        self._search_threads = check_positive_int(
            "search_threads", search_threads, maximum=MAX_SEARCH_THREADS
        )
        self._new_parts = check_parts(parts)
        self._lock = threading.Lock()
        # A purge swaps a part's shard, and close() closes it, only when no call uses it.
        # Keyed by part (``memories/p003``): parts are added as collections open.
        self._leases = ShardLeases(self._lock, ())
        # Parts that may hold deleted data on disk: every write since the shard was
        # opened (an earlier process may have deleted too) or purged.
        self._dirty: set[str] = set()
        # While a part is rebuilt, the ids its writes touch (edge_purge).
        self._journal = WriteJournal()
        self._purging: dict[str, threading.Lock] = {}
        self._payloads = (
            PayloadCache(payload_cache_entries)
            if check_non_negative_int("payload_cache_entries", payload_cache_entries)
            else None
        )
        self._queries = (
            QueryCache(query_cache_entries)
            if check_non_negative_int("query_cache_entries", query_cache_entries)
            else None
        )
        # The parts' shards, by part key; a part not written yet has none.
        self._shards: dict[str, qe.EdgeShard] = {}
        # Each open collection's part count.
        self._parts: dict[str, int] = {}
        # Each part's point count as last read (point_count during a swap).
        self._counts: dict[str, int] = {}
        # Points written to each part since its last flush (FLUSH_EVERY).
        self._unflushed: dict[str, int] = {}
        # Swapped whole, never mutated: threads read a consistent (key, values) pair.
        self._last_query: tuple[bytes, list[float]] | None = None
        self._id_objects: Mapping[str, Any] = {}
        self._dim: int | None = None
        # Each collection's named dense vectors besides ``dense`` (name: size), as
        # stored: a collection created before a vector existed keeps its layout.
        self._extra: dict[str, dict[str, int]] = {}
        self._closed = False

    def ensure_collections(self, dim: int, vectors: Mapping[str, int] | None = None) -> None:
        """Open (or create) the collections under the root directory, each with the
        parts already written. ``vectors``: the named dense vectors besides ``dense`` a
        new collection gets (name: size); an existing one keeps the vectors it was
        created with (see :meth:`named_vectors`). A collection stored as one shard
        (before parts) is split into parts first, once."""
        check_dim_value(dim)
        wanted = check_extra_vectors(vectors)
        with self._lock:
            self._check_open()
            if self._dim is not None and self._dim != dim:
                raise ValidationError("dim", f"index is open with {self._dim} dims, not {dim}")
            for name in COLLECTIONS:
                if name not in self._parts:
                    self._open_collection(name, dim, wanted)
            self._dim = dim
            restrict_tree(self._root)  # 0700 / 0600 whatever the umask (memstrata.filemodes)

    def _open_collection(self, name: str, dim: int, wanted: Mapping[str, int]) -> None:
        """Open collection ``name``'s parts (the caller holds the index lock)."""
        home = self._root / name
        try:
            recover(home)  # a split into parts a crash interrupted
            if is_single_shard(home):
                layout = split_single_shard(home, self._new_parts, dim, self._search_threads)
            else:
                found = read_layout(home, dim)
                if found is None:
                    if self._disk is not None:
                        self._disk.require_room(f"qdrant-edge cannot create {name}", self._root, 0)
                    found = PartsLayout(self._new_parts, dim, dict(wanted))
                    write_layout(home, found)
                layout = found
        except (ValidationError, DiskSpaceError, BackendUnavailableError):
            raise
        except Exception as exc:
            raise BackendUnavailableError(f"qdrant-edge cannot open {home}: {exc}") from exc
        keys = [part_key(name, i) for i in range(layout.parts)]
        self._leases.add(keys)
        for key in keys:
            self._purging.setdefault(key, threading.Lock())
            recover(self._root / key)  # a purge a crash interrupted
        opened: dict[str, qe.EdgeShard] = {}
        try:
            for index in existing_parts(home, layout.parts):
                key = part_key(name, index)
                opened[key] = self._open_shard(self._root / key, dim, layout.extra)
        except BaseException:
            for shard in opened.values():
                shard.close()
            raise
        self._shards.update(opened)
        self._dirty.update(opened)
        self._parts[name], self._extra[name] = layout.parts, dict(layout.extra)

    def named_vectors(self) -> dict[str, int]:
        """The named dense vectors every collection has (name: size), ``dense`` first."""
        with self._lock:
            self._check_open()
            if self._dim is None:
                return {}
            found = {DENSE_VECTOR: self._dim}
            extras = list(self._extra.values())
            for name, size in (extras[0] if extras else {}).items():
                if all(extra.get(name) == size for extra in extras):
                    found[name] = size
            return found

    def _sizes(self, collection: str, dim: int) -> dict[str, int]:
        return {DENSE_VECTOR: dim, **self._extra.get(collection, {})}

    def _need_write_room(self) -> None:
        # The engine cannot report a full disk once it writes into a mapped page.
        if self._disk is not None:
            self._disk.require_write_room(self._root)

    def check_room_to_purge(self, collections: Sequence[str] = ()) -> None:
        """DiskSpaceError unless :meth:`purge` of ``collections`` and of every part
        written since it was opened could run now (a forget asks before deleting)."""
        if self._disk is not None:
            with self._lock:
                names = set(self._dirty)
                names.update(k for k in self._shards if k.partition("/")[0] in collections)
            self._disk.require_room_to_rebuild(
                "qdrant-edge cannot rebuild", self._root, sorted(names)
            )

    def _open_shard(
        self, path: Path, dim: int, extra: Mapping[str, int], *, swapped: bool = False
    ) -> qe.EdgeShard:
        """The part's shard stored at ``path``, with the collection's named vectors
        besides ``dense`` (``extra``)."""
        try:
            if not swapped:  # a swap leaves the old copy to remove_old(), outside it
                recover(path)  # a purge a crash interrupted
            # A vector the shard lacks stays missing (the facade says so once).
            stored = check_stored_config(path, dim)
            config = shard_config(dim, self._search_threads, vectors=stored or extra)
            shard = qe.EdgeShard.load(str(path), config)
        except (ValidationError, DiskSpaceError):
            raise
        except Exception as exc:
            if "incompatible" in str(exc).lower():
                raise ValidationError("dim", f"{path}: {exc}") from exc
            raise BackendUnavailableError(f"qdrant-edge cannot open {path}: {exc}") from exc
        ensure_payload_indexes(shard)
        return shard

    def _create_part(self, key: str) -> qe.EdgeShard:
        """A new, empty shard for part ``key`` (its first write; the caller holds the
        part's write lock, so no other call creates it meanwhile)."""
        assert self._dim is not None  # set together with the collections
        collection = key.partition("/")[0]
        path = self._root / key
        if self._disk is not None:
            what = f"qdrant-edge cannot create {key}"
            self._disk.require_room(what, path.parent, self._disk.collection_bytes)
        with engine_errors(f"creating {key}"):
            shard = create_shard(
                path,
                self._dim,
                self._search_threads,
                self._extra.get(collection, {}),
                indexing_threads=0,
            )
        restrict_tree(path)
        with self._lock:
            self._shards[key] = shard
        return shard

    def _query_values(self, vector: NDArray[np.float32], dim: int) -> tuple[bytes, list[float]]:
        """The query vector's cache key and the list the engine takes, validated.

        A hybrid search sends one vector twice (the fused query, then the cosines of
        its hits): the second time the checked list of the first is reused.
        """
        try:
            key = _vector_key(vector)
        except (TypeError, ValueError) as exc:
            raise ValidationError("vector", f"not a numeric vector: {exc}") from exc
        last = self._last_query
        if last is not None and last[0] == key and np.shape(vector) == (dim,):
            return last
        values = (key, check_query_vector(vector, dim))
        self._last_query = values
        return values

    def _check_open(self) -> None:
        if self._closed:
            raise BackendUnavailableError("EdgeIndex is closed")

    def _part(self, collection: str, tenant: str) -> str:
        """The key of the part of ``collection`` that holds ``tenant``."""
        parts = self._parts.get(collection)
        if parts is None:
            self._check_open()
            check_collection(collection, tuple(self._parts))  # raises NotFoundError
            raise AssertionError("unreachable: check_collection accepted an unopened name")
        return part_key(collection, part_of(tenant, parts))

    @overload
    def _lease(self, key: str) -> Lease[qe.EdgeShard | None]: ...
    @overload
    def _lease(self, key: str, *, wait: bool) -> Lease[qe.EdgeShard | None] | None: ...
    def _lease(self, key: str, *, wait: bool = True) -> Lease[qe.EdgeShard | None] | None:
        """Part ``key``'s shard for one call (``with``; None for a part never written);
        waits while a purge swaps it (``wait=False``: None instead)."""
        with self._lock:
            if not wait and self._leases.swapping(key):
                return None
            self._leases.wait_turn(key)
            self._check_open()
            assert self._dim is not None  # set together with the parts
            return self._leases.grant(key, self._shards.get(key), self._dim)

    def _shard_of(self, lease: Lease[qe.EdgeShard | None]) -> qe.EdgeShard:
        """The leased part's shard, created by this first write (the caller holds the
        part's write lock)."""
        shard = lease.shard
        if shard is None:
            self._need_write_room()
            shard = self._create_part(lease.collection)
            lease.shard = shard
        return shard

    def _writer(self, key: str) -> threading.Lock:
        """Part ``key``'s write lock: taken before its lease (see ``leases``)."""
        lock = self._leases.writer(key)
        if lock is None:
            raise AssertionError(f"unreachable: no part {key!r} (keys come from _part)")
        return lock

    def engine_shard(self, collection: str, tenant: str) -> qe.EdgeShard:
        """The qdrant-edge shard of the part of ``collection`` holding ``tenant``, for
        benchmarks that time the engine alone. Reads through it skip validation, the
        tenant rule and the caches: never serve a caller through it (nor keep it across
        a :meth:`purge`, which closes it and opens a new one)."""
        key = self._part(collection, tenant)
        with self._writer(key), self._lease(key) as lease:
            return self._shard_of(lease)

    def upsert(self, collection: str, points: Sequence[Point]) -> None:
        """Insert or replace ``points`` in slices of ``UPSERT_BATCH``, each in its
        tenant's part (all checked before any is written)."""
        with self._lock:
            self._check_open()
            dim = self._dim
        self._part(collection, "")  # NotFoundError for a collection not opened
        assert dim is not None  # set together with the collections
        check_points(points, dim, self._extra.get(collection, {}).get(MULTILINGUAL_VECTOR))
        parts: dict[str, list[Point]] = {}
        for point in points:
            key = self._part(collection, str(point.payload["tenant"]))
            parts.setdefault(key, []).append(point)
        for key, batch in parts.items():
            self._upsert_part(collection, key, batch)

    def _upsert_part(self, collection: str, key: str, points: Sequence[Point]) -> None:
        with self._writer(key), self._lease(key) as lease:
            self._need_write_room()
            shard = self._shard_of(lease)
            ids = [p.id for p in points]
            try:
                with engine_errors("upsert"):
                    for start in range(0, len(points), UPSERT_BATCH):
                        batch = [edge_point(p) for p in points[start : start + UPSERT_BATCH]]
                        shard.update(qe.UpdateOperation.upsert_points(batch))
            finally:
                self._written(key, ids)  # a replaced payload stays on disk too
            self._flush_if_due(key, shard)
            if len(ids) <= _READ_BACK_MAX:
                self._cache_written(collection, points)

    def _cache_written(self, collection: str, points: Sequence[Point]) -> None:
        """Cache the payloads just written: a memory is usually searched soon after
        it is written, and decoding its payload then costs a retrieval ~10 us per
        point (a cold 200-item pool: ~2 ms). Bulk loads are left cold.

        The points' own frozen payloads are what the engine would return: JSON-like
        values (the gateway refuses anything else) read back as the same values
        (lists as tuples, maps read-only, as :func:`engine_payload` freezes them),
        so they are cached as they are instead of being read back from the engine
        (which cost a write ~0.1 ms a point). The last copy of an id wins, as in
        the engine."""
        cache = self._payloads
        if cache is None:
            return
        cache.store(collection, {p.id: p.payload for p in points}, cache.generation)

    def update_vectors(
        self,
        collection: str,
        tenant: str,
        using: str,
        vectors: Mapping[str, NDArray[np.float32]],
    ) -> None:
        """Set the named vector ``using`` of the tenant's points among ``vectors`` that
        lack it: the engine's partial update, conditioned on the tenant and on the
        vector still missing (a point rewritten with it meanwhile keeps its own)."""
        Filter(tenant=tenant)  # validates the tenant id
        key = self._part(collection, tenant)
        with self._writer(key), self._lease(key) as lease:
            dim = check_vector_name(using, self._sizes(collection, lease.dim))
            rows = {check_ids([i])[0]: check_query_vector(v, dim) for i, v in vectors.items()}
            if not rows or lease.shard is None:
                return
            self._need_write_room()
            condition = edge_filter(Filter(tenant=tenant, lacks_vector=using))
            ids = list(rows)
            try:
                with engine_errors("update_vectors"):
                    for start in range(0, len(ids), UPSERT_BATCH):
                        batch = [
                            qe.PointVectors(i, {using: rows[i]})
                            for i in ids[start : start + UPSERT_BATCH]
                        ]
                        try:
                            lease.shard.update(qe.UpdateOperation.update_vectors(batch, condition))
                        except Exception as exc:
                            # A point deleted since it was read: the engine wrote the
                            # others, then named the first one it could not find.
                            if "no point with id" not in str(exc).lower():
                                raise
            finally:
                self._written(key, ids)
            self._flush_if_due(key, lease.shard)

    def delete(self, collection: str, ids: Sequence[str], tenant: str) -> None:
        """Delete the tenant's points among ``ids`` (filter-scoped, never by id alone)."""
        point_ids = check_ids(ids)
        Filter(tenant=tenant)  # validates the tenant id
        key = self._part(collection, tenant)
        with self._writer(key), self._lease(key) as lease:
            if not point_ids or lease.shard is None:
                return
            self._need_write_room()
            try:
                with engine_errors("delete"):
                    lease.shard.update(
                        qe.UpdateOperation.delete_points_by_filter(ids_filter(point_ids, tenant))
                    )
            finally:
                self._written(key, point_ids)

    def delete_where(self, collection: str, filter: Filter) -> int:
        """Delete every point matching ``filter`` (tenant first, in the engine's own
        filter) and return how many. The matching ids are listed by the same filter
        first, to drop exactly those from the payload cache; no write through this
        index runs in between, so the count is exact."""
        flt = check_filter(filter)
        key = self._part(collection, flt.tenant)
        with self._writer(key), self._lease(key) as lease:
            if lease.shard is None:
                return 0
            engine_filter = edge_filter(flt)
            with engine_errors("delete_where"):
                ids = _matching_ids(lease.shard, engine_filter)
            if not ids:
                return 0
            self._need_write_room()
            try:
                with engine_errors("delete_where"):
                    lease.shard.update(qe.UpdateOperation.delete_points_by_filter(engine_filter))
            finally:
                self._written(key, ids)
            self._flush_if_due(key, lease.shard)
        return len(ids)

    def _engine_payload(self, collection: str, with_payload: bool, flt: Filter, limit: int) -> bool:
        """Whether the search should bring payloads from the engine itself.

        A second engine call for the payloads costs more than decoding a few, so the
        cache serves only reads that are large and warm: an id-filtered read whose ids
        are all cached, or a search of at least ``_CACHED_READ_MIN`` hits.
        """
        if not with_payload or self._payloads is None:
            return with_payload
        if flt.ids is not None:
            return not self._payloads.holds_all(collection, flt.ids)
        return limit < _CACHED_READ_MIN

    def _written(self, key: str, ids: Sequence[str]) -> None:
        """After a write of ``ids`` to part ``key`` (the caller holds its write lock)."""
        self._dirty.add(key)
        self._journal.note(key, ids)
        self._invalidate(key.partition("/")[0], ids)
        self._unflushed[key] = self._unflushed.get(key, 0) + len(ids)

    def _flush_if_due(self, key: str, shard: qe.EdgeShard) -> None:
        """Flush part ``key`` once FLUSH_EVERY points were written to it since its last
        flush (the caller holds its write lock and a lease)."""
        if self._unflushed.get(key, 0) >= FLUSH_EVERY:
            self._unflushed[key] = 0
            with engine_errors("flush"):
                shard.flush()

    def _invalidate(self, collection: str, ids: Sequence[str]) -> None:
        if self._payloads is not None:
            self._payloads.invalidate(collection, ids)
        if self._queries is not None:
            self._queries.invalidate(collection)

    def _answer(
        self,
        collection: str,
        key: Hashable,
        run: Callable[[], list[ScoredPoint]],
        reuse: bool,
    ) -> list[ScoredPoint]:
        """``run()``, or the answer it gave for the same ``key`` since the last write
        (``reuse=False``: always ``run()``, nothing kept)."""
        cache = self._queries
        if cache is None or not reuse:
            return run()
        found = cache.lookup(collection, key)
        if found is not None:
            return found
        generation = cache.generation(collection)
        hits = run()
        cache.store(collection, key, hits, generation)
        return hits

    def _query_scored(
        self,
        shard: qe.EdgeShard,
        collection: str,
        request: Any,
        with_payload: bool,
        engine_payloads: bool,
    ) -> list[ScoredPoint]:
        """Run ``request`` (built with ``with_payload=engine_payloads``). Payloads the
        engine returned are kept in the cache; otherwise they come from it, and the
        missing ones from one read by id."""
        cache = self._payloads
        if not with_payload:
            # Route lists: hundreds of ids per query, so no payload access at all.
            return route_hits(shard.query(request))
        if cache is None:
            return [scored(p) for p in shard.query(request)]
        generation = cache.generation
        if engine_payloads:
            points = [scored(p) for p in shard.query(request)]
            cache.store(collection, {p.id: p.payload for p in points}, generation)
            return points
        hits = id_score_pairs(shard.query(request))
        found, missing = cache.lookup(collection, [point_id for point_id, _ in hits])
        if missing:
            fresh = _read_payloads(shard, missing)
            cache.store(collection, fresh, generation)
            found.update(fresh)
        # A point deleted between the two reads has no payload any more: drop it.
        return [ScoredPoint(i, score, found[i]) for i, score in hits if i in found]

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
        ``using`` vector in ``Record.dense`` when ``with_vectors``).

        Without vectors, cached payloads answer first (a cached point of another
        tenant counts as absent, as in the engine); the rest is read in one scroll.
        """
        point_ids = list(dict.fromkeys(check_ids(ids)))
        Filter(tenant=tenant)
        with self._lease(self._part(collection, tenant)) as lease:
            shard = lease.shard
            if with_vectors:
                check_vector_name(using, self._sizes(collection, lease.dim))
            if not point_ids or shard is None:
                return []
            cache = None if with_vectors else self._payloads
            found: dict[str, Record] = {}
            missing = point_ids
            generation = 0
            if cache is not None:
                generation = cache.generation
                cached, missing = cache.lookup(collection, point_ids)
                found = {i: Record(i, p) for i, p in cached.items() if p.get("tenant") == tenant}
            if missing:
                request = qe.ScrollRequest(
                    limit=len(missing),
                    filter=ids_filter(missing, tenant),
                    with_payload=True,
                    with_vector=[using] if with_vectors else False,
                )
                with engine_errors("retrieve"):
                    records, _ = shard.scroll(request)
                fresh = {
                    point_id_text(r.id): Record(
                        point_id_text(r.id), engine_payload(r.payload), dense_of(r.vector, using)
                    )
                    for r in records
                }
                if cache is not None:
                    cache.store(collection, {i: r.payload for i, r in fresh.items()}, generation)
                found.update(fresh)
            return [found[i] for i in point_ids if i in found]

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
        """Filtered HNSW search of the named dense vector ``using``; ``ef`` trades
        latency for recall. A point without that vector is never found."""
        with self._lease(self._part(collection, filter.tenant)) as lease:
            shard = lease.shard
            dim = check_vector_name(using, self._sizes(collection, lease.dim))
            vector_key, query = self._query_values(vector, dim)
            check_limit(limit)
            if shard is None:
                return []

            def run() -> list[ScoredPoint]:
                engine_payloads = self._engine_payload(collection, with_payload, filter, limit)
                request = qe.QueryRequest(
                    limit=limit,
                    query=qe.Query.Nearest(query, using=using),
                    filter=edge_filter(filter, self._id_objects),
                    with_payload=engine_payloads,
                    params=dense_params(ef),
                )
                return self._query_scored(shard, collection, request, with_payload, engine_payloads)

            key = ("dense", using, vector_key, filter, limit, ef, with_payload)
            with engine_errors("dense search"):
                return self._answer(collection, key, run, reuse)

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
        """BM25 search; IDF statistics come from the tenant's own points only."""
        with self._lease(self._part(collection, filter.tenant)) as lease:
            shard = lease.shard
            check_limit(limit)
            if sparse.is_empty or shard is None:
                return []

            def run() -> list[ScoredPoint]:
                engine_payloads = self._engine_payload(collection, with_payload, filter, limit)
                request = qe.QueryRequest(
                    limit=limit,
                    query=sparse_query(sparse, filter.tenant),
                    filter=edge_filter(filter),
                    with_payload=engine_payloads,
                    params=sparse_params(filter.tenant),
                )
                return self._query_scored(shard, collection, request, with_payload, engine_payloads)

            key = ("sparse", sparse.indices, sparse.values, filter, limit, with_payload)
            with engine_errors("sparse search"):
                return self._answer(collection, key, run, reuse)

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
        """Dense (the named vector ``using``) and BM25 routes fused by RRF inside the
        engine: one call, top ``limit``.

        Only the fused ids cross into Python (no payload): converting two full
        route lists of UUIDs cost more than both engine searches together.
        """
        with self._lease(self._part(collection, filter.tenant)) as lease:
            shard = lease.shard
            dim = check_vector_name(using, self._sizes(collection, lease.dim))
            vector_key, query = self._query_values(vector, dim)
            for value in (dense_limit, sparse_limit, limit):
                check_limit(value)
            if shard is None:
                return []

            def run() -> list[ScoredPoint]:
                flt = edge_filter(filter)
                prefetches = [
                    qe.Prefetch(
                        limit=dense_limit,
                        query=qe.Query.Nearest(query, using=using),
                        filter=flt,
                        params=dense_params(ef),
                    )
                ]
                if not sparse.is_empty:
                    prefetches.append(
                        qe.Prefetch(
                            limit=sparse_limit,
                            query=sparse_query(sparse, filter.tenant),
                            filter=flt,
                            params=sparse_params(filter.tenant),
                        )
                    )
                request = qe.QueryRequest(
                    limit=limit,
                    prefetches=prefetches,
                    # The stubs type ``query`` as ``Fusion``; the engine takes its variants.
                    query=qe.Fusion.Rrf(k=ENGINE_RRF_K),  # type: ignore[arg-type]
                    # No filter here: fusion only ranks what the filtered routes found, and
                    # an outer filter is merged into each route's, so every condition was
                    # checked twice (route() memories search, tenant + user + types filter:
                    # 2.2 -> 1.8 ms in the engine, same hits).
                    with_payload=False,
                )
                hits: list[ScoredPoint] = []
                objects: dict[str, Any] = {}
                for point in shard.query(request):
                    engine_id = point.id
                    text = point_id_text(engine_id)
                    objects[text] = engine_id
                    hits.append(ScoredPoint(text, float(point.score), EMPTY_PAYLOAD))
                # The next read by these ids (their cosines) passes the objects back.
                self._id_objects = objects
                return hits

            key = (
                "fused",
                using,
                vector_key,
                sparse.indices,
                sparse.values,
                filter,
                dense_limit,
                sparse_limit,
                limit,
                ef,
            )
            with engine_errors("fused search"):
                return self._answer(collection, key, run, reuse)

    def scroll(
        self, collection: str, filter: Filter, *, limit: int, offset: str | None = None
    ) -> tuple[list[Record], str | None]:
        """Points matching ``filter`` (tenant pushed down), one page, in id order."""
        with self._lease(self._part(collection, filter.tenant)) as lease:
            shard = lease.shard
            request = qe.ScrollRequest(
                offset=None if offset is None else check_ids([offset])[0],
                limit=limit,
                filter=edge_filter(filter),
                with_payload=True,
                with_vector=False,
            )
            if shard is None:
                return [], None
            with engine_errors("scroll"):
                records, next_id = shard.scroll(request)
            page = [Record(point_id_text(r.id), engine_payload(r.payload)) for r in records]
            return page, None if next_id is None else str(next_id)

    def count(self, collection: str, filter: Filter) -> int:
        """Exact count of the points matching ``filter``."""
        with self._lease(self._part(collection, filter.tenant)) as lease:
            shard = lease.shard
            if shard is None:
                return 0
            with engine_errors("count"):
                return int(shard.count(qe.CountRequest(exact=True, filter=edge_filter(filter))))

    def point_count(self, collection: str) -> int:
        """Points in ``collection`` (its parts' own counts: no filter, no scan). A part
        being swapped by a purge counts as it was last read, instead of waiting: the
        health sample a read takes now and then asks for this."""
        self._part(collection, "")  # NotFoundError for a collection not opened
        total = 0
        for key in self._part_keys([collection]):
            lease = self._lease(key, wait=False)
            if lease is None:
                total += self._counts.get(key, 0)
                continue
            with lease, engine_errors("info"):
                if lease.shard is not None:
                    self._counts[key] = int(lease.shard.info().points_count)
                    total += self._counts[key]
        return total

    def part_count(self, collection: str) -> int:
        """How many parts ``collection`` is split into (a tenant's part: ``part_of``)."""
        self._part(collection, "")  # NotFoundError for a collection not opened
        return self._parts[collection]

    def _part_keys(self, collections: Collection[str]) -> list[str]:
        """The keys of every part of ``collections`` (written or not)."""
        with self._lock:
            self._check_open()
            return [
                part_key(name, i) for name in collections for i in range(self._parts.get(name, 0))
            ]

    @property
    def shared(self) -> bool:
        """False: the embedded engine's points are this process's own."""
        return False

    @property
    def remote(self) -> bool:
        """False: the engine runs in this process; a read of it waits only on this
        process's CPU, so no deadline abandons it."""
        return False

    def answer_generation(self, collection: str) -> int | None:
        """The query cache's generation of ``collection`` (every write through this
        index bumps it); None with the query cache turned off. Closed: an error, as
        for a search."""
        self._check_open()
        return None if self._queries is None else self._queries.generation(collection)

    def optimize(self) -> None:
        """Run the engine's optimizers on every part's shard (blocks until done). A
        shard whose rewrite would not fit on the disk is left as it is (searches stay
        correct, only slower), with a warning."""
        with self._lock:
            self._check_open()
            names = list(self._shards)
        with engine_errors("optimize"):
            for name in names:
                try:
                    if self._disk is not None:
                        what = "qdrant-edge cannot optimize"
                        self._disk.require_room_to_rebuild(what, self._root, [name])
                except DiskSpaceError as exc:
                    _log.warning("%s; %s not optimized", exc, name)
                    continue
                with self._lease(name) as lease:
                    if lease.shard is not None:
                        lease.shard.optimize()
        restrict_tree(self._root)  # the segments the optimizers wrote

    def purge(self, tenants: Collection[str] | None = None) -> None:
        """Leave no deleted (or replaced) point's data in any file under the index
        directory: each part written since it was opened or last purged is rebuilt
        from its live points and swapped in (why nothing cheaper suffices, and how it
        is done without stalling: :mod:`memstrata.longterm.edge_purge`). ``tenants``:
        only the parts holding these tenants (a forget's), in every collection.

        Reads and writes go on while the copy is built; writes to the part wait only
        for the last catch-up and the swap, reads of it for the swap, and every
        thread for the engine's close and load of that one part (they hold the GIL).
        Costs a copy of the part's live points and an ``optimize()`` of the copy (in
        a child process); a part written during its rebuild stays to be purged."""
        with self._lock:
            self._check_open()
            if self._dim is None:
                return  # nothing opened, nothing written
            dim = self._dim
            names = sorted(self._dirty)
        if tenants is not None:
            wanted = {self._part(c, t) for c in self._parts for t in tenants}
            names = [name for name in names if name in wanted]
        if not names:
            return
        with CopyProcess(dim, self._search_threads) as process:
            for name in names:
                self._purge_part(name, dim, process)

    def _purge_part(self, name: str, dim: int, process: CopyProcess) -> None:
        live = self._root / name
        with self._purging[name]:  # one rebuild of a part at a time
            with self._writer(name):
                if name not in self._dirty:
                    return  # purged by another caller meanwhile
                if self._disk is not None:
                    what = "qdrant-edge cannot rebuild"
                    self._disk.require_room_to_rebuild(what, self._root, [name])
                # Writes from here on are caught up into the copy, and leave the
                # part to be purged again (what they replace stays on disk).
                self._journal.start(name)
                self._dirty.discard(name)
            try:
                source = LeasedShard(name, self._lease, self._writer(name), self._journal)
                with process.copy(live) as copy, engine_errors("purge"):
                    copy_live(copy, source)
                    with self._writer(name):
                        catch_up(copy, source, self._journal.stop(name))
                        copy.seal(expected=source.count())
                        self._swap(name, live, dim)
            except BaseException:
                with self._writer(name):
                    self._journal.stop(name)
                    self._dirty.add(name)
                raise
            remove_old(live)  # reads and writes go on meanwhile
            restrict_tree(live)  # the rebuilt shard's files
            # Same points, but another segment layout: answers kept may differ.
            if self._queries is not None:
                self._queries.invalidate(name.partition("/")[0])

    def _swap(self, name: str, live: Path, dim: int) -> None:
        """Put part ``name``'s sealed copy in place of its shard (the caller holds its
        write lock): reads of it wait from the old shard's close to the copy's open."""
        with self._leases.drained([name]), engine_errors("purge"):
            # Not flushed first: the copy holds all of it, and the WAL too.
            self._shards[name].close()
            try:
                swap_in(live)
            finally:
                # The old shard is closed: whatever the swap did, reopen what is on
                # disk (recover() first completes or undoes a failed swap).
                # Swapped in whole: only the old copy is left, for remove_old(), outside
                # the swap (reads wait here); else recover() completes or undoes it.
                whole = not staging_dir(live).exists() and not ready_marker(live).exists()
                extra = self._extra.get(name.partition("/")[0], {})
                self._shards[name] = self._open_shard(live, dim, extra, swapped=whole)
                self._unflushed[name] = 0

    def close(self) -> None:
        """Flush and close every shard once the calls running on it (a purge too)
        have ended; idempotent."""
        with ExitStack() as writers:
            for lock in self._leases.all_writers():
                writers.enter_context(lock)
            with self._lock:
                if self._closed:
                    return
                self._closed = True
                self._leases.wait_all_idle()
                shards, self._shards = list(self._shards.values()), {}
            if self._payloads is not None:
                self._payloads.clear()
            if self._queries is not None:
                self._queries.clear()
            with engine_errors("close"):
                for shard in shards:
                    shard.flush()
                    shard.close()
            restrict_tree(self._root)

    def __enter__(self) -> EdgeIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _matching_ids(shard: qe.EdgeShard, flt: qe.Filter) -> list[str]:
    """Ids of every point matching ``flt``, read a page at a time without payloads."""
    ids: list[str] = []
    offset: Any = None
    while True:
        request = qe.ScrollRequest(
            offset=offset, limit=_ID_PAGE, filter=flt, with_payload=False, with_vector=False
        )
        records, offset = shard.scroll(request)
        ids.extend(point_id_text(r.id) for r in records)
        if offset is None:
            return ids


_ID_PAGE = 4096


def _read_payloads(shard: qe.EdgeShard, ids: Sequence[str]) -> dict[str, Mapping[str, Any]]:
    """The payloads of ``ids`` as the engine decodes them, by id (absent ids left out)."""
    records = shard.retrieve(list[int | uuid.UUID | str](ids), True, False)
    return {point_id_text(r.id): engine_payload(r.payload) for r in records}


def _vector_key(vector: NDArray[np.float32]) -> bytes:
    """A (validated) query vector as a cache key: its float32 bytes."""
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


# Below this many hits a search decodes payloads itself (one engine call) instead of
# asking the cache and, for the misses, the engine a second time.
_CACHED_READ_MIN = 64
