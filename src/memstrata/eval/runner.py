"""The data-set independent part of a run: index every tenant, query every system.

Results are plain values (:class:`Rankings`); scoring them is left to the pure
functions of :mod:`memstrata.eval.locomo` and :mod:`memstrata.eval.longmemeval`.
Only one system is timed (the one named ``timed``, "memstrata" by default): its
``search`` call, query embedding included, after one untimed warm-up query (and,
as a started service, with what was loaded before it out of the collector's reach).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from memstrata.bench.stats import percentile
from memstrata.cer import StepOutcome, is_reflected, l3_confident
from memstrata.errors import ValidationError
from memstrata.eval.datasets import Turn
from memstrata.eval.systems import EvalSystem, Retrieved
from memstrata.loading import freeze_loaded

TIMED_SYSTEM = "memstrata"
MAX_K = 1000  # the store's limit on one search


def check_ks(ks: Sequence[int]) -> tuple[int, ...]:
    """Sorted unique cut-offs, each an integer in 1..1000."""
    values = tuple(sorted(set(ks)))
    if not values or any(
        isinstance(k, bool) or not isinstance(k, int) or not 0 < k <= MAX_K for k in values
    ):
        raise ValidationError("ks", f"must be integers in 1..{MAX_K}, got {list(ks)}")
    return values


class ProgressSink(Protocol):
    """Where a run reports progress (a rich progress bar on stderr in the CLI)."""

    def start(self, label: str, total: int) -> None:
        """A new phase of ``total`` units begins."""
        ...

    def advance(self, n: int = 1) -> None:
        """``n`` more units of the current phase are done."""
        ...


class _Silent:
    def start(self, label: str, total: int) -> None:
        pass

    def advance(self, n: int = 1) -> None:
        pass


@dataclass(frozen=True, slots=True)
class Query:
    """One question put to every system: whose turns, what, and when it is asked."""

    tenant: str
    text: str
    at: datetime


@dataclass(frozen=True, slots=True)
class Rankings:
    """What each system returned for each query (same order as the queries), and
    the timed system's per-query latencies in seconds."""

    by_system: Mapping[str, tuple[tuple[Retrieved, ...], ...]]
    latencies_s: tuple[float, ...]
    timed: str | None


def index_all(
    systems: Sequence[EvalSystem],
    corpora: Sequence[tuple[str, Sequence[Turn]]],
    progress: ProgressSink | None = None,
) -> None:
    """Index each ``(tenant, turns)`` in every system, then finish indexing."""
    names = [s.name for s in systems]
    if len(set(names)) != len(names):
        raise ValueError(f"systems: names must be unique, got {names}")
    sink = progress or _Silent()
    sink.start("indexing turns", sum(len(turns) for _, turns in corpora))
    for tenant, turns in corpora:
        for system in systems:
            system.index(tenant, turns)
        sink.advance(len(turns))
    for system in systems:
        system.finish_indexing()


def retrieve_all(
    systems: Sequence[EvalSystem],
    queries: Sequence[Query],
    k: int,
    *,
    timed: str | None = TIMED_SYSTEM,
    progress: ProgressSink | None = None,
) -> Rankings:
    """Put every query to every system (the systems interleaved per query)."""
    sink = progress or _Silent()
    timed_system = next((s for s in systems if s.name == timed), None)
    frozen = gc.get_freeze_count() > 0
    try:
        return _retrieve_all(systems, queries, k, timed_system, sink)
    finally:
        if not frozen:  # a service-like process keeps what it froze; a test does not
            gc.unfreeze()


def _retrieve_all(
    systems: Sequence[EvalSystem],
    queries: Sequence[Query],
    k: int,
    timed_system: EvalSystem | None,
    sink: ProgressSink,
) -> Rankings:
    if timed_system is not None and queries:
        # Untimed warm-up: first-call costs (model load, caches) are not retrieval.
        first = queries[0]
        timed_system.search(first.tenant, first.text, first.at, k)
        # As the service does once started: what was loaded and indexed before the
        # timing is frozen, so a full collection does not walk it inside a search.
        freeze_loaded()
    results: dict[str, list[tuple[Retrieved, ...]]] = {s.name: [] for s in systems}
    latencies: list[float] = []
    sink.start(f"retrieving ({len(systems)} systems)", len(queries))
    for query in queries:
        for system in systems:
            if system is timed_system:
                start = time.perf_counter()
                found = system.search(query.tenant, query.text, query.at, k)
                latencies.append(time.perf_counter() - start)
            else:
                found = system.search(query.tenant, query.text, query.at, k)
            results[system.name].append(tuple(found))
        sink.advance()
    return Rankings(
        {name: tuple(rows) for name, rows in results.items()},
        tuple(latencies),
        None if timed_system is None else timed_system.name,
    )


def latency_summary(rankings: Rankings) -> dict[str, float | int | str | None]:
    """p50 / p99 / mean in milliseconds of the timed system's searches."""
    samples = rankings.latencies_s
    if not samples:
        return {"system": rankings.timed, "p50": None, "p99": None, "mean": None, "n": 0}
    return {
        "system": rankings.timed,
        "p50": round(percentile(samples, 50) * 1e3, 3),
        "p99": round(percentile(samples, 99) * 1e3, 3),
        "mean": round(sum(samples) / len(samples) * 1e3, 3),
        "n": len(samples),
    }


def render_context(found: Sequence[Retrieved], turns: Mapping[str, Turn]) -> str:
    """The retrieved turns as a model would see them: ``[date] text`` per line."""
    return "\n".join(
        f"[{turns[r.id].date_text}] {turns[r.id].text}" for r in found if r.id in turns
    )


def qa_step(
    label: str,
    found: Sequence[Retrieved],
    answer: str,
    turns: Mapping[str, Turn],
    *,
    threshold: float,
) -> StepOutcome:
    """CER for one QA: loaded = some retrieved turn is confident (cosine at or above
    ``threshold``); used = the gold answer is reflected in the retrieved context."""
    loaded = l3_confident((r.confidence for r in found), threshold)
    used = is_reflected(answer, render_context(found, turns))
    return StepOutcome(loaded=loaded, used=used, step=label)
