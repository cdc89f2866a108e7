"""Issue 23's "Why" cases 1, 2 and 4, as a new user and a hostile tester met them:
a full disk killed the server (SIGBUS at start on 64 MiB, and under load on 512 MiB,
reads failing on the audit stream meanwhile), a write was lost yet answered 200, and
a dead Valkey went unnoticed (``/healthz`` 200, never restarted, orphaned by SIGTERM)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.faults.support import (
    TENANT,
    Ballast,
    DropMidWrite,
    FakeDisk,
    Ledger,
    Load,
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
    valkey_pid_of,
    valkey_refuses_writes,
    wait_serving,
    wait_until,
)
from tests.service.support import free_port

from memstrata.config import PipelineSettings, Settings
from memstrata.errors import DiskSpaceError
from memstrata.longterm.points import MEMORIES
from memstrata.testing.embedders import HashEmbedder
from memstrata.wiring import build_stack
from memstrata.working.embedded import socket_path_for

# -- 1. a full disk kills the server ---------------------------------------------------


@pytest.mark.slow
def test_a_64_mib_volume_is_refused_at_start_and_leaves_no_valkey(
    disk_mode: str, volume: Path, tmp_path: Path
) -> None:
    """Was: SIGBUS at start (an empty data dir takes ~202 MB) and an orphaned Valkey."""
    if disk_mode == "injected":
        data = tmp_path / "data"
        with pytest.raises(DiskSpaceError) as refused:
            build_stack(
                Settings(data_dir=data),
                embedder=HashEmbedder(64),
                disk=small_policy(FakeDisk(free_mib=64)),
            )
        message = str(refused.value)
        assert message.startswith("cannot start: 64 MiB free on ")
        assert "need 448 MiB" in message and "docs/service.md" in message
        assert not (data / "qdrant").exists()  # nothing allocated
        assert valkey_pid_of(data) is None and not socket_path_for(data / "valkey").exists()
        return
    with tmpfs(volume, 64):
        data = volume / "data"
        log = tmp_path / "serve.log"
        try:
            command = [
                sys.executable, "-m", "memstrata.cli", "serve", "--data-dir", str(data),
                "--port", str(free_port()), "--grpc-port", str(free_port()),
            ]  # fmt: skip
            done = subprocess.run(command, capture_output=True, text=True, timeout=120)
            log.write_text(done.stdout + done.stderr)
            assert done.returncode == 9, f"serve ended with {done.returncode}: {done.stderr}"
            assert "cannot start: 64 MiB free on" in done.stderr
            assert "need 448 MiB" in done.stderr
            pid = valkey_pid_of(data)
            assert pid is None or not pid_alive(pid), "serve left its Valkey running"
        finally:
            kill_orphan_valkey(data)


@pytest.mark.slow
def test_a_disk_filled_under_load_turns_serve_read_only_and_it_recovers_by_itself(
    mountable: bool, tmp_path: Path
) -> None:
    """Was, on a 512 MiB volume: writes 502 (MISCONF), reads failing too (the audit
    stream), then SIGBUS while the worker wrote to L3. A real ``memstrata serve`` on a
    real tmpfs (the in-process ``[injected]`` fault case covers machines without one)."""
    if not mountable:
        pytest.skip("mounting a tmpfs is not permitted here (see test_fault_suite [injected])")
    with tmpfs(tmp_path / "volume", 640) as volume:
        data = volume / "data"
        env = {"MEMSTRATA_SETTINGS": str(serve_settings(tmp_path / "settings.json"))}
        key = offline_key(data, env)
        serve = start_serve(data, tmp_path / "serve.log", env)
        ballast = Ballast(volume / "ballast")
        headers = {"Authorization": f"Bearer {key}"}
        try:
            wait_serving(serve)
            with httpx.Client(base_url=serve.url, headers=headers, timeout=60) as http:

                def remember(user: str, text: str) -> Any:
                    return http.post("/v1/remember", json={"user_id": user, "text": text})

                ledger = Ledger()
                with Load(remember, ledger):
                    wait_until(lambda: len(ledger.acked) >= 20, 60, "20 acknowledged writes")
                    ballast.leave_free(20)  # below the floor: no write may reach L3
                    wait_until(lambda: ledger.answers.get(503, 0) >= 5, 30, "refused writes")
                    refused = http.post("/v1/remember", json={"user_id": "u9", "text": "x y"})
                    assert refused.status_code == 503, refused.text
                    error = refused.json()["error"]
                    assert error["type"] == "ReadOnlyError"
                    assert error["message"].startswith("read-only: ")
                    assert (
                        " MiB free on " in error["message"] and "need 128 MiB" in error["message"]
                    )
                    assert refused.headers["Retry-After"] == "30"
                    wait_until(  # (health answers are cached half a second)
                        lambda: http.get("/healthz").json()["status"] == "read_only", 10, "health"
                    )
                    assert http.get("/healthz").status_code == 503
                    assert http.get("/healthz?reads=1").status_code == 200
                    ballast.leave_free(0)  # Valkey's append-only file cannot grow either
                    for _ in range(3):
                        found = http.post("/v1/retrieve", json={"user_id": "u0", "query": "note"})
                        assert found.status_code == 200, found.text  # reads go on
                    assert serve.process.poll() is None, serve.output()
                    ballast.remove()
                    wait_until(
                        lambda: remember("u9", "Space is back.").status_code == 200,
                        60,
                        "writes to resume by themselves",
                    )
                    acked_before_drain = len(ledger.acked)
                    wait_until(
                        lambda: len(ledger.acked) > acked_before_drain + 5, 60, "more writes"
                    )
                drained = remember("u9", "The last one.")  # then wait for the queue
                assert drained.status_code == 200
                flushed = http.post(
                    "/v1/remember", json={"user_id": "u9", "text": "Flush.", "wait": True}
                )
                assert flushed.status_code == 200, flushed.text
            assert serve.process.poll() is None, serve.output()
            assert ledger.unkept_200s == []
            assert set(ledger.answers) <= {200, 503}, ledger.answers
            assert stop_serve(serve) == 0, serve.output()
            read, index = index_reader(data)
            try:
                missing = missing_from_index(read, ledger.acked)
                ledger.report("disk filled under load, serve on a 640 MiB tmpfs", missing)
                assert missing == []
            finally:
                index.close()
        finally:
            stop_serve(serve, signal.SIGKILL)
            kill_orphan_valkey(data)
            ballast.remove()


# -- 2. a write lost, answered 200 ---------------------------------------------------------

NINETY_NINE_KB = " ".join(
    f"Paragraph {i}: the fleet report for pack {i} lists cell voltages, temperatures "
    f"and the state of charge measured on day {i % 28 + 1}." + ("\n\n" if i % 6 == 5 else "")
    for i in range(808)
)


def test_a_write_that_could_not_be_queued_whole_is_an_error_and_nothing_of_it_is_kept(
    tmp_path: Path,
) -> None:
    """Was: a 99 KB remember (7 chunks) on a failing Valkey answered 200 with 7
    episode ids, ``queued: false``; 4 chunks were queued and 3 never stored. Here the
    connection breaks after the third chunk has reached the server."""
    assert 95_000 < len(NINETY_NINE_KB) < 105_000
    pipeline = PipelineSettings(block_ms=50, claim_idle_ms=500, max_turn_chars=16_000)
    with served(tmp_path / "data", pipeline=pipeline) as app:
        redis = app.engine.parts.working_backend.client
        stream = app.engine.parts.pipeline.queue.keys.stream
        before = int(redis.xlen(stream))
        with DropMidWrite(stream, after=3) as fault:
            broken = app.remember("u1", NINETY_NINE_KB)
        assert fault.drops >= 1
        assert broken.status_code == 503, f"a write not kept was answered: {broken.text}"
        error = broken.json()["error"]
        assert error["type"] == "WriteNotQueuedError" and error["code"] == "unavailable"
        assert error["message"].startswith("the write was not queued (7 chunks)")
        assert "nothing of it was kept" in error["message"]
        assert broken.headers["Retry-After"] == "1"
        assert int(redis.xlen(stream)) == before, "the broken write left chunks queued"
        # Sent again once the connection holds, it is kept whole.
        again = app.remember("u1", NINETY_NINE_KB)
        assert again.status_code == 200 and again.json()["queued"] is True
        assert len(again.json()["episode_ids"]) == 7
        app.engine.flush()
        stored = app.engine.parts.longterm.iter_records(MEMORIES, _episodes_of("u1"))
        assert len(list(stored)) == 7


def _episodes_of(user: str) -> Any:
    from memstrata.longterm.points import Filter

    return Filter(tenant=TENANT, user=user, types=("episode",))


# -- 4. dead Valkey unnoticed ------------------------------------------------------------


def test_a_dead_valkey_is_reported_and_restarted_from_its_append_only_file(
    tmp_path: Path,
) -> None:
    """Was: after the embedded Valkey was killed, ``/healthz`` kept answering 200 and
    Valkey was never restarted; an operator had to restart the service."""
    data = tmp_path / "data"
    with served(data) as app:
        assert app.healthz().status_code == 200
        kept = app.remember("u1", "I live in Lyon and I am allergic to kiwi.")
        assert kept.status_code == 200
        app.engine.flush()
        pid = valkey_pid_of(data)
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)  # hung first: no answer, yet its process is there
        try:
            # (health answers are cached half a second)
            wait_until(lambda: app.healthz().status_code == 503, 10, "health to see it")
            assert app.healthz().json()["checks"]["valkey"]["status"] == "down"
        finally:
            os.kill(pid, signal.SIGKILL)
        wait_until(lambda: app.healthz().status_code == 200, 30, "Valkey to be restarted")
        assert valkey_pid_of(data) not in (None, pid)
        health = app.healthz().json()
        assert health["checks"]["valkey"] == {"status": "ok", "detail": "answers", "restarts": 1}
        # What was acknowledged before the kill is there, and writes work again.
        assert app.engine.parts.pipeline.queue.stats().dead_lettered == 0
        wait_until(
            lambda: app.remember("u1", "I moved to Lille.").status_code == 200,
            30,
            "writes after the restart",
        )
        app.engine.flush()
        texts = sorted(
            r.payload["text"]
            for r in app.engine.parts.longterm.iter_records(MEMORIES, _episodes_of("u1"))
        )
        assert texts == ["I live in Lyon and I am allergic to kiwi.", "I moved to Lille."]
        found = app.post("retrieve", {"user_id": "u1", "query": "where do I live"})
        assert found.status_code == 200


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_sigterm_and_sigint_stop_serve_the_same_clean_way(sig: int, tmp_path: Path) -> None:
    """Was: SIGTERM to ``serve`` left its Valkey child running (SIGINT cleaned up)."""
    data = tmp_path / "data"
    serve = start_serve(data, tmp_path / "serve.log", {})
    try:
        wait_serving(serve)
        pid = serve.valkey_pid()
        assert pid is not None and pid_alive(pid)
        assert stop_serve(serve, sig) == 0, serve.output()
        assert not pid_alive(pid), f"serve left its Valkey ({pid}) running after {sig!r}"
    finally:
        stop_serve(serve, signal.SIGKILL)
        kill_orphan_valkey(data)


def test_reads_are_served_while_valkey_refuses_writes(tmp_path: Path) -> None:
    """Was: reads failed too on a full disk, since checking a key appended to the
    audit stream (and bumped a rate counter) in the Valkey that refused writes."""
    with served(tmp_path / "data") as app:
        assert app.remember("u1", "I live in Lyon.").status_code == 200
        app.engine.flush()
        redis = app.engine.parts.working_backend.client
        valkey_refuses_writes(redis, True)
        try:
            for _ in range(3):
                found = app.post("retrieve", {"user_id": "u1", "query": "where do I live"})
                assert found.status_code == 200, found.text
                answer = found.json()
                said = [i["text"] for i in answer["items"] + answer["below_threshold"]]
                assert any("Lyon" in text for text in said), answer
            refused = app.remember("u1", "I moved to Lille.")
            assert refused.status_code == 503
            assert refused.json()["error"]["type"] == "WriteNotQueuedError"
        finally:
            valkey_refuses_writes(redis, False)
        assert app.running.keys.audit_failures >= 3  # each read's entry, counted
        metrics = app.client.get("/metrics").text
        assert "memstrata_auth_audit_failures_total" in metrics
        assert "memstrata_writes_refused_total" in metrics
