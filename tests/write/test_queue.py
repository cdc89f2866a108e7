"""WriteQueue + QueueWorker against the real embedded Valkey."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, cast

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from memstrata.clock import FakeClock
from memstrata.errors import (
    BackendError,
    BackendUnavailableError,
    FlushTimeoutError,
    ValidationError,
)
from memstrata.write.consume import QueueWorker
from memstrata.write.entries import QueueEntry
from memstrata.write.queue import WriteQueue

QueueFactory = Callable[..., WriteQueue]


class Recorder:
    """A handler that records batches and can be told to fail."""

    def __init__(self, fail: Callable[[Sequence[QueueEntry]], bool] = lambda _: False) -> None:
        self.batches: list[list[QueueEntry]] = []
        self.fail = fail
        self.lock = threading.Lock()

    def __call__(self, entries: Sequence[QueueEntry]) -> None:
        with self.lock:
            self.batches.append(list(entries))
        if self.fail(entries):
            raise ValueError(f"secret-payload-text {entries[0].payload}")

    @property
    def entries(self) -> list[QueueEntry]:
        return [e for batch in self.batches for e in batch]


def worker(queue: WriteQueue, handler: Any, name: str = "w1", **kwargs: Any) -> QueueWorker:
    """A worker that never blocks and retries failures at once (claim_idle_ms=1)."""
    options: dict[str, Any] = {"batch_size": 100, "block_ms": 0, "claim_idle_ms": 1}
    options.update(kwargs)
    return QueueWorker(queue, handler, name, **options)


def drain(w: QueueWorker, rounds: int = 30) -> None:
    """Run batches until a round takes nothing (claim_idle_ms=1 makes retries immediate)."""
    for _ in range(rounds):
        time.sleep(0.005)  # let failed entries become idle enough to reclaim
        if w.run_once() == 0:
            return


def pending(client: redis.Redis, queue: WriteQueue) -> int:
    return int(client.xpending(queue.keys.stream, queue.group)["pending"])


def test_enqueue_handle_ack(make_queue: QueueFactory, queue_client: redis.Redis) -> None:
    queue = make_queue()
    ids = [queue.enqueue("observe", {"i": i, "text": f"turn {i}"}) for i in range(3)]
    handler = Recorder()
    assert worker(queue, handler).run_once() == 3
    assert [e.entry_id for e in handler.entries] == ids
    assert [e.payload["i"] for e in handler.entries] == [0, 1, 2]
    assert all(e.kind == "observe" and e.deliveries == 1 for e in handler.entries)
    assert pending(queue_client, queue) == 0
    stats = queue.stats()
    assert (stats.enqueued, stats.pending, stats.lag, stats.dead_lettered) == (3, 0, 0, 0)
    assert worker(queue, handler).run_once() == 0


def test_group_creation_is_idempotent(make_queue: QueueFactory) -> None:
    queue = make_queue()
    queue.ensure_group()
    queue.ensure_group()
    make_queue().ensure_group()
    entry_id = queue.enqueue("observe", {"a": 1})
    handler = Recorder()
    worker(make_queue(), handler).run_once()
    assert [e.entry_id for e in handler.entries] == [entry_id]


def test_stats_before_any_enqueue(make_queue: QueueFactory) -> None:
    stats = make_queue().stats()
    assert (stats.enqueued, stats.length, stats.pending, stats.dead_lettered) == (0, 0, 0, 0)


def test_failed_handler_is_retried_and_entry_not_lost(
    make_queue: QueueFactory, queue_client: redis.Redis
) -> None:
    queue = make_queue()
    queue.enqueue("remember", {"fact": "likes tea"})
    handler = Recorder(fail=lambda _: len(handler.batches) == 1)
    w = worker(queue, handler)
    assert w.run_once() == 1
    assert pending(queue_client, queue) == 1  # kept after the failure
    drain(w)
    assert [e.deliveries for e in handler.entries] == [1, 2]
    assert pending(queue_client, queue) == 0
    assert queue.stats().dead_lettered == 0


def test_same_content_is_written_once(make_queue: QueueFactory, queue_client: redis.Redis) -> None:
    queue = make_queue()
    first = queue.enqueue("observe", {"a": 1, "b": [1, 2]})
    second = queue.enqueue("observe", {"b": [1, 2], "a": 1})  # same content, other key order
    queue.enqueue("observe", {"a": 2})
    handler = Recorder()
    w = worker(queue, handler)
    assert w.run_once() == 3
    assert len(handler.entries) == 2  # the twin is acknowledged along with the first
    assert handler.entries[0].entry_id == first
    assert first != second
    # A later replay of the same content is acknowledged without calling the handler.
    queue.enqueue("observe", {"a": 1, "b": [1, 2]})
    assert w.run_once() == 1
    assert len(handler.entries) == 2
    assert pending(queue_client, queue) == 0
    assert queue.stats().lag == 0


def test_redelivery_of_done_content_skips_the_handler(
    make_queue: QueueFactory, queue_client: redis.Redis
) -> None:
    queue = make_queue()
    queue.enqueue("observe", {"a": 1})
    # A consumer takes the entry and dies before acknowledging it.
    assert len(queue.read_new("ghost", 10, None)) == 1
    queue.enqueue("observe", {"a": 1})  # the same content arrives again and is written
    handler = Recorder()
    assert worker(queue, handler, claim_idle_ms=60_000).run_once() == 1  # the new copy
    assert pending(queue_client, queue) == 1  # the ghost still holds its copy
    rescuer = worker(queue, handler, name="w2")
    # The ghost's copy must have been idle its claim_idle_ms (1) first: the round
    # trips since its delivery can take less than that on a fast machine.
    time.sleep(0.005)
    assert rescuer.run_once() == 1  # reclaims the ghost's copy...
    assert len(handler.entries) == 1  # ...and acks it without calling the handler
    assert handler.entries[0].deliveries == 1
    assert pending(queue_client, queue) == 0


def test_dead_letter_after_max_deliveries(
    make_queue: QueueFactory, queue_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    queue = make_queue()
    entry_id = queue.enqueue("remember", {"fact": "secret-payload-text"})
    handler = Recorder(fail=lambda _: True)
    w = worker(queue, handler, max_deliveries=3)
    with caplog.at_level(logging.DEBUG):
        drain(w)
    assert len(handler.batches) == 3
    assert pending(queue_client, queue) == 0
    [dead] = queue.dead_letters()
    assert (dead.source_id, dead.kind, dead.error, dead.deliveries) == (
        entry_id,
        "remember",
        "ValueError",
        3,
    )
    assert dead.content_hash == handler.entries[0].content_hash
    assert "secret-payload-text" in dead.fields["payload"]  # kept for a replay...
    assert "ValueError" in caplog.text
    assert "secret-payload-text" not in caplog.text  # ...but never logged
    assert queue.stats().dead_lettered == 1
    w.run_once()
    assert len(handler.batches) == 3


def test_poison_entry_does_not_hold_back_its_batch(
    make_queue: QueueFactory, queue_client: redis.Redis
) -> None:
    queue = make_queue()
    for i in range(5):
        queue.enqueue("observe", {"i": i, "poison": i == 2})
    handler = Recorder(fail=lambda batch: any(e.payload["poison"] for e in batch))
    w = worker(queue, handler, max_deliveries=2)
    assert w.run_once() == 5
    # One failed batch call, then one call per entry.
    assert [len(b) for b in handler.batches] == [5, 1, 1, 1, 1, 1]
    assert pending(queue_client, queue) == 1
    drain(w)
    assert pending(queue_client, queue) == 0
    [dead] = queue.dead_letters()
    assert dead.fields["payload"] == '{"i":2,"poison":true}'


def test_entry_whose_consumers_kept_dying_is_dead_lettered(
    make_queue: QueueFactory, queue_client: redis.Redis
) -> None:
    queue = make_queue()
    queue.enqueue("observe", {"crashes": "the worker"})
    queue.read_new("ghost", 10, None)  # delivery 1
    queue.claim_idle("ghost", 0, "0-0", 10)  # delivery 2
    queue.claim_idle("ghost", 0, "0-0", 10)  # delivery 3
    handler = Recorder()
    drain(worker(queue, handler, max_deliveries=2))
    assert handler.entries == []
    [dead] = queue.dead_letters()
    # The worker's own claim is delivery 4; it gives up without calling the handler.
    assert (dead.error, dead.deliveries) == ("ConsumerLost", 4)
    assert pending(queue_client, queue) == 0


def test_an_entry_two_consumers_give_up_on_is_dead_lettered_once(
    make_queue: QueueFactory, queue_client: redis.Redis
) -> None:
    # One consumer stalled past claim_idle_ms while another reclaimed the entry: both
    # give up on it (RuntimeError on its last delivery, ConsumerLost past the limit).
    queue = make_queue()
    entry_id = queue.enqueue("observe", {"slow": "entry"})
    [(read_id, fields)] = queue.read_new("stalled", 10, None)
    queue.claim_idle("other", 0, "0-0", 10)
    assert read_id == entry_id
    assert queue.dead_letter(entry_id, fields, "ConsumerLost", 3, "handed out 3 times")
    assert not queue.dead_letter(entry_id, fields, "RuntimeError", 2, "raised twice")
    [dead] = queue.dead_letters()
    assert (dead.error, dead.deliveries) == ("ConsumerLost", 3)
    assert queue.stats().dead_lettered == 1 and pending(queue_client, queue) == 0


def test_malformed_entry_is_dead_lettered(
    make_queue: QueueFactory, queue_client: redis.Redis
) -> None:
    queue = make_queue()
    queue.ensure_group()
    queue_client.xadd(queue.keys.stream, {"v": "1", "kind": "observe", "payload": "{}"})
    good = queue.enqueue("observe", {"ok": True})
    handler = Recorder()
    drain(worker(queue, handler))
    assert [e.entry_id for e in handler.entries] == [good]
    [dead] = queue.dead_letters()
    assert dead.error == "MalformedEntry"
    assert pending(queue_client, queue) == 0


def test_flush_waits_for_a_background_worker(make_queue: QueueFactory) -> None:
    queue = make_queue()
    handler = Recorder(fail=lambda _: len(handler.batches) == 1)  # one failure on the way
    with worker(make_queue(), handler, block_ms=50, batch_size=7):
        for i in range(50):
            queue.enqueue("observe", {"i": i})
        queue.flush(10.0)
        stats = queue.stats()
    assert (stats.pending, stats.lag) == (0, 0)
    assert {e.payload["i"] for e in handler.entries} == set(range(50))


def test_background_mode_starts_once_and_stops_promptly(make_queue: QueueFactory) -> None:
    handler = Recorder()
    w = worker(make_queue(), handler, block_ms=100)
    w.start()
    thread_names = {t.name for t in threading.enumerate()}
    assert w.start() is w  # idempotent: still one loop
    assert {t.name for t in threading.enumerate()} == thread_names
    assert w.running
    started = time.monotonic()
    w.stop()
    assert time.monotonic() - started < 1.0  # bounded by block_ms, not by the backoff
    assert not w.running


def test_flush_times_out_with_a_typed_error(make_queue: QueueFactory) -> None:
    queue = make_queue()
    queue.enqueue("observe", {"a": 1})
    started = time.monotonic()
    with pytest.raises(FlushTimeoutError) as info:
        queue.flush(0.2)
    assert time.monotonic() - started < 1.0
    assert info.value.queue == queue.name
    assert queue.name in str(info.value)
    assert info.value.outstanding == 1
    assert isinstance(info.value, BackendError)
    # A consumer holding the entry without acking does not count as flushed either.
    queue.read_new("ghost", 10, None)
    with pytest.raises(FlushTimeoutError):
        queue.flush(0.05)


def test_flush_of_an_empty_or_drained_queue_returns_at_once(make_queue: QueueFactory) -> None:
    queue = make_queue()
    queue.flush(0.05)
    queue.enqueue("observe", {"a": 1})
    worker(queue, Recorder()).run_once()
    queue.flush(0.05)
    with pytest.raises(ValidationError) as info:
        queue.flush(0)
    assert info.value.field == "timeout_s"


def test_maxlen_trims_only_acknowledged_entries(
    make_queue: QueueFactory, queue_client: redis.Redis
) -> None:
    queue = make_queue(maxlen=10)
    ids = [queue.enqueue("observe", {"i": i}) for i in range(30)]
    assert queue_client.xlen(queue.keys.stream) == 30  # nothing acknowledged: nothing trimmed
    handler = Recorder()
    worker(queue, handler, batch_size=20).run_once()  # acknowledges the oldest 20
    # Trims that found nothing (all unacknowledged) pause for `slack` (1) enqueues.
    ids += [queue.enqueue("observe", {"i": i}) for i in (30, 31)]
    remaining = [str(i) for i, _ in cast("list[Any]", queue_client.xrange(queue.keys.stream))]
    assert remaining == ids[20:]  # the 12 unacknowledged entries all survive
    drain(worker(queue, handler))
    assert {e.payload["i"] for e in handler.entries} == set(range(32))
    for i in range(32, 40):
        queue.enqueue("observe", {"i": i})
    assert queue_client.xlen(queue.keys.stream) <= 11


def test_dedupe_window_expires(make_queue: QueueFactory, queue_client: redis.Redis) -> None:
    clock = FakeClock()
    queue = make_queue(dedupe_window_s=60, clock=clock)
    handler = Recorder()
    w = worker(queue, handler)
    queue.enqueue("observe", {"a": 1})
    w.run_once()
    clock.advance(timedelta(seconds=30))
    queue.enqueue("observe", {"a": 1})
    w.run_once()
    assert len(handler.entries) == 1  # inside the window: deduplicated
    clock.advance(timedelta(seconds=61))
    queue.enqueue("observe", {"a": 1})
    w.run_once()
    assert len(handler.entries) == 2  # outside the window: written again
    queue.enqueue("observe", {"b": 1})
    clock.advance(timedelta(seconds=61))
    w.run_once()
    # Old hashes are removed from the done set as later acks happen.
    assert queue_client.zcard(queue.keys.done) == 1


def test_worker_recovers_when_the_stream_is_deleted(
    make_queue: QueueFactory, queue_client: redis.Redis
) -> None:
    queue = make_queue()
    queue.enqueue("observe", {"a": 1})
    handler = Recorder()
    w = worker(queue, handler)
    w.run_once()
    queue_client.delete(queue.keys.stream)
    queue.enqueue("observe", {"a": 2})  # XADD recreates the stream without the group
    drain(w)
    assert [e.payload["a"] for e in handler.entries] == [1, 2]


def _dead_client(tmp_path: Any) -> redis.Redis:
    return redis.Redis(
        unix_socket_path=str(tmp_path / "nobody.sock"),
        socket_timeout=0.2,
        retry=Retry(NoBackoff(), 0),
        decode_responses=True,
    )


def test_unreachable_server_is_backend_unavailable(tmp_path: Any) -> None:
    queue = WriteQueue(_dead_client(tmp_path), "q")
    with pytest.raises(BackendUnavailableError) as info:
        queue.enqueue("observe", {"a": 1})
    assert isinstance(info.value.__cause__, redis.ConnectionError)
    with pytest.raises(ValidationError):  # validation comes before any I/O
        queue.enqueue("observe", {"a": cast(Any, object())})


def test_worker_loop_survives_backend_errors(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    w = QueueWorker(WriteQueue(_dead_client(tmp_path), "q"), Recorder(), "w1", error_backoff_s=0.01)
    with caplog.at_level(logging.WARNING):
        w.start()
        time.sleep(0.2)
        assert w.running
        w.stop(timeout_s=5)
    assert not w.running
    assert "BackendUnavailableError" in caplog.text


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"batch_size": 0}, "batch_size"),
        ({"block_ms": -1}, "block_ms"),
        ({"claim_idle_ms": 0}, "claim_idle_ms"),
        ({"max_deliveries": True}, "max_deliveries"),
    ],
)
def test_worker_options_are_validated(
    make_queue: QueueFactory, kwargs: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as info:
        QueueWorker(make_queue(), Recorder(), "w1", **kwargs)
    assert info.value.field == field
    with pytest.raises(ValidationError) as info:
        QueueWorker(make_queue(), Recorder(), "bad name")
    assert info.value.field == "consumer_name"


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"maxlen": 0}, "maxlen"),
        ({"group": "a:b"}, "group"),
        ({"dedupe_window_s": 0}, "dedupe_window_s"),
    ],
)
def test_queue_options_are_validated(
    queue_client: redis.Redis, kwargs: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as info:
        WriteQueue(queue_client, "q", **kwargs)
    assert info.value.field == field
