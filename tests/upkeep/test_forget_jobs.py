"""Forget jobs (issue 23, "What to build" 4): queued, running, done or failed, one at a
time, each tenant seeing only its own."""

from __future__ import annotations

import threading

import pytest
import redis.exceptions

from memstrata.clock import SystemClock
from memstrata.errors import (
    BackendError,
    BackendUnavailableError,
    DiskSpaceError,
    NotFoundError,
)
from memstrata.upkeep.forget import ForgetReport
from memstrata.upkeep.jobs import ForgetJobs, PendingForgets


def _report(tenant: str, points: int = 1) -> ForgetReport:
    return ForgetReport(tenant, points, 0, 0)


def test_a_job_is_queued_at_once_and_done_with_its_report() -> None:
    jobs = ForgetJobs(SystemClock())
    release = threading.Event()

    def run() -> ForgetReport:
        release.wait()
        return _report("acme", 3)

    job = jobs.submit("acme", "user", run)
    assert job.state == "queued" and job.report is None and not job.finished
    assert jobs.wait(job.id, "acme", 0).state in ("queued", "running")
    release.set()
    done = jobs.wait(job.id, "acme", None)
    assert done.state == "done" and done.finished
    assert done.report == _report("acme", 3)
    assert done.started_at is not None and done.finished_at is not None
    assert done.submitted_at <= done.started_at <= done.finished_at
    jobs.close()


def test_a_tenant_cannot_see_another_tenants_job() -> None:
    jobs = ForgetJobs(SystemClock())
    job = jobs.submit("acme", "user", lambda: _report("acme"))
    jobs.wait(job.id, "acme", None)
    with pytest.raises(NotFoundError) as foreign:
        jobs.get(job.id, "globex")
    with pytest.raises(NotFoundError) as unknown:
        jobs.get("0" * 32, "globex")
    # The same answer as for an id that was never issued: no oracle across tenants.
    assert str(foreign.value) == f"no forget job {job.id!r}"
    assert str(unknown.value) == f"no forget job {'0' * 32!r}"
    with pytest.raises(NotFoundError):
        jobs.wait(job.id, "globex", 0)
    jobs.close()


def test_a_failed_job_keeps_its_error_and_the_next_one_runs() -> None:
    jobs = ForgetJobs(SystemClock())

    def fail() -> ForgetReport:
        raise DiskSpaceError("qdrant-edge cannot rebuild", "/data", 10, 100)

    failed = jobs.submit("acme", "user", fail)
    after = jobs.submit("acme", "memories", lambda: _report("acme"))
    seen = jobs.wait(failed.id, "acme", None)
    assert seen.state == "failed" and seen.report is None
    assert seen.error_type == "DiskSpaceError" and seen.error
    assert isinstance(jobs.failure(failed.id, "acme"), DiskSpaceError)
    assert jobs.wait(after.id, "acme", None).state == "done"
    jobs.close()


def test_jobs_run_one_at_a_time_in_order() -> None:
    jobs = ForgetJobs(SystemClock())
    running = 0
    most = 0
    order: list[int] = []
    lock = threading.Lock()

    def run(n: int) -> ForgetReport:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        order.append(n)
        with lock:
            running -= 1
        return _report("acme", n)

    ids = [jobs.submit("acme", "user", lambda n=n: run(n)).id for n in range(5)]
    assert [jobs.wait(i, "acme", None).report for i in ids] == [
        _report("acme", n) for n in range(5)
    ]
    assert order == list(range(5)) and most == 1
    jobs.close()


def test_close_lets_the_running_job_finish_and_fails_the_queued() -> None:
    jobs = ForgetJobs(SystemClock())
    started, release = threading.Event(), threading.Event()

    def slow() -> ForgetReport:
        started.set()
        release.wait()
        return _report("acme")

    running = jobs.submit("acme", "user", slow)
    queued = jobs.submit("acme", "user", lambda: _report("acme"))
    started.wait()
    closer = threading.Thread(target=jobs.close)
    closer.start()
    release.set()
    closer.join()
    assert jobs.get(running.id, "acme").state == "done"
    assert jobs.get(queued.id, "acme").state == "failed"
    with pytest.raises(BackendUnavailableError):
        jobs.submit("acme", "user", lambda: _report("acme"))


def test_only_the_last_finished_jobs_are_kept() -> None:
    jobs = ForgetJobs(SystemClock(), kept=2)
    ids = [jobs.submit("acme", "user", lambda: _report("acme")).id for _ in range(3)]
    for job_id in ids[1:]:
        jobs.wait(job_id, "acme", None)
    with pytest.raises(NotFoundError):
        jobs.get(ids[0], "acme")
    assert jobs.get(ids[2], "acme").state == "done"
    jobs.close()


class _DeadValkey:
    """A Valkey that refuses every command, as a killed one does."""

    def _refuse(self, *args: object) -> None:
        raise redis.exceptions.ConnectionError("Connection refused")

    hset = hdel = hgetall = _refuse


def test_a_forget_valkey_cannot_keep_is_refused_with_a_typed_error() -> None:
    pending = PendingForgets(_DeadValkey(), "mv")
    with pytest.raises(BackendError) as refused:  # unavailable: 503, never a job id
        pending.add("job-1", "acme", "user", {"user_id": "bob"})
    assert "forget" in str(refused.value)
    assert pending.pending() == []  # read at start: logged, the start goes on
    pending.drop("job-1")  # best effort: the request runs again at most
