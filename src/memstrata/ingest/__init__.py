"""The durable write queue of the long-term write pipeline.

Agents enqueue work (``WriteQueue.enqueue``) and return at once; a
:class:`QueueWorker` (a thread, or ``python -m memstrata.ingest.worker``) hands
batches to a handler that writes the store, and acknowledges only afterwards.
Delivery is at-least-once and idempotent by content hash.
"""

from memstrata.ingest.consumer import Handler, QueueWorker
from memstrata.ingest.entries import (
    JSON,
    MAX_PAYLOAD_BYTES,
    DeadLetter,
    QueueEntry,
    QueueKeys,
    QueueStats,
    content_hash,
)
from memstrata.ingest.queue import FlushTimeoutError, WriteQueue

__all__ = [
    "JSON",
    "MAX_PAYLOAD_BYTES",
    "DeadLetter",
    "FlushTimeoutError",
    "Handler",
    "QueueEntry",
    "QueueKeys",
    "QueueStats",
    "QueueWorker",
    "WriteQueue",
    "content_hash",
]
