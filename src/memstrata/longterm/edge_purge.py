"""Purging an embedded qdrant-edge shard: rebuild it from its live points, swap it in.

What qdrant-edge-py 0.9.0 keeps of a deleted point (measured: tests/longterm/test_purge.py
writes a marker into payload text, deletes, and scans every byte under the shard):

* the WAL (``wal/open-N``) holds every update operation, payload text included,
  until its 32 MiB segment is full and acknowledged; ``flush()`` only moves the
  ack index (``wal/first-index``), the open segment keeps its bytes, and the
  Python API has no WAL truncation;
* the segment's payload storage (``payload_storage/page_*.dat``) and vector
  storages keep a deleted point, only flagged, until the vacuum optimizer rewrites
  the segment - which needs 20 % deleted and 1,000 vectors in that segment by
  default. ``deleted_threshold=0, vacuum_min_vector_number=1`` and ``optimize()``
  + ``flush()`` do clear the segments, yet the WAL still holds the text;
* payload index maps (``user``, ``slot``, ... keyword maps) of appendable
  segments keep the values they saw.

So the only sequence the public API offers that leaves nothing behind is the last
resort: copy the live points (vectors and payloads, as stored) into a fresh shard
in a sibling directory, optimize and flush it, then swap the directories and
delete the old one. Its WAL then holds only the live points' upserts.

Without stalling anyone (docs/benchmarks.md, "Forget"): the unit rebuilt is one part
of a collection, the shard holding one tenant group (:mod:`memstrata.longterm.edge_parts`;
a forget rebuilds only its tenant's parts). The engine's ``optimize()``, ``flush()``,
``close()`` and ``load()`` hold Python's GIL while they run, so the copy is built by a
child process (:class:`CopyProcess`, :mod:`memstrata.longterm.edge_rebuild`); this
process only scrolls the live part a page at a time and sends the pages on, and every
thread's reads go on between pages. Writes go on too: while a part is rebuilt each
write notes the ids it touched (:class:`WriteJournal`), and the copy catches up on
them (:func:`catch_up`: each id's point as it is now, or its deletion) in rounds while
writes continue, the last round with the part's writes held. No write is lost and
none waits for the copy. What is left in the serving process is the swap: the old
shard's ``close()`` (which flushes what it had not flushed yet) and the copy's
``load()``. Reads and writes of that part wait for it; every other thread waits only
while those two engine calls hold the GIL, a time that grows with the part's points
(not the collection's); other tenants' parts are neither drained nor closed, and the
part's point count is answered from its last reading meanwhile (a health sample asks
for it on the read path).

The swap is crash-safe: ``<name>.purge-new`` is built, then ``<name>.purge-ready``
is written; the live directory moves to ``<name>.purge-old``, the new one takes
its name, the marker and the old directory are removed. :func:`recover` runs before
a shard is opened and finishes or undoes whichever step a crash interrupted -
always ending with one complete shard and no old copy left on disk.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import struct
import subprocess
import sys
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, Any, Protocol, TypeAlias

import numpy as np
import qdrant_edge as qe

from memstrata.errors import BackendError
from memstrata.filemodes import PRIVATE_UMASK

STAGING_SUFFIX = ".purge-new"
READY_SUFFIX = ".purge-ready"
TRASH_SUFFIX = ".purge-old"
# Points per scroll page and per message to the copy: a page is read with this
# process's GIL held, so it is kept short (~4 ms at 384 dims).
COPY_PAGE = 256
# Catch-up rounds run while writes go on, until a round has at most FINAL_ROUND
# ids (or after CATCH_UP_ROUNDS); the last one holds the part's writes.
CATCH_UP_ROUNDS = 8
FINAL_ROUND = 256
CHILD_MODULE = "memstrata.longterm.edge_rebuild"
# How long a child that has sealed its copies gets to exit before it is killed.
_EXIT_WAIT_S = 30.0
_FRAME = struct.Struct(">Q")

WirePoint: TypeAlias = tuple[Any, Mapping[str, Any], Mapping[str, Any]]
"""One point as it travels to the copy: its engine id, its vectors (a dense one as a
float32 array, a sparse one as ``(indices, values)``) and its payload."""


def staging_dir(live: Path) -> Path:
    """Where the rebuilt copy of the shard at ``live`` is built."""
    return live.with_name(live.name + STAGING_SUFFIX)


def ready_marker(live: Path) -> Path:
    """A file whose presence says the staging copy is complete."""
    return live.with_name(live.name + READY_SUFFIX)


def trash_dir(live: Path) -> Path:
    """Where the old shard waits for deletion during the swap."""
    return live.with_name(live.name + TRASH_SUFFIX)


def _sync_dir(path: Path) -> None:
    # A rename is durable only once its directory is synced.
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def discard_staging(live: Path) -> None:
    """Remove an unfinished (or abandoned) copy and its marker."""
    shutil.rmtree(staging_dir(live), ignore_errors=True)
    ready_marker(live).unlink(missing_ok=True)


def recover(live: Path) -> None:
    """Finish or undo a purge of the shard at ``live`` that a crash interrupted.

    Every case ends with the live directory holding one complete shard and no
    staging or old copy beside it (the old copy holds the purged data).
    """
    staging, ready, trash = staging_dir(live), ready_marker(live), trash_dir(live)
    if not (staging.exists() or ready.exists() or trash.exists()):
        return
    if staging.exists() and ready.exists() and not live.exists():
        # Crashed between the two renames: the complete copy takes over.
        staging.rename(live)
    elif not live.exists() and trash.exists():
        # Old shard moved away but no complete copy to replace it: put it back.
        trash.rename(live)
    # Whatever remains is superseded: an incomplete copy, a copy the still-live
    # shard makes redundant (purged again later), or the old shard.
    discard_staging(live)
    shutil.rmtree(trash, ignore_errors=True)
    if live.parent.exists():
        _sync_dir(live.parent)


def mark_ready(live: Path) -> None:
    """Record that the staging copy is complete (after it was flushed and closed)."""
    ready = ready_marker(live)
    with ready.open("wb") as marker:
        os.fsync(marker.fileno())
    _sync_dir(live.parent)


# -- the copy's process and its messages ------------------------------------------------


def send(out: IO[bytes], message: object) -> None:
    """One message on a pipe: its pickle, length first (both ends are memstrata's)."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_FRAME.pack(len(data)) + data)
    out.flush()


def receive(source: IO[bytes]) -> Any:
    """The next message :func:`send` wrote; EOFError once the pipe is closed."""
    size = _FRAME.unpack(_read_exactly(source, _FRAME.size))[0]
    return pickle.loads(_read_exactly(source, size))  # both ends are this package's


def _read_exactly(source: IO[bytes], size: int) -> bytes:
    data = source.read(size)
    if data is None or len(data) < size:
        raise EOFError("the pipe closed")
    return data


def wire_point(record: Any) -> WirePoint:
    """An engine record (vectors and payload read) as it travels to the copy."""
    vectors = record.vector
    if not isinstance(vectors, dict) or not vectors:
        # Asked for: a point that lost its vectors is not copied blind.
        raise BackendError(f"qdrant-edge purge: point {record.id} came without vectors")
    sent: dict[str, Any] = {}
    for name, value in vectors.items():
        if isinstance(value, qe.SparseVector):
            sent[name] = (list(value.indices), list(value.values))
        else:
            sent[name] = np.asarray(value, dtype=np.float32)
    return (record.id, sent, record.payload or {})


def engine_point(point: WirePoint) -> qe.Point:
    """A point as the parent read it (:func:`memstrata.longterm.edge_purge.wire_point`)
    back into the engine's own type (in the copy's process,
    or in this one when a collection is split into parts)."""
    point_id, vectors, payload = point
    engine_vectors: dict[str, Any] = {}
    for name, value in vectors.items():
        if isinstance(value, np.ndarray):
            engine_vectors[name] = value.tolist()
        else:
            indices, values = value
            engine_vectors[name] = qe.SparseVector(list(indices), list(values))
    return qe.Point(point_id, engine_vectors, dict(payload))


class CopyProcess:
    """The child process that builds the purged copies of one :meth:`purge
    <memstrata.longterm.edge.EdgeIndex.purge>` (:data:`CHILD_MODULE`), started on
    first use: :meth:`copy` opens one part's copy in it.

    Points and deletions are sent without an answer (the pipe's buffer paces this
    process); ``optimize``, ``flush`` and ``seal`` wait for the child, and report any
    failure it had meanwhile as a ``BackendError``. A failure ends the child: the
    copy it was building is removed, and the next purge starts another process.
    """

    def __init__(self, dim: int, search_threads: int) -> None:
        self._args = [sys.executable, "-m", CHILD_MODULE, str(dim), str(search_threads)]
        self._proc: subprocess.Popen[bytes] | None = None
        self._failed: BackendError | None = None

    def __enter__(self) -> CopyProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def copy(self, live: Path) -> RemoteCopy:
        """A new, empty copy of the shard (a part) at ``live`` in ``staging_dir(live)`` (whatever
        an earlier attempt left there is removed first)."""
        discard_staging(live)
        copy = RemoteCopy(self, live)
        self.send(live, ("create", str(live), str(staging_dir(live))))
        return copy

    def close(self) -> None:
        """Let the child end (it has sealed what it built) and wait for it."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        try:
            proc.wait(timeout=_EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def kill(self) -> None:
        """End the child now (what it was building is left to the caller to remove)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with contextlib.suppress(OSError):
            proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()

    def send(self, live: Path, message: tuple[Any, ...]) -> None:
        """Send ``message`` (about the copy of ``live``) without waiting."""
        proc = self._started(live)
        assert proc.stdin is not None
        try:
            send(proc.stdin, message)
        except (BrokenPipeError, ValueError):
            raise self._failure(live, proc) from None  # the child ended

    def call(self, live: Path, message: tuple[Any, ...]) -> Any:
        """Send ``message`` and wait for its answer."""
        self.send(live, message)
        proc = self._started(live)
        assert proc.stdout is not None
        try:
            status, value = receive(proc.stdout)
        except EOFError:
            raise self._failure(live, proc) from None
        if status != "ok":
            self.kill()
            raise BackendError(f"qdrant-edge purge of {live}: {value}")
        return value

    def _started(self, live: Path) -> subprocess.Popen[bytes]:
        if self._failed is not None:
            raise self._failed
        if self._proc is None:
            # Where this memstrata was imported from, so the child runs the same code.
            source_root = str(Path(__file__).resolve().parents[2])
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(
                p for p in (source_root, env.get("PYTHONPATH", "")) if p
            )
            try:
                self._proc = subprocess.Popen(
                    self._args,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    umask=PRIVATE_UMASK,  # the copy holds what users said: 0600 files
                    env=env,
                )
            except OSError as exc:
                self._failed = BackendError(f"qdrant-edge purge of {live}: no copy process: {exc}")
                raise self._failed from exc
        return self._proc

    def _failure(self, live: Path, proc: subprocess.Popen[bytes]) -> BackendError:
        said = ""
        if proc.stdout is not None:
            with contextlib.suppress(EOFError, OSError, ValueError, pickle.UnpicklingError):
                status, value = receive(proc.stdout)
                said = f": {value}" if status == "error" else ""
        self.kill()
        self._failed = BackendError(
            f"qdrant-edge purge of {live}: the copy failed{said} (exit {proc.returncode})"
        )
        return self._failed


class RemoteCopy:
    """One part's copy in a :class:`CopyProcess` (a :class:`ShardCopy`).
    Leaving the ``with`` unsealed ends the process and removes the copy."""

    def __init__(self, process: CopyProcess, live: Path) -> None:
        self._process = process
        self._live = live
        self._key = str(live)
        self._sealed = False

    def __enter__(self) -> RemoteCopy:
        return self

    def __exit__(self, *exc: object) -> None:
        if not self._sealed:
            self._process.kill()
            discard_staging(self._live)

    def upsert(self, records: Sequence[Any]) -> None:
        """Copy engine ``records`` (read with vectors and payload) as they are."""
        if records:
            self._process.send(self._live, ("upsert", self._key, [wire_point(r) for r in records]))

    def delete(self, ids: Sequence[Any]) -> None:
        """Delete ``ids`` from the copy (absent ones are ignored)."""
        if ids:
            self._process.send(self._live, ("delete", self._key, list(ids)))

    def optimize(self) -> None:
        """Run the engine's optimizers on the copy; returns when they are done."""
        self._process.call(self._live, ("optimize", self._key))

    def flush(self) -> None:
        """Flush the copy to disk; returns when it is done."""
        self._process.call(self._live, ("flush", self._key))

    def seal(self, expected: int) -> None:
        """Flush and close the copy and mark it complete, once it holds ``expected``
        points (else a ``BackendError``, and the copy is removed)."""
        copied = self._process.call(self._live, ("seal", self._key))
        if copied != expected:
            raise BackendError(
                f"qdrant-edge purge of {self._live}: the copy holds {copied} of {expected} points"
            )
        mark_ready(self._live)
        self._sealed = True


class ShardCopy(Protocol):
    """What a rebuild writes its copy through (:class:`RemoteCopy`)."""

    def upsert(self, records: Sequence[Any]) -> None: ...
    def delete(self, ids: Sequence[Any]) -> None: ...
    def optimize(self) -> None: ...
    def flush(self) -> None: ...
    def seal(self, expected: int) -> None: ...


# -- copying while writes go on --------------------------------------------------------


class WriteJournal:
    """The ids each write touched, per part, while that part is rebuilt.

    The index serializes it: a write notes its ids holding the part's write
    lock, and a rebuild starts, drains and stops the journal holding it too.
    """

    def __init__(self) -> None:
        self._open: dict[str, set[str]] = {}

    def start(self, name: str) -> None:
        """Note every write to ``name`` from now on."""
        self._open[name] = set()

    def note(self, name: str, ids: Iterable[str]) -> None:
        """A write to ``name`` touched ``ids`` (kept only while ``name`` is rebuilt)."""
        touched = self._open.get(name)
        if touched is not None:
            touched.update(ids)

    def drain(self, name: str) -> set[str]:
        """The ids noted since the start or the last drain; noting goes on."""
        touched = self._open.get(name)
        if touched is None:
            return set()
        self._open[name] = set()
        return touched

    def stop(self, name: str) -> set[str]:
        """The ids noted since the last drain; noting ends."""
        return self._open.pop(name, set())


class LiveShard(Protocol):
    """The index's side of a rebuild: the live shard, read one call at a time."""

    def page(self, offset: Any) -> tuple[list[Any], Any]:
        """One scroll page of points (vectors and payloads) from ``offset`` in id order,
        and the next offset (None after the last page)."""
        ...

    def points(self, ids: Collection[str]) -> list[Any]:
        """The points among ``ids`` as they are now (vectors and payloads)."""
        ...

    def drain(self) -> set[str]:
        """The ids written since the rebuild started or since the last drain."""
        ...


class LeasedShard:
    """A part's live shard as its rebuild reads it (:class:`LiveShard`), one
    lease per call: ``lease(name)`` is the index's, ``writer`` the collection's
    write lock, ``journal`` the index's :class:`WriteJournal`."""

    def __init__(
        self,
        name: str,
        lease: Callable[[str], AbstractContextManager[Any]],
        writer: AbstractContextManager[Any],
        journal: WriteJournal,
    ) -> None:
        self._name = name
        self._lease = lease
        self._writer = writer
        self._journal = journal

    def page(self, offset: Any) -> tuple[list[Any], Any]:
        """See :meth:`LiveShard.page`."""
        request = qe.ScrollRequest(
            offset=offset, limit=COPY_PAGE, with_payload=True, with_vector=True
        )
        with self._lease(self._name) as lease:
            records, following = lease.shard.scroll(request)
            return list(records), following

    def points(self, ids: Collection[str]) -> list[Any]:
        """See :meth:`LiveShard.points`."""
        with self._lease(self._name) as lease:
            return list(lease.shard.retrieve(list[Any](ids), True, True))

    def drain(self) -> set[str]:
        """See :meth:`LiveShard.drain`."""
        with self._writer:
            return self._journal.drain(self._name)

    def count(self) -> int:
        """Exact count of the live points."""
        with self._lease(self._name) as lease:
            return int(lease.shard.count(qe.CountRequest(exact=True)))


def copy_live(copy: ShardCopy, live: LiveShard) -> None:
    """Everything but the last catch-up: every live point into ``copy``, the copy
    optimized, then the writes made meanwhile, round after round, and a flush.
    ``live`` is read a page at a time: reads and writes of the part go on."""
    offset: Any = None
    while True:
        records, offset = live.page(offset)
        copy.upsert(records)
        if offset is None:
            break
    copy.optimize()
    for _ in range(CATCH_UP_ROUNDS):
        touched = live.drain()
        catch_up(copy, live, touched)
        if len(touched) <= FINAL_ROUND:
            break
    copy.flush()


def catch_up(copy: ShardCopy, live: LiveShard, ids: Collection[str]) -> None:
    """Make ``copy`` hold what the live shard holds for ``ids``: each point as it is
    now, or none where it was deleted."""
    if not ids:
        return
    found = live.points(ids)
    copy.upsert(found)
    # Compared as UUIDs: the engine answers canonical ids, a write may have named
    # the same point in another spelling (upper case), and deleting it would lose it.
    present = {_uuid_key(record.id) for record in found}
    copy.delete(sorted(i for i in ids if _uuid_key(i) not in present))


def _uuid_key(point_id: Any) -> str:
    try:
        return str(uuid.UUID(str(point_id)))
    except ValueError:
        return str(point_id)


def swap_in(live: Path) -> None:
    """Replace the (closed) shard at ``live`` with its complete staging copy; the old
    one waits beside it for :func:`remove_old`. Each step is one a crash can leave
    for :func:`recover`."""
    staging, trash = staging_dir(live), trash_dir(live)
    if not ready_marker(live).exists() or not staging.is_dir():
        raise BackendError(f"qdrant-edge purge: no complete copy of {live} to swap in")
    live.rename(trash)
    staging.rename(live)
    _sync_dir(live.parent)
    ready_marker(live).unlink()


def remove_old(live: Path) -> None:
    """Delete the shard :func:`swap_in` replaced (what it holds is what was purged)."""
    shutil.rmtree(trash_dir(live), ignore_errors=True)
    with contextlib.suppress(OSError):
        _sync_dir(live.parent)
