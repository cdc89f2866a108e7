"""``memstrata bench forget``: another tenant's reads before and during a forget.

Setup (documented, not timed): an engine on a fresh data dir; ``points`` memories
spread over ``tenants`` tenants of 50 users each, written through the long-term store
the wiring builds (:meth:`~memstrata.longterm.facade.LongTermStore.add_vectors`, in
batches: real payloads and BM25 vectors; dense vectors are jittered copies of 1,000
MiniLM-embedded texts, as ``bench layers`` does, so 300k points take minutes, not
hours); then one user with one memory (through ``remember``, the product path) in
tenant ``t-forget``, the issue's case. The shard is optimized, and the reader's
queries are run once to warm the engine and the query-embedding cache.

Timed: one reader thread calls ``engine.retrieve`` (the real read path: hybrid search,
fusion, confidence) for a user of tenant ``t-reader`` back to back, first for
``before_s`` seconds, then while ``engine.forget`` of that user runs in another
thread (the real path: deletes, the shards rebuilt, the AOF rewritten), until it
returns. The report gives p50/p99/max of both phases, their ratios, the number of
reads during the forget and the forget's duration.
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
from memstrata.longterm.facade import NewItem
from memstrata.longterm.points import MEMORIES

READER_TENANT = "t-reader"
FORGET_TENANT = "t-forget"
FORGOTTEN_USER = "leaving"
USERS_PER_TENANT = 50
BATCH = 1_000
BASE_TEXTS = 1_000
QUERIES = 200


def _fill(engine: ContextEngine, points: int, tenants: int, console: Console | None) -> None:
    embedder = engine.parts.embedder
    texts = _texts(random.Random(3), BASE_TEXTS)
    vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    rng = np.random.default_rng(5)
    names = [READER_TENANT, *(f"t{n}" for n in range(1, max(tenants, 1)))]
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


def bench_forget(
    data_dir: Path,
    points: int,
    *,
    tenants: int = 20,
    before_s: float = 20.0,
    console: Console | None = None,
) -> dict[str, Any]:
    """Another tenant's ``retrieve`` latency before and during a forget of one user
    with one memory on a data dir of ``points`` memories (see the module docstring)."""
    path = data_dir / f"forget-{points}"
    shutil.rmtree(path, ignore_errors=True)
    embedder = CachedEmbedder(MiniLMEmbedder())
    setup = time.perf_counter()
    with ContextEngine.open(Settings(data_dir=path), embedder=embedder) as engine:
        _fill(engine, points, tenants, console)
        engine.remember(FORGOTTEN_USER, "I moved to Porto last spring.", tenant=FORGET_TENANT)
        engine.flush()
        engine.parts.longterm.optimize()
        queries = _texts(random.Random(13), QUERIES)
        for query in queries:  # warm: the engine's pages and the query embeddings
            engine.retrieve(query, user="u1", tenant=READER_TENANT)
        setup_s = time.perf_counter() - setup
        total = engine.parts.longterm.point_counts()

        def read(i: int) -> float:
            start = time.perf_counter()
            engine.retrieve(queries[i % QUERIES], user="u1", tenant=READER_TENANT)
            return time.perf_counter() - start

        before: list[float] = []
        deadline = time.perf_counter() + before_s
        while time.perf_counter() < deadline:
            before.append(read(len(before)))

        outcome: dict[str, Any] = {}

        def forget() -> None:
            start = time.perf_counter()
            try:
                outcome["report"] = engine.forget(FORGOTTEN_USER, tenant=FORGET_TENANT).as_dict()
            except Exception as exc:  # reported, not raised in a thread
                outcome["error"] = f"{type(exc).__name__}: {exc}"
            outcome["seconds"] = time.perf_counter() - start

        during: list[float] = []
        worker = threading.Thread(target=forget, name="bench-forget")
        worker.start()
        while worker.is_alive():
            during.append(read(len(during)))
        worker.join()

    shutil.rmtree(path, ignore_errors=True)
    first, second = _phase(before), _phase(during)
    report: dict[str, Any] = {
        "points": points,
        "point_counts": total,
        "tenants": tenants,
        "setup_s": round(setup_s, 1),
        "forget_s": round(outcome.get("seconds", 0.0), 2),
        "forget": outcome.get("report", outcome.get("error")),
        "retrieve_before": first,
        "retrieve_during": second,
    }
    if second.get("reads"):
        report["ratio_p50"] = round(second["p50_ms"] / first["p50_ms"], 2)
        report["ratio_p99"] = round(second["p99_ms"] / first["p99_ms"], 2)
    return report


def run_forget_bench(
    data_dir: Path, sizes: list[int], *, before_s: float = 20.0, progress: Console | None = None
) -> dict[str, Any]:
    """:func:`bench_forget` at each size, smallest first."""
    return {
        "benchmark": "forget",
        "runs": [
            bench_forget(data_dir, n, before_s=before_s, console=progress) for n in sorted(sizes)
        ],
    }
