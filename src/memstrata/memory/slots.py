"""Redis I/O of the slot records (the layout and rules are in ``versioning``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from redis.cluster import RedisCluster

from memstrata.errors import BackendError
from memstrata.memory.versioning import CAS_SCRIPT, SlotState, active_fields, slot_key, tenants_key
from memstrata.working.redis_errors import redis_errors

_CLEAR_ATTEMPTS = 1000


@contextmanager
def _translated(operation: str) -> Iterator[None]:
    with redis_errors(f"redis {operation}"):
        yield


class SlotRecords:
    """Reads and compare-and-swaps slot records on a Redis server or cluster."""

    def __init__(self, client: Any, prefix: str) -> None:
        self._client = client
        self._prefix = prefix
        # A registered script runs by SHA and reloads itself after a server restart.
        self._cas = client.register_script(CAS_SCRIPT)
        # Tenants this object has added to the set. The set only grows (nothing here
        # removes a member), so every later write of theirs skips a round trip:
        # ~0.19 ms of a memory write's ~2.7 ms (bench write, one consumer thread).
        # A server that lost its data lost the slot records too; another process (or
        # SlotRecords) registers a tenant again at its first write.
        self._registered: set[str] = set()

    def key(self, tenant: str, user: str, slot: str) -> str:
        """The Redis key of a slot record."""
        return slot_key(self._prefix, tenant, user, slot)

    def read(self, tenant: str, user: str, slot: str) -> SlotState:
        """The current record (``rev`` 0 when none exists)."""
        with _translated("HGETALL"):
            raw: Mapping[Any, Any] = self._client.hgetall(self.key(tenant, user, slot))
        return SlotState.parse(raw)

    def read_many(self, slots: Sequence[tuple[str, str, str]]) -> list[SlotState]:
        """The records of ``(tenant, user, slot)`` triples, in one pipelined round."""
        if not slots:
            return []
        with _translated("HGETALL"):
            pipe = self._client.pipeline(transaction=False)
            for tenant, user, slot in slots:
                pipe.hgetall(self.key(tenant, user, slot))
            replies: list[Mapping[Any, Any]] = pipe.execute()
        return [SlotState.parse(raw) for raw in replies]

    def swap_many(
        self, swaps: Sequence[tuple[tuple[str, str, str], int, Mapping[str, str]]]
    ) -> list[bool]:
        """Several :meth:`swap` calls (``((tenant, user, slot), expected rev, fields)``),
        each atomic on its own, in one pipelined round; which ones won."""
        if not swaps:
            return []
        if isinstance(self._client, RedisCluster):
            # A cluster pipeline cannot load a script on the nodes it fans out to.
            return [self.swap(*slot, rev, fields) for slot, rev, fields in swaps]
        with _translated("EVALSHA"):
            pipe = self._client.pipeline(transaction=False)
            for (tenant, user, slot), rev, fields in swaps:
                self._cas(
                    keys=[self.key(tenant, user, slot)], args=_cas_args(rev, fields), client=pipe
                )
            return [bool(won) for won in pipe.execute()]

    def swap(
        self, tenant: str, user: str, slot: str, expected_rev: int, fields: Mapping[str, str]
    ) -> bool:
        """Apply ``fields`` (empty value: delete) iff ``rev`` is still ``expected_rev``."""
        with _translated("EVALSHA"):
            return bool(
                self._cas(keys=[self.key(tenant, user, slot)], args=_cas_args(expected_rev, fields))
            )

    def clear_active(self, tenant: str, user: str, slot: str, point_id: str) -> bool:
        """Drop ``point_id`` as the slot's active version (if it still is); True if done."""
        for _ in range(_CLEAR_ATTEMPTS):
            state = self.read(tenant, user, slot)
            if state.active_id != point_id:
                return False
            if self.swap(tenant, user, slot, state.rev, active_fields(None)):
                return True
        raise BackendError(f"memory slot {slot}: could not clear the active version")

    def set_active_if_empty(
        self, tenant: str, user: str, slot: str, fields: Mapping[str, str]
    ) -> bool:
        """Make a restored unit active unless the slot already has an active version."""
        for _ in range(_CLEAR_ATTEMPTS):
            state = self.read(tenant, user, slot)
            if state.active_id:
                return False
            if self.swap(tenant, user, slot, state.rev, fields):
                return True
        raise BackendError(f"memory slot {slot}: could not restore the active version")

    def register_tenant(self, tenant: str) -> None:
        """Remember that ``tenant`` has memories (consolidation walks the set)."""
        if tenant in self._registered:
            return
        with _translated("SADD"):
            self._client.sadd(tenants_key(self._prefix), tenant)
        self._registered.add(tenant)  # one atomic set operation: no lock needed

    def tenants(self) -> tuple[str, ...]:
        """Every registered tenant, sorted (deterministic consolidation order)."""
        with _translated("SMEMBERS"):
            members = self._client.smembers(tenants_key(self._prefix))
        return tuple(sorted(m.decode() if isinstance(m, bytes) else str(m) for m in members))


def _cas_args(expected_rev: int, fields: Mapping[str, str]) -> list[str]:
    args: list[str] = [str(expected_rev)]
    for name, value in fields.items():
        args.extend((name, value))
    return args
