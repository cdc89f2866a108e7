"""The service's own health: what ``/healthz`` answers, and the read-only gate.

Every backend a request may need is checked at once, each within a deadline, so a
hung server costs the probe ``timeout_s`` and never more: the working-memory
Valkey (the embedded one's supervisor state first: ``restarting`` while it is being
started again from its append-only file), the long-term store, the write queue's
consumers, and the data directory's disk. The worst check decides the status:

========== ===== ===============================================================
status     HTTP  meaning
========== ===== ===============================================================
ok         200   every backend answers and writes are accepted
read_only  503   the disk is short of space, or Valkey answers reads but refuses
                 writes (MISCONF on a full disk, OOM): reads are served, writes
                 refused
degraded   503   writes are accepted but not consumed (a consumer died, or the
                 queue's consumers are paused by an outage: the long-term store,
                 Valkey, the embedder or the extractor down), or the long-term store
                 does not answer (or a breaker is open) and reads are served from
                 L2 and L1
down       503   Valkey does not answer
========== ===== ===============================================================

``/healthz?reads=1`` answers 200 for every status but ``down``: what a load
balancer routing reads only may use. Answers are cached ``cache_s`` (0.5 s), so
many probers cost one check.

The read-only gate: while the disk guard is read-only, :meth:`ServiceHealth.refuse_write`
refuses every operation that writes (role writer or admin, except the in-process
session operations and the admin reads) with :class:`~memstrata.errors.ReadOnlyError`
before it runs, so a write never half happens.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import redis.exceptions as rexc
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from memstrata.engine import ContextEngine
from memstrata.errors import ReadOnlyError, WriteNotQueuedError
from memstrata.longterm.points import MEMORIES
from memstrata.service.auth import KeyStore

Status = Literal["ok", "read_only", "degraded", "down"]
_SEVERITY: Mapping[str, int] = {"ok": 0, "read_only": 1, "degraded": 2, "down": 3}

ALLOWED_WHEN_READ_ONLY = frozenset(
    {"start_session", "update_session", "end_session", "health_report", "list_keys"}
)
"""Writer and admin operations that write nothing to disk (L1 lives in the process)."""


@dataclass(frozen=True, slots=True)
class Health:
    """One health reading: the overall status and each backend's check."""

    status: Status
    checks: Mapping[str, Mapping[str, Any]]

    def http_status(self, *, reads: bool = False) -> int:
        """200 when healthy; with ``reads``, 200 whenever reads can be served."""
        if self.status == "ok" or (reads and self.status != "down"):
            return 200
        return 503

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "checks": {k: dict(v) for k, v in self.checks.items()}}


def _check(status: Status, detail: str, **extra: Any) -> dict[str, Any]:
    return {"status": status, "detail": detail, **extra}


_PROBE_KEY = "{memstrata:health}:probe"
"""Read (never written) to tell a Valkey that refuses writes from one that is down."""


def _first_word(exc: BaseException) -> str:
    """The error's code (MISCONF, OOM, READONLY...): never its text, which may quote
    a path."""
    words = str(exc).split()
    return words[0] if words and words[0].isupper() else type(exc).__name__


