"""A consumer process building the real handler (MiniLM, qdrant-edge, the memory store)
is SIGKILLed mid-batch and replaced: every acknowledged turn is in L3 exactly once.

qdrant-edge is single-process per directory, so only consumer processes hold the L3
store while they run; the test enqueues through the Valkey socket and opens the
store itself only after the last consumer stopped."""

from __future__ import annotations

import signal
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from memstrata.extract.models import Turn
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.models import Filter
from memstrata.memory.handler import KIND_TURN, turn_payload
from memstrata.memory.queue import WriteQueue
from memstrata.testing.processes import spawn_queue_worker, wait_for
from memstrata.working import EmbeddedValkey, RedisBackend

SRC = Path(__file__).resolve().parents[2] / "src"
TOTAL = 120
BATCH = 10
TENANT = "crash"


def spawn(url: str, queue: str, consumer: str, store: Path, log: Path, claim_ms: int) -> Any:
    args = [
        "--redis-url", url, "--queue", queue, "--consumer", consumer,
        "--handler-factory", "memstrata.memory.handler:worker_handler",
        "--handler-arg", f"redis_url={url}",
        "--handler-arg", f"qdrant_path={store}",
        "--handler-arg", f"redis_prefix=mv{queue}",
        "--batch-size", str(BATCH), "--block-ms", "50", "--claim-idle-ms", str(claim_ms),
    ]  # fmt: skip
    return spawn_queue_worker(args, log, pythonpath=[SRC])


def test_sigkill_mid_batch_then_restart_writes_every_turn_once(
    embedded_valkey: EmbeddedValkey, tmp_path: Path
) -> None:
    url = embedded_valkey.url
    name = f"q{uuid.uuid4().hex[:10]}"
    backend = RedisBackend.from_url(url)
    client = cast(Any, backend.client)
    queue = WriteQueue(client, name)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for i in range(TOTAL):
        turn = Turn(
            text=f"I live in Townsville{i}.",
            role="user",
            tenant=TENANT,
            user=f"u{i}",
            session_id=f"s{i}",
            turn_id="t1",
            observed_at=start + timedelta(seconds=i),
        )
        queue.enqueue(KIND_TURN, turn_payload(turn))
    store, log = tmp_path / "qdrant", tmp_path / "workers.log"

    first = spawn(url, name, "c1", store, log, claim_ms=60_000)
    try:
        # Kill once a few batches are acknowledged: the worker is then inside the next.
        def inside_a_batch() -> bool:
            # At least 3 batches acknowledged and c1 holding the next one right now, so
            # the kill lands mid-batch (not in the instant between ack and next read).
            if int(client.zcard(queue.keys.done)) < 3 * BATCH:
                return False
            return bool(
                client.xpending_range(
                    queue.keys.stream, queue.group, "-", "+", 1, consumername="c1"
                )
            )

        wait_for(inside_a_batch, 60, "3 batches and one in flight", log)
        first.send_signal(signal.SIGKILL)
        assert first.wait(10) == -signal.SIGKILL
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    held = client.xpending_range(queue.keys.stream, queue.group, "-", "+", TOTAL, consumername="c1")
    assert held, "the kill did not land inside a batch"
    acked_before = int(client.zcard(queue.keys.done))
    assert acked_before < TOTAL

    second = spawn(url, name, "c2", store, log, claim_ms=300)
    try:
        queue.flush(60.0)
        second.send_signal(signal.SIGTERM)
        assert second.wait(30) == 0
    finally:
        if second.poll() is None:
            second.kill()
            second.wait()

    stats = queue.stats()
    assert (stats.pending, stats.lag, stats.dead_lettered) == (0, 0, 0)
    assert int(client.zcard(queue.keys.done)) == TOTAL
    index = EdgeIndex(store)
    index.ensure_collections(384)  # opens the collections the workers created
    try:
        for i in range(TOTAL):
            records, _ = index.scroll("memories", Filter(tenant=TENANT, user=f"u{i}"), limit=10)
            assert [
                (r.payload["value"], r.payload["active"], r.payload["version"]) for r in records
            ] == [(f"Townsville{i}", True, 1)], f"user u{i}"
    finally:
        index.close()
        backend.close()
