"""The :class:`KVBackend` over redis-py: a single server or a Redis Cluster.

Every multi-command write is one MULTI/EXEC transaction. On a cluster that is
legal because working memory only groups keys sharing one hash tag (one slot).
redis-py exceptions are translated here, and only here, into memstrata's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.cluster import RedisCluster

from memstrata.errors import ConfigError
from memstrata.working.backend import NO_KEY, BackendInfo, ExtensionSource, KeyInfo
from memstrata.working.redis_errors import REDIS_FAILURES, redis_errors, translated

CLUSTER_SCHEME = "redis+cluster"
_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")


@contextmanager
def _translated(operation: str) -> Iterator[None]:
    with redis_errors(f"redis {operation}", connecting=operation == "connect"):
        yield


def _glob_escape(text: str) -> str:
    return _GLOB_SPECIAL.sub(r"\\\1", text)


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _read_one(command: str, call: Callable[[str], Any], key: str) -> Any:
    """One read command on a hot path; a key holding another type reads as absent.

    No context manager here (see redis_errors.translated).
    """
    try:
        return call(key)
    except redis.ResponseError as exc:
        if "WRONGTYPE" in str(exc):
            return None
        raise translated(f"redis {command}", exc) from exc
    except REDIS_FAILURES as exc:
        raise translated(f"redis {command}", exc) from exc


# read_hash_extending: one EVALSHA instead of a MULTI read and a PEXPIRE (~160 us
# against ~320 on the embedded server). Only key-level primitives: what sizes the
# TTL is computed by working memory and stored in the table.
_READ_EXTENDING_LUA = """
local fields = redis.call('HGETALL', KEYS[1])
if #fields == 0 then return {fields, -2, 'none'} end
if redis.call('EXISTS', KEYS[2]) == 0 then
  local source = redis.call('EXISTS', KEYS[3]) == 1 and 'fallback' or 'none'
  return {fields, redis.call('PTTL', KEYS[1]), source}
end
local wanted = redis.call('HGET', KEYS[2], ARGV[1])
if wanted then
  local ttl = math.max(tonumber(wanted), tonumber(ARGV[2]))
  redis.call('PEXPIRE', KEYS[1], ttl, 'GT')
