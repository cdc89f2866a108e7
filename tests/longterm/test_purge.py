"""The embedded index leaves no trace of a purged point in any file under its directory.

Every test scans the bytes of every file under the index root for a marker that was
only ever written into the deleted points' payloads (text, user id, slot). Each
checks first that the marker *is* found after the delete: a scan that cannot see
it would prove nothing.
"""

from __future__ import annotations

import os
import shutil
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.edge_parts import DEFAULT_PARTS, part_key, part_of
from memstrata.longterm.edge_purge import (
    mark_ready,
    ready_marker,
    staging_dir,
    trash_dir,
)
from memstrata.longterm.points import KNOWLEDGE, MEMORIES, Filter, Point
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.testing.disk import files_holding

PointFactory = Callable[..., Point]
BM25 = Bm25Encoder()


def _part_dir(root: Path, collection: str, tenant: str) -> Path:
    """The directory of the shard holding ``tenant``'s points of ``collection``."""
    return root / part_key(collection, part_of(tenant, DEFAULT_PARTS))


def _marker() -> str:
    return f"zq{uuid.uuid4().hex[:12]}"


@pytest.fixture
def edge(tmp_path: Path) -> EdgeIndex:
    index = EdgeIndex(tmp_path / "edge")
    index.ensure_collections(32)
    return index


def _forgotten_and_kept(
    make_point: PointFactory, marker: str, n: int = 60
) -> tuple[list[Point], list[Point]]:
    """``n`` points of user ``<marker>-user`` carrying the marker in text and slot
    too, and points of another user and another tenant that must survive."""
    user = f"{marker}-user"
    gone = [
        make_point(f"secret {marker} number {i}", "acme", user=user, slot=f"{marker}-s{i % 5}")
        for i in range(n)
    ]
    kept = [make_point(f"kept note {i}", "acme", user="u1") for i in range(n)]
    kept += [make_point(f"other tenant {i}", "globex", user="u1") for i in range(5)]
    return gone, kept


def test_purge_leaves_no_deleted_text_in_any_file(
    edge: EdgeIndex, tmp_path: Path, make_point: PointFactory
) -> None:
    marker = _marker()
    gone, kept = _forgotten_and_kept(make_point, marker)
    edge.upsert(MEMORIES, gone + kept)
    edge.optimize()
    assert edge.delete_where(MEMORIES, Filter(tenant="acme", user=f"{marker}-user")) == len(gone)
    root = tmp_path / "edge"
    # What qdrant-edge keeps after a delete: the WAL and the segment (payload
    # storage, keyword index maps) still hold the text; flush() and optimize()
    # change nothing of it at this size.
    edge.optimize()
    left = files_holding(root, marker)
    assert any("/wal/" in path for path in left), left
    assert any("payload_storage" in path for path in left), left
    edge.purge()
    assert files_holding(root, marker) == []
    assert files_holding(root, "kept note 7")  # the scan does read what is there
    assert not [p for p in os.listdir(root) if ".purge" in p]  # no copy left beside
    assert edge.count(MEMORIES, Filter(tenant="acme")) == len(kept) - 5
    (survivor,) = edge.retrieve(MEMORIES, [kept[-1].id], "globex")
    assert survivor.payload["text"] == "other tenant 4"
    hits = edge.search_sparse(MEMORIES, BM25.encode_query("kept note 7"), Filter(tenant="acme"), 1)
    assert hits[0].id == kept[7].id
    edge.close()
    assert files_holding(root, marker) == []
    reopened = EdgeIndex(root)
    reopened.ensure_collections(32)
    assert reopened.count(MEMORIES, Filter(tenant="acme")) == len(kept) - 5
    assert reopened.retrieve(MEMORIES, [gone[0].id], "acme") == []
    reopened.close()


