"""The producer side of the long-term write pipeline, as the engine uses it.

``engine.observe`` and ``engine.queue_memory`` turn what the agent saw into queue
entries (:mod:`memstrata.memory.handler` defines their payloads) and return at once
with an :class:`IngestReceipt`; a :class:`~memstrata.memory.consumer.QueueWorker` (a thread
the engine starts, or ``python -m memstrata.memory.worker`` processes) drains them
into the memory store. Two rules hold here:

* the agent's step never fails because of the long-term path: a failure to
  enqueue (Redis down, a failover) is logged by type, counted, and reported in the
  receipt (``queued=False``) instead of raised;
* oversized text is split into chunks along paragraph and sentence boundaries (each
  chunk one entry, so one entry never exceeds the queue's payload limit), and text
  beyond ``max_observe_chars`` is rejected with a ValidationError naming ``text``.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace

from memstrata.errors import BackendError, ValidationError
from memstrata.extract.models import Turn
from memstrata.memory.consumer import QueueWorker
from memstrata.memory.entries import JSON, QueueStats
from memstrata.memory.handler import (
    KIND_NOTE,
    KIND_TURN,
    KIND_UNIT,
    HandlerStats,
    IngestHandler,
    turn_payload,
    unit_payload,
)
from memstrata.memory.queue import WriteQueue
from memstrata.memory.units import MemoryUnit
from memstrata.router.intents import IntentSpec
from memstrata.validation import check_id, check_positive_float, check_positive_int

logger = logging.getLogger("memstrata.memory.pipeline")

ACTIVE_MEMORY_TYPES: tuple[str, ...] = ("fact", "event", "preference", "profile")
"""Payload types of memories a read sees by default: never ``history`` (superseded
versions) or ``pending`` (a version being committed)."""
HISTORY_MEMORY_TYPES: tuple[str, ...] = (*ACTIVE_MEMORY_TYPES, "history")

# Break points, strongest first: a blank line, a line end, a sentence end (English
# or Chinese punctuation), then any whitespace; a chunk with none is cut hard.
_BREAKS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\n\s*\n"),
    re.compile(r"\n"),
    re.compile(r"(?<=[.!?;。！？；])\s*"),
    re.compile(r"\s+"),
)


@dataclass(frozen=True, slots=True)
class PipelineSettings:
    """How the engine runs its write pipeline.

    ``background_worker=False`` leaves consuming to worker processes
    (``python -m memstrata.memory.worker --handler-factory
    memstrata.memory.handler:worker_handler``); the embedded qdrant-edge store can
    be opened by one process only, so that mode needs a Qdrant server.
    """

    queue_name: str = "memories"
    background_worker: bool = True
    worker_threads: int = 2
    """Consumer threads of the in-process worker. Two let one thread's store writes
    overlap the other's embedding (the model runs one batch at a time anyway); the
    store orders a slot's versions by their own timestamps, not by arrival."""
    batch_size: int = 100
    block_ms: int = 200
    claim_idle_ms: int = 30_000
    max_deliveries: int = 5
    max_turn_chars: int = 8_000
    """A longer observed text is split into chunks of at most this many chars."""
    max_observe_chars: int = 200_000
    """A longer observed text is rejected (ValidationError naming ``text``)."""
    queue_maxlen: int | None = 100_000
    """Acknowledged entries beyond this are trimmed from the stream."""

    def __post_init__(self) -> None:
        check_id("queue_name", self.queue_name)
        check_positive_int("batch_size", self.batch_size, maximum=10_000)
        check_positive_int("worker_threads", self.worker_threads, maximum=64)
        if isinstance(self.block_ms, bool) or not isinstance(self.block_ms, int):
            raise ValidationError("block_ms", "must be an integer")
        if self.block_ms < 0:
            raise ValidationError("block_ms", "must be >= 0")
        check_positive_int("claim_idle_ms", self.claim_idle_ms)
        check_positive_int("max_deliveries", self.max_deliveries)
        # A chunk of 8k chars of Chinese is 24 KB of UTF-8: far below the 256 KiB
        # payload limit, and short enough for an LLM extractor's context.
        check_positive_int("max_turn_chars", self.max_turn_chars, maximum=32_000)
        check_positive_int("max_observe_chars", self.max_observe_chars)
        if self.max_observe_chars < self.max_turn_chars:
            raise ValidationError("max_observe_chars", "must be >= max_turn_chars")
        if self.queue_maxlen is not None:
            check_positive_int("queue_maxlen", self.queue_maxlen)


@dataclass(frozen=True, slots=True)
class IngestReceipt:
    """What ``observe`` / ``queue_memory`` did; ``queued`` is False when enqueueing failed.

    ``entry_ids`` are the stream ids of the entries written (one per chunk), which
    may be fewer than ``chunks`` when the queue failed midway; ``error`` is the
    exception type name of that failure (never its message: it may quote content).
    """

    queued: bool
    entry_ids: tuple[str, ...]
    chunks: int
    session_id: str | None = None
    turn_id: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class PipelineStats:
    """Counters of the pipeline; ``queue`` is None when Redis could not be asked."""

    enqueued: int
    enqueue_failures: int
    handler: HandlerStats
    queue: QueueStats | None


