"""Stage 3 of the write path: the durable write queue, a Redis Stream read by one consumer group.

Producers (``observe`` / ``remember``) call :meth:`WriteQueue.enqueue_many`: the
entries of one write (a text's chunks) are added in one MULTI, so a write is queued
whole or not at all, and it returns at once;
:class:`~memstrata.write.consume.QueueWorker` drains the stream. While the queue's
``consume_gate`` says no (the disk is short of space, the long-term store is
unreachable) no batch is taken: entries wait in the stream instead of spending their
deliveries on the outage and ending in the dead-letter stream. Delivery is
at-least-once: an entry leaves the group's pending list only through XACK, which
happens in the same MULTI that records its content hash in the done set, after the
handler returned. All keys share the hash tag
``{name}``, so those transactions are legal on a Redis Cluster too.

redis-py errors are translated here, and only here, into memstrata's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeAlias, cast

import redis
import redis.exceptions as rexc
from redis.cluster import RedisCluster

from memstrata.clock import Clock, SystemClock
from memstrata.errors import BackendError, FlushTimeoutError, NotFoundError, ValidationError
from memstrata.validation import check_id, check_positive_float, check_positive_int
from memstrata.working.redis_errors import redis_errors
from memstrata.write.entries import (
    JSON,
    DeadLetter,
    QueueKeys,
    QueueStats,
    StreamId,
    dead_letter_fields,
    decode_dead_letter,
    encode_entry,
    format_stream_id,
    next_stream_id,
    parse_stream_id,
    safe_trim_floor,
)

RedisClient: TypeAlias = "redis.Redis | RedisCluster"
RawEntry: TypeAlias = tuple[str, dict[str, str]]

logger = logging.getLogger(__name__)

DEFAULT_GROUP = "workers"
DEFAULT_DEDUPE_WINDOW_S = 7 * 24 * 3600.0
# One trim reads at most this many ids, so a lagging consumer cannot make an
# enqueue slow; the rest is trimmed by later calls.
MAX_TRIM_SCAN = 10_000


@contextmanager
def translated(operation: str) -> Iterator[None]:
    """Map redis-py failures to BackendUnavailableError / BackendError."""
    with redis_errors(f"write queue {operation}"):
        yield


def _rows(rows: Any) -> list[RawEntry]:
    """Stream rows as (id, fields); rows of deleted entries (fields None) skipped."""
    return [(str(i), dict(f)) for i, f in rows if f is not None]


def _dead_id(value: str) -> str:
    """A dead letter's id as the caller gave it, checked (a stream id)."""
    if not isinstance(value, str):
        raise ValidationError("dead_id", f"must be a string, got {type(value).__name__}")
    try:
        return format_stream_id(parse_stream_id(value))
    except ValueError as exc:
        raise ValidationError("dead_id", "must be a stream id like 1700000000000-0") from exc


def _is_nogroup(exc: rexc.ResponseError) -> bool:
    return str(exc).startswith("NOGROUP")


DEAD_LETTER_ONCE = """
if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return 0
end
redis.call('XADD', KEYS[2], '*', unpack(ARGV, 3))
return 1
"""
"""Dead-letter an entry only if this call settles it (KEYS: stream, dead-letter
stream; ARGV: group, entry id, then the record's fields and values)."""


