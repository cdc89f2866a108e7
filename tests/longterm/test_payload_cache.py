"""The edge adapter's payload cache: LRU bound, invalidation, racing readers."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memstrata.errors import ValidationError
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.payload_cache import PayloadCache
from memstrata.longterm.points import MEMORIES, Filter


def test_lookup_store_and_lru_bound() -> None:
    cache = PayloadCache(max_entries=2)
    cache.store(MEMORIES, {"a": {"n": 1}, "b": {"n": 2}}, cache.generation)
    found, missing = cache.lookup(MEMORIES, ["a", "c"])
    assert found == {"a": {"n": 1}} and missing == ["c"]
    cache.store(MEMORIES, {"c": {"n": 3}}, cache.generation)  # evicts b, the least recent
    assert cache.lookup(MEMORIES, ["a", "b", "c"])[1] == ["b"]
    assert len(cache) == 2 and (cache.hits, cache.misses) == (3, 2)
    assert cache.lookup("knowledge", ["a"])[1] == ["a"]  # collections are apart


def test_a_read_that_raced_a_write_is_not_stored() -> None:
    cache = PayloadCache()
    before = cache.generation  # a reader starts
    cache.invalidate(MEMORIES, ["a"])  # a write ends meanwhile
    cache.store(MEMORIES, {"a": {"text": "old"}}, before)  # the reader read the old value
    assert cache.lookup(MEMORIES, ["a"])[1] == ["a"]
    cache.store(MEMORIES, {"a": {"text": "new"}}, cache.generation)
    assert cache.lookup(MEMORIES, ["a"])[0] == {"a": {"text": "new"}}
    cache.invalidate(MEMORIES, ["a"])
    assert cache.lookup(MEMORIES, ["a"])[1] == ["a"]


def test_an_upsert_reads_its_payloads_back_as_the_engine_returns_them(
    tmp_path: Path, make_point: Any
) -> None:
    index = EdgeIndex(tmp_path, query_cache_entries=0)
    index.ensure_collections(32)
    points = [make_point(f"note {i}", "acme", created_at=float(i)) for i in range(3)]
    index.upsert(MEMORIES, points)
    cache = index._payloads
    assert cache is not None and len(cache) == 3
    assert cache.holds_all(MEMORIES, [p.id for p in points])
    assert not cache.holds_all(MEMORIES, [points[0].id, str(uuid.uuid4())])
    cached, missing = cache.lookup(MEMORIES, [p.id for p in points])
    assert missing == []
    # with_vectors bypasses the cache: the engine's own decoding of the same points
    engine = {
        r.id: r.payload
        for r in index.retrieve(MEMORIES, [p.id for p in points], "acme", with_vectors=True)
    }
    assert {i: dict(p) for i, p in cached.items()} == {i: dict(p) for i, p in engine.items()}
    # A rewrite replaces the cached payload with the new one.
    index.upsert(MEMORIES, [make_point("note 0, edited", "acme", point_id=points[0].id)])
    (record,) = index.retrieve(MEMORIES, [points[0].id], "acme")
    assert record.payload["text"] == "note 0, edited"
    index.close()


def _typed(value: Any) -> Any:
    """A payload value with its types spelled out (1 and 1.0 and True differ)."""
    if isinstance(value, Mapping):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return (type(value).__name__, [_typed(v) for v in value])
    return (type(value).__name__, value)


def test_the_payloads_cached_at_a_write_are_the_ones_the_engine_returns(
    tmp_path: Path, make_point: Any
) -> None:
    """A write caches its points' own payloads instead of reading them back; nested
    values of every JSON type (lists, maps, ints, floats, bools, None, empty lists,
    Chinese text) come out of the cache exactly as the engine decodes them."""
    index = EdgeIndex(tmp_path, query_cache_entries=0)
    index.ensure_collections(32)
    extra = {
        "facts": ["a", "b"],
        "empty": [],
        "seq": 3,
        "confidence": 1.0,
        "importance": 0.25,
        "active": True,
        "valid_to": None,
        "nested": {"at": 1735689600.5, "by": ["x", {"deep": [1, 2.5, False]}]},
        "value": "杭州 Hangzhou",
    }
    points = [make_point(f"note {i}", "acme", seq_no=i, **extra) for i in range(3)]
    index.upsert(MEMORIES, points)
    cache = index._payloads
    assert cache is not None
    cached, missing = cache.lookup(MEMORIES, [p.id for p in points])
    assert missing == []
    engine = {
        r.id: r.payload
        for r in index.retrieve(MEMORIES, [p.id for p in points], "acme", with_vectors=True)
    }
    assert {i: _typed(p) for i, p in cached.items()} == {i: _typed(p) for i, p in engine.items()}
    index.close()


def test_bad_sizes_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(ValidationError) as err:
        PayloadCache(0)
    assert err.value.field == "max_entries"
    with pytest.raises(ValidationError) as err:
        EdgeIndex(tmp_path, payload_cache_entries=-1)
    assert err.value.field == "payload_cache_entries"
    with pytest.raises(ValidationError) as err:
        EdgeIndex(tmp_path, query_cache_entries=-1)
    assert err.value.field == "query_cache_entries"


def test_warm_reads_come_from_the_cache_and_off_means_off(
    tmp_path: Path, make_point: Any, hash_embedder: Any
) -> None:
    point = make_point("the cat sat on the warm mat", "acme")
    query = hash_embedder.embed(["cat"])[0]
    for entries, expect_cached in ((1000, True), (0, False)):
        # The query cache off: a repeated search must reach the payload cache.
        index = EdgeIndex(
            tmp_path / str(entries), payload_cache_entries=entries, query_cache_entries=0
        )
        index.ensure_collections(32)
        index.upsert(MEMORIES, [point])
        # An id-filtered read (the retriever's pool read): the upsert read the payload
        # back into the cache, so both reads find it there.
        by_id = Filter(tenant="acme", ids=(point.id,))
        first = index.search_dense(MEMORIES, query, by_id, 5)
        second = index.search_dense(MEMORIES, query, by_id, 5)
        assert [dict(p.payload) for p in first] == [dict(p.payload) for p in second]
        assert first[0].score == pytest.approx(float(np.dot(point.dense, query)), abs=1e-5)
        cache = index._payloads
        assert (cache is not None and cache.hits == 2) is expect_cached
        index.close()


def test_large_searches_use_the_cache_small_ones_decode_in_the_engine(
    tmp_path: Path, make_point: Any, hash_embedder: Any
) -> None:
    points = [make_point(f"note number {i} about cats", "acme") for i in range(80)]
    index = EdgeIndex(tmp_path, query_cache_entries=0)
    index.ensure_collections(32)
    index.upsert(MEMORIES, points)
    query = hash_embedder.embed(["cats"])[0]
    cache = index._payloads
    assert cache is not None
    cache.clear()  # cold, as after a restart or a bulk load
    small = index.search_dense(MEMORIES, query, Filter(tenant="acme"), 10)
    assert len(small) == 10 and cache.hits == 0 and len(cache) == 10  # kept, not asked
    large = index.search_dense(MEMORIES, query, Filter(tenant="acme"), 80)
    assert len(large) == 80 and cache.hits == 10 and cache.misses == 70
    again = index.search_dense(MEMORIES, query, Filter(tenant="acme"), 80)
    assert [dict(p.payload) for p in again] == [dict(p.payload) for p in large]
    assert cache.hits == 90
    index.close()
