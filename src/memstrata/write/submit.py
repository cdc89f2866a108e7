"""Stage 2 of the write path: episodes, units and feedback events become queue entries.

:class:`WritePipeline` owns the queue, its handler and the engine's worker threads.
Two rules hold here:

* the agent's step never fails because of the long-term path: a failure to
  enqueue (Redis down, a failover, a disk short of space) is logged by type,
  counted, and reported in the receipt (``queued=False``) instead of raised; the
  service answers such a receipt with an error, never a 200;
* a write is queued whole or not at all: its entries go in one transaction
  (:meth:`~memstrata.write.queue.WriteQueue.enqueue_many`), so a receipt with
  ``queued=False`` means nothing of it was kept;
* one entry per chunk (:func:`split_text` cuts along paragraph and sentence
  boundaries, used by :mod:`~memstrata.write.intake`), so one entry never exceeds the
  queue's payload limit.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from memstrata.config import PipelineSettings
from memstrata.disk import DiskGuard
from memstrata.errors import BackendError, BackendUnavailableError, StageUnavailableError
from memstrata.extract.protocol import Extractor
from memstrata.feedback.events import KIND_FEEDBACK, FeedbackEvent
from memstrata.memory.episodes import Episode
from memstrata.memory.units import MemoryUnit
from memstrata.validation import check_positive_float, check_positive_int
from memstrata.write.consume import QueueWorker
from memstrata.write.entries import JSON, QueueEntry, QueueStats
from memstrata.write.handle import HandlerStats
from memstrata.write.payloads import (
    KIND_NOTE,
    KIND_TURN,
    KIND_UNIT,
    note_payload,
    turn_payload,
    unit_payload,
)
from memstrata.write.queue import WriteQueue

logger = logging.getLogger("memstrata.write.submit")

# Break points, strongest first: a blank line, a line end, a sentence end (English
# or Chinese punctuation), then any whitespace; a chunk with none is cut hard.
_BREAKS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\n\s*\n"),
    re.compile(r"\n"),
    re.compile(r"(?<=[.!?;。！？；])\s*"),
    re.compile(r"\s+"),
)


class PipelineHandler(Protocol):
    """The handler role the pipeline owns (:class:`~memstrata.write.handle.WriteHandler`)."""

    @property
    def extractor(self) -> Extractor:
        """The extractor it runs."""
        ...

    def stats(self) -> HandlerStats:
        """Its counters."""
        ...

    def __call__(self, entries: Sequence[QueueEntry], /) -> None:
        """Write one batch."""
        ...


@dataclass(frozen=True, slots=True)
class WriteReceipt:
    """What ``observe`` / ``remember`` did; ``queued`` is False when enqueueing failed.

    ``entry_ids`` are the stream ids of the entries written (one per chunk; none when
    ``queued`` is False: a write is queued whole or not at all); ``error`` is the
    exception type name of the failure (never its message: it may quote content),
    ``ReadOnlyError`` when the disk is short of space.
    ``episode_ids`` are the L3 ids the text's episodes get once written (one per
    chunk; none for a structured unit): ``engine.written(receipt)`` reads them back
    with the facts extracted from them.
    """

    queued: bool
    entry_ids: tuple[str, ...]
    chunks: int
    session_id: str | None = None
    turn_id: str | None = None
    error: str | None = None
    episode_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WriteStats:
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


class OutageWatch:
    """Pauses the queue's consumers while something the handler needs is down.

    ``probes`` name what the handler needs and how to ask it (``l3``: the long-term
    store, ``valkey``, ``embedder``: one text embedded). A batch failing with
    :class:`BackendUnavailableError` (an embedder or extractor failure arrives as
    :class:`~memstrata.errors.StageUnavailableError`) is an outage when a probe
    fails right after it, or when the extractor said it is unavailable (it has no
    probe: its retry is the probe). Then the gate closes; it opens again once every
    probe answers (asked at most every ``probe_interval_s``). Meanwhile entries wait
    in the stream, and the batch in hand is held without spending a delivery
    (:class:`~memstrata.write.consume.QueueWorker`). A failure while every probe
    answers is the entry's own: it spends a delivery and, repeated, ends in the
    dead-letter stream with its reason.
    """

    def __init__(
        self,
        probes: Callable[[], object] | Mapping[str, Callable[[], object]],
        *,
        probe_interval_s: float = 1.0,
    ) -> None:
        self._probes = dict(probes) if isinstance(probes, Mapping) else {"backend": probes}
        self._interval_s = check_positive_float("probe_interval_s", probe_interval_s)
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._next_probe = 0.0
        self._outages = 0
        self._causes: dict[str, str] = {}

    @property
    def outages(self) -> int:
        """How many outages paused consumption so far."""
        return self._outages

    @property
    def paused(self) -> bool:
        """True while consumption is paused."""
        return self._down_since is not None

    def causes(self) -> dict[str, str]:
        """While paused, what is down and the error type it failed with
        (``{"embedder": "ModelUnavailableError"}``); empty otherwise."""
        with self._lock:
            return dict(self._causes) if self._down_since is not None else {}

    def guarded(self, handler: Callable[[Sequence[QueueEntry]], None]) -> Callable[..., None]:
        """``handler``, noting its outages (what a worker thread calls)."""

        def handle(entries: Sequence[QueueEntry], /) -> None:
            try:
                handler(entries)
            except BackendUnavailableError as exc:
                self._failed(exc)
                raise

        return handle

    def _failed(self, exc: BackendUnavailableError) -> None:
        stage = exc.stage if isinstance(exc, StageUnavailableError) else None
        error = exc.cause if isinstance(exc, StageUnavailableError) else type(exc).__name__
        down = self._failing()
        if stage == "extractor":
            down["extractor"] = error
        elif stage is not None and stage in down:
            down[stage] = error
        if down:
            self._went_down(down)

    def _failing(self) -> dict[str, str]:
        """The probes that fail now, with the type of what they raised."""
        down = {}
        for name, probe in self._probes.items():
            try:
                probe()
            except Exception as exc:  # down, whatever the backend raised
                down[name] = type(exc).__name__
        return down

    def _went_down(self, causes: Mapping[str, str]) -> None:
        with self._lock:
            self._causes.update(causes)
            if self._down_since is None:
                self._down_since = time.monotonic()
                self._next_probe = self._down_since + self._interval_s
                self._outages += 1
                logger.warning(
                    "write queue: consumers paused, down: %s",
                    ", ".join(f"{k} ({v})" for k, v in sorted(causes.items())),
                )

    def open(self) -> bool:
        """The consume gate: True unless paused and a probe still fails."""
        if self._down_since is None:
            return True
        now = time.monotonic()
        with self._lock:
            if now < self._next_probe:
                return False
            self._next_probe = now + self._interval_s
        down = self._failing()
        with self._lock:
            if down:
                # What is down now (the extractor, unprobed, is retried by the batch).
                kept = {k: v for k, v in self._causes.items() if k == "extractor"}
                self._causes = {**kept, **down}
                return False
            if self._down_since is not None:
                logger.warning("write queue: consumers resume after %.1fs", now - self._down_since)
            self._down_since = None
            self._causes = {}
        return True


class WritePipeline:
    """The queue, its handler and the in-process worker threads, as the engine owns them."""

    def __init__(
        self,
        queue: WriteQueue,
        handler: PipelineHandler,
        settings: PipelineSettings,
        *,
        workers: Sequence[QueueWorker] = (),
        disk: DiskGuard | None = None,
    ) -> None:
        """``disk``: asked before each enqueue; while it is read-only writes are refused
        (the receipt says ``ReadOnlyError``) instead of filling the disk."""
        self._queue = queue
        self._disk = disk
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
    def handler(self) -> PipelineHandler:
        """The handler the worker threads run (worker processes build the same one)."""
        return self._handler

    @property
    def settings(self) -> PipelineSettings:
        return self._settings

    @property
    def workers(self) -> tuple[QueueWorker, ...]:
        """The in-process workers (none when consumers run as separate processes)."""
        return self._workers

    # -- producing --------------------------------------------------------------------

    def submit_turn(self, episodes: Sequence[Episode]) -> WriteReceipt:
        """Enqueue the episodes of one observed turn (one per chunk, text sanitized)."""
        receipt = self._enqueue_all(KIND_TURN, [turn_payload(e) for e in episodes])
        first = episodes[0]
        turn_id = first.turn_id.partition(".")[0] if first.turn_id else None
        return replace(
            receipt,
            session_id=first.session_id,
            turn_id=turn_id,
            episode_ids=tuple(e.id for e in episodes),
        )

    def submit_note(self, episodes: Sequence[Episode]) -> WriteReceipt:
        """Enqueue remembered texts (already chunked and sanitized), one episode each."""
        payloads = [note_payload(e.tenant, e.user, e.text, e.observed_at) for e in episodes]
        receipt = self._enqueue_all(KIND_NOTE, payloads)
        return replace(receipt, episode_ids=tuple(e.id for e in episodes))

    def submit_unit(self, unit: MemoryUnit) -> WriteReceipt:
        """Enqueue one structured unit for a direct write."""
        return self._enqueue_all(KIND_UNIT, [unit_payload(unit)])

    def submit_feedback(self, event: FeedbackEvent) -> WriteReceipt:
        """Enqueue one feedback event (its texts already sanitized; see
        :mod:`memstrata.feedback.events`)."""
        return self._enqueue_all(KIND_FEEDBACK, [event.as_payload()])

    def _enqueue_all(self, kind: str, payloads: Sequence[dict[str, JSON]]) -> WriteReceipt:
        try:
            if self._disk is not None:
                self._disk.require_writable()
            ids = self._queue.enqueue_many(kind, payloads)
        except BackendError as exc:
            # Redis down or failing over, or the disk short of space: the agent's
            # step goes on; the caller learns from the receipt, operators from the
            # log and the counter. Nothing of the write was queued.
            with self._lock:
                self._failures += 1
            logger.warning(
                "write queue: could not enqueue %d %s entries on queue %s: %s",
                len(payloads),
                kind,
                self._queue.name,
                type(exc).__name__,
            )
            return WriteReceipt(False, (), len(payloads), error=type(exc).__name__)
        with self._lock:
            self._enqueued += len(ids)
        return WriteReceipt(True, ids, len(payloads))

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

    def stats(self) -> WriteStats:
        """Counters; the queue part is None when Redis cannot be reached."""
        try:
            queue_stats: QueueStats | None = self._queue.stats()
        except BackendError:
            queue_stats = None
        with self._lock:
            enqueued, failures = self._enqueued, self._failures
        return WriteStats(enqueued, failures, self._handler.stats(), queue_stats)

    def close(self) -> None:
        """Stop the worker threads, each after its current batch."""
        for worker in self._workers:
            worker.stop()
