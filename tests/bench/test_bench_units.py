"""Benchmark building blocks: statistics, the confidence curve on a tiny file, the L2 report."""

from __future__ import annotations

import io
import json
import random
import threading
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from memstrata.bench.confidence import run_confidence_bench
from memstrata.bench.layers import (
    L2_OPERATIONS,
    TIMING_BLOCK,
    WARMUP_QUERIES,
    _build_store,
    _texts,
    _time_in_blocks,
    _time_interleaved,
    bench_l2,
    bench_l3,
    bench_route,
    raw_edge_search,
    recording_engine_calls,
    route_calls,
    route_engine,
)
from memstrata.bench.stats import percentile, progress_bar, summary_ms, summary_us
from memstrata.config import LongTermSettings
from memstrata.errors import ValidationError
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.facade import NewItem
from memstrata.longterm.points import MEMORIES
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.retrieval.results import RetrievalQuery
from memstrata.retrieval.search import HybridSearch
from memstrata.router.bundle import ContextBundle
from memstrata.router.router import memories_taken
from memstrata.testing.embedders import HashEmbedder


def test_percentiles_and_summaries() -> None:
    samples = [0.001 * i for i in range(1, 101)]
    assert percentile(samples, 50) == pytest.approx(0.0505)
    assert summary_ms(samples)["p99_ms"] == pytest.approx(99.01, abs=0.01)
    assert summary_us([0.000_002] * 3) == {"p50_us": 2.0, "p99_us": 2.0, "mean_us": 2.0}
    with pytest.raises(ValueError, match="samples"):
        percentile([], 50)


def test_the_progress_bar_runs_no_thread_beside_the_timed_calls() -> None:
    # Threads left by earlier tests may end meanwhile: only a new one would be the bar's.
    before = set(threading.enumerate())
    out = io.StringIO()
    with progress_bar(Console(file=out, force_terminal=True, width=60)) as bar:
        task = bar.add_task("bench layers", total=2)
        assert set(threading.enumerate()) - before == set()
        bar.update(task, advance=1, refresh=True)
    assert "bench layers" in out.getvalue()


def test_confidence_curve_on_a_tiny_locomo_file(tmp_path: Path) -> None:
    sample = {
        "conversation": {
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a grey cat named Miso"},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "The weather was rainy all week"},
            ]
        },
        "qa": [
            {"question": "What is the name of Ann's cat", "evidence": ["D1:1"], "category": 4},
            {"question": "ignored adversarial", "evidence": ["D1:2"], "category": 5},
        ],
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample]))
    report = run_confidence_bench(path, HashEmbedder(64), conversations=1)
    assert report["questions"] == 1
    curve = {row["threshold"]: row for row in report["curve"]}
    assert curve[0.2]["relevant_at_or_above"] in (0.0, 1.0)
    shares = [row["relevant_at_or_above"] for row in report["curve"]]
    assert shares == sorted(shares, reverse=True)  # monotone in the threshold


def test_unreadable_data_file_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValidationError, match=r"bad\.json"):
        run_confidence_bench(bad, HashEmbedder(8), conversations=1)


def test_l2_bench_reports_both_raw_baselines(tmp_path: Path) -> None:
    result = bench_l2(tmp_path, ops=20)
    assert result["ops_each"] == 20
    for name in ("overhead_ratio", "overhead_ratio_vs_raw_orjson", "overhead_ratio_with_gateway"):
        assert result[name] > 0
    for name in ("raw", "raw_orjson", "with_gateway"):
        assert 0 < result[name]["p50_us"] <= result[name]["p99_us"]
    assert set(result["by_op"]) == set(L2_OPERATIONS)
    assert all(op["p50_us"] > 0 for op in result["by_op"].values())
    assert result["overhead_ratio"] == round(result["p50_us"] / result["raw"]["p50_us"], 3)


def test_l3_bench_reports_memstrata_against_the_raw_engine(tmp_path: Path) -> None:
    result = bench_l3(tmp_path, [500], queries=8, embedder=HashEmbedder(32), progress=None)
    row = result["500"]
    assert row["queries"] == 8 and row["warmup_queries"] == WARMUP_QUERIES
    assert 0 < row["p50_ms"] <= row["p99_ms"]
    assert 0 < row["raw_edge"]["p50_ms"] <= row["raw_edge"]["p99_ms"]
    assert row["overhead_ratio_vs_raw_edge"] == round(row["p50_ms"] / row["raw_edge"]["p50_ms"], 3)
    mixed = row["interleaved"]
    assert 0 < mixed["p50_ms"] <= mixed["p99_ms"]
    assert 0 < mixed["raw_edge"]["p50_ms"] <= mixed["raw_edge"]["p99_ms"]
    assert "blocks of" in row["timing"]


