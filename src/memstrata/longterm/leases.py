"""Who is using each embedded shard, so one is swapped or closed only when idle.

A purge (:mod:`memstrata.longterm.edge_purge`) replaces a collection's shard with a
rebuilt copy, and closing a shard under a running search is undefined in the
engine. Every call of the embedded adapter therefore holds a :class:`Lease` on the
shard it uses; :meth:`ShardLeases.drained` waits until a collection has none and
holds new ones back meanwhile. Writers also take the collection's write lock,
*before* their lease: a purge holds that lock while it copies the live points, so
no write lands in the old shard after the copy, and waits for the leases while it
holds it, so a writer queued on the lock must not hold a lease.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

ShardT = TypeVar("ShardT")


class Lease(Generic[ShardT]):
    """One call's use of a collection's shard; released on leaving the ``with``."""

    __slots__ = ("_leases", "collection", "dim", "shard")

    def __init__(self, leases: ShardLeases, collection: str, shard: ShardT, dim: int) -> None:
        self._leases = leases
        self.collection = collection
        self.shard = shard
        self.dim = dim

    def __enter__(self) -> Lease[ShardT]:
        return self

    def __exit__(self, *exc: object) -> None:
        self._leases.release(self.collection)


class ShardLeases:
    """Lease counts per collection, guarded by the index's own lock.

    A class, not a context-manager generator, on the hot path: a search takes and
    releases a lease each time (two lock round trips, well under a microsecond).
    """

    def __init__(self, lock: threading.Lock, names: Collection[str]) -> None:
        self._lock = lock
        self._idle = threading.Condition(lock)
        self._users = dict.fromkeys(names, 0)
        self._swapping: set[str] = set()
        self._closing = False
        self._writers = {name: threading.Lock() for name in names}

    def add(self, names: Collection[str]) -> None:
        """Count ``names`` too (shards opened later); the caller holds the lock."""
        for name in names:
            self._users.setdefault(name, 0)
            self._writers.setdefault(name, threading.Lock())

    def writer(self, name: str) -> threading.Lock | None:
        """The collection's write lock (None for an unknown name)."""
        return self._writers.get(name)

    def all_writers(self) -> list[threading.Lock]:
        """Every write lock, always in the same order (close takes them all)."""
        return [self._writers[name] for name in sorted(self._writers)]

    def swapping(self, name: str) -> bool:
        """Whether ``name`` is being swapped now; the caller holds the lock."""
        return name in self._swapping

    def wait_turn(self, name: str) -> None:
        """Wait while ``name`` is being swapped; the caller holds the lock."""
        while name in self._swapping:
            self._idle.wait()

    def grant(self, name: str, shard: ShardT, dim: int) -> Lease[ShardT]:
        """Count a new user of ``name``; the caller holds the lock."""
        self._users[name] += 1
        return Lease(self, name, shard, dim)

    def release(self, name: str) -> None:
        """The end of one use (takes the lock)."""
        with self._lock:
            left = self._users[name] - 1
            self._users[name] = left
            if not left and (self._swapping or self._closing):
                self._idle.notify_all()

    def wait_all_idle(self) -> None:
        """Block until no lease is out (the index is closing); the caller holds the lock."""
        self._closing = True
        while any(self._users.values()):
            self._idle.wait()

    @contextmanager
    def drained(self, names: Collection[str]) -> Iterator[None]:
        """Inside, no lease on ``names`` is out, and new ones wait outside."""
        with self._lock:
            self._swapping.update(names)
            try:
                while any(self._users[name] for name in names):
                    self._idle.wait()
            except BaseException:
                self._swapping.difference_update(names)
                self._idle.notify_all()
                raise
        try:
            yield
        finally:
            with self._lock:
                self._swapping.difference_update(names)
                self._idle.notify_all()
