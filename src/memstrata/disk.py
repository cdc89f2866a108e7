"""Disk pressure: the free space the data directory needs, and the guard that turns
writes off before the disk is full (docs/service.md, "Disk").

Why a guard instead of handling ENOSPC where it happens: qdrant-edge maps its files
into memory, and a store into a mapped page that the filesystem cannot back is not
an error the process can catch, it is SIGBUS. An empty embedded collection maps
~51 MiB at creation and ~88 MiB from its second opening (payload pages, index maps,
the WAL; on tmpfs every page is allocated, on ext4/xfs the files start sparse and
fill as data arrives), and grows in 32 MiB steps. So free space is checked before
anything is allocated: at start (:func:`check_start`), before a collection is
created or rebuilt and before each write to it (:class:`memstrata.longterm.edge.EdgeIndex`),
before each enqueue and before each batch a queue worker takes (:class:`DiskGuard`).

Two thresholds: below ``reserve_bytes`` the engine is **read-only** (writes answer
:class:`~memstrata.errors.ReadOnlyError`, reads go on, queued entries wait in the
queue); below ``floor_bytes`` even a single write to a collection is refused. Writes
resume by themselves once ``reserve_bytes + resume_margin_bytes`` are free again.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memstrata.errors import MIB, ConfigError, DiskSpaceError, ReadOnlyError

log = logging.getLogger("memstrata.disk")

COLLECTION_BYTES = 96 * MIB
"""What one embedded collection's files take once opened twice (measured ~88 MiB on
tmpfs: 51 MiB at creation, the index maps and the WAL on the next opening)."""
WRITE_RESERVE_BYTES = 128 * MIB
"""Below this much free space the engine is read-only (room for the 32 MiB steps a
collection, the Valkey append-only file and the audit log grow in)."""
FLOOR_BYTES = 64 * MIB
"""Below this much free space no write reaches a collection at all."""
RESUME_MARGIN_BYTES = 16 * MIB
"""Writes resume at ``reserve + margin`` free, so the state does not flap."""

FreeBytes = Callable[[Path], int]
"""A probe: the bytes still free for us on the filesystem holding a path."""


def free_bytes(path: Path) -> int:
    """Bytes an unprivileged process may still write on ``path``'s filesystem
    (``statvfs`` ``f_bavail``); a path not created yet is measured at its nearest
    existing parent."""
    probe = Path(path)
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    stats = os.statvfs(probe)
    return int(stats.f_bavail * stats.f_frsize)


def allocated_bytes(path: Path) -> int:
    """Bytes the files under ``path`` really occupy (their allocated blocks, not
    their apparent size: qdrant-edge's files start sparse); 0 when it is absent."""
    total = 0
    for folder, _, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(folder, name)).st_blocks * 512
            except FileNotFoundError:
                continue  # replaced while walking (a purge, a WAL rotation)
    return total


