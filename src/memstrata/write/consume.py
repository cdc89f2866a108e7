"""Stage 4 of the write path: the consumer side of the write queue, :class:`QueueWorker`.

A worker reads batches for its consumer name, hands them to a handler and
acknowledges only after the handler returned. Guarantees and their limits:

* at-least-once: a crash between the store write and the XACK re-delivers the
  entry (to this or another worker, via XAUTOCLAIM after ``claim_idle_ms``), so
  the store write itself must be idempotent (upsert keyed by ``content_hash``);
* a content hash acknowledged inside the queue's dedupe window is acknowledged
  again without calling the handler, so replays cost nothing;
* a handler exception is logged by type only (messages may quote user content)
  and the entry stays pending; after ``max_deliveries`` it is moved to the
  dead-letter stream and acknowledged, never silently dropped;
* our own failures spend no delivery: a handler failure after which the queue's
  consume gate is closed (the long-term store, Valkey, the embedder or the extractor
  down: :class:`~memstrata.write.submit.OutageWatch`; the disk short of space) is an
  outage, not a fault of the entries. The worker holds the batch, keeps it from
  being taken over (XCLAIM JUSTID), and retries it once the gate opens; stopped
  meanwhile, it gives the delivery back (RETRYCOUNT). Dead letters are left for
  entries that fail while every backend answers: input that can never be stored;
* with a :class:`~memstrata.write.order.UserOrder` shared by the engine's worker
  threads, one user's entries are handled one batch at a time, in reading order.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol

from memstrata.clock import Clock, SystemClock
from memstrata.errors import BackendError
from memstrata.validation import (
    check_id,
    check_non_negative_int,
    check_positive_float,
    check_positive_int,
)
from memstrata.write.entries import (
    MalformedEntryError,
    QueueEntry,
    decode_entry,
    parse_stream_id,
)
from memstrata.write.order import Ticket, UserOrder, user_key
from memstrata.write.queue import RawEntry, WriteQueue

logger = logging.getLogger(__name__)

# Dead-letter reasons that are not a handler exception type.
ERROR_MALFORMED = "MalformedEntry"
ERROR_CONSUMER_LOST = "ConsumerLost"


class Handler(Protocol):
    """Writes a batch to the long-term store; returning means it is durable.

    Delivery is at-least-once: after a crash between the write and the
    acknowledgement, the same entries (same ``content_hash``) arrive again, so the
    write must be idempotent. Raising leaves the whole batch pending; the worker
    then retries the entries one by one so one bad entry cannot hold back others.
    """

    def __call__(self, entries: Sequence[QueueEntry], /) -> None:
        """Handle ``entries`` (distinct content hashes, in stream order within the batch)."""
        ...


@dataclass(frozen=True, slots=True)
class _Group:
    """Entries of one batch sharing a content hash: handled once, acked together."""

    first: QueueEntry
    ids: tuple[str, ...]
    raw: tuple[RawEntry, ...]
    deliveries: int


class QueueWorker:
    """Drains one :class:`WriteQueue` into ``handler`` as consumer ``consumer_name``.

    ``claim_idle_ms`` must exceed the slowest handler call: an entry idle that long
    is presumed abandoned and taken over. ``block_ms`` (0 = do not block) bounds
    how long an idle worker waits in XREADGROUP, hence how fast :meth:`stop` is.
    """

    def __init__(
        self,
        queue: WriteQueue,
        handler: Handler,
        consumer_name: str,
        *,
        batch_size: int = 100,
        block_ms: int = 1000,
        claim_idle_ms: int = 30_000,
        max_deliveries: int = 5,
        error_backoff_s: float = 0.5,
        clock: Clock | None = None,
        order: UserOrder | None = None,
        warm: Handler | None = None,
    ) -> None:
        """``order``: shared by the threads of one engine, so that one user's entries
        are handled in order (module docstring); None: no per-user order. ``warm``:
        called with the entries a batch must wait for, before it waits (the handler's
        work that reads no slot: :meth:`~memstrata.write.handle.WriteHandler.warm`)."""
        self._queue = queue
        self._handler = handler
        self._consumer = check_id("consumer_name", consumer_name)
        self._batch_size = check_positive_int("batch_size", batch_size, maximum=10_000)
        self._block_ms = check_non_negative_int("block_ms", block_ms)
        self._claim_idle_ms = check_positive_int("claim_idle_ms", claim_idle_ms)
        self._max_deliveries = check_positive_int("max_deliveries", max_deliveries)
        self._backoff_s = check_positive_float("error_backoff_s", error_backoff_s)
        self._clock = clock or SystemClock()
        self._claim_cursor = "0-0"
        self._last_claim = float("-inf")
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._order = order
        self._warm = warm

    @property
    def queue(self) -> WriteQueue:
        """The queue this worker drains."""
        return self._queue

    @property
    def consumer_name(self) -> str:
        """This worker's consumer name inside the group."""
        return self._consumer

    # --- one batch ----------------------------------------------------------------

    def run_once(self) -> int:
        """Take one batch (reclaimed first, then new) and settle it; returns its size.

        Every entry taken is acknowledged, dead-lettered, or left pending for a
        retry. Backend failures propagate as BackendError; the entries stay pending.
        """
        if self._order is None:
            batch = self._take()
            if batch:
                self._settle(batch, None)
            return len(batch)
        # Read under the order's lock: the batch's ticket follows the reading order.
        batch, ticket = self._order.admit(self._take, lambda item: user_key(item[0][1]))
        try:
            if batch:
                self._settle(batch, ticket)
        finally:
            self._order.release(ticket, ticket.users)
        return len(batch)

    def _take(self) -> list[tuple[RawEntry, int]]:
        """Reclaimed entries first, then new ones; each with its delivery count."""
        batch: list[tuple[RawEntry, int]] = []
        if self._claim_due():
            cursor, claimed = self._queue.claim_idle(
                self._consumer, self._claim_idle_ms, self._claim_cursor, self._batch_size
            )
            self._claim_cursor = cursor
            self._last_claim = self._clock.monotonic()
            counts = self._queue.delivery_counts([entry_id for entry_id, _ in claimed])
            # An entry missing from the PEL was acknowledged meanwhile by its old owner.
            batch.extend((raw, counts[raw[0]]) for raw in claimed if raw[0] in counts)
        room = self._batch_size - len(batch)
        if room > 0:
            # Never block while holding reclaimed work.
            block = None if batch or self._block_ms == 0 else self._block_ms
            batch.extend((raw, 1) for raw in self._queue.read_new(self._consumer, room, block))
        return batch

    def _claim_due(self) -> bool:
        # XAUTOCLAIM scans the PEL; a few times per idle period is enough, except
        # while a previous scan stopped early (cursor not back at 0-0).
        if self._claim_cursor != "0-0":
            return True
        elapsed_ms = (self._clock.monotonic() - self._last_claim) * 1000
        return elapsed_ms >= self._claim_idle_ms / 4

    def _settle(self, batch: Sequence[tuple[RawEntry, int]], ticket: Ticket | None) -> None:
        groups: dict[str, list[tuple[QueueEntry, RawEntry]]] = {}
        for raw, deliveries in batch:
            try:
                entry = decode_entry(raw[0], raw[1], deliveries)
            except MalformedEntryError as exc:
                logger.warning(
                    "write queue %s: entry %s is malformed; dead-lettered",
                    self._queue.name,
                    raw[0],
                )
                self._queue.dead_letter(
                    raw[0], raw[1], ERROR_MALFORMED, deliveries, f"cannot be decoded: {exc}"
                )
                continue
            groups.setdefault(entry.content_hash, []).append((entry, raw))
        live = [
            _Group(
                first=members[0][0],
                ids=tuple(e.entry_id for e, _ in members),
                raw=tuple(r for _, r in members),
                deliveries=max(e.deliveries for e, _ in members),
            )
            for members in groups.values()
        ]
        # XAUTOCLAIM's cursor wraps around the PEL, so a batch need not be sorted.
        # Across batches a retried entry still arrives after newer ones, so the
        # store must order facts by their own timestamps, not by arrival.
        live.sort(key=lambda g: parse_stream_id(g.first.entry_id))
        done = self._queue.done_hashes([g.first.content_hash for g in live])
        replayed = [g for g in live if g.first.content_hash in done]
        if replayed:
            # Already written by an earlier delivery or an identical enqueue.
            self._queue.ack([i for g in replayed for i in g.ids], [])
        todo = [g for g in live if g.first.content_hash not in done]
        lost = [g for g in todo if g.deliveries > self._max_deliveries]
        for group in lost:
            # Handed out max_deliveries times without an ack or a recorded failure:
            # its consumers died or stalled on it (a crash-inducing entry).
            self._give_up(
                group,
                ERROR_CONSUMER_LOST,
                f"handed out {group.deliveries} times and never answered: the consumers "
                "holding it crashed or stalled on it",
            )
        todo = [g for g in todo if g.deliveries <= self._max_deliveries]
        if not todo:
            return
        if ticket is None:
            self._handle(todo)
        else:
            self._handle_in_order(todo, ticket)

    def _handle_in_order(self, todo: Sequence[_Group], ticket: Ticket) -> None:
        """Each user's entries once the earlier batches holding that user settled them;
        the users that are free go together (one handler call), the rest wait."""
        assert self._order is not None
        pending = [(user_key(g.raw[0][1]), g) for g in todo]
        warmed = False
        while pending:
            users = {key for key, _ in pending if key is not None}
            ready = self._order.free(ticket, users)
            if users and not ready:
                if self._warm is not None and not warmed:
                    warmed = True
                    try:
                        self._warm([g.first for _, g in pending])
                    except Exception as exc:  # best effort: the write meets it again
                        logger.warning("write queue: warm-up failed: %s", type(exc).__name__)
                ready = self._order.wait_turn(ticket, users, self._stop)
            if users and not ready:
                return  # stopping: the rest stay pending and are reclaimed later
            now = [g for key, g in pending if key is None or key in ready]
            pending = [(key, g) for key, g in pending if key is not None and key not in ready]
            self._handle(now)
            self._order.release(ticket, ready)

    def _handle(self, todo: Sequence[_Group]) -> None:
        while True:
            try:
                self._handler([g.first for g in todo])
            except Exception as exc:
                if self._queue.consuming():
                    failure = exc
                    break
                # The gate closed on this failure: an outage of ours, not the entries'.
                if self._wait_out(todo):
                    continue
                self._give_back(todo)
                return
            self._ack(todo)
            return
        if len(todo) == 1:
            self._failed(todo[0], failure)
            return
        logger.warning(
            "write queue %s: batch of %d failed with %s; retrying one by one",
            self._queue.name,
            len(todo),
            type(failure).__name__,
        )
        for group in todo:
            self._handle([group])

    def _wait_out(self, todo: Sequence[_Group]) -> bool:
        """Hold ``todo`` until the consume gate opens (True) or the worker stops (False),
        touching it so that no other consumer takes it over as abandoned."""
        ids = [i for g in todo for i in g.ids]
        # Real time: the claim-idle clock it races is the server's.
        touched = time.monotonic()
        while not self._stop.is_set():
            if self._queue.consuming(200):
                return True
            if (time.monotonic() - touched) * 1000 >= self._claim_idle_ms / 3:
                # Valkey down too: nobody can claim it meanwhile.
                with contextlib.suppress(BackendError):
                    self._queue.touch(self._consumer, ids)
                touched = time.monotonic()
        return False

    def _give_back(self, todo: Sequence[_Group]) -> None:
        """Stopped during an outage: the deliveries the outage took are given back."""
        counts = {i: g.deliveries - 1 for g in todo for i in g.ids}
        try:
            self._queue.return_deliveries(self._consumer, counts, self._claim_idle_ms)
        except BackendError as exc:
            logger.warning(
                "write queue %s: could not give back %d deliveries: %s",
                self._queue.name,
                len(counts),
                type(exc).__name__,
            )

    def _ack(self, groups: Sequence[_Group]) -> None:
        self._queue.ack([i for g in groups for i in g.ids], [g.first.content_hash for g in groups])

    def _failed(self, group: _Group, exc: Exception) -> None:
        # A stage's failure (the handler's StageUnavailableError) names the stage and
        # the type it raised; any other failure its own type. Never the message.
        stage, cause = getattr(exc, "stage", None), getattr(exc, "cause", None)
        error = str(cause) if stage and cause else type(exc).__name__
        if group.deliveries >= self._max_deliveries:
            failed = f"the {stage} raised {error}" if stage else f"the handler raised {error}"
            self._give_up(
                group,
                error,
                f"{failed} on each of {group.deliveries} deliveries while every backend "
                "answered: this entry cannot be stored",
            )
            return
        # Left pending: XAUTOCLAIM hands it out again after claim_idle_ms, which
        # doubles as the retry backoff. Only the type is logged, never str(exc).
        logger.warning(
            "write queue %s: entry %s (delivery %d/%d) failed with %s; will retry",
            self._queue.name,
            group.first.entry_id,
            group.deliveries,
            self._max_deliveries,
            error,
        )

    def _give_up(self, group: _Group, error: str, reason: str) -> None:
        logger.error(
            "write queue %s: entry %s dead-lettered after %d deliveries (%s)",
            self._queue.name,
            group.first.entry_id,
            group.deliveries,
            error,
        )
        for entry_id, fields in group.raw:
            self._queue.dead_letter(entry_id, fields, error, group.deliveries, reason)

    # --- loops ----------------------------------------------------------------------

    def run_forever(self, stop: threading.Event) -> None:
        """Run batches until ``stop`` is set; backend errors are logged and retried."""
        self._stop = stop  # a held batch waits on it too
        delay = self._backoff_s
        while not stop.is_set():
            try:
                taken = self.run_once()
            except Exception as exc:
                # Redis down, a failover, a bug in a decoder: keep the loop alive; the
                # entries are still pending and will be reclaimed.
                logger.warning(
                    "write queue %s: worker %s: %s; retrying in %.2fs",
                    self._queue.name,
                    self._consumer,
                    type(exc).__name__,
                    delay,
                )
                stop.wait(delay)
                delay = min(delay * 2, 30.0)
                continue
            delay = self._backoff_s
            if taken == 0 and self._block_ms == 0:
                stop.wait(0.05)  # no blocking read to pace an idle loop

    def start(self) -> QueueWorker:
        """Run :meth:`run_forever` in a daemon thread until :meth:`stop` (idempotent)."""
        if self._thread is not None and self._thread.is_alive():
            return self  # idempotent: one loop per worker object
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self.run_forever,
            args=(self._stop,),
            name=f"memstrata-queue-{self._queue.name}-{self._consumer}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self, timeout_s: float | None = None) -> None:
        """Signal the thread and wait for it (the current batch always completes)."""
        self._stop.set()
        if self._thread is not None:
            wait = timeout_s if timeout_s is not None else self._block_ms / 1000 + 10.0
            self._thread.join(wait)
            self._thread = None

    @property
    def running(self) -> bool:
        """True while the background thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def flush(self, timeout_s: float) -> None:
        """Wait until everything enqueued so far is acknowledged (see WriteQueue.flush)."""
        self._queue.flush(timeout_s)

    def __enter__(self) -> QueueWorker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
