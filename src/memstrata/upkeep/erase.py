"""A user's footprint in Redis, and its deletion: the L2 half of ``forget``.

Where one user's data lives, read from the key builders:

* preferences, ``pref:{<tenant>:<user>}:<type>`` and their index
  ``pref:{<tenant>:<user>}:_index`` (:mod:`memstrata.working.keys`);
* the user's cached reads, ``recall:{<tenant>:<user>}:<collection>`` (what the
  reader answers from while L3 is unavailable: :mod:`memstrata.working.recall`);
* memory slot records, ``<prefix>:{<tenant>:<user>}:slot:<slot>``
  (:mod:`memstrata.memory.versioning`);
* entries of the write queue's stream and dead-letter stream, ``mq:{<queue>}:stream``
  and ``mq:{<queue>}:dead`` (:mod:`memstrata.write.entries`): shared by every
  user, so only the entries whose JSON payload names this tenant and user go,
  with their content hashes in the queue's dedupe set (``mq:{<queue>}:done``; a
  hash left there would make the user's next identical message a silent no-op).
  XDEL only flags an entry deleted inside its stream node: its bytes stay in
  memory and in every RDB - the AOF base file included - until the whole node
  goes (measured: the text survived BGREWRITEAOF). So a stream that lost entries
  is rebuilt from its live ones, consumer groups and pending lists included
  (:data:`REBUILD_STREAM_LUA`);
* working-memory sessions, ``wm:{<session>}:*``: keyed by session, not by user,
  so only the sessions the caller names.

Not the user's: ``<prefix>:tenants`` (tenant ids every user of a tenant shares).
The values leave memory here; they leave the disk once the server's files are
rewritten (:func:`memstrata.working.compaction.compact_persistence`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeAlias

import redis
from redis.cluster import RedisCluster

from memstrata.memory.versioning import slot_key
from memstrata.validation import check_id, check_positive_int
from memstrata.working.keys import pref_key, recall_key, session_prefix
from memstrata.working.redis_errors import redis_errors
from memstrata.write.entries import F_HASH, QueueKeys, entry_owner

RedisClient: TypeAlias = "redis.Redis | RedisCluster"

DEFAULT_MEMORY_PREFIX = "mv"  # MemorySettings.redis_prefix
DEFAULT_QUEUES = ("memories",)  # PipelineSettings.queue_name
DEFAULT_PAGE = 500

_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")

# Copies a stream's live entries, its ids and counters (XSETID), its groups with
# their last-delivered id, entries-read, consumers and pending entries (XCLAIM FORCE
# with the idle time and delivery count; entries that no longer exist are dropped,
# as XAUTOCLAIM would) into KEYS[2], then renames it over KEYS[1]: one atomic step,
# so workers never see a half-built stream (a blocked XREADGROUP is served from the
# new one). The same sequence an AOF rewrite writes for a stream. Both keys share
# the queue's hash tag, so it runs on a cluster. Blocks the server for the copy:
# the queue trims acknowledged entries (maxlen), which bounds it.
REBUILD_STREAM_LUA = """
local function field(pairs, name)
  for i = 1, #pairs, 2 do
    if pairs[i] == name then return pairs[i + 1] end
  end
  return false