def split_text(text: str, max_chars: int) -> tuple[str, ...]:
    """``text`` as chunks of at most ``max_chars``, cut at the strongest break found.

    Pure. Chunks keep their text verbatim (no whitespace is invented) apart from
    the whitespace at a cut, and blank chunks are dropped.
    """
    check_positive_int("max_chars", max_chars)
    chunks: list[str] = []
    rest = text
    while len(rest) > max_chars:
        window = rest[: max_chars + 1]
        cut = max_chars
        for pattern in _BREAKS:
            ends = [
                m.end() for m in pattern.finditer(window) if m.start() > 0 and m.end() <= max_chars
            ]
            if ends and ends[-1] >= max_chars // 2:
                cut = ends[-1]
                break
        head, rest = rest[:cut], rest[cut:]
        if head.strip():
            chunks.append(head.strip())
    if rest.strip():
        chunks.append(rest.strip())
    return tuple(chunks)


def active_only(spec: IntentSpec) -> IntentSpec:
    """``spec`` with its ``memories`` needs restricted to active units when unrestricted.

    A need that names its own types keeps them (a caller may ask for history).
    """
    needs = tuple(
        replace(need, types=ACTIVE_MEMORY_TYPES)
        if need.collection == "memories" and need.types is None
        else need
        for need in spec.l3
    )
    return spec if needs == spec.l3 else replace(spec, l3=needs)


class IngestPipeline:
    """The queue, its handler and the in-process worker threads, as the engine owns them."""

    def __init__(
        self,
        queue: WriteQueue,
        handler: IngestHandler,
        settings: PipelineSettings,
        *,
        workers: Sequence[QueueWorker] = (),
    ) -> None:
        self._queue = queue
        self._handler = handler
        self._settings = settings
        self._workers = tuple(workers)
        self._lock = threading.Lock()
        self._enqueued = 0
        self._failures = 0

    @property
    def queue(self) -> WriteQueue:
        """The durable write queue."""
        return self._queue

    @property
    def handler(self) -> IngestHandler:
        """The handler the worker thread runs (also what worker processes build)."""
        return self._handler

    @property
    def settings(self) -> PipelineSettings:
        return self._settings

    @property
    def workers(self) -> tuple[QueueWorker, ...]:
        """The in-process workers (none when consumers run as separate processes)."""
        return self._workers

    # -- producing --------------------------------------------------------------------

    def submit_turn(self, turn: Turn) -> IngestReceipt:
        """Enqueue ``turn`` (text already sanitized), split into chunks if long."""
        chunks = self.chunks(turn.text)
        if len(chunks) == 1:
            payloads = [turn_payload(replace(turn, text=chunks[0]))]
        else:
            # Each chunk is its own turn to the extractor; its id says which part it is.
            payloads = [
                turn_payload(replace(turn, text=chunk, turn_id=f"{turn.turn_id}.{i}"))
                for i, chunk in enumerate(chunks, 1)
            ]
        receipt = self._enqueue_all(KIND_TURN, payloads)
        return replace(receipt, session_id=turn.session_id, turn_id=turn.turn_id)

    def submit_note(self, payloads: Sequence[dict[str, JSON]]) -> IngestReceipt:
        """Enqueue direct free-text memories (already chunked and sanitized)."""
        return self._enqueue_all(KIND_NOTE, payloads)

    def submit_unit(self, unit: MemoryUnit) -> IngestReceipt:
        """Enqueue one structured unit for a direct write."""
        return self._enqueue_all(KIND_UNIT, [unit_payload(unit)])

    def chunks(self, text: str, *, max_chars: int | None = None) -> tuple[str, ...]:
        """Validate the size of ``text`` and split it; ValidationError names ``text``.

        Chunks are at most ``max_chars`` (default ``settings.max_turn_chars``) long.
        """
        if len(text) > self._settings.max_observe_chars:
            raise ValidationError(
                "text", f"is {len(text)} chars, the limit is {self._settings.max_observe_chars}"
            )
        limit = self._settings.max_turn_chars if max_chars is None else max_chars
        chunks = split_text(text, min(limit, self._settings.max_turn_chars))
        if not chunks:
            raise ValidationError("text", "must not be empty")
        return chunks

    def _enqueue_all(self, kind: str, payloads: Sequence[dict[str, JSON]]) -> IngestReceipt:
        ids: list[str] = []
        for payload in payloads:
            try:
                ids.append(self._queue.enqueue(kind, payload))
            except BackendError as exc:
                # Redis down or failing over: the agent's step goes on; the caller
                # learns from the receipt, operators from the log and the counter.
                with self._lock:
                    self._failures += 1
                    self._enqueued += len(ids)
                logger.warning(
                    "ingest: could not enqueue a %s entry on queue %s: %s",
                    kind,
                    self._queue.name,
                    type(exc).__name__,
                )
                return IngestReceipt(False, tuple(ids), len(payloads), error=type(exc).__name__)
        with self._lock:
            self._enqueued += len(ids)
        return IngestReceipt(True, tuple(ids), len(payloads))

    # -- consuming ----------------------------------------------------------------------

    def start(self) -> None:
        """Start the in-process worker threads, if any (idempotent)."""
        for worker in self._workers:
            worker.start()

    def flush(self, timeout_s: float) -> None:
        """Wait until every entry enqueued so far is written and acknowledged.

        Raises FlushTimeoutError (a BackendError) when ``timeout_s`` passes first.
        """
        check_positive_float("timeout_s", timeout_s)
        self._queue.flush(timeout_s)

    def stats(self) -> PipelineStats:
        """Counters; the queue part is None when Redis cannot be reached."""
        try:
            queue_stats: QueueStats | None = self._queue.stats()
        except BackendError:
            queue_stats = None
        with self._lock:
            enqueued, failures = self._enqueued, self._failures
        return PipelineStats(enqueued, failures, self._handler.stats(), queue_stats)

    def close(self) -> None:
        """Stop the worker threads, each after its current batch."""
        for worker in self._workers:
            worker.stop()
