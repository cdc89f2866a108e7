"""Upkeep: deletion everywhere, consolidation, restore, the health report, metrics and
the audit trail (docs/architecture.md, "Upkeep" and "Health and metrics")."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any

from prometheus_client import CollectorRegistry

from memstrata.clock import Clock
from memstrata.embed.protocol import Embedder
from memstrata.errors import BackendError, MemstrataError, NotFoundError, ValidationError
from memstrata.gateway import Sanitizer
from memstrata.gateway.audit import AuditEvent, InMemoryAuditLog
from memstrata.health import (
    EngineReadings,
    HealthMonitor,
    HealthReport,
    HealthSample,
    build_report,
)
from memstrata.health.sampler import L1_MEASURED_SESSIONS, l1_bytes
from memstrata.knowledge.hot import MergeReport
from memstrata.longterm.facade import LongTermStore
from memstrata.longterm.points import Filter
from memstrata.memory.store import MemoryStore
from memstrata.metrics import EngineMetrics
from memstrata.retrieval import Retriever
from memstrata.session import SessionRegistry, SessionState
from memstrata.upkeep.consolidate import ConsolidationReport, consolidate, restore
from memstrata.upkeep.forget import (
    ForgetReport,
    check_room_to_forget,
    deletion_record,
    forget_memories,
    forget_store_items,
    forget_user,
)
from memstrata.upkeep.jobs import ForgetJob, ForgetJobs, ForgetKind, PendingForgets, new_job_id
from memstrata.validation import check_id
from memstrata.working.memory import WorkingMemory

log = logging.getLogger("memstrata")


@dataclass(frozen=True, slots=True)
class ConsolidationResult:
    """What one consolidation pass did: the memories' report, and per tenant what the
    hot-knowledge merge expired and moved into ``knowledge``."""

    memories: ConsolidationReport
    hot_knowledge: Mapping[str, MergeReport]

    def __post_init__(self) -> None:
        frozen = dict(sorted(self.hot_knowledge.items()))
        object.__setattr__(self, "hot_knowledge", MappingProxyType(frozen))

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary: counts and ids per memory action, merges per tenant."""
        report = self.memories
        return {
            "memories": dict(report.counts),
            "memory_ids": {name: list(getattr(report, name)) for name in report.counts},
            "hot_knowledge": {
                tenant: {"merged": m.merged, "duplicates": m.duplicates, "expired": m.expired}
                for tenant, m in self.hot_knowledge.items()
            },
        }


@dataclass(frozen=True, slots=True)
class UpkeepParts:
    """What upkeep works on (built by :mod:`memstrata.wiring`)."""

    clock: Clock
    audit_file: Path
    audit: InMemoryAuditLog | None
    sanitizer: Sanitizer
    embedder: Embedder
    sessions: SessionRegistry
    working: WorkingMemory
    longterm: LongTermStore
    retriever: Retriever
    memory: MemoryStore
    queue_name: str
    health: HealthMonitor
    metrics: EngineMetrics


