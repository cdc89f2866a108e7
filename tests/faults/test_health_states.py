"""``/healthz`` says what works (issue 31, "Why" case 6): with the data volume full,
Valkey refuses writes (and PING) with MISCONF but still answers reads, so the node
is ``read_only``, not ``down``, and ``/healthz?reads=1`` keeps it in a read pool
while ``retrieve`` answers. Run on a real tmpfs where mounting is permitted, and with
an injected free-space probe and injected write refusals everywhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.faults.support import (
    Ballast,
    FakeDisk,
    Served,
    served,
    small_policy,
    tmpfs,
    valkey_refuses_writes,
    wait_until,
)


@pytest.fixture
def full_volume(disk_mode: str, volume: Path) -> Iterator[Path]:
    if disk_mode == "injected":
        volume.mkdir(parents=True)
        yield volume
        return
    with tmpfs(volume, 640):
        yield volume


def _found(app: Served, user: str) -> list[str]:
    reply = app.call("retrieve", {"user_id": user, "query": "where do I live"})
    assert reply.status_code == 200, reply.body
    return [i["text"] for i in reply.body["items"] + reply.body["below_threshold"]]


def test_a_full_volume_is_read_only_not_down_and_reads_stay_in_the_pool(
    disk_mode: str, full_volume: Path
) -> None:
    fake = FakeDisk()
    ballast = Ballast(full_volume / "ballast")
    policy = small_policy(fake) if disk_mode == "injected" else None
    with served(full_volume / "data", disk=policy) as app:
        assert app.remember_here("u1", "I live in Lyon.").status_code == 200
        app.engine.flush()
        redis = app.engine.parts.working_backend.client
        if disk_mode == "injected":
            fake.set_free_mib(0)
            valkey_refuses_writes(redis, True)
        else:
            ballast.leave_free(0)
        try:
            # A write makes Valkey try its append-only file (and fail: MISCONF).
            assert app.remember_here("u1", "I moved to Lille.").status_code == 503
            assert any("Lyon" in text for text in _found(app, "u1"))
            wait_until(
                lambda: (
                    app.healthz().json()["checks"]["valkey"]["status"]
                    == ("read_only" if disk_mode == "tmpfs" else "ok")
                ),
                10,
                "Valkey to refuse writes",
            )
            health = app.healthz()
            assert health.json()["status"] == "read_only", health.json()
            assert health.status_code == 503  # not a node for writes
            if disk_mode == "tmpfs":  # the real thing: PING refused, reads answered
                assert "MISCONF" in health.json()["checks"]["valkey"]["detail"]
            reads = app.healthz(reads=True)
            assert reads.status_code == 200, reads.json()
            assert any("Lyon" in text for text in _found(app, "u1"))  # and they are served
        finally:
            if disk_mode == "injected":
                valkey_refuses_writes(redis, False)
                fake.set_free_mib(100_000)
            else:
                ballast.remove()
        wait_until(lambda: app.healthz().status_code == 200, 60, "healthy again")