def test_a_replaced_payload_is_purged_too(
    edge: EdgeIndex, tmp_path: Path, make_point: PointFactory
) -> None:
    marker = _marker()
    point = make_point(f"old value {marker}", "acme")
    edge.upsert(MEMORIES, [point])
    edge.upsert(MEMORIES, [make_point("new value", "acme", point_id=point.id)])
    assert files_holding(tmp_path / "edge", marker)
    edge.purge()
    assert files_holding(tmp_path / "edge", marker) == []
    (record,) = edge.retrieve(MEMORIES, [point.id], "acme")
    assert record.payload["text"] == "new value"
    edge.close()


def test_only_collections_written_since_are_rebuilt(
    edge: EdgeIndex, tmp_path: Path, make_point: PointFactory
) -> None:
    edge.upsert(KNOWLEDGE, [make_point("a document chunk", "acme")])
    # The first purge after open rebuilds every collection: an earlier process may
    # have deleted from any of them.
    edge.purge()
    edge.upsert(MEMORIES, [make_point("a memory", "acme")])
    edge.purge()
    segments = {
        name: os.listdir(_part_dir(tmp_path / "edge", name, "acme") / "segments")
        for name in ("memories", "knowledge")
    }
    edge.upsert(MEMORIES, [make_point("another memory", "acme")])
    edge.purge()
    knowledge, memories = (
        _part_dir(tmp_path / "edge", n, "acme") for n in ("knowledge", "memories")
    )
    assert os.listdir(knowledge / "segments") == segments["knowledge"]
    assert os.listdir(memories / "segments") != segments["memories"]
    edge.close()


def test_reads_go_on_and_writes_wait_during_a_purge(
    edge: EdgeIndex, make_point: PointFactory
) -> None:
    edge.upsert(MEMORIES, [make_point(f"note {i}", "acme") for i in range(300)])
    query = make_point("probe", "acme").dense
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        try:
            while not stop.is_set():
                assert len(edge.search_dense(MEMORIES, query, Filter(tenant="acme"), 5)) == 5
                edge.count(MEMORIES, Filter(tenant="acme"))
        except BaseException as exc:
            errors.append(exc)

    def writer() -> None:
        try:
            for i in range(20):
                edge.upsert(MEMORIES, [make_point(f"written during {i}", "acme")])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    threads.append(threading.Thread(target=writer))
    for thread in threads:
        thread.start()
    for _ in range(3):
        edge.purge()
    threads[-1].join()
    stop.set()
    for thread in threads:
        thread.join()
    assert errors == []
    assert edge.count(MEMORIES, Filter(tenant="acme")) == 320  # no write lost in a swap
    edge.close()


def _stored(tmp_path: Path, make_point: PointFactory) -> tuple[Path, Point]:
    root = tmp_path / "edge"
    index = EdgeIndex(root)
    index.ensure_collections(32)
    point = make_point("the only point", "acme")
    index.upsert(MEMORIES, [point])
    index.close()
    return _part_dir(root, MEMORIES, "acme"), point


def _reopen_finds(live: Path, point: Point) -> None:
    index = EdgeIndex(live.parent.parent)
    index.ensure_collections(32)
    assert [r.id for r in index.retrieve(MEMORIES, [point.id], "acme")] == [point.id]
    index.close()
    for leftover in (staging_dir(live), ready_marker(live), trash_dir(live)):
        assert not leftover.exists(), leftover


@pytest.mark.parametrize(
    "crash_point",
    ["copy unfinished", "copy ready", "old moved away", "new in place", "old left"],
)
def test_a_purge_interrupted_anywhere_recovers_on_open(
    crash_point: str, tmp_path: Path, make_point: PointFactory
) -> None:
    """Each state the swap passes through, as a crash would leave it: reopening
    keeps one complete shard and removes every other copy (the old one holds the
    purged data)."""
    live, point = _stored(tmp_path, make_point)
    shutil.copytree(live, staging_dir(live))  # stands in for the rebuilt copy
    if crash_point != "copy unfinished":
        mark_ready(live)
    if crash_point in ("old moved away", "new in place", "old left"):
        live.rename(trash_dir(live))
    if crash_point in ("new in place", "old left"):
        staging_dir(live).rename(live)
    if crash_point == "old left":
        ready_marker(live).unlink()
    _reopen_finds(live, point)