class Upkeep:
    """forget, consolidate, restore, health, metrics and audit."""

    def __init__(
        self,
        parts: UpkeepParts,
        *,
        flush: Callable[[], None],
        end_sessions_of: Callable[[str, str], list[SessionState]],
        items_under: Callable[[str, Sequence[str]], Filter],
        hot_tenants: Callable[[], frozenset[str]],
        merge_hot: Callable[..., MergeReport],
    ) -> None:
        self._parts = parts
        self._flush = flush
        self._end_sessions_of = end_sessions_of
        self._items_under = items_under
        self._hot_tenants = hot_tenants
        self._merge_hot = merge_hot
        self._pending = PendingForgets(parts.memory.redis, parts.memory.settings.redis_prefix)
        # A job that failed is answered with its error: it does not run again.
        self._jobs = ForgetJobs(parts.clock, on_finished=lambda job: self._pending.drop(job.id))

    # -- deletion ---------------------------------------------------------------------

    def start_forget(
        self,
        user_id: str | None = None,
        *,
        ids: Sequence[str] | None = None,
        store_namespace: Sequence[str] | None = None,
        tenant: str = "default",
    ) -> ForgetJob:
        """Start forgetting a user, chosen memories or an item-store namespace (exactly
        one) in the background; the job, queued (see :meth:`ContextEngine.start_forget`).
        Bad input and a disk without room for the rebuild are refused here, at once;
        the request is kept in Valkey before the job is answered (a restart runs it)."""
        check_id("tenant", tenant)
        given = [v is not None for v in (user_id, ids, store_namespace)]
        if sum(given) != 1:
            raise ValidationError("user_id", "give exactly one of user_id, ids and store_namespace")
        kind: ForgetKind
        request: dict[str, Any]
        if user_id is not None:
            kind, request = "user", {"user_id": check_id("user_id", user_id)}
        elif ids is not None:
            if isinstance(ids, str) or not ids:
                raise ValidationError("ids", "must be a non-empty sequence of memory ids")
            kind, request = "memories", {"ids": [str(i) for i in ids]}
        else:
            self._items_under(tenant, store_namespace or ())  # validates the prefix
            kind, request = "store_namespace", {"store_namespace": list(store_namespace or ())}
        check_room_to_forget(self._parts.longterm)
        job_id = new_job_id()
        self._pending.add(job_id, tenant, kind, request)
        return self._jobs.submit(
            tenant, kind, self._runner(job_id, tenant, kind, request), job_id=job_id
        )

    def resume_forgets(self) -> list[ForgetJob]:
        """Queue the forgets a previous engine over this Valkey started and did not
        finish deleting (under their job ids); the jobs."""
        resumed = []
        for job_id, tenant, kind, request in self._pending.pending():
            log.info("forget job %s of tenant %s: resumed", job_id, tenant)
            run = self._runner(job_id, tenant, kind, request)
            resumed.append(self._jobs.submit(tenant, kind, run, job_id=job_id))
        return resumed

    def _runner(
        self, job_id: str, tenant: str, kind: ForgetKind, request: Mapping[str, Any]
    ) -> Callable[[], ForgetReport]:
        def deleted() -> None:
            self._pending.drop(job_id)

        if kind == "user":
            user = str(request["user_id"])
            return lambda: self._forget_user(user, tenant, deleted)
        if kind == "memories":
            chosen = tuple(str(i) for i in request["ids"])
            return lambda: self._forget_memories(chosen, tenant, deleted)
        prefix = tuple(str(p) for p in request["store_namespace"])
        return lambda: self._forget_store(self._items_under(tenant, prefix), tenant, deleted)

    def forget_status(
        self, job_id: str, *, tenant: str = "default", timeout_s: float = 0.0
    ) -> ForgetJob:
        """The forget job ``job_id`` of ``tenant``, after waiting up to ``timeout_s``
        for it to finish; NotFoundError for an id ``tenant`` did not start."""
        return self._jobs.wait(job_id, check_id("tenant", tenant), timeout_s)

    def wait_forget(
        self, job_id: str, *, tenant: str = "default", timeout_s: float | None = None
    ) -> ForgetJob:
        """Like :meth:`forget_status`, but a failed job raises the error it failed with."""
        job = self._jobs.wait(job_id, check_id("tenant", tenant), timeout_s)
        failure = self._jobs.failure(job_id, tenant) if job.state == "failed" else None
        if failure is not None:
            raise failure
        return job

    def close(self) -> None:
        """Let a running forget job finish; queued ones fail, new ones are refused."""
        self._jobs.close()

    def forget(self, user_id: str, *, tenant: str = "default") -> ForgetReport:
        """Delete everything held of ``user_id`` in ``tenant``, everywhere (see
        :meth:`ContextEngine.forget`), as a job; returns when it is done."""
        return self._report(self.start_forget(user_id, tenant=tenant))

    def forget_memories(self, ids: Sequence[str], *, tenant: str = "default") -> ForgetReport:
        """Delete chosen memories of ``tenant`` everywhere (disk included), as a job."""
        return self._report(self.start_forget(ids=ids, tenant=tenant))

    def forget_store_namespace(
        self, namespace_prefix: Sequence[str], *, tenant: str = "default"
    ) -> ForgetReport:
        """Delete every item-store item under ``namespace_prefix`` of ``tenant``, as a job."""
        return self._report(self.start_forget(store_namespace=namespace_prefix, tenant=tenant))

    def _report(self, job: ForgetJob) -> ForgetReport:
        done = self.wait_forget(job.id, tenant=job.tenant)
        assert done.report is not None  # done: a failed job raised
        return done.report

    # The forgets themselves, run by the jobs' worker one at a time.

    def _forget_user(self, user_id: str, tenant: str, deleted: Callable[[], None]) -> ForgetReport:
        # Waits for the write queue first, so nothing queued for the user lands after.
        self._flush()
        ended = self._end_sessions_of(user_id, tenant)
        parts = self._parts
        report = forget_user(
            parts.longterm,
            parts.memory.redis,
            tenant,
            user_id,
            memory_prefix=parts.memory.settings.redis_prefix,
            queues=(parts.queue_name,),
            sessions=[state.session_id for state in ended],
            deleted=deleted,
        )
        report = replace(report, sessions_ended=len(ended))
        self._forgotten(report, user_id)
        return report

    def _forget_memories(
        self, ids: Sequence[str], tenant: str, deleted: Callable[[], None]
    ) -> ForgetReport:
        self._flush()
        memory = self._parts.memory
        # The reader's cached reads (in L2) may hold these texts: dropped before the
        # forget rewrites Valkey's files, not after (a user's own go with the user).
        self._parts.retriever.clear_caches()
        report = forget_memories(
            self._parts.longterm,
            memory.redis,
            tenant,
            ids,
            memory_prefix=memory.settings.redis_prefix,
            deleted=deleted,
        )
        self._forgotten(report, None)
        return report

    def _forget_store(
        self, where: Filter, tenant: str, deleted: Callable[[], None]
    ) -> ForgetReport:
        parts = self._parts
        report = forget_store_items(
            parts.longterm, parts.memory.redis, tenant, where, deleted=deleted
        )
        self._forgotten(report, None)
        return report

    def _forgotten(self, report: ForgetReport, user: str | None) -> None:
        parts = self._parts
        # Caches in this process keep texts too; the next reads rebuild them.
        parts.longterm.clear_caches()
        parts.retriever.clear_caches()
        parts.sanitizer.clear_cache()
        clear = getattr(parts.embedder, "clear", None)
        if callable(clear):
            clear()
        append_audit(parts.audit_file, deletion_record(report, parts.clock.now(), user=user))

    # -- consolidation ------------------------------------------------------------------

    def consolidate(
        self, *, tenants: Sequence[str] | None = None, now: datetime | None = None
    ) -> ConsolidationResult:
        """One consolidation pass (the daily job) over ``tenants`` (see
        :meth:`ContextEngine.consolidate`)."""
        if now is not None and (not isinstance(now, datetime) or now.tzinfo is None):
            raise ValidationError("now", "must be a timezone-aware datetime")
        if isinstance(tenants, str):
            raise ValidationError("tenants", "must be a sequence of tenants, not one string")
        memory = self._parts.memory
        at = now or self._parts.clock.now()
        report = consolidate(memory, at, tenants=tenants)
        if tenants is None:
            names = {*memory.slots.tenants(), "default", *self._hot_tenants()}
        else:
            names = {check_id("tenants", t) for t in tenants}
        merges = {t: self._merge_hot(t, now=at) for t in sorted(names)}
        return ConsolidationResult(memories=report, hot_knowledge=merges)

    def restore(self, ids: Sequence[str], *, tenant: str = "default") -> tuple[str, ...]:
        """Bring units back from cold storage; returns the ids restored."""
        if isinstance(ids, str):
            raise ValidationError("ids", "must be a sequence of ids, not one string")
        return restore(self._parts.memory, check_id("tenant", tenant), ids)

    # -- health, metrics, audit ------------------------------------------------------------

    def record_health_sample(self) -> HealthSample:
        """Take a health sample now (engine clock) and record it."""
        return self._parts.health.record(self._parts.clock.now(), self._readings())

    def health_tick(self) -> None:
        """A sample when one is due (a clock read otherwise); never fails the caller."""
        if not self._parts.health.claim_due():
            return
        try:
            self.record_health_sample()
        except MemstrataError:
            log.warning("health sample not recorded", exc_info=True)

    def health_report(self, *, since: timedelta = timedelta(days=7)) -> HealthReport:
        """The context health report over the last ``since``, from the recorded samples
        (14 days are read, for the week-over-week CER)."""
        if not isinstance(since, timedelta) or since <= timedelta(0):
            raise ValidationError("since", "must be a positive timedelta")
        now = self._parts.clock.now()
        span = max(since, timedelta(days=14)) + timedelta(hours=1)  # + each baseline
        return build_report(self._parts.health.log.window(now - span, now), now, since)

    def _readings(self) -> EngineReadings:
        parts = self._parts
        ids = parts.sessions.session_ids()
        states: list[SessionState] = []
        for sid in ids[:L1_MEASURED_SESSIONS]:
            with contextlib.suppress(NotFoundError):
                states.append(parts.sessions.get(sid))
        try:
            points = parts.longterm.point_counts()
        except BackendError:
            # L3 down: the sample still records L1, L2 and the breakers' state; the
            # growth chart shows a gap rather than the sample being lost.
            points = {}
        return EngineReadings(
            sessions=len(ids),
            l1_bytes=l1_bytes(states, len(ids)),
            stale_writes=parts.sessions.stale_writes,
            working=parts.working.info(),
            points=points,
            metrics=self.metrics(),
            points_shared=parts.longterm.index.shared,
        )

    def metrics(self) -> dict[str, list[dict[str, Any]]]:
        """The engine's metrics now, JSON-ready: ``{sample: [{"labels", "value"}]}``."""
        return self._parts.metrics.snapshot()

    def metrics_text(self) -> bytes:
        """The engine's metrics in the Prometheus text exposition format."""
        return self._parts.metrics.text()

    def metrics_registry(self) -> CollectorRegistry:
        """The Prometheus registry of this engine (not the process-global one)."""
        return self._parts.metrics.registry

    def audit_events(self) -> tuple[AuditEvent, ...]:
        """The redactions and maskings the gateway recorded in this process, oldest
        first (bounded: the oldest are dropped first)."""
        audit = self._parts.audit
        return audit.events() if audit is not None else ()


def append_audit(path: Path, record: Mapping[str, Any]) -> None:
    """One JSON line in the audit log (appends are atomic for lines this short)."""
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps(dict(record), sort_keys=True) + "\n")