end
local src, dst = KEYS[1], KEYS[2]
if redis.call('EXISTS', src) == 0 then return 0 end
redis.call('DEL', dst)
local info = redis.call('XINFO', 'STREAM', src)
-- An empty stream is still a stream: create it with one entry trimmed away.
redis.call('XADD', dst, 'MAXLEN', '0', '0-1', 'x', 'x')
local copied = 0
local low = '-'
while true do
  local rows = redis.call('XRANGE', src, low, '+', 'COUNT', 500)
  if #rows == 0 then break end
  for _, row in ipairs(rows) do
    redis.call('XADD', dst, row[1], unpack(row[2]))
    copied = copied + 1
  end
  low = '(' .. rows[#rows][1]
end
redis.call('XSETID', dst, field(info, 'last-generated-id'),
  'ENTRIESADDED', field(info, 'entries-added'),
  'MAXDELETEDID', field(info, 'max-deleted-entry-id'))
for _, group in ipairs(redis.call('XINFO', 'GROUPS', src)) do
  local name = field(group, 'name')
  local read = field(group, 'entries-read')
  local delivered = field(group, 'last-delivered-id')
  if read then
    redis.call('XGROUP', 'CREATE', dst, name, delivered, 'ENTRIESREAD', read)
  else
    redis.call('XGROUP', 'CREATE', dst, name, delivered)
  end
  for _, consumer in ipairs(redis.call('XINFO', 'CONSUMERS', src, name)) do
    redis.call('XGROUP', 'CREATECONSUMER', dst, name, field(consumer, 'name'))
  end
  local from = '-'
  while true do
    local pending = redis.call('XPENDING', src, name, from, '+', 500)
    if #pending == 0 then break end
    for _, p in ipairs(pending) do
      redis.call('XCLAIM', dst, name, p[2], 0, p[1],
        'IDLE', p[3], 'RETRYCOUNT', p[4], 'FORCE', 'JUSTID')
    end
    from = '(' .. pending[#pending][1]
  end
end
redis.call('RENAME', dst, src)
return copied
"""


def _under(key: str) -> str:
    """A SCAN MATCH pattern for every key beside ``key``: its last part a wildcard.

    Built from a real key of the builder, so the pattern follows the layout.
    """
    head, _, _ = key.rpartition(":")
    return _GLOB_SPECIAL.sub(r"\\\1", head) + ":*"


@dataclass(frozen=True, slots=True)
class UserFootprint:
    """Where one user's data lives in Redis (no I/O; see the module docstring).

    ``key_patterns``: SCAN MATCH patterns whose every key belongs to the user
    (each pattern's keys share one hash tag: one cluster slot). ``queues``: the
    write queues whose streams hold entries of many users; only those whose
    payload names ``tenant`` and ``user`` are the user's.
    """

    tenant: str
    user: str
    key_patterns: tuple[str, ...]
    queues: tuple[QueueKeys, ...]


def user_footprint(
    tenant: str,
    user: str,
    *,
    memory_prefix: str = DEFAULT_MEMORY_PREFIX,
    queues: Sequence[str] = DEFAULT_QUEUES,
    sessions: Sequence[str] = (),
    preferences: bool = True,
) -> UserFootprint:
    """The keys and stream entries holding ``user``'s data in ``tenant``.

    ``memory_prefix`` is the memory store's ``redis_prefix``, ``queues`` the write
    queue names, ``sessions`` the user's session ids (nothing in Redis links a
    session to its user). ``preferences=False`` spares the preference keys.
    """
    check_id("tenant", tenant)
    check_id("user", user)
    check_id("memory_prefix", memory_prefix)
    patterns = [
        _under(slot_key(memory_prefix, tenant, user, "x")),
        _under(recall_key(tenant, user, "x")),
    ]
    if preferences:
        patterns.append(_under(pref_key(tenant, user, "x")))
    patterns += [_under(session_prefix(session) + "x") for session in sessions]
    return UserFootprint(
        tenant,
        user,
        tuple(dict.fromkeys(patterns)),
        tuple(QueueKeys(name) for name in dict.fromkeys(queues)),
    )


def rebuild_key(stream: str) -> str:
    """The scratch key a rebuild of ``stream`` fills (same hash tag: same slot)."""
    return f"{stream}:rebuild"


@dataclass(frozen=True, slots=True)
class ErasureReport:
    """What :func:`delete_user_keys` removed."""

    keys_deleted: int
    stream_entries_deleted: int
    dedupe_hashes_removed: int
    streams_rebuilt: int


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _content_hash(fields: Mapping[Any, Any]) -> str | None:
    return next((_text(v) for k, v in fields.items() if _text(k) == F_HASH), None)


@contextmanager
def _translated(operation: str) -> Iterator[None]:
    with redis_errors(f"erase {operation}"):
        yield


def _delete_matching(client: RedisClient, pattern: str, page: int) -> int:
    # SCAN, never KEYS: a cluster client scans every primary. Keys are gathered
    # first: deleting during the scan is allowed, but costs nothing to avoid.
    with _translated("SCAN"):
        keys = list(client.scan_iter(match=pattern, count=page))
    deleted = 0
    for start in range(0, len(keys), page):
        with _translated("DEL"):
            deleted += int(client.delete(*keys[start : start + page]))
    return deleted


def _erase_entries(
    client: RedisClient, stream: str, owner: tuple[str, str], page: int
) -> tuple[int, list[str]]:
    """XDEL the entries of ``stream`` whose payload names ``owner``, a page at a time;
    how many, and their content hashes."""
    deleted = 0
    hashes: list[str] = []
    low = "-"
    while True:
        with _translated("XRANGE"):
            rows = client.xrange(stream, min=low, max="+", count=page)
        if not rows:
            return deleted, hashes
        ids: list[str] = []
        for entry_id, fields in rows:
            if fields is not None and entry_owner(fields) == owner:
                ids.append(_text(entry_id))
                digest = _content_hash(fields)
                if digest is not None:
                    hashes.append(digest)
        if ids:
            with _translated("XDEL"):
                deleted += int(client.xdel(stream, *ids))
        # Exclusive start after the page's last id (XRANGE "(" since Redis 6.2).
        low = "(" + _text(rows[-1][0])


def delete_user_keys(
    client: RedisClient,
    tenant: str,
    user: str,
    *,
    memory_prefix: str = DEFAULT_MEMORY_PREFIX,
    queues: Sequence[str] = DEFAULT_QUEUES,
    sessions: Sequence[str] = (),
    preferences: bool = True,
    page: int = DEFAULT_PAGE,
) -> ErasureReport:
    """Delete every key of ``user``'s :func:`user_footprint` and XDEL the queue
    entries (work and dead-letter streams) whose payload names this tenant and
    user; other users' keys and entries stay. Works on a server or a cluster.

    Stop the user's writers first (the write queue's workers included): an entry
    being processed now writes its memory after this returns. Raises
    ``BackendError`` / ``BackendUnavailableError`` naming the command that failed.
    """
    footprint = user_footprint(
        tenant,
        user,
        memory_prefix=memory_prefix,
        queues=queues,
        sessions=sessions,
        preferences=preferences,
    )
    check_positive_int("page", page, maximum=100_000)
    keys = sum(_delete_matching(client, pattern, page) for pattern in footprint.key_patterns)
    entries = removed = rebuilt = 0
    rebuild = client.register_script(REBUILD_STREAM_LUA)
    for queue in footprint.queues:
        hashes: list[str] = []
        for stream in (queue.stream, queue.dead):
            count, found = _erase_entries(client, stream, (tenant, user), page)
            if count:
                with _translated("stream rebuild"):
                    rebuild(keys=[stream, rebuild_key(stream)])
                rebuilt += 1
            entries += count
            hashes += found
        for start in range(0, len(hashes), page):
            with _translated("ZREM"):
                removed += int(client.zrem(queue.done, *hashes[start : start + page]))
    return ErasureReport(keys, entries, removed, rebuilt)
