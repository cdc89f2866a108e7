"""A real consumer process is SIGKILLed mid-batch; another one finishes the work."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest
import redis

from memstrata.errors import ConfigError
from memstrata.testing.processes import spawn_queue_worker, wait_for
from memstrata.worker import load_handler, main, parse_options
from memstrata.working import EmbeddedValkey
from memstrata.write.consume import QueueWorker
from memstrata.write.queue import WriteQueue

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
TOTAL = 500
BATCH = 50


def spawn_worker(
    url: str, queue: str, consumer: str, log: Path, *, claim_idle_ms: int, sleep_s: float
) -> subprocess.Popen[bytes]:
    """``python -m memstrata.worker`` with the crash sink as its handler."""
    args = [
        "--redis-url", url, "--queue", queue, "--consumer", consumer,
        "--handler-factory", "crash_sink:make_sink",
        "--handler-arg", f"url={url}",
        "--handler-arg", f"sink=sink:{{{queue}}}",
        "--handler-arg", f"attempts=attempts:{{{queue}}}",
        "--handler-arg", f"sleep_s={sleep_s}",
        "--batch-size", str(BATCH), "--block-ms", "50",
        "--claim-idle-ms", str(claim_idle_ms),
    ]  # fmt: skip
    return spawn_queue_worker(args, log, pythonpath=[SRC, HERE])


def hashes_of(client: redis.Redis, queue: WriteQueue, ids: Sequence[str]) -> set[str]:
    rows = {str(i): f for i, f in cast("list[Any]", client.xrange(queue.keys.stream))}
    return {str(rows[i]["content_hash"]) for i in ids}


def test_sigkill_mid_batch_loses_nothing_and_writes_each_entry_once(
    embedded_valkey: EmbeddedValkey, queue_client: redis.Redis, queue_name: str, tmp_path: Path
) -> None:
    url = embedded_valkey.url
    queue = WriteQueue(queue_client, queue_name)
    sink, attempts = f"sink:{{{queue_name}}}", f"attempts:{{{queue_name}}}"
    ids = [queue.enqueue("observe", {"i": i, "text": f"turn {i}"}) for i in range(TOTAL)]
    all_hashes = hashes_of(queue_client, queue, ids)
    assert len(all_hashes) == TOTAL
    log = tmp_path / "workers.log"

    first = spawn_worker(url, queue_name, "c1", log, claim_idle_ms=60_000, sleep_s=0.05)
    try:
        # Kill once a few whole batches are in the sink: the handler is then asleep
        # after its writes and before the acknowledgement.
        def mid_batch() -> bool:
            written = int(queue_client.hlen(sink))
            return written >= 3 * BATCH and written % BATCH == 0

        wait_for(mid_batch, 20.0, "the first worker to write 3 batches", log)
        first.send_signal(signal.SIGKILL)
        assert first.wait(5) == -signal.SIGKILL
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()

    held = [str(row["message_id"]) for row in queue_client.xpending_range(
        queue.keys.stream, queue.group, "-", "+", TOTAL, consumername="c1"
    )]  # fmt: skip
    assert held, "the kill did not land inside a batch"
    held_hashes = hashes_of(queue_client, queue, held)
    written_before = set(queue_client.hkeys(sink))
    assert len(written_before) < TOTAL

    second = spawn_worker(url, queue_name, "c2", log, claim_idle_ms=300, sleep_s=0)
    try:
        queue.flush(20.0)
        second.send_signal(signal.SIGTERM)
        assert second.wait(10) == 0  # a clean stop after the current batch
    finally:
        if second.poll() is None:
            second.kill()
            second.wait()

    # Every entry reached the sink exactly once (HSETNX keeps the first write).
    assert set(queue_client.hkeys(sink)) == all_hashes
    # The only double hand-overs are the killed batch's written-but-unacked entries.
    counts = {h: int(n) for h, n in queue_client.hgetall(attempts).items()}
    assert set(counts) == all_hashes
    doubled = {h for h, n in counts.items() if n > 1}
    assert doubled == held_hashes & written_before
    assert doubled, "the kill did not fall between a sink write and its acknowledgement"
    assert max(counts.values()) <= 2
    # The idempotence layer saw each content once: all acked, all marked done.
    stats = queue.stats()
    assert (stats.pending, stats.lag, stats.dead_lettered) == (0, 0, 0)
    done = queue_client.zmscore(queue.keys.done, sorted(all_hashes))
    assert all(score is not None for score in done)
    # A replay of everything is acknowledged without calling a handler at all.
    calls: list[int] = []
    replayer = QueueWorker(
        queue, lambda entries: calls.append(len(entries)), "c3", block_ms=50, claim_idle_ms=300
    )
    with replayer:
        for i in range(TOTAL):
            queue.enqueue("observe", {"i": i, "text": f"turn {i}"})
        queue.flush(20.0)
    assert calls == []
    assert queue.stats().enqueued == 2 * TOTAL


def test_cli_rejects_a_bad_handler(embedded_valkey: EmbeddedValkey) -> None:
    argv = ["--redis-url", embedded_valkey.url, "--queue", "q", "--consumer", "c"]
    assert main([*argv, "--handler", "memstrata_no_such_module:handle"]) == 2
    assert main([*argv, "--handler", "no-colon"]) == 2
    with pytest.raises(SystemExit) as info:
        main([*argv, "--handler", "json:dumps", "--handler-arg", "a=1"])
    assert info.value.code == 2


def test_handler_specs_resolve() -> None:
    options = parse_options(
        ["--redis-url", "redis://h", "--queue", "q", "--consumer", "c",
         "--handler-factory", "functools:partial", "--handler-arg", "func=x"]
    )  # fmt: skip
    assert options.factory and options.handler_args == {"func": "x"}
    import json

    assert load_handler("json:dumps", factory=False, args={}) is json.dumps  # type: ignore[comparison-overlap]
    with pytest.raises(ConfigError):
        load_handler("json:no_such_attr", factory=False, args={})
    with pytest.raises(ConfigError):
        load_handler("json:__doc__", factory=False, args={})  # not callable
