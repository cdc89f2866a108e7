"""``memstrata bench forget``: another tenant's reads before and during forgets.

Setup (documented, not timed): an engine on a fresh data dir; ``points`` memories
spread over ``tenants`` tenants of 50 users each, written through the long-term store
the wiring builds (:meth:`~memstrata.longterm.facade.LongTermStore.add_vectors`, in
batches: real payloads and BM25 vectors; dense vectors are jittered copies of 1,000
MiniLM-embedded texts, as ``bench layers`` does, so 300k points take minutes, not
hours); then ``rounds`` users with one memory each (through ``remember``, the product
path) in tenant ``forget_in`` (``t-forget`` by default, the issue's case: a tenant of
its own; a bench tenant such as ``t1`` puts the forgotten users' part among 15k-point
tenants). The shards are optimized, and the reader's queries are run once to warm the
engine and the query-embedding cache.

Timed: one reader thread calls ``engine.retrieve`` (the real read path: hybrid search,
fusion, confidence) for a user of tenant ``t-reader`` back to back. Each round reads
``before_s / rounds`` seconds with nothing else running (the baseline), then reads
while ``engine.forget`` of one of the users runs in another thread (the real path:
deletes, the tenant's parts rebuilt and swapped, the AOF rewritten), until it
returns. Baseline and forget alternate, so a change in the machine's load (it is
shared) falls on both. The report gives p50/p99/max of all baseline reads and of all
reads during forgets, the ratios, each round's p99 both ways (the spread), the
slowest read, the forgets' durations, and the points of the part each forget rebuilt.
"""

from __future__ import annotations

import random
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console

from memstrata.bench.layers import _jitter, _texts
from memstrata.bench.stats import percentile, progress_bar
from memstrata.config import Settings
from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.engine import ContextEngine
from memstrata.longterm.edge_parts import part_of
from memstrata.longterm.facade import NewItem
from memstrata.longterm.points import MEMORIES, Filter

READER_TENANT = "t-reader"
FORGET_TENANT = "t-forget"
FORGOTTEN_USER = "leaving"
USERS_PER_TENANT = 50
BATCH = 1_000
BASE_TEXTS = 1_000
QUERIES = 200


def _tenants(tenants: int) -> list[str]:
    return [READER_TENANT, *(f"t{n}" for n in range(1, max(tenants, 1)))]


def _fill(engine: ContextEngine, points: int, tenants: int, console: Console | None) -> None:
    embedder = engine.parts.embedder
    texts = _texts(random.Random(3), BASE_TEXTS)
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    rng = np.random.default_rng(5)
    names = _tenants(tenants)
    store = engine.parts.longterm
    with progress_bar(console or Console(quiet=True)) as bar:
        task = bar.add_task(f"filling {points:,} points", total=points)
        for start in range(0, points, BATCH):
            size = min(BATCH, points - start)
            picks = rng.integers(0, len(texts), size)
            items = [
                NewItem(
                    text=texts[int(p)],
                    tenant=names[(start + i) % len(names)],
                    user=f"u{(start + i) // len(names) % USERS_PER_TENANT}",
                    source="bench",
                )
                for i, p in enumerate(picks)
            ]
            store.add_vectors(MEMORIES, items, _jitter(vectors[picks], rng))
            bar.update(task, advance=size, refresh=True)


def _phase(latencies: list[float]) -> dict[str, Any]:
    if not latencies:
        return {"reads": 0}
    return {
        "reads": len(latencies),
        "p50_ms": round(percentile(latencies, 50) * 1e3, 2),
        "p99_ms": round(percentile(latencies, 99) * 1e3, 2),
        "max_ms": round(max(latencies) * 1e3, 2),
    }


def _part_points(engine: ContextEngine, tenant: str, tenants: int) -> int:
    """The memories in the part holding ``tenant`` (what its forget rebuilds), where
    the index is the embedded one; else 0."""
    index = engine.parts.longterm.index
    part_count = getattr(index, "part_count", None)
    if part_count is None:
        return 0
    parts = int(part_count(MEMORIES))
    home = part_of(tenant, parts)
    shared = [t for t in {*_tenants(tenants), tenant} if part_of(t, parts) == home]
    return sum(index.count(MEMORIES, Filter(tenant=t)) for t in shared)


