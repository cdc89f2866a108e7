"""The durable sink used by the crash test, loaded by a worker child process.

``make_sink`` is given to ``python -m memstrata.worker --handler-factory``.
Each entry is written with HSETNX (content hash -> entry id): idempotent by
content hash, as the at-least-once queue requires of a store write. HINCRBY on a
second hash counts every write attempt, so the test can see exactly which entries
were handed over twice. The reply of the MULTI means the server has the write
before the handler returns (the server is not the process being killed).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import redis

from memstrata.write.entries import QueueEntry


def make_sink(
    url: str, sink: str, attempts: str, sleep_s: str = "0"
) -> Callable[[Sequence[QueueEntry]], None]:
    """A handler writing to the ``sink`` / ``attempts`` hashes of the server at ``url``."""
    client = redis.Redis.from_url(url, decode_responses=True)
    pause = float(sleep_s)

    def handle(entries: Sequence[QueueEntry]) -> None:
        pipe = client.pipeline(transaction=True)
        for entry in entries:
            pipe.hsetnx(sink, entry.content_hash, entry.entry_id)
            pipe.hincrby(attempts, entry.content_hash, 1)
        pipe.execute()
        # Written but not yet acknowledged: the window the crash test kills in.
        time.sleep(pause)

    return handle
