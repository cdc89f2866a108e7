"""L3 layer metrics: the points gauge read at scrape time, the search latency
histogram, and the L2 expired-keys counter type."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from memstrata.engine import ContextEngine
from memstrata.longterm.points import COLLECTIONS
from memstrata.longterm.protocol import VectorIndex
from memstrata.metrics import EngineMetrics, sample_value
from memstrata.testing.indexes import ADAPTERS, LOCAL_MODE_WARNINGS, make_index

pytestmark = [pytest.mark.filterwarnings(rule) for rule in LOCAL_MODE_WARNINGS]


def _families(engine: ContextEngine) -> dict[str, str]:
    return {
        family.name: family.type
        for family in text_string_to_metric_families(engine.metrics_text().decode())
    }


def test_l3_points_gauge_counts_what_was_added(
    engine_opener: Callable[..., ContextEngine],
) -> None:
    engine = engine_opener()
    snap = engine.metrics()
    for collection in COLLECTIONS:
        assert sample_value(snap, "memstrata_l3_points", collection=collection) == 0
    assert {e["labels"]["collection"] for e in snap["memstrata_l3_points"]} == set(COLLECTIONS)

    engine.add_knowledge(
        ["Alarms above 8 mm/s need a technician.", "Reset the controller with the red key."],
        tenant="acme",
        source="manual",
    )
    engine.add_knowledge(["Another tenant's chunk."], tenant="other", source="manual")
    engine.remember("u1", "My favourite tea is jasmine green tea from Fujian.", tenant="acme")
    engine.flush()

    snap = engine.metrics()
    assert sample_value(snap, "memstrata_l3_points", collection="knowledge") == 3
    memories = engine.count_memories("acme")
    assert memories >= 2  # the episode and its fact
    assert sample_value(snap, "memstrata_l3_points", collection="memories") == memories
    assert sample_value(snap, "memstrata_l3_points", collection="hot_knowledge") == 0
    assert _families(engine)["memstrata_l3_points"] == "gauge"


def test_a_search_records_an_l3_latency_sample(
    engine_opener: Callable[..., ContextEngine],
) -> None:
    engine = engine_opener()
    engine.add_knowledge(["Alarms above 8 mm/s need a technician."], source="manual")
    assert sample_value(engine.metrics(), "memstrata_l3_search_seconds_count") == 0

    assert engine.search("u1", "alarm velocity", collection="knowledge")
    snap = engine.metrics()
    assert sample_value(snap, "memstrata_l3_search_seconds_count", collection="knowledge") == 1
    assert sample_value(snap, "memstrata_l3_search_seconds_sum", collection="knowledge") > 0
    assert (
        sample_value(snap, "memstrata_l3_search_seconds_bucket", collection="knowledge", le="+Inf")
        == 1
    )

    # A retrieval searches once per route: at least one sample, all on its collection.
    result = engine.retrieve("alarm velocity", collection="knowledge")
    snap = engine.metrics()
    searches = sample_value(snap, "memstrata_l3_search_seconds_count", collection="knowledge")
    assert searches >= 1 + len(result.routes)
    assert sample_value(snap, "memstrata_l3_search_seconds_count", collection="memories") == 0
    assert _families(engine)["memstrata_l3_search_seconds"] == "histogram"

    # A refused search (bad argument) is not a latency sample.
    with pytest.raises(Exception):  # noqa: B017 - the store's validation error
        engine.search("u1", " ", collection="knowledge")
    assert sample_value(engine.metrics(), "memstrata_l3_search_seconds_count") == searches


def test_l2_expired_keys_is_a_counter(engine_opener: Callable[..., ContextEngine]) -> None:
    engine = engine_opener()
    assert _families(engine)["memstrata_l2_expired_keys"] == "counter"
    assert "memstrata_l2_expired_keys_total" in engine.metrics()


def test_a_failing_point_count_leaves_the_gauge_out() -> None:
    metrics = EngineMetrics()

    def broken() -> dict[str, int]:
        raise RuntimeError("store down")

    metrics.watch_l3(point_counts=broken)
    assert "memstrata_l3_points" not in metrics.snapshot()
    metrics.watch_l3(point_counts=lambda: {"memories": 4})
    assert sample_value(metrics.snapshot(), "memstrata_l3_points", collection="memories") == 4
    metrics.observe_l3_search("memories", 0.0004)
    metrics.observe_l3_search("memories", 0.002)
    snap = metrics.snapshot()
    assert sample_value(snap, "memstrata_l3_search_seconds_count", collection="memories") == 2
    assert (
        sample_value(snap, "memstrata_l3_search_seconds_bucket", collection="memories", le="0.0005")
        == 1
    )


@pytest.mark.parametrize("kind", ADAPTERS)
def test_index_point_count_is_every_tenant_together(kind: str, tmp_path: Path) -> None:
    from memstrata.longterm.points import Point
    from memstrata.longterm.sparse import Bm25Encoder
    from memstrata.testing.embedders import HashEmbedder

    index: VectorIndex = make_index(kind, tmp_path)
    index.ensure_collections(8)
    try:
        embedder, bm25 = HashEmbedder(8), Bm25Encoder()
        points = [
            Point(
                f"00000000-0000-0000-0000-00000000000{i}",
                embedder.embed([text])[0],
                bm25.encode_document(text),
                {
                    "tenant": tenant,
                    "user": "u1",
                    "type": "fact",
                    "text": text,
                    "source": "test",
                    "created_at": 1.0,
                    "updated_at": 1.0,
                },
            )
            for i, (tenant, text) in enumerate(
                [("a", "one fact"), ("a", "two facts"), ("b", "three facts")], start=1
            )
        ]
        index.upsert("memories", points)
        assert index.point_count("memories") == 3
        assert index.point_count("knowledge") == 0
        index.delete("memories", [points[0].id], "a")
        assert index.point_count("memories") == 2
    finally:
        index.close()