def bench_forget(
    data_dir: Path,
    points: int,
    *,
    tenants: int = 20,
    before_s: float = 20.0,
    rounds: int = 5,
    forget_in: str = FORGET_TENANT,
    console: Console | None = None,
) -> dict[str, Any]:
    """Another tenant's ``retrieve`` latency before and during ``rounds`` forgets of
    one user with one memory each, on a data dir of ``points`` memories (see the
    module docstring)."""
    path = data_dir / f"forget-{points}"
    shutil.rmtree(path, ignore_errors=True)
    embedder = CachedEmbedder(MiniLMEmbedder())
    setup = time.perf_counter()
    users = [f"{FORGOTTEN_USER}-{n}" for n in range(rounds)]
    with ContextEngine.open(Settings(data_dir=path), embedder=embedder) as engine:
        _fill(engine, points, tenants, console)
        for user in users:
            engine.remember(user, "I moved to Porto last spring.", tenant=forget_in)
        engine.flush()
        engine.parts.longterm.optimize()
        queries = _texts(random.Random(13), QUERIES)
        for query in queries:  # warm: the engine's pages and the query embeddings
            engine.retrieve(query, user="u1", tenant=READER_TENANT)
        setup_s = time.perf_counter() - setup
        total = engine.parts.longterm.point_counts()
        part_points = _part_points(engine, forget_in, tenants)

        count = 0

        def read() -> float:
            nonlocal count
            count += 1
            start = time.perf_counter()
            engine.retrieve(queries[count % QUERIES], user="u1", tenant=READER_TENANT)
            return time.perf_counter() - start

        before: list[list[float]] = []
        during: list[list[float]] = []
        forgets: list[dict[str, Any]] = []
        window = before_s / rounds
        for user in users:
            quiet: list[float] = []
            deadline = time.perf_counter() + window
            while time.perf_counter() < deadline:
                quiet.append(read())
            before.append(quiet)
            outcome: dict[str, Any] = {}

            def forget(user: str = user, outcome: dict[str, Any] = outcome) -> None:
                start = time.perf_counter()
                try:
                    outcome["report"] = engine.forget(user, tenant=forget_in).as_dict()
                except Exception as exc:  # reported, not raised in a thread
                    outcome["error"] = f"{type(exc).__name__}: {exc}"
                outcome["seconds"] = round(time.perf_counter() - start, 2)

            busy: list[float] = []
            worker = threading.Thread(target=forget, name="bench-forget")
            worker.start()
            while worker.is_alive():
                busy.append(read())
            worker.join()
            during.append(busy)
            forgets.append(outcome)

    shutil.rmtree(path, ignore_errors=True)
    first = _phase([x for xs in before for x in xs])
    second = _phase([x for xs in during for x in xs])
    report: dict[str, Any] = {
        "points": points,
        "point_counts": total,
        "tenants": tenants,
        "forget_in": forget_in,
        "rebuilt_part_points": part_points,
        "setup_s": round(setup_s, 1),
        "forget_s": [f.get("seconds") for f in forgets],
        "forget": [f.get("report", f.get("error")) for f in forgets],
        "retrieve_before": first,
        "retrieve_during": second,
        "rounds_p99_ms": [
            {"before": _phase(b).get("p99_ms"), "during": _phase(d).get("p99_ms")}
            for b, d in zip(before, during, strict=True)
        ],
    }
    if second.get("reads"):
        report["ratio_p50"] = round(second["p50_ms"] / first["p50_ms"], 2)
        report["ratio_p99"] = round(second["p99_ms"] / first["p99_ms"], 2)
        report["max_read_ms"] = second["max_ms"]
    return report


def run_forget_bench(
    data_dir: Path,
    sizes: list[int],
    *,
    before_s: float = 20.0,
    rounds: int = 5,
    forget_in: str = FORGET_TENANT,
    progress: Console | None = None,
) -> dict[str, Any]:
    """:func:`bench_forget` at each size, smallest first."""
    return {
        "benchmark": "forget",
        "runs": [
            bench_forget(
                data_dir,
                n,
                before_s=before_s,
                rounds=rounds,
                forget_in=forget_in,
                console=progress,
            )
            for n in sorted(sizes)
        ],
    }
