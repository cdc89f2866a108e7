"""A thread-safe, single-process :class:`KVBackend` honouring TTLs via a Clock.

It is the test double of the contract suite and the no-server mode; it mirrors
the Redis semantics working memory relies on (PX expiry, PEXPIRE GT, rank
trimming of sorted sets, PTTL sentinels).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memstrata.clock import Clock
from memstrata.working.backend import (
    NO_EXPIRY,
    NO_KEY,
    BackendInfo,
    ExtensionSource,
    KeyInfo,
)


@dataclass(slots=True)
class _Entry:
    kind: str
    value: Any  # str | dict[str, str] | dict[str, float] | set[str]
    expires_at: float | None  # clock.monotonic() deadline


class InMemoryBackend:
    """Dict-backed store; expiry is checked lazily against the injected clock."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.RLock()
        self._data: dict[str, _Entry] = {}
        self._expired = 0
        self._hits = 0
        self._misses = 0

    # -- helpers (call with the lock held) ---------------------------------------
    def _live(self, key: str) -> _Entry | None:
        entry = self._data.get(key)
        if entry is None:
            return None
        if entry.expires_at is not None and self._clock.monotonic() >= entry.expires_at:
            del self._data[key]
            self._expired += 1
            return None
        return entry

    def _deadline(self, ttl_ms: int | None) -> float | None:
        return None if ttl_ms is None else self._clock.monotonic() + ttl_ms / 1000

    def _ttl(self, entry: _Entry | None) -> int:
        if entry is None:
            return NO_KEY
        if entry.expires_at is None:
            return NO_EXPIRY
        return max(0, math.ceil((entry.expires_at - self._clock.monotonic()) * 1000))

    def _count(self, entry: _Entry | None) -> None:
        if entry is None:
            self._misses += 1
        else:
            self._hits += 1

    # -- KVBackend ------------------------------------------------------------------
    def set_string(self, key: str, value: str, ttl_ms: int | None) -> None:
        """SET key value [PX ttl_ms]."""
        with self._lock:
            self._data[key] = _Entry("string", value, self._deadline(ttl_ms))

    def get_value(self, key: str) -> str | None:
        """GET."""
        found = self.get_string(key)
        return None if found is None else found[0]

    def get_string(self, key: str) -> tuple[str, int] | None:
        """GET + PTTL."""
        with self._lock:
            entry = self._live(key)
            self._count(entry)
            if entry is None or entry.kind != "string":
                return None
            return str(entry.value), self._ttl(entry)

    def write_hash(
        self,
        key: str,
        fields: Mapping[str, str],
        ttl_ms: int | None,
        *,
        replace: bool = True,
        index: tuple[str, str] | None = None,
    ) -> None:
        """[DEL] HSET [PEXPIRE] [SADD] atomically."""
        with self._lock:
            entry = self._live(key)
            if replace or entry is None or entry.kind != "hash":
                entry = _Entry("hash", {}, None)
                self._data[key] = entry
            entry.value.update(fields)
            if ttl_ms is not None:
                entry.expires_at = self._deadline(ttl_ms)
            if index is not None:
                self._sadd(index[0], [index[1]])

    def read_hash(self, key: str) -> tuple[dict[str, str], int] | None:
        """HGETALL + PTTL."""
        with self._lock:
            entry = self._live(key)
            self._count(entry)
            if entry is None or entry.kind != "hash":
                return None
            return dict(entry.value), self._ttl(entry)

    def read_fields(self, key: str) -> dict[str, str] | None:
        """HGETALL."""
        found = self.read_hash(key)
        return None if found is None else found[0]

    def read_hash_extending(
        self, key: str, table_key: str, field: str, floor_ms: int, fallback_key: str
    ) -> tuple[tuple[dict[str, str], int] | None, ExtensionSource]:
        """HGETALL + PTTL, then PEXPIRE GT from the table, under one lock."""
        with self._lock:
            found = self.read_hash(key)
            if found is None:
                return None, "none"
            table = self._live(table_key)
            if table is None:
                return found, "fallback" if self._live(fallback_key) is not None else "none"
            wanted = table.value.get(field) if table.kind == "hash" else None
            if wanted is not None and self.expire_gt(key, max(int(wanted), floor_ms)):
                return (found[0], self._ttl(self._live(key))), "table"
            return found, "table"

    def expire_gt(self, key: str, ttl_ms: int) -> bool:
        """PEXPIRE GT: a persistent key counts as infinite, so it is never changed."""
        with self._lock:
            entry = self._live(key)
            if entry is None or entry.expires_at is None:
                return False
            deadline = self._clock.monotonic() + ttl_ms / 1000
            if deadline <= entry.expires_at:
                return False
            entry.expires_at = deadline
            return True

    def pttl(self, key: str) -> int:
        """PTTL."""
        with self._lock:
            return self._ttl(self._live(key))

    def append_window(
        self, key: str, members: Mapping[str, float], keep: int, ttl_ms: int | None
    ) -> int:
        """ZADD + ZREMRANGEBYRANK + PEXPIRE + ZCARD."""
        with self._lock:
            entry = self._live(key)
            if entry is None or entry.kind != "zset":
                entry = _Entry("zset", {}, None)
                self._data[key] = entry
            entry.value.update(members)
            ordered = sorted(entry.value.items(), key=lambda kv: (kv[1], kv[0]))
            entry.value = dict(ordered[-keep:])
            if ttl_ms is not None:
                entry.expires_at = self._deadline(ttl_ms)
            return len(entry.value)

    def range_by_score(self, key: str, low: float, high: float) -> list[tuple[str, float]] | None:
        """EXISTS + ZRANGEBYSCORE WITHSCORES."""
        with self._lock:
            entry = self._live(key)
            self._count(entry)
            if entry is None or entry.kind != "zset":
                return None
            ordered = sorted(entry.value.items(), key=lambda kv: (kv[1], kv[0]))
            return [(m, s) for m, s in ordered if low <= s <= high]

    def _sadd(self, key: str, members: Sequence[str]) -> int:
        entry = self._live(key)
        if entry is None or entry.kind != "set":
            entry = _Entry("set", set(), None)
            self._data[key] = entry
        before = len(entry.value)
        entry.value.update(members)
        return len(entry.value) - before

    def set_add(self, key: str, members: Sequence[str]) -> int:
        """SADD."""
        with self._lock:
            return self._sadd(key, members)

    def set_remove(self, key: str, member: str) -> bool:
        """SREM; an emptied set disappears, as in Redis."""
        with self._lock:
            entry = self._live(key)
            if entry is None or entry.kind != "set" or member not in entry.value:
                return False
            entry.value.discard(member)
            if not entry.value:
                del self._data[key]
            return True

    def set_members(self, key: str) -> frozenset[str]:
        """SMEMBERS."""
        with self._lock:
            entry = self._live(key)
            if entry is None or entry.kind != "set":
                return frozenset()
            return frozenset(entry.value)

    def delete(self, keys: Sequence[str]) -> int:
        """DEL."""
        with self._lock:
            removed = 0
            for key in keys:
                if self._live(key) is not None:
                    del self._data[key]
                    removed += 1
            return removed

    def scan_prefix(self, prefix: str) -> list[str]:
        """Live keys starting with ``prefix``."""
        with self._lock:
            return [k for k in list(self._data) if k.startswith(prefix) and self._live(k)]

    def describe(self, keys: Sequence[str]) -> list[KeyInfo]:
        """TYPE + PTTL."""
        with self._lock:
            out = []
            for key in keys:
                entry = self._live(key)
                if entry is not None:
                    out.append(KeyInfo(key, entry.kind, self._ttl(entry)))
            return out

    def ping(self) -> bool:
        """Always reachable."""
        return True

    def info(self) -> BackendInfo:
        """Counters kept by this process."""
        with self._lock:
            live = [k for k in list(self._data) if self._live(k)]
            return BackendInfo(
                kind="inmemory",
                nodes=1,
                keys=len(live),
                used_memory_bytes=0,
                expired_keys=self._expired,
                keyspace_hits=self._hits,
                keyspace_misses=self._misses,
            )

    def close(self) -> None:
        """Nothing to release."""