class WriteQueue:
    """Producer side and bookkeeping of one named queue.

    ``client`` is a redis-py client (standalone or cluster) built with
    ``decode_responses=True``; a blocking worker read must stay below its
    ``socket_timeout``. ``maxlen`` trims acknowledged entries once the stream
    grows past it and never removes unacknowledged work (so the stream may exceed
    ``maxlen`` while consumers lag). A content hash stays in the done set for
    ``dedupe_window_s``: a replay inside the window is acknowledged without work.
    ``consume_gate`` (None: always open) is asked before each batch is read or
    reclaimed; while it answers False a read waits instead of taking entries.
    """

    def __init__(
        self,
        client: RedisClient,
        name: str,
        *,
        group: str = DEFAULT_GROUP,
        maxlen: int | None = None,
        dedupe_window_s: float = DEFAULT_DEDUPE_WINDOW_S,
        clock: Clock | None = None,
        consume_gate: Callable[[], bool] | None = None,
    ) -> None:
        self._client = client
        self._gate = consume_gate
        self._keys = QueueKeys(name)
        self._group = check_id("group", group)
        self._maxlen = None if maxlen is None else check_positive_int("maxlen", maxlen)
        # Trimming costs round trips: only try once the stream is this far over.
        self._trim_slack = 0 if maxlen is None else max(1, maxlen // 10)
        self._window_ms = int(check_positive_float("dedupe_window_s", dedupe_window_s) * 1000)
        self._clock = clock or SystemClock()
        self._group_ready = False
        # Enqueues left before the next trim attempt: while consumers lag, every
        # attempt would find nothing to remove, so do not pay for one each time.
        self._trim_backoff = 0
        self._dead_letter_once = client.register_script(DEAD_LETTER_ONCE)

    @property
    def name(self) -> str:
        """The queue name (the hash tag of all its keys)."""
        return self._keys.name

    @property
    def keys(self) -> QueueKeys:
        """The Redis keys this queue uses."""
        return self._keys

    @property
    def group(self) -> str:
        """The consumer group name."""
        return self._group

    def now_ms(self) -> int:
        """Current time in ms from the injected clock (done-set scores)."""
        return int(self._clock.now().timestamp() * 1000)

    # --- producer ---------------------------------------------------------------

    def ensure_group(self) -> None:
        """XGROUP CREATE stream group 0 MKSTREAM; an existing group is fine."""
        with translated("XGROUP CREATE"):
            try:
                # Id 0, not $: entries added before the group existed still get done.
                self._client.xgroup_create(self._keys.stream, self._group, "0", mkstream=True)
            except rexc.ResponseError as exc:
                if not str(exc).startswith("BUSYGROUP"):
                    raise
        self._group_ready = True

    def enqueue(self, kind: str, payload: Mapping[str, JSON]) -> str:
        """Append one unit of work and return its entry id, without waiting for it.

        Raises ValidationError naming ``kind`` or ``payload`` (not JSON, or over
        256 KiB once encoded) before anything is written.
        """
        return self.enqueue_many(kind, [payload])[0]

    def enqueue_many(self, kind: str, payloads: Sequence[Mapping[str, JSON]]) -> tuple[str, ...]:
        """Append the entries of one write together: MULTI, one XADD each, EXEC.

        All of them are queued or none is: a server refusing writes (a full disk,
        out of memory) rejects the transaction whole, so no write is left half
        queued. Raises ValidationError (a payload not JSON, or over 256 KiB once
        encoded) before anything is written; BackendError when nothing was queued.
        """
        encoded = [encode_entry(kind, payload) for payload in payloads]
        if not encoded:
            return ()
        if not self._group_ready:
            self.ensure_group()
        with translated("XADD"):
            pipe = self._client.pipeline(transaction=len(encoded) > 1)
            for fields in encoded:
                pipe.xadd(self._keys.stream, cast("dict[Any, Any]", fields))
            pipe.xlen(self._keys.stream)
            *entry_ids, length = pipe.execute()
        if self._maxlen is not None and int(length) > self._maxlen + self._trim_slack:
            self._trim_after_enqueue()
        return tuple(str(entry_id) for entry_id in entry_ids)

    def _trim_after_enqueue(self) -> None:
        if self._trim_backoff > 0:
            self._trim_backoff -= 1
            return
        try:
            if self.trim() == 0:
                self._trim_backoff = self._trim_slack
        except BackendError as exc:
            # The entry is durably queued; failing the call now would make the
            # caller enqueue it again. The next enqueue retries the trim.
            logger.warning("write queue %s: trim failed: %s", self.name, type(exc).__name__)

    def trim(self) -> int:
        """Remove the oldest acknowledged entries beyond ``maxlen``; returns how many."""
        if self._maxlen is None:
            return 0
        stream = self._keys.stream
        with translated("XTRIM"):
            pipe = self._client.pipeline(transaction=False)
            pipe.xlen(stream)
            pipe.xinfo_groups(stream)
            length, groups = pipe.execute()
            excess = int(length) - self._maxlen
            if excess <= 0 or not groups:
                return 0
            floor = self._trim_floor([str(g["name"]) for g in groups], groups)
            rows = self._client.xrange(stream, "-", "+", count=min(excess, MAX_TRIM_SCAN))
            if not rows:
                return 0
            cut = min(next_stream_id(parse_stream_id(str(rows[-1][0]))), floor)
            removed = self._client.xtrim(stream, minid=format_stream_id(cut), approximate=False)
        return int(removed)

    def _trim_floor(self, names: Sequence[str], groups: Sequence[Mapping[str, Any]]) -> StreamId:
        # Every group reading the stream must be done with an entry before it goes.
        pipe = self._client.pipeline(transaction=False)
        for name in names:
            pipe.xpending(self._keys.stream, name)
        summaries = pipe.execute()
        floors = []
        for group, summary in zip(groups, summaries, strict=True):
            oldest = summary.get("min") if int(summary.get("pending") or 0) else None
            floors.append(
                safe_trim_floor(
                    parse_stream_id(str(group["last-delivered-id"])),
                    None if oldest is None else parse_stream_id(str(oldest)),
                )
            )
        return min(floors)

    # --- observing --------------------------------------------------------------

    def stats(self) -> QueueStats:
        """Enqueued, pending, lag and dead-lettered counts (one round trip)."""
        if not self._group_ready:
            self.ensure_group()
        with translated("XINFO"):
            pipe = self._client.pipeline(transaction=False)
            pipe.xinfo_stream(self._keys.stream)
            pipe.xinfo_groups(self._keys.stream)
            pipe.xlen(self._keys.dead)
            stream, groups, dead = pipe.execute()
        group = self._find_group(groups)
        lag = group.get("lag")
        return QueueStats(
            name=self.name,
            enqueued=int(stream.get("entries-added") or 0),
            length=int(stream.get("length") or 0),
            pending=int(group.get("pending") or 0),
            lag=None if lag is None else int(lag),
            dead_lettered=int(dead),
            consumers=int(group.get("consumers") or 0),
        )

    def _find_group(self, groups: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
        for group in groups:
            if group.get("name") == self._group:
                return group
        raise BackendError(f"write queue {self.name}: consumer group {self._group!r} is gone")

    def flush(self, timeout_s: float, *, poll_s: float = 0.01) -> None:
        """Wait until every entry enqueued before this call is acknowledged.

        Something else must be consuming (a worker thread or process). Raises
        :class:`FlushTimeoutError` naming the queue when ``timeout_s`` passes first.
        """
        check_positive_float("timeout_s", timeout_s)
        if not self._group_ready:
            self.ensure_group()
        # Real time on purpose: the consumers being waited for run on real time too.
        deadline = time.monotonic() + timeout_s
        with translated("XREVRANGE"):
            newest = self._client.xrevrange(self._keys.stream, "+", "-", count=1)
        if not newest:
            return
        target = parse_stream_id(str(newest[0][0]))
        delay = poll_s
        while True:
            outstanding = self._outstanding(target)
            if outstanding == 0:
                return
            if time.monotonic() >= deadline:
                raise FlushTimeoutError(self.name, timeout_s, outstanding)
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.05)

    def _outstanding(self, target: StreamId) -> int:
        """How many entries up to ``target`` are not acknowledged (0 = flushed)."""
        with translated("XPENDING"):
            pipe = self._client.pipeline(transaction=False)
            pipe.xinfo_groups(self._keys.stream)
            pipe.xpending(self._keys.stream, self._group)
            groups, summary = pipe.execute()
        group = self._find_group(groups)
        pending = int(summary.get("pending") or 0)
        delivered_all = parse_stream_id(str(group["last-delivered-id"])) >= target
        oldest = summary.get("min")
        pending_before = pending > 0 and parse_stream_id(str(oldest)) <= target
        if delivered_all and not pending_before:
            return 0
        # A count for the error message; the lag may be unknown (None) on old servers.
        return pending + int(group.get("lag") or 0) or 1

    def dead_letters(self, count: int = 100) -> list[DeadLetter]:
        """The oldest ``count`` dead-lettered entries."""
        check_positive_int("count", count)
        with translated("XRANGE"):
            rows = self._client.xrange(self._keys.dead, "-", "+", count=count)
        return [decode_dead_letter(i, f) for i, f in _rows(rows)]

    def dead_letters_of(
        self, tenant: str, *, after: str | None = None, limit: int = 100
    ) -> list[DeadLetter]:
        """Up to ``limit`` dead letters whose payload names ``tenant``, oldest first,
        those after the dead id ``after`` (a page's last id) only."""
        check_id("tenant", tenant)
        check_positive_int("limit", limit, maximum=1000)
        start = "-" if after is None else f"({_dead_id(after)}"
        found: list[DeadLetter] = []
        while len(found) < limit:
            with translated("XRANGE"):
                rows = _rows(self._client.xrange(self._keys.dead, start, "+", count=500))
            if not rows:
                break
            for dead_id, fields in rows:
                letter = decode_dead_letter(dead_id, fields)
                if letter.tenant == tenant:
                    found.append(letter)
                    if len(found) == limit:
                        break
            start = f"({rows[-1][0]}"
        return found

    def dead_letter_of(self, tenant: str, dead_id: str) -> DeadLetter:
        """One dead letter of ``tenant``; NotFoundError when there is none by that id
        (another tenant's says the same, so its existence does not leak)."""
        check_id("tenant", tenant)
        wanted = _dead_id(dead_id)
        with translated("XRANGE"):
            rows = _rows(self._client.xrange(self._keys.dead, wanted, wanted, count=1))
        letters = [decode_dead_letter(i, f) for i, f in rows]
        if not letters or letters[0].tenant != tenant:
            raise NotFoundError(f"dead letter {dead_id!r} does not exist")
        return letters[0]

    def replay(self, tenant: str, dead_id: str) -> str:
        """Put a dead letter of ``tenant`` back on the work stream as it was enqueued
        (a new entry, its deliveries counted from 0) and remove it from the dead-letter
        stream, in one MULTI; returns the new entry id. Two replays racing may both add
        it: harmless, a write is idempotent by its content hash."""
        letter = self.dead_letter_of(tenant, dead_id)
        if not self._group_ready:
            self.ensure_group()
        with translated("XADD replay"):
            pipe = self._client.pipeline(transaction=True)
            pipe.xadd(self._keys.stream, cast("dict[Any, Any]", letter.entry_fields()))
            pipe.xdel(self._keys.dead, letter.dead_id)
            entry_id, _ = pipe.execute()
        return str(entry_id)

    # --- consumer operations (used by QueueWorker) ------------------------------

    def consuming(self, wait_ms: int | None = None) -> bool:
        """True when the consume gate is open; else waits up to ``wait_ms`` (at most
        200 ms, so a worker asked to stop is not held) and answers False."""
        if self._gate is None or self._gate():
            return True
        if wait_ms:
            time.sleep(min(wait_ms, 200) / 1000)
        return False

    def read_new(self, consumer: str, count: int, block_ms: int | None) -> list[RawEntry]:
        """XREADGROUP ``>``: up to ``count`` never-delivered entries for ``consumer``
        (none while the consume gate is closed: the call then waits ``block_ms``)."""
        if not self.consuming(block_ms if block_ms is not None else 50):
            return []
        with translated("XREADGROUP"):
            try:
                reply = self._client.xreadgroup(
                    self._group, consumer, {self._keys.stream: ">"}, count=count, block=block_ms
                )
            except rexc.ResponseError as exc:
                if not _is_nogroup(exc):
                    raise
                # The stream key was deleted under us: recreate and read next time.
                self.ensure_group()
                return []
        entries: list[RawEntry] = []
        for _stream, rows in cast("list[Any]", reply or []):
            entries.extend(_rows(rows))
        return entries

    def claim_idle(
        self, consumer: str, min_idle_ms: int, cursor: str, count: int
    ) -> tuple[str, list[RawEntry]]:
        """XAUTOCLAIM entries idle for ``min_idle_ms`` (a dead or failing consumer's);
        none while the consume gate is closed, so a pause costs no delivery."""
        if not self.consuming():
            return cursor, []
        with translated("XAUTOCLAIM"):
            try:
                reply = self._client.xautoclaim(
                    self._keys.stream, self._group, consumer, min_idle_ms, cursor, count=count
                )
            except rexc.ResponseError as exc:
                if not _is_nogroup(exc):
                    raise
                self.ensure_group()
                return "0-0", []
        # Entries deleted from the stream come back as None (Redis 6.2) or in a
        # third list (7+); the server drops them from the PEL either way.
        return str(reply[0]), _rows(reply[1])

    def touch(self, consumer: str, entry_ids: Sequence[str]) -> None:
        """XCLAIM JUSTID to ``consumer`` itself: the entries' idle time starts again and
        their delivery counts stay (a held batch is not taken over as abandoned)."""
        if not entry_ids:
            return
        with translated("XCLAIM"):
            self._client.xclaim(
                self._keys.stream, self._group, consumer, 0, list[Any](entry_ids), justid=True
            )

    def return_deliveries(self, consumer: str, counts: Mapping[str, int], idle_ms: int) -> None:
        """Undo deliveries spent on our own outage: XCLAIM JUSTID RETRYCOUNT sets each
        entry's count back to ``counts[id]``, and IDLE ``idle_ms`` lets the next
        consumer reclaim it at once."""
        by_count: dict[int, list[Any]] = {}
        for entry_id, count in counts.items():
            by_count.setdefault(max(0, count), []).append(entry_id)
        if not by_count:
            return
        with translated("XCLAIM"):
            pipe = self._client.pipeline(transaction=False)
            for count, ids in by_count.items():
                pipe.xclaim(
                    self._keys.stream, self._group, consumer, 0, ids,
                    idle=idle_ms, retrycount=count, justid=True,
                )  # fmt: skip
            pipe.execute()

    def delivery_counts(self, entry_ids: Sequence[str]) -> dict[str, int]:
        """Times each pending entry was delivered (XPENDING, one round trip)."""
        if not entry_ids:
            return {}
        with translated("XPENDING"):
            pipe = self._client.pipeline(transaction=False)
            for entry_id in entry_ids:
                pipe.xpending_range(self._keys.stream, self._group, entry_id, entry_id, 1)
            replies = pipe.execute()
        counts: dict[str, int] = {}
        for reply in replies:
            for row in reply:
                counts[str(row["message_id"])] = int(row["times_delivered"])
        return counts

    def done_hashes(self, hashes: Sequence[str]) -> set[str]:
        """The subset of ``hashes`` acknowledged inside the dedupe window."""
        if not hashes:
            return set()
        unique = list(dict.fromkeys(hashes))
        cutoff = self.now_ms() - self._window_ms
        with translated("ZMSCORE"):
            scores = self._client.zmscore(self._keys.done, unique)
        return {h for h, s in zip(unique, scores, strict=True) if s is not None and s > cutoff}

    def ack(self, entry_ids: Sequence[str], hashes: Sequence[str]) -> None:
        """MULTI ZADD done / expire old hashes / XACK EXEC: done and acked together."""
        if not entry_ids:
            return
        now = self.now_ms()
        with translated("XACK"):
            pipe = self._client.pipeline(transaction=True)
            if hashes:
                pipe.zadd(self._keys.done, dict.fromkeys(hashes, now))
                pipe.zremrangebyscore(self._keys.done, "-inf", now - self._window_ms)
            pipe.xack(self._keys.stream, self._group, *entry_ids)
            pipe.execute()

    def dead_letter(
        self,
        entry_id: str,
        fields: Mapping[str, str],
        error: str,
        deliveries: int,
        reason: str = "",
    ) -> bool:
        """XACK, and XADD to the dead-letter stream only when that XACK settled the
        entry, in one script: given up, never lost, and dead-lettered once. Two
        consumers may give up on one entry at once (one stalled past ``claim_idle_ms``
        on a busy host while another reclaimed it): the second finds it settled and
        adds nothing. Returns whether this call dead-lettered it."""
        record = dead_letter_fields(entry_id, fields, error, deliveries, self.now_ms(), reason)
        flat = [part for pair in record.items() for part in pair]
        with translated("XADD dead-letter"):
            added = self._dead_letter_once(
                keys=[self._keys.stream, self._keys.dead], args=[self._group, entry_id, *flat]
            )
        return bool(added)
