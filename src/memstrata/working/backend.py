"""The storage role under working memory: a few primitive operations.

Backends only execute; keys, validation and JSON live in
:mod:`memstrata.working.memory` so the implementations cannot drift. Every write
that sets a value and its expiry does both atomically (SET PX or MULTI/EXEC).
TTLs are in milliseconds. A TTL read returns ``-2`` for a missing key and ``-1``
for a key without expiry, as Redis's PTTL does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

NO_KEY = -2
NO_EXPIRY = -1

ExtensionSource = Literal["table", "fallback", "none"]
"""Where :meth:`KVBackend.read_hash_extending` found what sizes the TTL: the table
(extension applied if it holds the field), only the fallback key (the caller
extends), or neither (no extension)."""


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """One live key as seen by :meth:`KVBackend.describe`."""

    key: str
    kind: str  # Redis TYPE: "string", "hash", "zset", "set"
    ttl_ms: int  # NO_EXPIRY when persistent


@dataclass(frozen=True, slots=True)
class BackendInfo:
    """Counters for metrics and health reports."""

    kind: str  # "inmemory" | "redis" | "cluster"
    nodes: int
    keys: int
    used_memory_bytes: int
    expired_keys: int
    keyspace_hits: int
    keyspace_misses: int


@runtime_checkable
class KVBackend(Protocol):
    """Primitive Redis-shaped operations working memory needs."""

    def set_string(self, key: str, value: str, ttl_ms: int | None) -> None:
        """SET key value [PX ttl_ms] - value and expiry in one command."""
        ...

    def get_value(self, key: str) -> str | None:
        """Plain GET of a string key; None when missing (or not a string)."""
        ...

    def get_string(self, key: str) -> tuple[str, int] | None:
        """GET and PTTL in one transaction; None when missing."""
        ...

    def write_hash(
        self,
        key: str,
        fields: Mapping[str, str],
        ttl_ms: int | None,
        *,
        replace: bool = True,
        index: tuple[str, str] | None = None,
    ) -> None:
        """MULTI [DEL] HSET [PEXPIRE] [SADD index_key member] EXEC.

        ``index`` must hash to the same cluster slot as ``key``.
        """
        ...

    def read_hash(self, key: str) -> tuple[dict[str, str], int] | None:
        """HGETALL and PTTL in one transaction; None when missing."""
        ...

    def read_fields(self, key: str) -> dict[str, str] | None:
        """HGETALL alone (no TTL, no transaction); None when missing or not a hash."""
        ...

    def read_hash_extending(
        self, key: str, table_key: str, field: str, floor_ms: int, fallback_key: str
    ) -> tuple[tuple[dict[str, str], int] | None, ExtensionSource]:
        """In one atomic step: HGETALL and PTTL of ``key`` and, when the hash
        ``table_key`` exists and holds ``field`` (a TTL in ms), PEXPIRE key
        max(that, ``floor_ms``) GT. The TTL returned is the one after the extension.

        The source says whether ``table_key`` existed, or only ``fallback_key``, or
        neither. All keys must hash to the same cluster slot.
        """
        ...

    def expire_gt(self, key: str, ttl_ms: int) -> bool:
        """PEXPIRE key ttl_ms GT: only ever lengthens; False if not applied."""
        ...

    def pttl(self, key: str) -> int:
        """Remaining TTL in ms, NO_KEY or NO_EXPIRY."""
        ...

    def append_window(
        self, key: str, members: Mapping[str, float], keep: int, ttl_ms: int | None
    ) -> int:
        """MULTI ZADD, ZREMRANGEBYRANK 0 -(keep+1), [PEXPIRE], ZCARD EXEC; returns size."""
        ...

    def range_by_score(self, key: str, low: float, high: float) -> list[tuple[str, float]] | None:
        """EXISTS + ZRANGEBYSCORE low high WITHSCORES (inclusive), oldest first.

        None when the key does not exist, so a miss differs from an empty range.
        """
        ...

    def set_add(self, key: str, members: Sequence[str]) -> int:
        """SADD; returns how many were new."""
        ...

    def set_remove(self, key: str, member: str) -> bool:
        """SREM; True when the member was present."""
        ...

    def set_members(self, key: str) -> frozenset[str]:
        """SMEMBERS (empty when missing)."""
        ...

    def delete(self, keys: Sequence[str]) -> int:
        """DEL of keys that share one slot; returns how many existed."""
        ...

    def scan_prefix(self, prefix: str) -> list[str]:
        """Every live key starting with ``prefix`` (SCAN MATCH, escaped)."""
        ...

    def describe(self, keys: Sequence[str]) -> list[KeyInfo]:
        """TYPE and PTTL of each key; keys that vanished meanwhile are skipped."""
        ...

    def ping(self) -> bool:
        """True when the server answers."""
        ...

    def info(self) -> BackendInfo:
        """Counters for metrics."""
        ...

    def close(self) -> None:
        """Release connections (idempotent)."""
        ...
