"""The disk-pressure rules one at a time, with an injected free-space probe: the guard's
thresholds and hysteresis, the start check, the collections' own checks (creation,
writes, rebuilds, optimize), the queue taking no batch while writes are off, the
consumers pausing during an outage, and the key store while Valkey refuses writes."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.faults.support import FakeDisk, small_policy, valkey_refuses_writes

from memstrata.disk import COLLECTION_BYTES, DiskGuard, DiskPolicy, check_start
from memstrata.errors import (
    MIB,
    BackendUnavailableError,
    ConfigError,
    DiskSpaceError,
    RateLimitedError,
    ReadOnlyError,
    WriteNotQueuedError,
    error_code,
)
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.points import MEMORIES, Point, SparseVector
from memstrata.service.auth import KeyStore
from memstrata.working import EmbeddedValkey, RedisBackend
from memstrata.write.consume import QueueWorker
from memstrata.write.queue import WriteQueue
from memstrata.write.submit import OutageWatch


def test_the_guard_turns_read_only_below_the_reserve_and_back_past_the_margin() -> None:
    disk = FakeDisk(free_mib=500)
    guard = DiskGuard([Path("/data")], small_policy(disk))
    assert guard.writable()
    disk.set_free_mib(127)
    status = guard.status()
    assert status.read_only and status.needed_bytes == 128 * MIB
    with pytest.raises(ReadOnlyError) as refused:
        guard.require_writable()
    assert str(refused.value) == "read-only: 127 MiB free on /data, need 128 MiB"
    assert refused.value.retry_after_s == 30.0 and error_code(refused.value).http == 503
    disk.set_free_mib(140)  # above the reserve, below reserve + margin: still off
    assert not guard.writable()
    disk.set_free_mib(144)
    assert guard.writable() and guard.transitions == 1


def test_the_tightest_filesystem_decides() -> None:
    free = {Path("/a"): 900 * MIB, Path("/b"): 50 * MIB}
    guard = DiskGuard(free, DiskPolicy(probe=lambda p: free[p]))
    assert guard.status().path == "/b" and not guard.writable()


def test_a_policy_is_checked() -> None:
    with pytest.raises(ConfigError, match="floor_bytes"):
        DiskPolicy(reserve_bytes=10, floor_bytes=20)
    with pytest.raises(ConfigError, match="reserve_bytes"):
        DiskPolicy(reserve_bytes=-1)
    assert DiskPolicy.with_reserve_mib(256).floor_bytes == 128 * MIB


def test_start_needs_the_collections_still_to_allocate_plus_the_floor(tmp_path: Path) -> None:
    collections = [tmp_path / "qdrant" / name for name in ("a", "b")]
    disk = FakeDisk(free_mib=2 * 96 + 63)
    with pytest.raises(DiskSpaceError) as refused:
        check_start(tmp_path, collections, small_policy(disk))
    assert f"need {(2 * COLLECTION_BYTES + 64 * MIB) // MIB} MiB" in str(refused.value)
    assert "2 embedded collections" in str(refused.value)
    disk.set_free_mib(2 * 96 + 64)
    check_start(tmp_path, collections, small_policy(disk))  # starts (read-only)


def _point(tenant: str = "t") -> Point:
    vector = np.ones(8, dtype=np.float32) / np.sqrt(8)
    return Point(
        str(uuid.uuid4()), vector, SparseVector((1,), (1.0,)), {"tenant": tenant, "user": "u"}
    )


def test_a_collection_is_not_created_on_a_disk_without_room_for_it(tmp_path: Path) -> None:
    disk = FakeDisk(free_mib=100)  # under one collection's 96 MiB + the 64 MiB floor
    index = EdgeIndex(tmp_path / "q", disk=small_policy(disk))
    # A collection's shards (its parts) are created by their first write.
    index.ensure_collections(8)
    with pytest.raises(DiskSpaceError, match="qdrant-edge cannot create memories/p"):
        index.upsert(MEMORIES, [_point()])
    assert [p.name for p in (tmp_path / "q" / "memories").iterdir()] == ["parts.json"]
    index.close()


def test_writes_below_the_floor_are_refused_and_nothing_is_lost(tmp_path: Path) -> None:
    disk = FakeDisk()
    index = EdgeIndex(tmp_path / "q", disk=small_policy(disk))
    index.ensure_collections(8)
    kept = _point()
    index.upsert(MEMORIES, [kept])
    disk.set_free_mib(63)
    with pytest.raises(ReadOnlyError):
        index.upsert(MEMORIES, [_point()])
    with pytest.raises(ReadOnlyError):
        index.delete(MEMORIES, [kept.id], "t")
    with pytest.raises(DiskSpaceError, match="qdrant-edge cannot rebuild"):
        index.check_room_to_purge([MEMORIES])
    with pytest.raises(DiskSpaceError, match="qdrant-edge cannot rebuild"):
        index.purge()
    index.optimize()  # skipped with a warning, never a failure
    assert [r.id for r in index.retrieve(MEMORIES, [kept.id], "t")] == [kept.id]
    disk.set_free_mib(100_000)
    index.purge()
    assert index.point_count(MEMORIES) == 1
    index.close()


def test_no_batch_is_taken_while_the_gate_is_closed(embedded_valkey: EmbeddedValkey) -> None:
    backend = RedisBackend.from_url(embedded_valkey.url)
    gate = {"open": False}
    queue = WriteQueue(
        backend.client, f"q{uuid.uuid4().hex[:8]}", consume_gate=lambda: gate["open"]
    )
    handled: list[Any] = []
    queue.enqueue_many("observe", [{"i": i} for i in range(5)])
    worker = QueueWorker(queue, handled.extend, "c1", block_ms=0, claim_idle_ms=1)
    for _ in range(5):
        assert worker.run_once() == 0
    assert queue.stats().pending == 0  # nothing delivered, so no delivery was spent
    gate["open"] = True
    assert worker.run_once() == 5 and len(handled) == 5
    backend.close()


def test_an_outage_pauses_consumers_until_the_probe_answers() -> None:
    up = {"now": False}

    def probe() -> None:
        if not up["now"]:
            raise BackendUnavailableError("down")

    watch = OutageWatch(probe, probe_interval_s=0.001)

    def handler(entries: Any) -> None:
        raise BackendUnavailableError("L3 down")

    with pytest.raises(BackendUnavailableError):
        watch.guarded(handler)([])
    assert watch.paused and watch.outages == 1
    assert not watch.open()
    up["now"] = True
    time.sleep(0.002)  # past the probe interval
    assert watch.open() and not watch.paused


def test_a_key_is_verified_and_rate_limited_while_valkey_refuses_writes(
    embedded_valkey: EmbeddedValkey,
) -> None:
    backend = RedisBackend.from_url(embedded_valkey.url)
    keys = KeyStore(backend.client)
    created = keys.create("acme", "bot", "reader", rate_per_s=3)
    valkey_refuses_writes(backend.client, True)
    try:
        caller = keys.verify(created.key, "retrieve")
        assert caller.tenant == "acme"
        assert keys.audit_failures == 1
        with pytest.raises(RateLimitedError):
            for _ in range(10):
                keys.verify(created.key, "retrieve")
    finally:
        valkey_refuses_writes(backend.client, False)
        backend.close()


def test_unkept_writes_have_their_own_typed_error() -> None:
    error = WriteNotQueuedError("BackendError", 7)
    assert error_code(error).http == 503 and error.retry_after_s == 1.0
    assert str(error).startswith("the write was not queued (7 chunks): BackendError;")
