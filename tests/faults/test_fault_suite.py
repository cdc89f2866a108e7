"""The fault suite (issue 23, "What to build" 6): each case runs a fault under load and
then asserts that every write a client was told succeeded (200, ``queued: true``) is
in long-term memory afterwards, that no write was answered 200 without being kept,
and that the process lived through it. Cases: SIGKILL of ``serve`` and of its Valkey
under load, the disk full during ingest and during forget (a real tmpfs where
mounting is permitted, else an injected free-space probe and injected write
refusals), the long-term store unreachable, a slow embedder."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from numpy.typing import NDArray
from tests.faults.support import (
    TENANT,
    Ballast,
    FakeDisk,
    Ledger,
    Load,
    Served,
    index_reader,
    kill_orphan_valkey,
    missing_from_index,
    offline_key,
    pid_alive,
    serve_settings,
    served,
    small_policy,
    start_serve,
    stop_serve,
    tmpfs,
    valkey_refuses_writes,
    wait_serving,
    wait_until,
)

from memstrata.disk import DiskPolicy
from memstrata.errors import BackendUnavailableError
from memstrata.longterm.points import MEMORIES, Filter
from memstrata.testing.embedders import HashEmbedder


def _drained(app: Served) -> None:
    app.engine.flush(timeout_s=120)
    stats = app.engine.parts.pipeline.queue.stats()
    assert (stats.pending, stats.lag, stats.dead_lettered) == (0, 0, 0), stats


def _kept(ledger: Ledger, app: Served, case: str) -> None:
    assert ledger.unkept_200s == [], ledger.unkept_200s[:3]
    assert len(ledger.acked) >= 20, ledger.answers
    missing = ledger.missing_from(app.engine)
    ledger.report(case, missing)
    assert missing == []


# -- SIGKILL ---------------------------------------------------------------------------


@pytest.mark.slow
def test_sigkill_of_serve_under_load_loses_no_acknowledged_write(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {"MEMSTRATA_SETTINGS": str(serve_settings(tmp_path / "settings.json"))}
    key = offline_key(data, env)
    headers = {"Authorization": f"Bearer {key}"}
    ledger = Ledger()
    first = start_serve(data, tmp_path / "first.log", env)
    second = None
    try:
        wait_serving(first)
        with httpx.Client(base_url=first.url, headers=headers, timeout=30) as http:

            def remember(user: str, text: str) -> Any:
                return http.post("/v1/remember", json={"user_id": user, "text": text})

            with Load(remember, ledger):
                wait_until(lambda: len(ledger.acked) >= 60, 60, "60 acknowledged writes")
                first.process.send_signal(signal.SIGKILL)
                assert first.process.wait(30) == -signal.SIGKILL
        orphan = first.valkey_pid()
        assert orphan is not None and pid_alive(orphan)  # the next start adopts it
        second = start_serve(data, tmp_path / "second.log", env)
        wait_serving(second)
        with httpx.Client(base_url=second.url, headers=headers, timeout=120) as http:
            body = {"user_id": "u0", "text": "After the restart.", "wait": True}
            flushed = http.post("/v1/remember", json=body)  # waits for the whole queue
            assert flushed.status_code == 200, flushed.text
            health = http.get("/healthz").json()
            assert health["checks"]["write_queue"]["dead_lettered"] == 0, health
        assert stop_serve(second) == 0, second.output()
        assert not pid_alive(orphan)
        read, index = index_reader(data)
        try:
            assert ledger.unkept_200s == []
            missing = missing_from_index(read, ledger.acked)
            ledger.report("SIGKILL of serve", missing)
            assert missing == []
        finally:
            index.close()
    finally:
        for serve in (first, second):
            if serve is not None:
                stop_serve(serve, signal.SIGKILL)
        kill_orphan_valkey(data)


def test_sigkill_of_valkey_under_load_loses_no_acknowledged_write(tmp_path: Path) -> None:
    ledger = Ledger()
    with served(tmp_path / "data") as app:
        valkey = app.engine.parts.valkey
        assert valkey is not None and valkey.pid is not None
        with Load(app.remember_here, ledger):
            wait_until(lambda: len(ledger.acked) >= 50, 60, "50 acknowledged writes")
            os.kill(valkey.pid, signal.SIGKILL)
            wait_until(lambda: valkey.restarts == 1, 30, "the supervisor to restart Valkey")
            after = len(ledger.acked)
            wait_until(lambda: len(ledger.acked) >= after + 50, 60, "50 more after the restart")
        _drained(app)
        wait_until(lambda: app.healthz().status_code == 200, 10, "healthy again")
    # Writes while Valkey was down were refused (503), never answered 200.
    assert set(ledger.answers) <= {200, 503}, (ledger.answers, ledger.bodies[:3])
    with served(tmp_path / "data") as app:
        _kept(ledger, app, "SIGKILL of Valkey")


# -- a full disk --------------------------------------------------------------------------


class Disk:
    """Fills and frees the data directory's disk: a real tmpfs and ballast file, or an
    injected probe with Valkey refusing writes as it does on a full disk (MISCONF)."""

    def __init__(self, mode: str, volume: Path) -> None:
        self.mode = mode
        self.fake = FakeDisk()
        self.ballast = Ballast(volume / "ballast")
        self.redis: Any = None

    def policy(self) -> DiskPolicy | None:
        return small_policy(self.fake) if self.mode == "injected" else None

    def leave_free(self, mib: int) -> None:
        if self.mode == "injected":
            self.fake.set_free_mib(mib)
            if self.redis is not None:
                valkey_refuses_writes(self.redis, mib == 0)
        else:
            self.ballast.leave_free(mib)

    def free_all(self) -> None:
        if self.mode == "injected":
            self.leave_free(100_000)
        else:
            self.ballast.remove()


@pytest.fixture
def disk(disk_mode: str, volume: Path) -> Iterator[Disk]:
    if disk_mode == "injected":
        volume.mkdir(parents=True)
        yield Disk(disk_mode, volume)
        return
    with tmpfs(volume, 640):
        yield Disk(disk_mode, volume)


def _refused_read_only(app: Served, operation: str, body: dict[str, Any], key: str) -> None:
    reply = app.call(operation, body, key=key)
    assert reply.status_code == 503, reply.body
    error = reply.body["error"]
    assert error["type"] == "ReadOnlyError" and error["message"].startswith("read-only: ")
    assert "need 128 MiB" in error["message"]


def _reads_work(app: Served, user: str) -> None:
    for _ in range(3):
        found = app.call("retrieve", {"user_id": user, "query": "load note"})
        assert found.status_code == 200, found.body


def test_disk_full_during_ingest_refuses_writes_serves_reads_and_recovers(
    disk: Disk, volume: Path
) -> None:
    ledger = Ledger()
    with served(volume / "data", disk=disk.policy()) as app:
        disk.redis = app.engine.parts.working_backend.client
        with Load(app.remember_here, ledger):
            wait_until(lambda: len(ledger.acked) >= 30, 60, "30 acknowledged writes")
            disk.leave_free(20)  # below the floor: nothing may reach the collections
            wait_until(lambda: ledger.answers.get(503, 0) >= 10, 30, "refused writes")
            _refused_read_only(app, "remember", {"user_id": "u0", "text": "more"}, app.key)
            _reads_work(app, "u0")
            wait_until(lambda: app.healthz().json()["status"] == "read_only", 10, "read_only")
            assert app.healthz().status_code == 503
            assert app.healthz(reads=True).status_code == 200
            disk.leave_free(0)  # and Valkey cannot write its append-only file either
            _reads_work(app, "u1")
            disk.free_all()
            wait_until(
                lambda: app.remember_here("u9", "Space is back.").status_code == 200,
                60,
                "writes to resume by themselves",
            )
            after = len(ledger.acked)
            wait_until(lambda: len(ledger.acked) >= after + 20, 60, "20 more writes")
        _drained(app)
        wait_until(lambda: app.healthz().status_code == 200, 10, "healthy again")
        assert set(ledger.answers) <= {200, 503}, (ledger.answers, ledger.bodies[:3])
        _kept(ledger, app, f"disk full during ingest [{disk.mode}]")
        assert app.engine.parts.disk is not None and app.engine.parts.disk.transitions >= 1


def _stored_of(app: Served, user: str) -> list[str]:
    flt = Filter(tenant=TENANT, user=user, types=("episode",))
    return sorted(
        str(r.payload["text"]) for r in app.engine.parts.longterm.iter_records(MEMORIES, flt)
    )


def test_disk_full_during_forget_deletes_nothing_until_it_can_finish(
    disk: Disk, volume: Path
) -> None:
    ledger = Ledger()
    with served(volume / "data", disk=disk.policy()) as app:
        disk.redis = app.engine.parts.working_backend.client
        for n in range(30):
            for user in ("ua", "ub"):
                text = f"Note {n} of {user}: the battery pack {n} passed its check."
                reply = app.remember_here(user, text)
                ledger.record(user, text, reply.status_code, reply.body)
        _drained(app)
        forget = {"user_id": "ua", "wait": True}
        # Room to write, not to rebuild a collection beside itself: refused up front.
        disk.leave_free(140)
        refused = app.call("forget", forget, key=app.admin)
        assert refused.status_code == 503, refused.body
        error = refused.body["error"]
        assert error["type"] == "DiskSpaceError", error
        assert error["message"].startswith("qdrant-edge cannot rebuild: ")
        assert ledger.missing_from(app.engine) == []  # nothing of ua deleted
        # Read-only: refused before it runs, reads go on.
        disk.leave_free(20)
        _refused_read_only(app, "forget", forget, app.admin)
        _reads_work(app, "ua")
        assert ledger.missing_from(app.engine) == []
        disk.free_all()
        done = app.call("forget", forget, key=app.admin)
        assert done.status_code == 200, done.body
        assert done.body["report"]["points_deleted"] >= 30
        assert _stored_of(app, "ua") == []
        kept_b = [(u, t, ids) for u, t, ids in ledger.acked if u == "ub"]
        assert len(kept_b) == 30
        assert (
            missing_from_index(
                lambda ids: {
                    r.id: str(r.payload.get("text", ""))
                    for r in app.engine.parts.longterm.get(MEMORIES, ids, tenant=TENANT)
                },
                kept_b,
            )
            == []
        )
        assert ledger.unkept_200s == []


# -- the long-term store unreachable, a slow embedder -----------------------------------

_L3_CALLS = (
    "upsert", "retrieve", "scroll", "search_dense", "search_sparse", "search_fused",
    "count", "point_count", "delete", "delete_where",
)  # fmt: skip


@pytest.mark.slow
def test_an_unreachable_long_term_store_pauses_consumers_and_loses_nothing(
    tmp_path: Path,
) -> None:
    """Longer than ``max_deliveries`` x ``claim_idle_ms``: without the pause every entry
    taken during the outage would end in the dead-letter stream."""
    ledger = Ledger()
    with served(tmp_path / "data") as app:
        index: Any = app.engine.parts.longterm.index
        down = {"now": False}

        def unreachable(name: str) -> Any:
            real = getattr(index, name)

            def call(*args: Any, **kwargs: Any) -> Any:
                if down["now"]:
                    raise BackendUnavailableError(f"L3 {name}: connection refused (injected)")
                return real(*args, **kwargs)

            return call

        with Load(app.remember_here, ledger):
            wait_until(lambda: len(ledger.acked) >= 30, 60, "30 acknowledged writes")
            for name in _L3_CALLS:
                setattr(index, name, unreachable(name))
            down["now"] = True
            outage_start = len(ledger.acked)
            wait_until(lambda: len(ledger.acked) >= outage_start + 40, 60, "writes in the outage")
            outage = app.engine.parts.outage
            assert outage is not None
            wait_until(lambda: outage.paused, 30, "the consumers to pause")
            wait_until(
                lambda: app.healthz().json()["checks"]["l3"]["status"] == "degraded",
                10,
                "l3 degraded",
            )
            health = app.healthz().json()
            # Degraded, not down: reads go on from L2 and L1, writes are queued.
            assert health["status"] == "degraded", health
            assert app.healthz(reads=True).status_code == 200, health
            assert health["checks"]["write_queue"]["status"] == "degraded", health
            time.sleep(3 * 0.5 * 3)  # three times max_deliveries x claim_idle_ms: an outage
            assert outage.paused
            down["now"] = False
            after = len(ledger.acked)
            wait_until(lambda: len(ledger.acked) >= after + 20, 60, "20 more writes")
        for name in _L3_CALLS:
            delattr(index, name)
        _drained(app)
        assert ledger.answers.get(200, 0) == len(ledger.acked)  # the queue took them all
        _kept(ledger, app, "L3 unreachable")


class SlowEmbedder:
    """TEST DOUBLE: the hash embedder, 50 ms per call (a remote model under load)."""

    name = "slow-hash"

    def __init__(self) -> None:
        self._inner = HashEmbedder(64)
        self.dim = self._inner.dim

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        time.sleep(0.05)
        return self._inner.embed(texts)


def test_a_slow_embedder_delays_memory_but_loses_no_acknowledged_write(tmp_path: Path) -> None:
    ledger = Ledger()
    with served(tmp_path / "data", embedder=SlowEmbedder()) as app:
        with Load(app.remember_here, ledger, threads=4):
            wait_until(lambda: len(ledger.acked) >= 200, 120, "200 acknowledged writes")
        _reads_work(app, "u0")
        _drained(app)
        assert set(ledger.answers) == {200}, ledger.answers
        _kept(ledger, app, "slow embedder")
