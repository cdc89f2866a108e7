"""What a read deadline counts (issue 31, "Why" 7): a slow backend, not this process.

A fresh process's first read on a busy machine waited on its own models loading and
on its own CPU; the deadline abandoned it and the read came back empty. Now the
seconds a model spends loading are not counted (memstrata.loading), and the
in-process index is read without a deadline at all; a remote one keeps its deadline.
Timing is asserted only as bounds a busy machine meets: each load below lasts
several times the deadline it must not trip.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from memstrata.config import LongTermSettings, Settings
from memstrata.errors import BackendUnavailableError
from memstrata.loading import loading, loading_now, loading_seconds
from memstrata.retrieval.guard import (
    BELOW_THRESHOLD,
    CIRCUIT_OPEN,
    EMBEDDER_TIMEOUT,
    L3_TIMEOUT,
    L3_UNAVAILABLE,
    SKIP_REASONS,
    DeadlineRunner,
    ReadGuard,
    skip_note,
)
from memstrata.testing.faults import FaultyIndex
from memstrata.wiring import open_guard, open_index

DEADLINE_S = 0.3
LOAD_S = 1.5
"""Five deadlines: a load the deadline counted could not fit in it."""
HANG_S = 60.0
MARGIN_S = 20.0


def _load_then(value: str) -> str:
    with loading():
        time.sleep(LOAD_S)
    return value


def test_the_seconds_a_model_loads_are_not_counted_by_a_deadline() -> None:
    runner = DeadlineRunner(name="loading-runner")
    before = loading_seconds()
    outcome = runner.run(lambda: _load_then("loaded"), DEADLINE_S)
    assert outcome.failure is None and outcome.value == "loaded"
    assert loading_seconds() - before >= LOAD_S * 0.9 and not loading_now()
    runner.close()


def test_a_read_waiting_on_a_load_another_thread_started_is_not_abandoned_either() -> None:
    # The first read finds a write worker loading the shared model: it waits on the
    # model's lock, which is waiting on the same load.
    loaded = threading.Event()
    started = threading.Event()

    def write_worker() -> None:
        with loading():
            started.set()
            time.sleep(LOAD_S)
        loaded.set()

    threading.Thread(target=write_worker, daemon=True).start()
    assert started.wait(MARGIN_S)
    guard = ReadGuard(LongTermSettings(embed_deadline_s=DEADLINE_S))
    got = guard.embed(lambda: loaded.wait(HANG_S) and "vector")
    assert got.skip is None and got.value == "vector"
    guard.close()


def test_a_call_slow_after_its_load_is_still_abandoned_at_its_deadline() -> None:
    runner = DeadlineRunner(name="slow-after-load")
    release = threading.Event()

    def load_then_hang() -> None:
        with loading():
            time.sleep(0.5)
        release.wait(HANG_S)

    try:
        started = time.monotonic()
        outcome = runner.run(load_then_hang, DEADLINE_S)
        assert outcome.failure == "timeout"
        assert 0.5 + DEADLINE_S * 0.9 <= time.monotonic() - started < MARGIN_S
    finally:
        release.set()
        runner.close()


def _slow(value: str, seconds: float = LOAD_S) -> str:
    time.sleep(seconds)  # a search starved of CPU: no model loading in it
    return value


def test_an_in_process_index_is_read_to_the_end_a_remote_one_is_abandoned() -> None:
    settings = LongTermSettings(breaker_failures=2, breaker_cooldown_s=30)
    local = ReadGuard(settings, l3_remote=False)
    remote = ReadGuard(settings)
    try:
        assert local.l3(lambda: _slow("read"), DEADLINE_S).value == "read"
        assert remote.l3(lambda: _slow("read"), DEADLINE_S).skip == L3_TIMEOUT

        # The embedded engine's errors still count: its breaker opens as before.
        def broken() -> None:
            raise BackendUnavailableError("the shard is closed")

        assert local.l3(broken, DEADLINE_S).skip == L3_UNAVAILABLE
        assert local.l3(broken, DEADLINE_S).skip == L3_UNAVAILABLE
        assert local.l3(lambda: "x", DEADLINE_S).skip == CIRCUIT_OPEN
    finally:
        local.close()
        remote.close()


def test_the_wiring_gives_the_embedded_index_no_deadline_and_a_fault_double_one(
    tmp_path: Path,
) -> None:
    index = open_index(Settings(data_dir=tmp_path / "data"))
    try:
        assert index.remote is False
        assert open_guard(Settings(), index).l3_remote is False
        # The test doubles stand for a slow or unreachable server.
        assert open_guard(Settings(), FaultyIndex(index)).l3_remote is True
        assert open_guard(Settings()).l3_remote is True  # unknown: deadlines apply
    finally:
        index.close()


@pytest.mark.parametrize("reason", sorted(SKIP_REASONS))
def test_every_skip_reason_has_a_sentence_and_only_one_blames_the_confidence_floor(
    reason: str,
) -> None:
    l3 = reason if not reason.startswith("embedder") else None
    dense = reason if reason.startswith("embedder") else None
    note = skip_note(l3, dense)
    assert note is not None and f"[{reason}]" in note
    assert ("confidence floor" in note) == (reason == BELOW_THRESHOLD)


def test_a_read_that_skipped_nothing_has_no_note_and_both_reasons_are_said() -> None:
    assert skip_note(None, None) is None
    both = skip_note(L3_TIMEOUT, EMBEDDER_TIMEOUT)
    assert both is not None and "[l3_timeout]" in both and "[embedder_timeout]" in both
    assert "BM25" in both and "cached reads in L2" in both
    assert "no cached read" in (skip_note(L3_TIMEOUT, None, cached=False) or "")
