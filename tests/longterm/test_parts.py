"""An embedded collection is split into parts by tenant, and a forget rebuilds only the
part holding its tenant (issue 31, "Why" 9): another tenant's reads and writes never
wait for it; a collection stored as one shard (before parts) is split on open, and a
split interrupted anywhere recovers."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import qdrant_edge as qe

import memstrata.longterm.edge as edge_module
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.edge_parts import (
    DEFAULT_PARTS,
    PARTS_FILE,
    part_key,
    part_of,
)
from memstrata.longterm.edge_purge import mark_ready, ready_marker, staging_dir, trash_dir
from memstrata.longterm.edge_requests import edge_point
from memstrata.longterm.edge_shards import create_shard
from memstrata.longterm.points import KNOWLEDGE, MEMORIES, Filter, Point
from memstrata.testing.disk import files_holding

PointFactory = Callable[..., Point]
DIM = 32  # make_point's vectors
UNBLOCKED_S = 60.0  # a call that is not blocked ends well within this on a loaded machine
# Two tenants in different parts (checked below), the first forgotten.
LEAVING, STAYING = "acme", "globex"


@pytest.fixture
def edge(tmp_path: Path) -> Iterator[EdgeIndex]:
    index = EdgeIndex(tmp_path / "edge")
    index.ensure_collections(DIM)
    yield index
    index.close()


def test_the_two_tenants_are_in_different_parts() -> None:
    assert part_of(LEAVING, DEFAULT_PARTS) != part_of(STAYING, DEFAULT_PARTS)


def test_a_tenant_always_lands_in_the_same_part() -> None:
    # A stable hash, not Python's salted hash(): the same part in every process.
    assert [part_of(t, 16) for t in ("acme", "globex", "t-reader")] == [1, 10, 3]
    assert {part_of(f"t{i}", 16) for i in range(200)} == set(range(16))


def test_another_tenants_reads_and_writes_go_on_while_a_part_is_swapped(
    edge: EdgeIndex, make_point: PointFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    edge.upsert(MEMORIES, [make_point(f"leaving note {i}", LEAVING) for i in range(20)])
    staying = [make_point(f"staying note {i}", STAYING) for i in range(20)]
    edge.upsert(MEMORIES, staying)
    swapping, release = threading.Event(), threading.Event()
    original = edge_module.swap_in

    def held(live: Path) -> None:
        swapping.set()
        release.wait()
        original(live)

    monkeypatch.setattr(edge_module, "swap_in", held)
    edge.delete_where(MEMORIES, Filter(tenant=LEAVING, user="u1"))
    purge = threading.Thread(target=edge.purge, args=([LEAVING],))
    purge.start()
    try:
        assert swapping.wait(UNBLOCKED_S)
        # The leaving tenant's part is drained and closed now; the other's is not.
        done: list[Any] = []

        def other_tenant() -> None:
            found = edge.search_dense(MEMORIES, staying[3].dense, Filter(tenant=STAYING), 3)
            edge.upsert(MEMORIES, [make_point("written meanwhile", STAYING)])
            done.append(found[0].id)

        reader = threading.Thread(target=other_tenant)
        reader.start()
        reader.join(UNBLOCKED_S)
        blocked = reader.is_alive()
    finally:
        release.set()
        purge.join()
    reader.join()
    assert not blocked, "another tenant's read or write waited for the swap"
    assert done == [staying[3].id]
    assert edge.count(MEMORIES, Filter(tenant=STAYING)) == 21
    assert edge.count(MEMORIES, Filter(tenant=LEAVING)) == 0


def test_a_forget_rebuilds_only_its_tenants_part(
    edge: EdgeIndex, make_point: PointFactory, tmp_path: Path
) -> None:
    root = tmp_path / "edge"
    edge.upsert(MEMORIES, [make_point("leaving zqleave", LEAVING, user="bob")])
    edge.upsert(MEMORIES, [make_point("staying zqstay", STAYING)])
    edge.upsert(KNOWLEDGE, [make_point("a chunk zqchunk", STAYING)])
    before = sorted(files_holding(root, "zqstay")) + sorted(files_holding(root, "zqchunk"))
    assert before
    assert edge.delete_where(MEMORIES, Filter(tenant=LEAVING, user="bob")) == 1
    edge.purge([LEAVING])
    assert files_holding(root, "zqleave") == []
    # The other tenant's parts are the same files: not rebuilt, never swapped.
    assert sorted(files_holding(root, "zqstay")) + sorted(files_holding(root, "zqchunk")) == before
    # They stay to be purged by a purge of every tenant.
    assert edge.delete_where(MEMORIES, Filter(tenant=STAYING, user="u1")) == 1
    edge.purge()
    assert files_holding(root, "zqstay") == []


def test_a_tenant_never_written_reads_empty_and_creates_nothing(
    edge: EdgeIndex, make_point: PointFactory, tmp_path: Path
) -> None:
    probe = make_point("probe", STAYING)
    assert edge.search_dense(MEMORIES, probe.dense, Filter(tenant=STAYING), 5) == []
    assert edge.count(MEMORIES, Filter(tenant=STAYING)) == 0
    assert edge.retrieve(MEMORIES, [probe.id], STAYING) == []
    assert edge.scroll(MEMORIES, Filter(tenant=STAYING), limit=5) == ([], None)
    assert edge.delete_where(MEMORIES, Filter(tenant=STAYING)) == 0
    assert edge.point_count(MEMORIES) == 0
    assert sorted(os.listdir(tmp_path / "edge" / MEMORIES)) == [PARTS_FILE]


# -- a collection stored as one shard, before parts ------------------------------------


def _single_shard(root: Path, points: list[Point]) -> None:
    """``memories`` as it was stored before parts: the collection directory is the shard."""
    shard = create_shard(root / MEMORIES, DIM, 1)
    shard.update(qe.UpdateOperation.upsert_points([edge_point(p) for p in points]))
    shard.flush()
    shard.close()


def _opens_with_every_point(root: Path, points: list[Point]) -> None:
    index = EdgeIndex(root)
    index.ensure_collections(DIM)
    try:
        for point in points:
            tenant = str(point.payload["tenant"])
            (record,) = index.retrieve(MEMORIES, [point.id], tenant)
            assert record.payload["text"] == point.payload["text"]
        assert index.point_count(MEMORIES) == len(points)
        hits = index.search_dense(MEMORIES, points[0].dense, Filter(tenant=LEAVING), 1)
        assert hits[0].id == points[0].id
    finally:
        index.close()
    home = root / MEMORIES
    assert (home / PARTS_FILE).exists() and not (home / "edge_config.json").exists()
    for leftover in (staging_dir(home), ready_marker(home), trash_dir(home)):
        assert not leftover.exists(), leftover
    for tenant in (LEAVING, STAYING):
        assert (root / part_key(MEMORIES, part_of(tenant, DEFAULT_PARTS))).is_dir()


def _points(make_point: PointFactory) -> list[Point]:
    return [make_point(f"note {i} of {t}", t) for t in (LEAVING, STAYING) for i in range(30)]


def test_a_collection_stored_as_one_shard_is_split_on_open(
    tmp_path: Path, make_point: PointFactory
) -> None:
    points = _points(make_point)
    _single_shard(tmp_path, points)
    _opens_with_every_point(tmp_path, points)
    _opens_with_every_point(tmp_path, points)  # and opens as parts from then on


@pytest.mark.parametrize(
    "crash_point",
    ["copy unfinished", "copy ready", "old moved away", "new in place", "old left"],
)
def test_a_split_interrupted_anywhere_recovers_on_open(
    crash_point: str, tmp_path: Path, make_point: PointFactory
) -> None:
    points = _points(make_point)
    _single_shard(tmp_path / "split", points)
    with EdgeIndex(tmp_path / "split") as split:  # the parts, as a split builds them
        split.ensure_collections(DIM)
    root = tmp_path / "edge"
    _single_shard(root, points)
    home = root / MEMORIES
    shutil.copytree(tmp_path / "split" / MEMORIES, staging_dir(home))
    if crash_point != "copy unfinished":
        mark_ready(home)
    if crash_point in ("old moved away", "new in place", "old left"):
        home.rename(trash_dir(home))
    if crash_point in ("new in place", "old left"):
        staging_dir(home).rename(home)
    if crash_point == "old left":
        ready_marker(home).unlink()
    _opens_with_every_point(root, points)


def test_a_part_is_flushed_once_enough_points_were_written(
    edge: EdgeIndex, make_point: PointFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A close flushes whatever the shard never flushed, holding the GIL (a purge's swap
    closes the part): so a part is flushed every FLUSH_EVERY points written. A flush
    moves the WAL's acknowledged index (``wal/first-index``)."""
    monkeypatch.setattr(edge_module, "FLUSH_EVERY", 10)
    wal = tmp_path / "edge" / part_key(MEMORIES, part_of(LEAVING, DEFAULT_PARTS)) / "wal"
    edge.upsert(MEMORIES, [make_point(f"note {i}", LEAVING) for i in range(9)])
    assert not (wal / "first-index").exists()  # not flushed yet
    edge.upsert(MEMORIES, [make_point("the tenth", LEAVING)])
    assert (wal / "first-index").exists()
