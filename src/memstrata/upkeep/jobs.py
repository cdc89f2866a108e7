"""Forget jobs: a forget runs in the background, addressed by a job id, per tenant.

A forget deletes at once but then rebuilds the embedded index's shards and rewrites
Valkey's append-only file, which takes long on a large data dir (docs/benchmarks.md,
"Forget"). :class:`ForgetJobs` runs forgets one at a time on one worker thread, in
the order they were started; the caller gets a :class:`ForgetJob` at once and asks
for it again by id (:meth:`ForgetJobs.get`, :meth:`ForgetJobs.wait`).

A started forget is durable: :class:`PendingForgets` writes it to Valkey (the
append-only file) before the job is answered, and drops it once its deletes are
done, before the files are rewritten (so the request, which names the user, leaves
Valkey's files with them). An engine that starts over the same Valkey runs the
forgets still pending, under their job ids. What the rebuild of a crashed process left
undone is finished or undone when the index opens; what a deleted point left on disk
then goes with the next forget. Job states and reports live in this process only:
the last :data:`KEPT_FINISHED` finished jobs are kept. A tenant sees only its own
jobs: any other id, another tenant's included, is "not found" alike.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

import orjson

from memstrata.clock import Clock
from memstrata.errors import BackendUnavailableError, NotFoundError, ValidationError
from memstrata.upkeep.forget import ForgetReport
from memstrata.validation import check_id
from memstrata.working.redis_errors import REDIS_FAILURES, redis_errors

log = logging.getLogger(__name__)

JobState = Literal["queued", "running", "done", "failed"]
ForgetKind = Literal["user", "memories", "store_namespace"]
KEPT_FINISHED = 1_000
"""Finished jobs kept for :meth:`ForgetJobs.get` (the oldest are dropped first)."""


@dataclass(frozen=True, slots=True)
class ForgetJob:
    """One forget as it stands: ``queued``, ``running``, ``done`` (with its
    ``report``) or ``failed`` (with the error's type and message)."""

    id: str
    tenant: str
    kind: ForgetKind
    """What it forgets: a ``user``, chosen ``memories``, or a ``store_namespace``."""
    state: JobState
    submitted_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    report: ForgetReport | None = None
    error_type: str | None = None
    error: str | None = None

    @property
    def job_id(self) -> str:
        """``id`` under the wire's name (``ForgetJobOut.job_id``), so one interface
        reads both (:class:`memstrata.interface.ForgetJobView`)."""
        return self.id

    @property
    def finished(self) -> bool:
        """Whether it is ``done`` or ``failed``."""
        return self.state in ("done", "failed")


class _Entry:
    """A job's mutable record, guarded by the registry's condition."""

    __slots__ = ("failure", "job", "run")

    def __init__(self, job: ForgetJob, run: Callable[[], ForgetReport]) -> None:
        self.job = job
        self.run: Callable[[], ForgetReport] | None = run
        self.failure: BaseException | None = None


class ForgetJobs:
    """The forget jobs of one engine, run one at a time on a daemon worker thread
    started with the first job."""

    def __init__(
        self,
        clock: Clock,
        *,
        kept: int = KEPT_FINISHED,
        on_finished: Callable[[ForgetJob], None] | None = None,
    ) -> None:
        self._clock = clock
        self._kept = kept
        self._on_finished = on_finished
        self._changed = threading.Condition()
        self._jobs: OrderedDict[str, _Entry] = OrderedDict()
        self._pending: deque[_Entry] = deque()
        self._finished: deque[str] = deque()
        self._worker: threading.Thread | None = None
        self._closed = False
        self._running = False

    def submit(
        self,
        tenant: str,
        kind: ForgetKind,
        run: Callable[[], ForgetReport],
        *,
        job_id: str | None = None,
    ) -> ForgetJob:
        """Queue ``run`` (the forget itself) as a job of ``tenant`` (under ``job_id``,
        else a new id); returns it queued."""
        job = ForgetJob(
            id=job_id or new_job_id(),
            tenant=check_id("tenant", tenant),
            kind=kind,
            state="queued",
            submitted_at=self._clock.now(),
        )
        entry = _Entry(job, run)
        with self._changed:
            if self._closed:
                raise BackendUnavailableError("the engine is closing: no forget can start")
            self._jobs[job.id] = entry
            self._pending.append(entry)
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(
                    target=self._work, name="memstrata-forget", daemon=True
                )
                self._worker.start()
            self._changed.notify_all()
        return job

    def get(self, job_id: str, tenant: str) -> ForgetJob:
        """The job ``job_id`` of ``tenant`` as it is now; NotFoundError when ``tenant``
        has no such job (another tenant's is not found either)."""
        with self._changed:
            return self._entry(job_id, tenant).job

    def wait(self, job_id: str, tenant: str, timeout_s: float | None) -> ForgetJob:
        """The job once it has finished, or as it is after ``timeout_s`` seconds
        (None: no limit)."""
        if timeout_s is not None and (
            isinstance(timeout_s, bool)
            or not isinstance(timeout_s, int | float)
            or not timeout_s >= 0
        ):
            raise ValidationError("timeout_s", "must be a number >= 0")
        with self._changed:
            entry = self._entry(job_id, tenant)
            self._changed.wait_for(lambda: entry.job.finished, timeout_s)
            return entry.job

    def failure(self, job_id: str, tenant: str) -> BaseException | None:
        """The exception a failed job raised (to raise it again to a waiting caller)."""
        with self._changed:
            return self._entry(job_id, tenant).failure

    def close(self) -> None:
        """Refuse new jobs, fail the queued ones (nothing of theirs was deleted yet)
        and wait for the running one to finish; idempotent."""
        with self._changed:
            self._closed = True
            while self._pending:
                entry = self._pending.popleft()
                entry.run = None
                closed = BackendUnavailableError(
                    "the engine closed first; the forget runs when an engine starts again"
                )
                self._record_end(entry, None, closed, pending=True)
            self._changed.notify_all()
            if threading.current_thread() is not self._worker:
                self._changed.wait_for(lambda: not self._running)

    def _entry(self, job_id: str, tenant: str) -> _Entry:
        entry = self._jobs.get(job_id) if isinstance(job_id, str) else None
        if entry is None or entry.job.tenant != tenant:
            raise NotFoundError(f"no forget job {job_id!r}")
        return entry

    def _work(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._pending) or self._closed)
                if not self._pending:
                    return  # closed
                entry = self._pending.popleft()
                entry.job = replace(entry.job, state="running", started_at=self._clock.now())
                run, entry.run = entry.run, None
                self._running = True
                self._changed.notify_all()
            assert run is not None
            report: ForgetReport | None = None
            failure: BaseException | None = None
            try:
                report = run()
            except BaseException as exc:  # a job's failure is its result, not the worker's
                failure = exc
            with self._changed:
                self._record_end(entry, report, failure)
                self._running = False
                self._changed.notify_all()

    def _record_end(
        self,
        entry: _Entry,
        report: ForgetReport | None,
        exc: BaseException | None,
        *,
        pending: bool = False,
    ) -> None:
        # The caller holds the condition. ``pending``: it never ran, and stays pending
        # for the next engine (no ``on_finished``).
        entry.failure = exc
        entry.job = replace(
            entry.job,
            state="done" if exc is None else "failed",
            finished_at=self._clock.now(),
            report=report,
            error_type=None if exc is None else type(exc).__name__,
            error=None if exc is None else str(exc),
        )
        self._finished.append(entry.job.id)
        while len(self._finished) > self._kept:
            self._jobs.pop(self._finished.popleft(), None)
        if self._on_finished is not None and not pending:
            self._on_finished(entry.job)


