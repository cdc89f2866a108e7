"""An embedded collection split into parts by tenant: the unit a forget rebuilds.

Why parts: a purge (:mod:`memstrata.longterm.edge_purge`) rebuilds a shard from its
live points and swaps the copy in, and the swap has to ``close()`` the old shard and
``load()`` the copy in the serving process. qdrant-edge-py 0.9.0 holds Python's GIL
through both, for a time that grows with the shard's points (load: ~0.25 s at 30k
points, seconds at 300k; close: a flush of whatever was not yet flushed, 5 s after a
bulk load of 30k), so every thread of the process - every tenant's reads - stopped
that long at each forget. A collection is therefore stored as ``parts`` shards, and a
forget rebuilds and swaps only the part holding the forgotten user's tenant.

Layout: ``<root>/<collection>/parts.json`` (the part count and the collection's
vectors) and one shard per part, ``p000`` ... , created on the part's first write.
A tenant lives in exactly one part (:func:`part_of`: a stable hash of the tenant id),
and every call of the index names its tenant (the tenant filter is always pushed
down), so each read and write goes to one shard: no fan-out, no merge; a tenant's
BM25 IDF statistics and the engine's RRF fusion are computed over the same points,
in one engine call, exactly as in a single shard.

Before parts, the collection directory was itself the shard. :func:`split_single_shard`
moves such a collection into parts when the index opens it (once): every point is
copied into its tenant's part in a staging directory beside it, then swapped in with
the steps and crash recovery of a purge (:func:`~memstrata.longterm.edge_purge.recover`),
so an interrupted migration ends with either the old shard or the complete parts.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from memstrata.errors import BackendError, BackendUnavailableError, ValidationError
from memstrata.longterm.edge_purge import (
    COPY_PAGE,
    discard_staging,
    engine_point,
    mark_ready,
    remove_old,
    staging_dir,
    swap_in,
    wire_point,
)
from memstrata.longterm.edge_shards import (
    CONFIG_FILE,
    check_stored_config,
    create_shard,
    engine_errors,
    shard_config,
)
from memstrata.longterm.layout import check_existing_layout
from memstrata.longterm.points import DENSE_VECTOR, SPARSE_VECTOR

PARTS_FILE = "parts.json"
DEFAULT_PARTS = 16
"""Parts of a new collection. A forget stops reads (the GIL, in load and close) for
about the time its part takes to load: ~1/16 of the collection with tenants spread
evenly. An existing collection keeps the count it was created with."""
MAX_PARTS = 256
_LAYOUT_VERSION = 1
_PART_NAME = re.compile(r"p(\d{3})")


@dataclass(frozen=True, slots=True)
class PartsLayout:
    """What ``parts.json`` records: the part count and every part's vectors (a part
    created later gets the collection's layout, not the release's)."""

    parts: int
    dim: int
    extra: Mapping[str, int] = field(default_factory=dict)
    """The named dense vectors besides ``dense`` (name: size)."""

    def as_json(self) -> dict[str, Any]:
        """The file's content."""
        return {
            "version": _LAYOUT_VERSION,
            "parts": self.parts,
            "vectors": {DENSE_VECTOR: self.dim, **self.extra},
            "sparse_vectors": [SPARSE_VECTOR],
        }


def check_parts(parts: int) -> int:
    """A part count: an int from 1 to :data:`MAX_PARTS`."""
    if isinstance(parts, bool) or not isinstance(parts, int) or not 1 <= parts <= MAX_PARTS:
        raise ValidationError("parts", f"must be an int from 1 to {MAX_PARTS}, got {parts!r}")
    return parts


