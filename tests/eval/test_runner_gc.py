"""The timed searches of an eval run do not walk what was loaded before them: the
runner freezes it after the warm-up (as the service does once warmed), and gives the
process back unfrozen."""

from __future__ import annotations

import gc
from datetime import UTC, datetime

from memstrata.eval.runner import Query, retrieve_all
from memstrata.eval.systems import Retrieved


class Recording:
    """A system that records, per search, how many objects the collector left frozen."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.frozen: list[int] = []

    def index(self, tenant: str, turns: object) -> None:  # pragma: no cover - unused
        pass

    def search(self, tenant: str, query: str, at: datetime, k: int) -> list[Retrieved]:
        self.frozen.append(gc.get_freeze_count())
        return []


def test_timed_searches_run_with_the_loaded_heap_frozen() -> None:
    assert gc.get_freeze_count() == 0
    timed, other = Recording("memstrata"), Recording("bm25")
    at = datetime(2024, 1, 1, tzinfo=UTC)
    queries = [Query("t", f"question {i}", at) for i in range(3)]
    rankings = retrieve_all([timed, other], queries, 5)
    assert len(rankings.latencies_s) == 3
    assert timed.frozen[0] == 0  # the warm-up: not timed, before the freeze
    assert all(count > 1000 for count in timed.frozen[1:])  # modules, functions, ...
    assert gc.get_freeze_count() == 0