def new_job_id() -> str:
    """A fresh forget job id."""
    return uuid.uuid4().hex


class PendingForgets:
    """The forgets started and not yet deleted, kept in Valkey (one hash) so that a
    restart runs them: ``request`` is what :meth:`Upkeep.start_forget` was given."""

    def __init__(self, redis_client: Any, prefix: str) -> None:
        self._redis = redis_client
        self._key = f"{prefix}:forget:pending"

    def add(self, job_id: str, tenant: str, kind: ForgetKind, request: dict[str, Any]) -> None:
        """Keep the request; BackendError when Valkey does not take it (then no job
        may start: it would not survive a restart)."""
        record = orjson.dumps({"tenant": tenant, "kind": kind, "request": request})
        with redis_errors("forget: HSET pending"):
            self._redis.hset(self._key, job_id, record)

    def drop(self, job_id: str) -> None:
        """Forget the request once its deletes are done (best effort: a request left
        behind runs again, and a forget run twice deletes nothing more)."""
        try:
            self._redis.hdel(self._key, job_id)
        except REDIS_FAILURES as exc:
            log.warning("forget job %s: could not drop its pending request: %s", job_id, exc)

    def pending(self) -> list[tuple[str, str, ForgetKind, dict[str, Any]]]:
        """``(job id, tenant, kind, request)`` of every forget still pending, oldest
        request first as far as Valkey keeps order; [] when Valkey cannot be read
        (logged: they run at the next start that can)."""
        try:
            raw = self._redis.hgetall(self._key) or {}
        except REDIS_FAILURES as exc:
            log.warning("pending forgets could not be read: %s", exc)
            return []
        found: list[tuple[str, str, ForgetKind, dict[str, Any]]] = []
        for job_id, value in raw.items():
            key = job_id.decode() if isinstance(job_id, bytes) else str(job_id)
            try:
                record = orjson.loads(value)
                found.append((key, record["tenant"], record["kind"], record["request"]))
            except (orjson.JSONDecodeError, KeyError, TypeError) as exc:
                log.warning("pending forget %s is unreadable (%s): dropped", key, exc)
                self.drop(key)
        return found