def part_of(tenant: str, parts: int) -> int:
    """The part holding ``tenant``: the first 8 bytes of its BLAKE2b hash, modulo
    ``parts`` (stable across processes and releases, unlike ``hash()``)."""
    digest = hashlib.blake2b(tenant.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % parts


def part_name(index: int) -> str:
    """The directory name of part ``index`` inside its collection's directory."""
    return f"p{index:03d}"


def part_key(collection: str, index: int) -> str:
    """A part's name in the index (and its path under the index root)."""
    return f"{collection}/{part_name(index)}"


def is_single_shard(collection_dir: Path) -> bool:
    """Whether ``collection_dir`` is a whole collection in one shard (before parts)."""
    return (collection_dir / CONFIG_FILE).exists()


def read_layout(collection_dir: Path, dim: int) -> PartsLayout | None:
    """The collection's recorded layout, checked against ``dim`` and this release's
    BM25 vectors (a ``ValidationError`` naming the mismatch); None where none is
    recorded yet."""
    path = collection_dir / PARTS_FILE
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BackendUnavailableError(f"qdrant-edge cannot read {path}: {exc}") from exc
    try:
        stored = json.loads(raw)
        vectors = {str(name): int(size) for name, size in stored["vectors"].items()}
        sparse = [str(name) for name in stored["sparse_vectors"]]
        parts = check_parts(stored["parts"])
    except (ValueError, KeyError, TypeError, AttributeError, ValidationError) as exc:
        raise BackendUnavailableError(f"qdrant-edge cannot read {path}: {exc}") from exc
    check_existing_layout(str(collection_dir), vectors.get(DENSE_VECTOR), sparse, dim)
    extra = {name: size for name, size in vectors.items() if name != DENSE_VECTOR}
    return PartsLayout(parts, dim, extra)


def write_layout(collection_dir: Path, layout: PartsLayout) -> None:
    """Record ``layout`` durably (written beside, synced, renamed into place)."""
    collection_dir.mkdir(parents=True, exist_ok=True)
    path = collection_dir / PARTS_FILE
    scratch = path.with_name(PARTS_FILE + ".tmp")
    with scratch.open("w", encoding="utf-8") as out:
        json.dump(layout.as_json(), out)
        out.flush()
        os.fsync(out.fileno())
    scratch.replace(path)
    _sync_dir(collection_dir)


def existing_parts(collection_dir: Path, parts: int) -> list[int]:
    """The parts of the collection that have a shard on disk (created by a write)."""
    found = []
    for entry in collection_dir.iterdir() if collection_dir.is_dir() else ():
        match = _PART_NAME.fullmatch(entry.name)
        if match and int(match.group(1)) < parts and (entry / CONFIG_FILE).exists():
            found.append(int(match.group(1)))
    return sorted(found)


def split_single_shard(
    collection_dir: Path, parts: int, dim: int, search_threads: int
) -> PartsLayout:
    """Move a collection stored as one shard (before parts) into ``parts`` parts, each
    point into its tenant's part, and return the layout recorded. Runs when the index
    opens the collection, before anything reads it; crash-safe like a purge (see the
    module docstring). The parts are optimized and flushed before the swap."""
    extra = check_stored_config(collection_dir, dim)
    layout = PartsLayout(check_parts(parts), dim, extra)
    discard_staging(collection_dir)
    staging = staging_dir(collection_dir)
    copies: dict[int, qe.EdgeShard] = {}
    with engine_errors(f"splitting {collection_dir} into parts"):
        source = qe.EdgeShard.load(str(collection_dir), shard_config(dim, search_threads, 0, extra))
        try:
            expected = int(source.count(qe.CountRequest(exact=True)))
            offset: Any = None
            while True:
                request = qe.ScrollRequest(
                    offset=offset, limit=COPY_PAGE * 4, with_payload=True, with_vector=True
                )
                records, offset = source.scroll(request)
                for index, points in _by_part(records, parts).items():
                    copy = copies.get(index)
                    if copy is None:
                        path = staging / part_name(index)
                        copy = create_shard(path, dim, search_threads, extra, indexing_threads=0)
                        copies[index] = copy
                    copy.update(qe.UpdateOperation.upsert_points(points))
                if offset is None:
                    break
            copied = 0
            for index in sorted(copies):
                copy = copies.pop(index)
                try:
                    copy.optimize()
                    copy.flush()
                    copied += int(copy.count(qe.CountRequest(exact=True)))
                finally:
                    copy.close()
        except BaseException:
            for copy in copies.values():
                copy.close()
            discard_staging(collection_dir)
            raise
        finally:
            source.close()
    if copied != expected:
        discard_staging(collection_dir)
        raise BackendError(
            f"qdrant-edge: splitting {collection_dir} into parts copied {copied} of "
            f"{expected} points"
        )
    write_layout(staging, layout)
    mark_ready(collection_dir)
    swap_in(collection_dir)
    remove_old(collection_dir)
    return layout


def _by_part(records: list[Any], parts: int) -> dict[int, list[qe.Point]]:
    grouped: dict[int, list[qe.Point]] = {}
    for record in records:
        tenant = (record.payload or {}).get("tenant")
        if not isinstance(tenant, str):
            # Every point the facade wrote names its tenant; one that does not has no
            # part, and dropping it silently would lose data.
            raise BackendError(f"qdrant-edge: point {record.id} has no tenant to place it by")
        grouped.setdefault(part_of(tenant, parts), []).append(engine_point(wire_point(record)))
    return grouped


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
