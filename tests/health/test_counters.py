"""The bounded counters, key families, and the registry's stale-write count."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest

from memstrata.clock import FakeClock
from memstrata.errors import ValidationError
from memstrata.health import BoundedCounter, HealthSample, key_family
from memstrata.health.counters import OTHER, top
from memstrata.session import SessionRegistry, SessionState
from memstrata.working import keys as K


@pytest.mark.parametrize(
    ("key", "family"),
    [
        (K.result_key("s_1", "step5"), "wm:*:result:step5"),
        (K.api_key("s_1", "https://x/y", {"a": 1}), "wm:*:api:*"),
        (K.series_key("s_2", "vibration"), "wm:*:ts:vibration"),
        (K.pending_key("s_2"), "wm:*:pending_tasks"),
        (K.plan_key("s_2"), "wm:*:plan"),
        (K.pref_key("acme", "u@example.com", "ui_color"), "pref:*:ui_color"),
        ("no-tag-here", OTHER),
    ],
)
def test_key_family(key: str, family: str) -> None:
    assert key_family(key) == family


def test_bounded_counter() -> None:
    counter = BoundedCounter(max_names=3)
    for name in ["a", "b", "a", "c", "d", "e", "a"]:
        counter.add(name)
    assert counter.drain() == {"a": 3, "b": 1, "c": 1} | {OTHER: 2}  # d, e: no room left
    assert counter.drain() == {}
    with pytest.raises(ValidationError):
        BoundedCounter(0)
    assert top({"x": 1, "y": 3, "z": 3}, 2) == {"y": 3, "z": 3}


def test_bounded_counter_is_thread_safe() -> None:
    counter = BoundedCounter()

    def work() -> None:
        for _ in range(10_000):
            counter.add("k")

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter.drain() == {"k": 80_000}


def test_registry_counts_stale_writes_but_loses_no_update() -> None:
    registry = SessionRegistry(FakeClock())
    state = registry.start("u1", "hi", session_id="s1")
    assert registry.stale_writes == 0
    newer = dataclasses.replace(state, current_step=1)
    assert registry.compare_and_set(state, newer)
    assert not registry.compare_and_set(state, dataclasses.replace(state, current_step=7))
    assert registry.stale_writes == 1
    # Contending updates: some compare-and-set writes are refused and retried.
    barrier = threading.Barrier(8)

    def slow_step(s: SessionState) -> SessionState:
        time.sleep(0)  # lets another writer in between the read and the swap
        return dataclasses.replace(s, current_step=s.current_step + 1)

    def bump() -> None:
        barrier.wait()
        for _ in range(200):
            registry.update("s1", slow_step)

    threads = [threading.Thread(target=bump) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert registry.get("s1").current_step == 1 + 8 * 200
    # Their retries lost no update: only the refused direct write above counts.
    assert registry.stale_writes == 1
    # A write to an ended session is not a stale overwrite.
    ended = registry.end("s1")
    before = registry.stale_writes
    assert not registry.compare_and_set(ended, dataclasses.replace(ended, current_step=0))
    assert registry.stale_writes == before


def test_sample_validation() -> None:
    from datetime import UTC, datetime

    at = datetime(2025, 1, 1, tzinfo=UTC)
    with pytest.raises(ValidationError):
        HealthSample(datetime(2025, 1, 1), {})  # naive
    with pytest.raises(ValidationError):
        HealthSample(at, {"x": float("nan")})
    with pytest.raises(ValidationError):
        HealthSample(at, {"x": True})
    with pytest.raises(ValidationError):
        HealthSample.from_json('{"at": 1}')
    sample = HealthSample(at, {"b": 2, "a": 1}, hot_keys={"k": 3}, source="p")
    assert HealthSample.from_json(sample.to_json()) == sample
    assert list(sample.values) == ["a", "b"]