class ServiceHealth:
    """Health checks and the read-only gate over one engine's backends."""

    def __init__(
        self,
        engine: ContextEngine,
        keys: KeyStore | None = None,
        *,
        timeout_s: float = 2.0,
        cache_s: float = 0.5,
    ) -> None:
        self._engine = engine
        self._keys = keys
        self._timeout_s = timeout_s
        self._cache_s = cache_s
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="memstrata-health")
        self._lock = threading.Lock()
        self._last: tuple[float, Health] | None = None
        self._inflight: dict[str, Future[dict[str, Any]]] = {}
        self.writes_refused = 0
        """Writes refused by the read-only gate or answered as not queued."""
        _FaultCollector.attach(engine.metrics_registry(), self)

    @property
    def keys(self) -> KeyStore | None:
        return self._keys

    @property
    def engine(self) -> ContextEngine:
        return self._engine

    # -- the read-only gate ---------------------------------------------------------

    def refuse_write(self, operation: str, role: str) -> None:
        """ReadOnlyError before a writing ``operation`` runs while the disk is short."""
        disk = self._engine.parts.disk
        if disk is None or role == "reader" or operation in ALLOWED_WHEN_READ_ONLY:
            return
        status = disk.status()
        if status.read_only:
            self._refused()
            raise status.error()

    def not_queued(
        self, error: str | None, chunks: int | None
    ) -> ReadOnlyError | WriteNotQueuedError:
        """The error a receipt with ``queued=False`` is answered with (never a 200)."""
        self._refused()
        disk = self._engine.parts.disk
        if error == ReadOnlyError.__name__ and disk is not None:
            return disk.status().error()
        return WriteNotQueuedError(error, chunks)

    def _refused(self) -> None:
        with self._lock:
            self.writes_refused += 1

    # -- /healthz -------------------------------------------------------------------

    def check(self) -> Health:
        """Every backend, checked at once within ``timeout_s`` (cached ``cache_s``)."""
        now = time.monotonic()
        with self._lock:
            if self._last is not None and now - self._last[0] < self._cache_s:
                return self._last[1]
        checks = {
            "valkey": self._valkey,
            "l3": self._l3,
            "write_queue": self._write_queue,
            "embedder": self._embedder,
            "disk": self._disk,
        }
        with self._lock:
            # A check still running from an earlier probe (a hung server) is awaited,
            # not started again: probes of a hung backend never pile up.
            for name, run in checks.items():
                running = self._inflight.get(name)
                if running is None or running.done():
                    self._inflight[name] = self._pool.submit(run)
            futures = dict(self._inflight)
        deadline = now + self._timeout_s
        results: dict[str, dict[str, Any]] = {}
        for name, future in futures.items():
            try:
                results[name] = future.result(timeout=max(0.0, deadline - time.monotonic()))
            except FutureTimeout:
                results[name] = _check("down", f"no answer within {self._timeout_s:g}s")
            except Exception as exc:  # a check must report, never raise
                results[name] = _check("down", f"check failed: {type(exc).__name__}")
        if results["disk"]["status"] == "down":
            results["disk"]["status"] = "degraded"  # an unreadable probe refuses nothing
        worst = max(results.values(), key=lambda c: _SEVERITY[c["status"]])["status"]
        health = Health(worst, results)
        with self._lock:
            self._last = (time.monotonic(), health)
        return health

    def _valkey(self) -> dict[str, Any]:
        parts = self._engine.parts
        server = parts.valkey
        restarts = server.restarts if server is not None else 0
        if server is not None and server.state == "restarting":
            return _check("down", f"restarting: {server.last_failure or 'gone'}", restarts=restarts)
        client = parts.working_backend.client
        try:
            client.ping()
        except rexc.ResponseError as exc:
            # The server answered, refusing: on a full disk Valkey refuses PING with the
            # writes (MISCONF). Reads still work, so this is read-only, not down.
            refused = _first_word(exc)
            try:
                client.exists(_PROBE_KEY)
            except Exception as read_exc:
                return _check(
                    "down",
                    f"refuses writes ({refused}) and reads ({type(read_exc).__name__})",
                    restarts=restarts,
                )
            return _check(
                "read_only", f"answers reads, refuses writes: {refused}", restarts=restarts
            )
        except Exception as exc:
            return _check("down", f"no answer: {type(exc).__name__}", restarts=restarts)
        return _check("ok", "answers", restarts=restarts)

    def _l3(self) -> dict[str, Any]:
        guard = self._engine.parts.retriever.guard
        breakers = dict(guard.states()) if guard is not None else {}
        try:
            points = self._engine.parts.longterm.index.point_count(MEMORIES)
        except Exception as exc:
            # Reads go on from L2 and L1 (the reader's fallback) and writes are queued
            # until it answers again: degraded, not down.
            return _check(
                "degraded",
                f"no answer: {type(exc).__name__}; reads are served from L2 and L1",
                breakers=breakers,
            )
        # The multilingual vector's background catch-up (memstrata.longterm.catchup).
        catchup = self._engine.parts.longterm.catchup_state().as_dict()
        if any(state != "closed" for state in breakers.values()):
            return _check(
                "degraded",
                "a breaker is open",
                memories=points,
                breakers=breakers,
                multilingual=catchup,
            )
        return _check("ok", "answers", memories=points, breakers=breakers, multilingual=catchup)

    def _write_queue(self) -> dict[str, Any]:
        parts = self._engine.parts
        workers = parts.pipeline.workers
        alive = sum(1 for w in workers if w.running)
        extra: dict[str, Any] = {"consumers": len(workers), "consumers_alive": alive}
        stats = parts.pipeline.stats().queue
        if stats is not None:
            extra.update(
                length=stats.length, pending=stats.pending, lag=stats.lag,
                dead_lettered=stats.dead_lettered,
            )  # fmt: skip
        if parts.disk is not None and parts.disk.status().read_only:
            return _check("read_only", "consumers wait: the disk is short of space", **extra)
        if parts.outage is not None and parts.outage.paused:
            down = ", ".join(f"{k} ({v})" for k, v in sorted(parts.outage.causes().items()))
            return _check("degraded", f"consumers paused, down: {down or 'a backend'}", **extra)
        if alive < len(workers):
            return _check("degraded", f"{len(workers) - alive} consumer thread(s) stopped", **extra)
        # Dead letters are input that can never be stored: listed, never hidden.
        dead = f"; {stats.dead_lettered} dead letter(s)" if stats and stats.dead_lettered else ""
        if not workers:
            return _check("ok", f"consumed by worker processes{dead}", **extra)
        return _check("ok", f"consuming{dead}", **extra)

    def _embedder(self) -> dict[str, Any]:
        """The write path's embedder: down while it paused the consumers (they probe it
        every second); the read path's breaker on it beside."""
        parts = self._engine.parts
        causes = parts.outage.causes() if parts.outage is not None else {}
        guard = parts.retriever.guard
        breaker = str(guard.states()["embedder"]) if guard is not None else "closed"
        extra = {"model": parts.embedder.name, "read_breaker": breaker}
        if "embedder" in causes:
            detail = f"down ({causes['embedder']}): writes are queued and stored once it answers"
            return _check("degraded", detail, **extra)
        return _check("ok", "answers", **extra)

    def _disk(self) -> dict[str, Any]:
        disk = self._engine.parts.disk
        if disk is None:
            return _check("ok", "not watched")
        status = disk.status()
        reading = status.as_dict()
        detail = str(status.error()) if status.read_only else "enough free space"
        return {**reading, "detail": detail}

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class _FaultCollector(Collector):
    """The fault metrics of every live :class:`ServiceHealth` over one registry."""

    _by_registry: ClassVar[weakref.WeakKeyDictionary[CollectorRegistry, _FaultCollector]] = (
        weakref.WeakKeyDictionary()
    )
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self._healths: weakref.WeakSet[ServiceHealth] = weakref.WeakSet()

    @classmethod
    def attach(cls, registry: CollectorRegistry, health: ServiceHealth) -> None:
        with cls._lock:
            collector = cls._by_registry.get(registry)
            if collector is None:
                collector = cls._by_registry[registry] = cls()
                registry.register(collector)
            collector._healths.add(health)

    def collect(self) -> Iterator[Metric]:
        healths = list(self._healths)
        refused = CounterMetricFamily(
            "memstrata_writes_refused",
            "Writes answered with an error instead of being kept: read-only, or not queued.",
        )
        refused.add_metric([], sum(h.writes_refused for h in healths))
        yield refused
        audit = CounterMetricFamily(
            "memstrata_auth_audit_failures",
            "API key uses whose audit entry could not be written (the call went on).",
        )
        stores = {id(h.keys): h.keys for h in healths if h.keys is not None}
        audit.add_metric([], sum(k.audit_failures for k in stores.values()))
        yield audit
        if not healths:
            return
        parts = healths[0].engine.parts  # one engine per registry
        yield from _engine_faults(parts.disk, parts.valkey, parts.outage)


def _engine_faults(disk: Any, valkey: Any, outage: Any) -> Iterator[Metric]:
    gauge = GaugeMetricFamily
    if disk is not None:
        status = disk.status()
        read_only = gauge("memstrata_read_only", "1 while writes are refused for lack of disk.")
        read_only.add_metric([], 1.0 if status.read_only else 0.0)
        yield read_only
        free = gauge("memstrata_disk_free_bytes", "Free bytes on the data directory's disk.")
        free.add_metric([], float(status.free_bytes))
        yield free
    if valkey is not None:
        restarts = CounterMetricFamily(
            "memstrata_valkey_restarts", "Times the embedded Valkey was started again."
        )
        restarts.add_metric([], float(valkey.restarts))
        yield restarts
    if outage is not None:
        paused = gauge(
            "memstrata_write_consumers_paused", "1 while an outage pauses the queue's consumers."
        )
        paused.add_metric([], 1.0 if outage.paused else 0.0)
        yield paused
