"""Each embedded shard's search pool has the configured number of threads, at every open."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memstrata.config import LongTermSettings, Settings
from memstrata.errors import ConfigError, ValidationError
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.points import COLLECTIONS, Point
from memstrata.longterm.protocol import VectorIndex
from memstrata.wiring import open_index

DIM = 32  # the test embedder's (make_point)
TASKS = Path(f"/proc/{os.getpid()}/task")

needs_proc = pytest.mark.skipif(not TASKS.is_dir(), reason="thread names are read from /proc")


def search_pool_threads() -> int:
    """Live threads of this process named by qdrant-edge's search pools."""
    count = 0
    for task in TASKS.iterdir():
        try:
            count += (task / "comm").read_text().startswith("edge-search")
        except OSError:
            continue  # the thread ended while we listed
    return count


def write_each_collection(index: VectorIndex, make_point: Callable[..., Point]) -> None:
    """One point in each collection: each gets one part's shard (a part's shard is
    created by its first write, with its pool)."""
    for name in COLLECTIONS:
        index.upsert(name, [make_point("a note", "acme")])


def settled_count() -> int:
    """The count once it holds still (pools closed by earlier tests may still be ending)."""
    last = search_pool_threads()
    for _ in range(500):
        time.sleep(0.02)
        now = search_pool_threads()
        if now == last:
            return now
        last = now
    return last


def pools_ended(expected: int) -> bool:
    """Whether the count falls to ``expected`` (a closed pool's threads end on their own
    schedule, within milliseconds)."""
    deadline = time.monotonic() + 5
    while search_pool_threads() != expected:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@needs_proc
def test_each_shard_gets_the_configured_pool_and_a_reopen_resets_it(
    tmp_path: Path, make_point: Callable[..., Point]
) -> None:
    before = settled_count()
    index = EdgeIndex(tmp_path, search_threads=3)
    index.ensure_collections(DIM)
    write_each_collection(index, make_point)
    assert search_pool_threads() - before == 3 * len(COLLECTIONS)
    index.close()
    assert pools_ended(before)
    # The engine keeps a shard's stored value when none is given: the default must be
    # given explicitly, or a shard once opened with 3 would keep 3.
    index = EdgeIndex(tmp_path)
    index.ensure_collections(DIM)
    try:
        assert search_pool_threads() - before == len(COLLECTIONS)
    finally:
        index.close()


@needs_proc
def test_the_wiring_opens_its_index_with_the_settings_value(
    tmp_path: Path, make_point: Callable[..., Point]
) -> None:
    before = settled_count()
    settings = Settings(data_dir=tmp_path, longterm=LongTermSettings(search_threads=2))
    index = open_index(settings)
    index.ensure_collections(DIM)
    write_each_collection(index, make_point)
    try:
        assert search_pool_threads() - before == 2 * len(COLLECTIONS)
    finally:
        index.close()


@pytest.mark.parametrize("value", [0, -1, 257, True, 1.5, "2"])
def test_search_threads_setting_is_validated(value: object) -> None:
    with pytest.raises(ConfigError, match=r"longterm\.search_threads"):
        LongTermSettings(search_threads=value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [0, 257, True])
def test_edge_index_rejects_bad_search_threads(tmp_path: Path, value: object) -> None:
    with pytest.raises(ValidationError, match="search_threads"):
        EdgeIndex(tmp_path, search_threads=value)  # type: ignore[arg-type]
    assert not any(tmp_path.iterdir())  # nothing created