def test_block_timing_alternates_and_times_every_call_once() -> None:
    order: list[str] = []
    ours = [lambda i=i: order.append(f"m{i}") for i in range(TIMING_BLOCK + 3)]
    raw = [lambda i=i: order.append(f"r{i}") for i in range(TIMING_BLOCK + 3)]
    ours_s, raw_s = _time_in_blocks(ours, raw)  # type: ignore[arg-type]
    assert len(ours_s) == len(raw_s) == TIMING_BLOCK + 3
    block = TIMING_BLOCK
    # First block: memstrata then raw; second block: raw first.
    assert order[:block] == [f"m{i}" for i in range(block)]
    assert order[block : 2 * block] == [f"r{i}" for i in range(block)]
    assert order[2 * block :] == [f"r{i}" for i in range(block, block + 3)] + [
        f"m{i}" for i in range(block, block + 3)
    ]
    order.clear()
    _time_interleaved(ours[:4], raw[:4])  # type: ignore[arg-type]
    assert order == ["r0", "m0", "m1", "r1", "r2", "m2", "m3", "r3"]


def test_the_raw_engine_baseline_finds_what_the_store_finds(tmp_path: Path) -> None:
    # The baseline is only a floor if it does the same work: the same hits, each with
    # the same cosine and payload (20 points per tenant, 10 asked).
    embedder = HashEmbedder(32)
    texts = _texts(random.Random(7), 200)
    store = _build_store(
        tmp_path, 2000, embedder, embedder.embed(texts), texts, seed=3, settings=LongTermSettings()
    )
    index = store.index
    assert isinstance(index, EdgeIndex)
    encoder = Bm25Encoder()
    compared = 0
    for i, query in enumerate(_texts(random.Random(11), 12)):
        tenant = f"t{i % 100}"
        vector = embedder.embed([query])[0]
        hits = HybridSearch(store).search(MEMORIES, query, tenant=tenant, k=11, query_vector=vector)
        raw = raw_edge_search(
            index.engine_shard(MEMORIES, tenant),
            (vector / np.linalg.norm(vector)).tolist(),
            encoder.encode_query(query),
            tenant,
            k=10,
            dense_depth=50,
            sparse_depth=50,
            ef=256,
        )
        by_id = {str(point_id): (score, payload) for point_id, score, payload in raw}
        if len(hits) > 10 and round(hits[9].score, 6) == round(hits[10].score, 6):
            continue  # a tie across the cut: either member is right
        assert set(by_id) == {h.id for h in hits[:10]}
        for hit in hits[:10]:
            assert by_id[hit.id][0] == pytest.approx(hit.cosine, abs=1e-5)
            assert by_id[hit.id][1]["text"] == hit.payload["text"]
        compared += 1
    assert compared >= 9
    store.close()


def test_route_bench_reports_route_against_the_raw_reads(tmp_path: Path) -> None:
    result = bench_route(tmp_path, queries=8, embedder=HashEmbedder(32), memories=300)
    assert result["memories"] == 300 and result["queries"] == 8
    assert 0 < result["p50_ms_without_embedding"] <= result["p99_ms_without_embedding"]
    assert 0 < result["p50_ms_with_embedding"] <= result["p99_ms_with_embedding"]
    assert 0 < result["raw"]["p50_ms"] <= result["raw"]["p99_ms"]
    assert result["overhead_ratio_vs_raw"] == round(
        result["p50_ms_without_embedding"] / result["raw"]["p50_ms"], 3
    )
    assert "blocks of" in result["timing"]


def test_the_raw_route_reads_what_route_reads(tmp_path: Path) -> None:
    # The raw caller is route()'s floor only if it reads the same context: the same
    # L2 values, and the very engine requests route() sent for that query (its
    # retrieve()'s searches, pool read and links, the knowledge search), each answered.
    embedder = HashEmbedder(32)
    with route_engine(tmp_path, embedder, memories=300) as (engine, state, client):
        queries = _texts(random.Random(13), 6)
        # Another user's memories with the queries' very texts: a memories read
        # without the user scope would rank them first.
        engine.parts.longterm.add(
            "memories", [NewItem(text=q, tenant="bench", user="u2", source="x") for q in queries]
        )
        index = engine.parts.longterm.index
        assert isinstance(index, EdgeIndex)
        ours, raw = route_calls(engine, state, client, queries, embedder.embed(queries))
        need = next(n for n in engine.parts.router.intents.get("generate_report").l3 if not n.query)
        for query, route, raw_route in zip(queries, ours, raw, strict=True):
            bundle = route()
            assert isinstance(bundle, ContextBundle)
            got = raw_route()
            assert isinstance(got, tuple)
            result, preference, answers = got
            assert result == bundle.item("analysis_result").content
            assert preference["value"] == '"pdf with charts"'
            # Every request route() sent, replayed; the memories searches among them.
            assert len(answers) >= 4 and sum(answers) > 0
            with recording_engine_calls(index) as log:
                again = route()
            assert isinstance(again, ContextBundle) and again.items
            # The same query again is answered from route()'s caches: no new request.
            assert len(log) < len(answers)
            # The user's memories need serves what retrieve() serves (one confidence
            # for both, issue 32).
            retrieved = engine.parts.retriever.retrieve(
                RetrievalQuery(
                    text=query,
                    tenant="bench",
                    user="u1",
                    k=need.k,
                    now=engine.parts.clock.now(),
                    types=need.types,
                )
            )
            served = {
                i.provenance.ref for i in bundle.items if i.name.startswith(need.item_prefix)
            } | {m.ref for m in bundle.missing if m.name == need.item_prefix}
            assert {hit.id for hit in memories_taken(retrieved, need)} == served
            assert not served & {h.id for h in engine.search("u2", query, tenant="bench")}
