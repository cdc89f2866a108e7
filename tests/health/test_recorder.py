"""The health stream on the real embedded Valkey: bounded, read back by time window."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import redis
from tests.health.scripted import Script

from memstrata.errors import ConflictError, ValidationError
from memstrata.health import (
    DEFAULT_MAXLEN,
    HEALTH_STREAM,
    HealthRecorder,
    HealthSample,
    MemoryHealthLog,
    build_report,
)
from memstrata.health.recorder import HealthLog
from memstrata.working import EmbeddedValkey

T0 = datetime(2025, 1, 1, tzinfo=UTC)


@pytest.fixture
def client(embedded_valkey: EmbeddedValkey) -> Iterator[redis.Redis]:
    c = redis.Redis.from_url(embedded_valkey.url, decode_responses=True)
    yield c
    c.close()


def _key() -> str:
    return f"{{memstrata:health}}:test-{uuid.uuid4().hex}"


def _sample(minute: float, **values: float) -> HealthSample:
    return HealthSample(T0 + timedelta(minutes=minute), values or {"l2.keys": minute})


def test_default_key_and_bound() -> None:
    assert HEALTH_STREAM == "{memstrata:health}:samples"
    assert DEFAULT_MAXLEN == 14 * 24 * 60


def test_maxlen_is_honoured(client: redis.Redis) -> None:
    recorder = HealthRecorder(client, maxlen=50, key=_key())
    for minute in range(600):
        recorder.append(_sample(minute))
    # MAXLEN ~ trims whole stream nodes (100 entries by default): never below the
    # bound, never more than a node above it.
    assert 50 <= recorder.length() <= 150
    kept = recorder.window(T0, T0 + timedelta(days=1))
    assert len(kept) == recorder.length()
    assert kept[-1].values["l2.keys"] == 599  # the newest survive, in order
    assert [s.at for s in kept] == sorted(s.at for s in kept)


def test_window_is_inclusive_and_pages(client: redis.Redis) -> None:
    recorder = HealthRecorder(client, key=_key())
    for minute in range(2_500):  # more than one XRANGE page
        recorder.append(_sample(minute))
    got = recorder.window(T0 + timedelta(minutes=10), T0 + timedelta(minutes=2_200))
    assert [s.values["l2.keys"] for s in got] == [float(m) for m in range(10, 2_201)]
    assert recorder.window(T0 - timedelta(days=1), T0 - timedelta(hours=1)) == []
    assert len(recorder.window(T0, T0 + timedelta(days=30))) == 2_500
    with pytest.raises(ValidationError):
        recorder.window(T0 + timedelta(minutes=1), T0)


def test_samples_in_the_same_ms_are_all_kept_but_older_ones_are_refused(
    client: redis.Redis,
) -> None:
    recorder = HealthRecorder(client, key=_key())
    recorder.append(_sample(5))
    recorder.append(_sample(5, fallbacks=1))
    with pytest.raises(ConflictError):
        recorder.append(_sample(4))
    assert len(recorder.window(T0, T0 + timedelta(hours=1))) == 2


def test_memory_log_behaves_alike() -> None:
    log: HealthLog = MemoryHealthLog(maxlen=50)
    for minute in range(600):
        log.append(_sample(minute))
    got = log.window(T0, T0 + timedelta(days=1))
    assert len(got) == 50 and got[-1].values["l2.keys"] == 599
    assert [
        s.values["l2.keys"]
        for s in log.window(T0 + timedelta(minutes=590), T0 + timedelta(minutes=592))
    ] == [590, 591, 592]
    with pytest.raises(ConflictError):
        log.append(_sample(3))


def test_bad_maxlen() -> None:
    with pytest.raises(ValidationError):
        MemoryHealthLog(maxlen=0)


def test_fourteen_days_round_trip(client: redis.Redis, script: Script) -> None:
    """The scripted 14 days through Valkey give the report built in memory."""
    recorder = HealthRecorder(client, key=_key())
    started = time.perf_counter()
    pipe_free = [recorder.append(sample) for sample in script.samples]
    written_s = time.perf_counter() - started
    assert len(pipe_free) == len(script.samples)
    # The default bound keeps 14 days (one sample a minute, plus the restart's baseline).
    assert recorder.length() >= DEFAULT_MAXLEN
    started = time.perf_counter()
    read = recorder.window(script.now - timedelta(days=14, hours=1), script.now)
    read_s = time.perf_counter() - started
    assert read[-1] == script.samples[-1]
    week = timedelta(days=7)
    assert build_report(read, script.now, week) == build_report(
        script.samples[-len(read) :], script.now, week
    )
    print(f"\n{len(script.samples)} samples: written in {written_s:.2f} s, read in {read_s:.2f} s")
