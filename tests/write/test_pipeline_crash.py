"""A consumer process building the real handler (MiniLM, qdrant-edge, the memory store)
is SIGKILLed mid-batch and replaced: every acknowledged turn is in L3 exactly once.

qdrant-edge is single-process per directory, so only consumer processes hold the L3
store while they run; the test enqueues through the Valkey socket and opens the
store itself only after the last consumer stopped."""

from __future__ import annotations

import json
import signal
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, cast

from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.points import Filter
from memstrata.memory.codec import UNIT_TYPES
from memstrata.memory.episodes import Episode, turn_episode_id
from memstrata.testing.processes import spawn_queue_worker, wait_for
from memstrata.working import EmbeddedValkey, RedisBackend
from memstrata.write.payloads import KIND_TURN, turn_payload
from memstrata.write.queue import WriteQueue

SRC = Path(__file__).resolve().parents[2] / "src"
TOTAL = 120
BATCH = 10
TENANT = "crash"


def spawn(url: str, queue: str, consumer: str, data: Path, log: Path, claim_ms: int) -> Any:
    # The workers read the deployment's settings file, as every process of it does.
    settings = data / "settings.json"
    settings.write_text(
        json.dumps({"data_dir": str(data), "memory": {"redis_prefix": f"mv{queue}"}})
    )
    args = [
        "--redis-url", url, "--queue", queue, "--consumer", consumer,
        "--handler-factory", "memstrata.wiring:worker_handler",
        "--handler-arg", f"redis_url={url}",
        "--handler-arg", f"settings={settings}",
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
        turn = Episode(
            id=turn_episode_id(TENANT, f"s{i}#0", 1),
            text=f"I live in Townsville{i}.",
            role="user",
            tenant=TENANT,
            user=f"u{i}",
            source=f"turn:s{i}/t1",
            session_id=f"s{i}",
            turn_id="t1",
            thread=f"s{i}#0",
            seq=1,
            observed_at=start + timedelta(seconds=i),
        )
        queue.enqueue(KIND_TURN, turn_payload(turn))
    data, log = tmp_path / "data", tmp_path / "workers.log"
    data.mkdir()
    store = data / "qdrant"

    first = spawn(url, name, "c1", data, log, claim_ms=60_000)
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

    second = spawn(url, name, "c2", data, log, claim_ms=300)
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
            flt = Filter(tenant=TENANT, user=f"u{i}", types=UNIT_TYPES)
            records, _ = index.scroll("memories", flt, limit=10)
            assert [
                (r.payload["value"], r.payload["active"], r.payload["version"]) for r in records
            ] == [(f"Townsville{i}", True, 1)], f"user u{i}"
            flt = Filter(tenant=TENANT, user=f"u{i}", types=("episode",))
            episodes, _ = index.scroll("memories", flt, limit=10)
            assert [r.payload["text"] for r in episodes] == [f"I live in Townsville{i}."]
    finally:
        index.close()
        backend.close()
