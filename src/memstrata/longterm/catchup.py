"""Which points get the ``multilingual`` vector, and the background catch-up of those
that lack it (docs/architecture.md, "Languages").

The second dense model (USE multilingual v3) costs about as much as MiniLM per text,
and an English question reads it only over Chinese and mixed points
(:mod:`memstrata.retrieval.languages`). So with ``longterm.multilingual_points`` at
``auto`` a point is written with it only when its text is Chinese or mixed, or its
tenant is *cross-language*: configured (``longterm.cross_language_tenants``), or
detected - it has a Chinese or mixed point, or asked a Chinese or mixed question (a
Chinese question reads the multilingual vector over every point, English ones too).
Any other English point is written with MiniLM and BM25 alone: acknowledged and
searchable by English questions at once.

When a tenant turns cross-language, its points written before without the vector get
it in the background: one daemon thread takes the tenant from a bounded queue, reads
its points lacking the vector (the engine's has-vector condition) a small batch at a
time, embeds their texts in small chunks (a foreground write waits for the shared
model one chunk at most) and sets the vector alone (the engine's partial update,
conditioned on the vector still missing: no race with a payload or a point written
meanwhile). Nothing is kept about the backlog but the engine's own points, so a
restart resumes: the points still lacking the vector are found by the same condition
the next time the tenant is seen cross-language.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from memstrata.config import LongTermSettings
from memstrata.longterm.points import COLLECTIONS, MULTILINGUAL_VECTOR, Filter, Record
from memstrata.longterm.protocol import VectorIndex

_log = logging.getLogger(__name__)

CROSS_LANGS = ("zh", "mixed")
"""The ``lang`` payload values that make a tenant cross-language."""
BATCH = 64
"""Points read and updated per step of the catch-up."""
CHUNK = 16
"""Texts per call of the shared model: what a foreground write may wait for."""
QUEUE_MAX = 4096
"""Tenants waiting for a catch-up at most; past it a tenant is left for the next
time it is seen cross-language (its points are found again by the filter)."""
SYNC_MAX = 64
"""Points a Chinese or mixed question embeds itself before it reads (the rest is left
to the background, and the result says how many are not searchable yet)."""
_TENANTS_MAX = 1 << 16
_SHARED_RECHECK_S = 30.0
"""How long a tenant checked English-only stays so on a shared index (another
process may write its first Chinese point)."""

Embed = Callable[[Sequence[str]], NDArray[np.float32]]


def _bounded_add(table: OrderedDict[str, None], key: str) -> None:
    table[key] = None
    table.move_to_end(key)
    while len(table) > _TENANTS_MAX:
        table.popitem(last=False)


@dataclass(frozen=True, slots=True)
class CatchUpState:
    """The catch-up as ``/healthz`` and the metrics report it."""

    policy: str
    """``auto``, ``all``, or ``off`` (no multilingual vector)."""
    state: str
    """``idle``, ``running`` (a tenant in progress), ``stopped`` (the store closed)."""
    tenants_queued: int
    """Tenants waiting for their catch-up, the running one included."""
    points_pending: int
    """Points of the running tenant still awaiting the vector (counted when it began,
    less those done since)."""
    points_done: int
    """Points given the vector in the background (and by questions) since the start."""
    last_error: str | None = None

    def as_dict(self) -> dict[str, object]:
        """JSON-ready."""
        return {
            "policy": self.policy,
            "state": self.state,
            "tenants_queued": self.tenants_queued,
            "points_pending": self.points_pending,
            "points_done": self.points_done,
            "last_error": self.last_error,
        }


class MultilingualCoverage:
    """The write policy of the ``multilingual`` vector and its background catch-up,
    over one index (see the module docstring)."""

    def __init__(
        self,
        index: VectorIndex,
        embed: Embed,
        settings: LongTermSettings,
        *,
        batch: int = BATCH,
        chunk: int = CHUNK,
        queue_max: int = QUEUE_MAX,
    ) -> None:
        self._index = index
        self._embed = embed
        self._all = settings.multilingual_points == "all"
        self._configured = frozenset(settings.cross_language_tenants)
        self._batch = batch
        self._chunk = chunk
        self._queue_max = queue_max
        self._lock = threading.Condition()
        self._cross: OrderedDict[str, None] = OrderedDict()
        # (collection, tenant) checked to hold no Chinese or mixed point: when.
        self._english: dict[tuple[str, str], float] = {}
        # (collection, tenant) known to have no point lacking the vector.
        self._complete: set[tuple[str, str]] = set()
        self._queue: deque[str] = deque()
        self._queued: set[str] = set()
        self._running: str | None = None
        self._pending = 0
        self._done = 0
        self._error: str | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False

    # -- the write side ---------------------------------------------------------------

    def cross(self, tenant: str) -> bool:
        """Whether every point of ``tenant`` gets the vector as it is written."""
        if self._all or tenant in self._configured:
            return True
        with self._lock:
            return tenant in self._cross

    def plan(self, collection: str, tenants: Sequence[str], langs: Sequence[str]) -> list[bool]:
        """Which of the points about to be written (their tenants and languages) get
        the vector in the same write. A Chinese or mixed point turns its tenant
        cross-language (its earlier points are caught up in the background)."""
        for tenant, lang in zip(tenants, langs, strict=True):
            if lang in CROSS_LANGS:
                self.turned_cross(tenant)
        for tenant in dict.fromkeys(tenants):
            if not self.cross(tenant) and self._has_cross_points(collection, tenant):
                self.turned_cross(tenant)
        return [self.cross(tenant) for tenant in tenants]

    def written(self, collection: str, without: Iterable[str]) -> None:
        """After a write whose points of the tenants ``without`` lack the vector: a
        tenant that turned cross-language meanwhile is caught up again (its catch-up
        may have read past them already)."""
        for tenant in dict.fromkeys(without):
            with self._lock:
                self._complete.discard((collection, tenant))
            if self.cross(tenant):
                self.schedule(tenant)

    def _has_cross_points(self, collection: str, tenant: str) -> bool:
        """Whether the tenant has a Chinese or mixed point in ``collection`` (asked
        of the engine once per process, or every half minute on a shared index)."""
        key = (collection, tenant)
        with self._lock:
            checked = self._english.get(key)
        now = time.monotonic()
        if checked is not None and (not self._index.shared or now - checked < _SHARED_RECHECK_S):
            return False
        flt = Filter(tenant=tenant, extras=(("lang", CROSS_LANGS),))
        found = self._index.count(collection, flt) > 0
        with self._lock:
            if found:
                self._english.pop(key, None)
            else:
                if len(self._english) >= _TENANTS_MAX:
                    self._english.clear()
                self._english[key] = now
        return found

    def turned_cross(self, tenant: str) -> None:
        """``tenant`` is cross-language from now on (a Chinese or mixed point or
        question); the first time, its points lacking the vector are caught up."""
        if self._all or tenant in self._configured:
            return
        with self._lock:
            new = tenant not in self._cross
            _bounded_add(self._cross, tenant)
        if new:
            self.schedule(tenant)

    # -- the read side ----------------------------------------------------------------

    def missing(self, collection: str, flt: Filter) -> int:
        """How many points in ``flt``'s scope lack the vector: none when this process
        knows the tenant's collection complete, else engine counts (the tenant's, then
        the scope's when some lack it)."""
        key = (collection, flt.tenant)
        with self._lock:
            if key in self._complete:
                return 0
        whole = Filter(tenant=flt.tenant, lacks_vector=MULTILINGUAL_VECTOR)
        found = self._index.count(collection, whole)
        if found == 0:
            if not self._index.shared and self.cross(flt.tenant):
                # Every later write of this tenant carries the vector (it is cross).
                with self._lock:
                    self._complete.add(key)
            return 0
        scoped = replace(flt, lacks_vector=MULTILINGUAL_VECTOR)
        return found if scoped == whole else self._index.count(collection, scoped)

    def before_read(self, collection: str, flt: Filter, limit: int = SYNC_MAX) -> int:
        """Before a Chinese or mixed question reads ``flt``'s scope by the
        multilingual vector: the tenant turns cross-language, up to ``limit`` of its
        points lacking the vector get it now, the rest in the background; how many
        in scope still lack it (that question cannot find them)."""
        self.turned_cross(flt.tenant)
        lacking = self.missing(collection, flt)
        if lacking == 0:
            return 0
        self.schedule(flt.tenant)
        scope = replace(flt, lacks_vector=MULTILINGUAL_VECTOR)
        records, _ = self._index.scroll(collection, scope, limit=limit)
        done = self._fill(collection, flt.tenant, records)
        return max(0, lacking - done) if lacking > limit else 0

    # -- the background catch-up ------------------------------------------------------

    def schedule(self, tenant: str) -> None:
        """Queue ``tenant``'s catch-up (once; dropped when the queue is full)."""
        with self._lock:
            if self._stopped or tenant in self._queued:
                return
            if len(self._queue) >= self._queue_max:
                _log.warning(
                    "multilingual catch-up queue full (%d tenants): %s is left for the "
                    "next time it is seen cross-language",
                    self._queue_max,
                    tenant,
                )
                return
            self._queue.append(tenant)
            self._queued.add(tenant)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="memstrata-multilingual-catchup", daemon=True
                )
                self._thread.start()
            self._lock.notify_all()

    def settle(self, timeout_s: float) -> bool:
        """Wait until no catch-up is queued or running; False when ``timeout_s``
        passed first (or the catch-up stopped with work left)."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while self._queue or self._running is not None:
                left = deadline - time.monotonic()
                if left <= 0 or self._stopped:
                    return False
                self._lock.wait(left)
        return True

    def state(self) -> CatchUpState:
        """The catch-up now."""
        with self._lock:
            if self._stopped:
                state = "stopped"
            else:
                state = "running" if self._running is not None else "idle"
            return CatchUpState(
                policy="all" if self._all else "auto",
                state=state,
                tenants_queued=len(self._queued),
                points_pending=self._pending,
                points_done=self._done,
                last_error=self._error,
            )

    def close(self, timeout_s: float = 30.0) -> None:
        """Stop the catch-up after the chunk it is embedding (idempotent); what is
        left is found again after the next start."""
        with self._lock:
            self._stopped = True
            self._queue.clear()
            self._queued.clear()
            thread = self._thread
            self._lock.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._stopped:
                    self._lock.wait()
                if self._stopped:
                    return
                tenant = self._queue.popleft()
                self._running = tenant
            try:
                self._catch_up(tenant)
            except Exception as exc:  # the next trigger finds the rest again
                if not self._stopped:
                    _log.warning("multilingual catch-up of tenant %s failed: %s", tenant, exc)
                    with self._lock:
                        self._error = f"{type(exc).__name__}: {exc}"
            finally:
                with self._lock:
                    self._running = None
                    self._pending = 0
                    self._queued.discard(tenant)
                    self._lock.notify_all()

    def _catch_up(self, tenant: str) -> None:
        """Give every point of ``tenant`` lacking the vector its vector, collection by
        collection, a batch at a time (one pass in id order: a point written without
        it meanwhile queues the tenant again, :meth:`written`)."""
        for collection in COLLECTIONS:
            scope = Filter(tenant=tenant, lacks_vector=MULTILINGUAL_VECTOR)
            lacking = self._index.count(collection, scope)
            with self._lock:
                self._pending = lacking
            offset: str | None = None
            while lacking:
                if self._stopped:
                    return
                records, offset = self._index.scroll(
                    collection, scope, limit=self._batch, offset=offset
                )
                done = self._fill(collection, tenant, records)
                with self._lock:
                    self._pending = max(0, self._pending - done)
                if offset is None:
                    break
            if self.cross(tenant) and not self._index.shared:
                with self._lock:
                    self._complete.add((collection, tenant))

    def _fill(self, collection: str, tenant: str, records: Sequence[Record]) -> int:
        """Embed ``records``' texts (a chunk per model call) and set their vectors;
        how many were sent."""
        records = [r for r in records if isinstance(r.payload.get("text"), str)]
        done = 0
        for start in range(0, len(records), self._chunk):
            if self._stopped:
                break
            chunk = records[start : start + self._chunk]
            rows = self._embed([str(r.payload["text"]) for r in chunk])
            vectors = {r.id: row for r, row in zip(chunk, rows, strict=True)}
            self._index.update_vectors(collection, tenant, MULTILINGUAL_VECTOR, vectors)
            done += len(chunk)
            with self._lock:
                self._done += len(chunk)
        return done
