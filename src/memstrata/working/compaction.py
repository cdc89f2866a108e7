"""Rewriting a Redis/Valkey server's persistence files so deleted values leave the disk.

A deleted key's value stays in the append-only file - in the base file of the last
rewrite and in the incremental file that logged the SET - until the next
``BGREWRITEAOF`` writes a new base from memory and the server drops the old files
(Valkey/Redis 7+ multi-part AOF; measured on the embedded server, tests/working/
test_compaction.py). An RDB snapshot (``dump.rdb``) likewise keeps what it held
until the next save. :func:`compact_persistence` runs both where they apply, one
server at a time, and waits for each to finish.

The embedded server (:class:`~memstrata.working.EmbeddedValkey`) runs with
``appendonly yes`` and ``save ""``: no snapshot is ever written, so only the AOF
is rewritten. Replicas keep their own files and are not reached from here (on a
cluster only primaries are); neither are bytes the file system or the disk keep
of deleted files - that is what disk encryption is for.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeAlias

import redis
from redis.cluster import RedisCluster

from memstrata.errors import BackendError, CompactionTimeoutError
from memstrata.validation import check_positive_float
from memstrata.working.redis_errors import REDIS_FAILURES, redis_errors, translated

RedisClient: TypeAlias = "redis.Redis | RedisCluster"

DEFAULT_TIMEOUT_S = 120.0
_POLL_S = 0.01
# Refusals with no child running before the refusal is taken as final.
_REFUSALS = 3


@dataclass(frozen=True, slots=True)
class NodeCompaction:
    """What :func:`compact_persistence` did on one server."""

    node: str
    aof_rewritten: bool
    rdb_saved: bool


def snapshot_wanted(save_setting: str | None, info: Mapping[str, Any]) -> bool:
    """Whether the server may have an RDB file on disk that must be rewritten.

    ``save_setting``: ``CONFIG GET save`` (None when CONFIG is refused, as managed
    services do: then assume a snapshot exists). A snapshot exists when save points
    are configured or one was written since start (``rdb_saves``, by SAVE/BGSAVE or
    a replica's full sync).
    """
    if save_setting is None:
        return True
    return bool(save_setting.strip()) or int(info.get("rdb_saves") or 0) > 0


def _aof_busy(info: Mapping[str, Any]) -> bool:
    return bool(int(info.get("aof_rewrite_in_progress") or 0)) or bool(
        int(info.get("aof_rewrite_scheduled") or 0)
    )


def _rdb_busy(info: Mapping[str, Any]) -> bool:
    return bool(int(info.get("rdb_bgsave_in_progress") or 0))


# Any fork blocks a new rewrite or save: the server runs one child at a time.
_FORK_FLAGS = (
    "aof_rewrite_in_progress",
    "aof_rewrite_scheduled",
    "rdb_bgsave_in_progress",
    "module_fork_in_progress",
    "slot_migration_fork_in_progress",
)


def _child_busy(info: Mapping[str, Any]) -> bool:
    return any(int(info.get(flag) or 0) for flag in _FORK_FLAGS)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@contextmanager
def _translated(node: str, operation: str) -> Iterator[None]:
    with redis_errors(f"{node}: {operation}"):
        yield


class _Server:
    """One server (a standalone client or one cluster primary's connection)."""

    def __init__(self, client: redis.Redis, name: str, deadline: float, timeout_s: float) -> None:
        self.client = client
        self.name = name
        self._deadline = deadline
        self._timeout_s = timeout_s

    def info(self) -> Mapping[str, Any]:
        with _translated(self.name, "INFO persistence"):
            return self.client.info("persistence")

    def save_setting(self) -> str | None:
        try:
            found = self.client.config_get("save")
        except redis.ResponseError:
            return None  # CONFIG disabled or renamed
        except REDIS_FAILURES as exc:
            raise translated(f"{self.name}: CONFIG GET save", exc) from exc
        # Bytes or text, as the client decodes: a dict either way.
        pairs: dict[Any, Any] = dict(found) if isinstance(found, dict) else {}
        for key, value in pairs.items():
            if _text(key) == "save":
                return _text(value)
        return None

    def wait(self, operation: str, busy: Callable[[Mapping[str, Any]], bool]) -> Mapping[str, Any]:
        """Poll INFO persistence until ``busy`` is false; the final INFO."""
        while True:
            info = self.info()
            if not busy(info):
                return info
            if time.monotonic() >= self._deadline:
                raise CompactionTimeoutError(self.name, operation, self._timeout_s)
            time.sleep(_POLL_S)

    def start(self, operation: str, command: Callable[[], object]) -> None:
        """Run ``command``; while another child (a rewrite or save of someone else's)
        refuses it, wait for that one to end and ask again: a rewrite that began
        before the delete would carry the deleted values into the new files."""
        refusals = 0
        while True:
            try:
                command()
                return
            except redis.ResponseError as exc:
                # Judged by INFO, not by the refusal's wording (it differs by command
                # and version); a child may also end between the refusal and INFO.
                refusals += 1
                if not _child_busy(self.info()) and refusals >= _REFUSALS:
                    raise translated(f"{self.name}: {operation}", exc) from exc
            except REDIS_FAILURES as exc:
                raise translated(f"{self.name}: {operation}", exc) from exc
            self.wait(operation, _child_busy)

    def rewrite_aof(self) -> bool:
        if not int(self.info().get("aof_enabled") or 0):
            return False  # no AOF: nothing of the deleted values is logged
        self.start("BGREWRITEAOF", self.client.bgrewriteaof)
        info = self.wait("BGREWRITEAOF", _aof_busy)
        if info.get("aof_last_bgrewrite_status") != "ok":
            raise BackendError(
                f"{self.name}: BGREWRITEAOF failed "
                f"(aof_last_bgrewrite_status={info.get('aof_last_bgrewrite_status')})"
            )
        return True

    def save_rdb(self, snapshot: bool | None) -> bool:
        wanted = snapshot_wanted(self.save_setting(), self.info()) if snapshot is None else snapshot
        if not wanted:
            return False
        self.start("BGSAVE", lambda: self.client.bgsave(schedule=False))
        info = self.wait("BGSAVE", _rdb_busy)
        if info.get("rdb_last_bgsave_status") != "ok":
            raise BackendError(
                f"{self.name}: BGSAVE failed "
                f"(rdb_last_bgsave_status={info.get('rdb_last_bgsave_status')})"
            )
        return True


def _servers(client: RedisClient) -> list[tuple[redis.Redis, str]]:
    if isinstance(client, RedisCluster):
        with _translated("cluster", "primaries"):
            primaries: list[Any] = client.get_primaries()  # type: ignore[no-untyped-call]
            return [(client.get_redis_connection(n), str(n.name)) for n in primaries]
    kwargs = client.connection_pool.connection_kwargs
    name = kwargs.get("path") or f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"
    return [(client, str(name))]


def compact_persistence(
    client: RedisClient,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    snapshot: bool | None = None,
) -> tuple[NodeCompaction, ...]:
    """Rewrite the AOF and, where one is kept, the RDB snapshot of every server
    behind ``client`` (each primary of a cluster) so that values deleted before
    this call are in none of their files; waits until each has finished.

    A server with AOF off gets no rewrite. ``snapshot``: ``None`` saves a new RDB
    only where one may exist (:func:`snapshot_wanted`), ``True`` always, ``False``
    never. Raises :class:`CompactionTimeoutError` (a ``BackendError``) naming the
    server and command after ``timeout_s`` in all, ``BackendError`` when a rewrite
    or save failed, ``BackendUnavailableError`` when a server cannot be reached.
    """
    check_positive_float("timeout_s", timeout_s)
    deadline = time.monotonic() + timeout_s
    done = []
    for node_client, name in _servers(client):
        server = _Server(node_client, name, deadline, timeout_s)
        rewritten = server.rewrite_aof()
        saved = server.save_rdb(snapshot)
        done.append(NodeCompaction(name, rewritten, saved))
    return tuple(done)