@dataclass(frozen=True, slots=True)
class DiskPolicy:
    """The thresholds of the guard and of the collections' own checks, and the probe
    they read (a test injects one; production reads ``statvfs``)."""

    reserve_bytes: int = WRITE_RESERVE_BYTES
    floor_bytes: int = FLOOR_BYTES
    resume_margin_bytes: int = RESUME_MARGIN_BYTES
    collection_bytes: int = COLLECTION_BYTES
    probe: FreeBytes = field(default=free_bytes, compare=False)

    def __post_init__(self) -> None:
        for name in ("reserve_bytes", "floor_bytes", "resume_margin_bytes", "collection_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"disk.{name}: must be a non-negative integer of bytes")
        if self.floor_bytes > self.reserve_bytes:
            raise ConfigError("disk.floor_bytes: must not exceed disk.reserve_bytes")

    def require_room(self, what: str, path: Path, allocate_bytes: int) -> None:
        """:class:`DiskSpaceError` unless ``allocate_bytes`` plus the floor are free on
        ``path``'s filesystem: asked before anything maps new pages."""
        free = self.probe(path)
        needed = allocate_bytes + self.floor_bytes
        if free < needed:
            raise DiskSpaceError(what, str(path), free, needed)

    def require_write_room(self, path: Path) -> None:
        """:class:`ReadOnlyError` below the floor: one write may map a new 32 MiB page."""
        free = self.probe(path)
        if free < self.floor_bytes:
            raise ReadOnlyError(str(path), free, self.floor_bytes)

    def require_room_to_rebuild(self, what: str, root: Path, collections: Iterable[str]) -> None:
        """:class:`DiskSpaceError` unless the largest of ``collections`` under ``root``
        could be rebuilt beside itself (one at a time): its files plus a fresh one's."""
        largest = max((allocated_bytes(root / name) for name in collections), default=None)
        if largest is not None:
            self.require_room(what, root, largest + self.collection_bytes)

    @classmethod
    def with_reserve_mib(cls, reserve_mib: int, **changes: Any) -> DiskPolicy:
        """A policy whose read-only threshold is ``reserve_mib`` MiB (the floor half of it)."""
        if isinstance(reserve_mib, bool) or not isinstance(reserve_mib, int) or reserve_mib < 0:
            raise ConfigError("disk reserve: must be a non-negative number of MiB")
        reserve = reserve_mib * MIB
        return cls(reserve_bytes=reserve, floor_bytes=reserve // 2, **changes)


@dataclass(frozen=True, slots=True)
class DiskStatus:
    """One reading of the guard: the tightest filesystem, and whether writes are off."""

    path: str
    free_bytes: int
    needed_bytes: int
    read_only: bool

    def error(self) -> ReadOnlyError:
        """The error a refused write answers with (names the free and needed space)."""
        return ReadOnlyError(self.path, self.free_bytes, self.needed_bytes)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, for ``/healthz``."""
        return {
            "status": "read_only" if self.read_only else "ok",
            "path": self.path,
            "free_mib": round(self.free_bytes / MIB, 1),
            "need_mib": round(self.needed_bytes / MIB, 1),
        }


class DiskGuard:
    """Watches the filesystems holding ``paths`` and says whether writes may go on.

    Read-only from the moment one of them has less than ``reserve_bytes`` free;
    writable again once it has ``reserve_bytes + resume_margin_bytes``. Every reading
    probes again (one ``statvfs`` per path, microseconds), so the state follows the
    disk without a background thread.
    """

    def __init__(self, paths: Iterable[Path], policy: DiskPolicy | None = None) -> None:
        self._paths = tuple(dict.fromkeys(Path(p) for p in paths))
        if not self._paths:
            raise ConfigError("DiskGuard: at least one path to watch")
        self._policy = policy or DiskPolicy()
        self._lock = threading.Lock()
        self._read_only = False
        self._transitions = 0

    @property
    def policy(self) -> DiskPolicy:
        return self._policy

    @property
    def paths(self) -> tuple[Path, ...]:
        return self._paths

    @property
    def transitions(self) -> int:
        """How many times the guard turned read-only so far."""
        return self._transitions

    def status(self) -> DiskStatus:
        """Probe now; the tightest path decides."""
        policy = self._policy
        readings = [(policy.probe(path), path) for path in self._paths]
        free, path = min(readings, key=lambda reading: reading[0])
        with self._lock:
            was = self._read_only
            if was:
                now = free < policy.reserve_bytes + policy.resume_margin_bytes
            else:
                now = free < policy.reserve_bytes
            self._read_only = now
            if now and not was:
                self._transitions += 1
        status = DiskStatus(str(path), free, policy.reserve_bytes, now)
        if now != was:
            if now:
                log.warning("%s; writes are refused until space is freed", status.error())
            else:
                log.warning("%d MiB free on %s again: writes resume", free // MIB, path)
        return status

    def writable(self) -> bool:
        """True when writes may go on (probes)."""
        return not self.status().read_only

    def require_writable(self) -> None:
        """Raise :class:`ReadOnlyError` (free and needed space, the path) when read-only."""
        status = self.status()
        if status.read_only:
            raise status.error()


def start_need(collections: Sequence[Path], policy: DiskPolicy) -> int:
    """Bytes the embedded collections at ``collections`` will still allocate when
    opened: each up to ``collection_bytes``, less what it already holds."""
    return sum(max(0, policy.collection_bytes - allocated_bytes(c)) for c in collections)


def check_start(data_dir: Path, collections: Sequence[Path], policy: DiskPolicy) -> None:
    """Refuse to start (:class:`DiskSpaceError`, before anything is started or
    allocated) when ``data_dir``'s disk cannot hold the embedded collections still to
    be allocated plus ``floor_bytes``. With less than ``reserve_bytes`` beyond them
    the engine starts, read-only."""
    allocate = start_need(collections, policy)
    free = policy.probe(data_dir)
    needed = allocate + policy.floor_bytes
    if free < needed:
        detail = (
            f"{allocate // MIB} MiB for {len(collections)} embedded collections "
            f"(~{policy.collection_bytes // MIB} MiB each once opened) + "
            f"{policy.floor_bytes // MIB} MiB headroom; reads and writes need "
            f"{(allocate + policy.reserve_bytes) // MIB} MiB; see docs/service.md, Disk"
        )
        raise DiskSpaceError("cannot start", str(data_dir), free, needed, detail)
    if free < allocate + policy.reserve_bytes:
        log.warning(
            "%d MiB free on %s: starting read-only (writes need %d MiB)",
            free // MIB,
            data_dir,
            (allocate + policy.reserve_bytes) // MIB,
        )