end
return {fields, redis.call('PTTL', KEYS[1]), 'table'}
"""


class RedisBackend:
    """Working-memory storage on a Redis/Valkey server or cluster.

    Build with :meth:`from_url`; ``redis+cluster://host:port`` (or
    ``cluster=True``) selects :class:`redis.cluster.RedisCluster`, ``unix:///path``
    reaches the embedded server's socket.
    """

    def __init__(self, client: redis.Redis | RedisCluster) -> None:
        self._client = client
        self._is_cluster = isinstance(client, RedisCluster)
        self._read_extending = client.register_script(_READ_EXTENDING_LUA)

    @classmethod
    def from_url(
        cls, url: str, *, cluster: bool = False, socket_timeout_s: float = 5.0
    ) -> RedisBackend:
        """Connect lazily to ``url`` (redis://, rediss://, unix://, redis+cluster://)."""
        parts = urlsplit(url)
        if parts.scheme == CLUSTER_SCHEME:
            cluster = True
            url = urlunsplit(parts._replace(scheme="redis"))
        elif parts.scheme not in ("redis", "rediss", "unix"):
            raise ConfigError(f"redis_url: unsupported scheme in {url!r}")
        common: dict[str, Any] = {
            "decode_responses": True,
            "socket_timeout": socket_timeout_s,
            "socket_connect_timeout": socket_timeout_s,
        }
        with _translated("connect"):
            if cluster:
                if parts.scheme == "unix":
                    raise ConfigError("redis_url: a cluster cannot be reached over a unix socket")
                return cls(RedisCluster.from_url(url, **common))
            return cls(redis.Redis.from_url(url, **common))

    @property
    def is_cluster(self) -> bool:
        """True when talking to a Redis Cluster."""
        return self._is_cluster

    @property
    def client(self) -> redis.Redis | RedisCluster:
        """The underlying redis-py client (tests and admin tools)."""
        return self._client

    def set_string(self, key: str, value: str, ttl_ms: int | None) -> None:
        """SET key value [PX ttl_ms]."""
        try:  # hot path: no context manager (see redis_errors.translated)
            self._client.set(key, value, px=ttl_ms)
        except REDIS_FAILURES as exc:
            raise translated("redis SET", exc) from exc

    def get_value(self, key: str) -> str | None:
        """Plain GET (one round trip, no transaction)."""
        value = _read_one("GET", self._client.get, key)
        return value if isinstance(value, str) else None

    def get_string(self, key: str) -> tuple[str, int] | None:
        """GET + PTTL in MULTI."""
        with _translated("GET"):
            pipe = self._client.pipeline(transaction=True)
            pipe.get(key)
            pipe.pttl(key)
            value, ttl = pipe.execute()
        if value is None or not isinstance(value, str):
            return None
        return value, int(ttl)

    def write_hash(
        self,
        key: str,
        fields: Mapping[str, str],
        ttl_ms: int | None,
        *,
        replace: bool = True,
        index: tuple[str, str] | None = None,
    ) -> None:
        """[DEL] HSET [PEXPIRE] [SADD] in MULTI."""
        with _translated("HSET"):
            pipe = self._client.pipeline(transaction=True)
            if replace:
                pipe.delete(key)
            # redis-py's Mapping parameter is invariant in its key type; str is accepted.
            pipe.hset(key, mapping=cast("Mapping[Any, Any]", fields))
            if ttl_ms is not None:
                pipe.pexpire(key, ttl_ms)
            if index is not None:
                pipe.sadd(index[0], index[1])
            pipe.execute()

    def read_hash(self, key: str) -> tuple[dict[str, str], int] | None:
        """HGETALL + PTTL in MULTI."""
        with _translated("HGETALL"):
            pipe = self._client.pipeline(transaction=True)
            pipe.hgetall(key)
            pipe.pttl(key)
            fields, ttl = pipe.execute()
        if not fields:
            return None
        return dict(fields), int(ttl)

    def read_fields(self, key: str) -> dict[str, str] | None:
        """HGETALL alone: ~100 us against ~160 for HGETALL + PTTL in MULTI."""
        fields = _read_one("HGETALL", self._client.hgetall, key)
        # The client decodes responses (decode_responses=True): keys and values are str.
        return dict(cast("dict[str, str]", fields)) if fields else None

    def read_hash_extending(
        self, key: str, table_key: str, field: str, floor_ms: int, fallback_key: str
    ) -> tuple[tuple[dict[str, str], int] | None, ExtensionSource]:
        """HGETALL, PTTL and the table's PEXPIRE GT in one Lua script."""
        with _translated("EVALSHA"):
            flat, ttl, source = self._read_extending(
                keys=[key, table_key, fallback_key], args=[field, floor_ms]
            )
        if not flat:
            return None, "none"
        fields = dict(zip(flat[::2], flat[1::2], strict=True))
        return (fields, int(ttl)), cast("ExtensionSource", source)

    def expire_gt(self, key: str, ttl_ms: int) -> bool:
        """PEXPIRE key ttl_ms GT."""
        with _translated("PEXPIRE"):
            return bool(self._client.pexpire(key, ttl_ms, gt=True))

    def pttl(self, key: str) -> int:
        """PTTL."""
        with _translated("PTTL"):
            return int(self._client.pttl(key))

    def append_window(
        self, key: str, members: Mapping[str, float], keep: int, ttl_ms: int | None
    ) -> int:
        """ZADD + ZREMRANGEBYRANK + [PEXPIRE] + ZCARD in MULTI."""
        with _translated("ZADD"):
            pipe = self._client.pipeline(transaction=True)
            pipe.zadd(key, dict(members))
            # Ranks ascend by score: dropping 0..-(keep+1) leaves the newest ``keep``.
            pipe.zremrangebyrank(key, 0, -(keep + 1))
            if ttl_ms is not None:
                pipe.pexpire(key, ttl_ms)
            pipe.zcard(key)
            results = pipe.execute()
        return int(results[-1])

    def range_by_score(self, key: str, low: float, high: float) -> list[tuple[str, float]] | None:
        """EXISTS + ZRANGEBYSCORE WITHSCORES in MULTI."""
        with _translated("ZRANGEBYSCORE"):
            pipe = self._client.pipeline(transaction=True)
            pipe.exists(key)
            pipe.zrangebyscore(key, low, high, withscores=True)
            exists, rows = pipe.execute()
        if not exists:
            return None
        return [(str(m), float(s)) for m, s in rows]

    def set_add(self, key: str, members: Sequence[str]) -> int:
        """SADD."""
        with _translated("SADD"):
            return int(self._client.sadd(key, *members))

    def set_remove(self, key: str, member: str) -> bool:
        """SREM."""
        with _translated("SREM"):
            return bool(self._client.srem(key, member))

    def set_members(self, key: str) -> frozenset[str]:
        """SMEMBERS."""
        with _translated("SMEMBERS"):
            return frozenset(str(m) for m in self._client.smembers(key))

    def delete(self, keys: Sequence[str]) -> int:
        """DEL (keys share a slot, so one command is valid on a cluster)."""
        if not keys:
            return 0
        with _translated("DEL"):
            pipe = self._client.pipeline(transaction=True)
            pipe.delete(*keys)
            return int(pipe.execute()[0])

    def scan_prefix(self, prefix: str) -> list[str]:
        """SCAN MATCH <escaped prefix>*; on a cluster every primary is scanned."""
        with _translated("SCAN"):
            return [str(k) for k in self._client.scan_iter(match=_glob_escape(prefix) + "*")]

    def describe(self, keys: Sequence[str]) -> list[KeyInfo]:
        """TYPE + PTTL of each key, pipelined."""
        if not keys:
            return []
        with _translated("TYPE"):
            pipe = self._client.pipeline(transaction=False)
            for key in keys:
                pipe.type(key)
                pipe.pttl(key)
            raw = pipe.execute()
        out = []
        for i, key in enumerate(keys):
            kind, ttl = str(raw[2 * i]), int(raw[2 * i + 1])
            if kind != "none" and ttl != NO_KEY:
                out.append(KeyInfo(key, kind, ttl))
        return out

    def ping(self) -> bool:
        """PING."""
        with _translated("PING"):
            return bool(self._client.ping())

    def info(self) -> BackendInfo:
        """INFO summed over every primary."""
        with _translated("INFO"):
            if isinstance(self._client, RedisCluster):
                per_node = self._client.info(target_nodes=RedisCluster.PRIMARIES)
                sections = [v for v in per_node.values() if isinstance(v, dict)]
            else:
                sections = [self._client.info()]

        def total(name: str) -> int:
            return sum(_int(s.get(name)) for s in sections)

        keys = sum(_int(v.get("keys")) for s in sections for v in s.values() if _is_db(v))
        return BackendInfo(
            kind="cluster" if self._is_cluster else "redis",
            nodes=len(sections),
            keys=keys,
            used_memory_bytes=total("used_memory"),
            expired_keys=total("expired_keys"),
            keyspace_hits=total("keyspace_hits"),
            keyspace_misses=total("keyspace_misses"),
        )

    def close(self) -> None:
        """Close the connection pool(s)."""
        with _translated("close"):
            self._client.close()


def _is_db(value: Any) -> bool:
    return isinstance(value, dict) and "keys" in value and "expires" in value
