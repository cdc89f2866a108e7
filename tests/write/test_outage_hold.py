"""A batch that fails while the consume gate closes (an outage of ours) is held and
retried in place, spending no delivery; a worker stopped meanwhile gives the delivery
back. Against the real embedded Valkey."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest
import redis

from memstrata.errors import BackendUnavailableError, StageUnavailableError
from memstrata.write.consume import QueueWorker
from memstrata.write.entries import QueueEntry
from memstrata.write.queue import WriteQueue
from memstrata.write.submit import OutageWatch

QueueFactory = Callable[..., WriteQueue]


class Outage:
    """The gate and a handler failing while ``down`` (what OutageWatch does: the failure
    closes the gate, which opens again when the outage ends)."""

    def __init__(self) -> None:
        self.down = False
        self.starts = True
        """The outage starts during the first batch (the gate was open to take it)."""
        self.calls = 0
        self.written: list[str] = []

    def gate(self) -> bool:
        return not self.down

    def __call__(self, entries: Sequence[QueueEntry]) -> None:
        self.calls += 1
        if self.starts:
            self.down, self.starts = True, False
        if self.down:
            raise BackendUnavailableError("embedder down (injected)")
        self.written += [e.entry_id for e in entries]


def _times_delivered(client: redis.Redis, queue: WriteQueue, entry_id: str) -> int:
    rows: Any = client.xpending_range(queue.keys.stream, queue.group, entry_id, entry_id, 1)
    return int(rows[0]["times_delivered"]) if rows else 0


def test_a_batch_failing_in_an_outage_is_held_and_retried_without_a_delivery(
    make_queue: QueueFactory, queue_client: redis.Redis
) -> None:
    outage = Outage()
    queue = make_queue(consume_gate=outage.gate)
    ids = queue.enqueue_many("note", [{"i": i} for i in range(3)])
    worker = QueueWorker(queue, outage, "w1", block_ms=0, claim_idle_ms=150, max_deliveries=1)
    ran = threading.Thread(target=worker.run_once)
    ran.start()
    time.sleep(0.6)  # four claim-idle periods: held, touched, never reclaimed
    assert ran.is_alive() and outage.calls == 1
    assert [_times_delivered(queue_client, queue, i) for i in ids] == [1, 1, 1]
    other = QueueWorker(queue, outage, "w2", block_ms=0, claim_idle_ms=150)
    assert other.run_once() == 0  # the gate is closed: nothing to take over
    outage.down = False
    ran.join(5)
    assert outage.written == list(ids) and outage.calls == 2
    stats = queue.stats()
    assert (stats.pending, stats.dead_lettered) == (0, 0)


def test_a_worker_stopped_during_an_outage_gives_the_delivery_back(
    make_queue: QueueFactory, queue_client: redis.Redis
) -> None:
    outage = Outage()
    queue = make_queue(consume_gate=outage.gate)
    [entry_id] = queue.enqueue_many("note", [{"i": 1}])
    worker = QueueWorker(queue, outage, "w1", block_ms=0, claim_idle_ms=10_000)
    stop = threading.Event()
    ran = threading.Thread(target=worker.run_forever, args=(stop,))
    ran.start()
    time.sleep(0.3)
    stop.set()
    ran.join(5)
    assert not ran.is_alive()
    assert _times_delivered(queue_client, queue, entry_id) == 0  # given back
    outage.down = False
    # Claimable at once (its idle time set past claim_idle_ms), delivered as a first time.
    other = QueueWorker(queue, outage, "w2", block_ms=0, claim_idle_ms=10_000)
    assert other.run_once() == 1 and outage.written == [entry_id]
    assert queue.stats().pending == 0


def test_the_watch_pauses_only_for_what_is_down_and_says_what() -> None:
    model = {"up": True}

    def embed() -> None:
        if not model["up"]:
            raise RuntimeError("cannot load")

    watch = OutageWatch({"l3": lambda: 1, "embedder": embed}, probe_interval_s=0.001)

    def failing(exc: Exception) -> Callable[[Sequence[QueueEntry]], None]:
        def handler(entries: Sequence[QueueEntry]) -> None:
            raise exc

        return watch.guarded(handler)

    # The embedder fails on this entry but answers the probe: the entry's own failure.
    with pytest.raises(StageUnavailableError):
        failing(StageUnavailableError("embedder", "ValueError"))([])
    assert not watch.paused and watch.causes() == {}
    # The model cannot load: paused, and the cause named with what the handler saw.
    model["up"] = False
    with pytest.raises(StageUnavailableError):
        failing(StageUnavailableError("embedder", "BackendUnavailableError"))([])
    assert watch.paused and watch.causes() == {"embedder": "BackendUnavailableError"}
    time.sleep(0.002)
    assert not watch.open() and watch.causes() == {"embedder": "RuntimeError"}
    model["up"] = True
    time.sleep(0.002)
    assert watch.open() and not watch.paused and watch.outages == 1
    # An unavailable extractor has no probe: paused until the interval passes.
    with pytest.raises(StageUnavailableError):
        failing(StageUnavailableError("extractor", "ExtractionUnavailableError"))([])
    assert watch.causes() == {"extractor": "ExtractionUnavailableError"}
    time.sleep(0.002)
    assert watch.open()
