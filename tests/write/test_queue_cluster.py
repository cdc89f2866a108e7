"""Smoke test on the real 3-node cluster: every transaction stays inside one slot."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pytest

from memstrata.working import RedisBackend
from memstrata.write.consume import QueueWorker
from memstrata.write.entries import QueueEntry
from memstrata.write.queue import WriteQueue

pytestmark = pytest.mark.cluster


def test_queue_round_trip_on_a_cluster(cluster_backend: RedisBackend) -> None:
    seen: list[QueueEntry] = []

    def handler(entries: Sequence[QueueEntry]) -> None:
        seen.extend(entries)
        if any(e.payload.get("poison") for e in entries):
            raise RuntimeError("store rejected the entry")

    # Several names, so the queues land on different nodes.
    for n in range(3):
        queue = WriteQueue(cluster_backend.client, f"cq-{n}-{uuid.uuid4().hex[:8]}", maxlen=5)
        for i in range(20):
            queue.enqueue("observe", {"i": i})
        queue.enqueue("observe", {"i": 0})  # a replay: acknowledged without the handler
        queue.enqueue("observe", {"poison": True})
        worker = QueueWorker(
            queue, handler, "w1", batch_size=8, block_ms=20, claim_idle_ms=20, max_deliveries=2
        )
        with worker:
            queue.flush(10.0)
        stats = queue.stats()
        assert (stats.enqueued, stats.pending, stats.lag, stats.dead_lettered) == (22, 0, 0, 1)
        assert queue.dead_letters()[0].error == "RuntimeError"
        # Everything was enqueued before any ack, so only an explicit trim can cut now.
        assert stats.length == 22
        assert queue.trim() == 17
        assert queue.stats().length == 5
        # The failed batch's good entries were retried one by one, so count contents.
        assert {e.payload["i"] for e in seen if "i" in e.payload} == set(range(20))
        seen.clear()
