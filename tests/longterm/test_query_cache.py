"""The edge adapter's query cache: per-collection invalidation, racing searches, bound."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memstrata.errors import ValidationError
from memstrata.longterm import edge_requests
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.points import EMPTY_PAYLOAD, KNOWLEDGE, MEMORIES, Filter, ScoredPoint
from memstrata.longterm.query_cache import QueryCache
from memstrata.longterm.sparse import Bm25Encoder

HITS = [ScoredPoint("a", 0.9, {}), ScoredPoint("b", 0.5, {})]


def test_answers_are_kept_per_collection_until_a_write() -> None:
    cache = QueryCache()
    cache.store(MEMORIES, "q", HITS, cache.generation(MEMORIES))
    cache.store(KNOWLEDGE, "q", HITS[:1], cache.generation(KNOWLEDGE))
    found = cache.lookup(MEMORIES, "q")
    assert found == HITS and found is not cache.lookup(MEMORIES, "q")  # a fresh list each time
    cache.invalidate(MEMORIES)
    assert cache.lookup(MEMORIES, "q") is None
    assert cache.lookup(KNOWLEDGE, "q") == HITS[:1]  # another collection keeps its answers


def test_answers_come_back_whole_with_the_same_payloads() -> None:
    payload = {"tenant": "t", "text": "kept by reference"}
    with_payloads = [ScoredPoint("a", 0.9, payload), ScoredPoint("b", 0.5, EMPTY_PAYLOAD)]
    route_list = [ScoredPoint("c", 0.7, EMPTY_PAYLOAD), ScoredPoint("d", 0.1, EMPTY_PAYLOAD)]
    cache = QueryCache()
    cache.store(MEMORIES, "full", with_payloads, 0)
    cache.store(MEMORIES, "ids", route_list, 0)
    cache.store(MEMORIES, "none", [], 0)
    full = cache.lookup(MEMORIES, "full")
    assert full == with_payloads and full is not None and full[0].payload is payload
    assert cache.lookup(MEMORIES, "ids") == route_list
    assert cache.lookup(MEMORIES, "none") == []


def test_a_search_that_raced_a_write_is_not_stored() -> None:
    cache = QueryCache()
    started = cache.generation(MEMORIES)
    cache.invalidate(MEMORIES)  # a write ended while the search ran
    cache.store(MEMORIES, "q", HITS, started)
    assert cache.lookup(MEMORIES, "q") is None


def test_the_oldest_answer_goes_first_and_sizes_are_checked() -> None:
    cache = QueryCache(max_entries=2)
    for key in ("q1", "q2"):
        cache.store(MEMORIES, key, HITS, 0)
    assert cache.lookup(MEMORIES, "q1") is not None  # q1 is now the most recent
    cache.store(MEMORIES, "q3", HITS, 0)
    assert cache.lookup(MEMORIES, "q2") is None and cache.lookup(MEMORIES, "q1") is not None
    with pytest.raises(ValidationError) as err:
        QueryCache(0)
    assert err.value.field == "max_entries"


@pytest.fixture
def cat_index(
    tmp_path: Path, make_point: Any, hash_embedder: Any
) -> Iterator[tuple[EdgeIndex, Any, Filter, QueryCache]]:
    """An edge index holding one acme point about a cat, the query "cat" for acme,
    and the index's query cache."""
    index = EdgeIndex(tmp_path)
    index.ensure_collections(32)
    index.upsert(MEMORIES, [make_point("the cat sat on the warm mat", "acme")])
    cache = index._queries
    assert cache is not None
    yield index, hash_embedder.embed(["cat"])[0], Filter(tenant="acme"), cache
    index.close()


def test_the_edge_index_answers_a_repeated_search_from_the_cache(
    cat_index: tuple[EdgeIndex, Any, Filter, QueryCache], make_point: Any
) -> None:
    index, query, flt, cache = cat_index
    first = index.search_dense(MEMORIES, query, flt, 5)
    assert index.search_dense(MEMORIES, query, flt, 5) == first and cache.hits == 1
    assert index.search_dense(MEMORIES, query, Filter(tenant="globex"), 5) == []  # own key
    index.upsert(MEMORIES, [make_point("a second cat", "acme")])
    assert len(index.search_dense(MEMORIES, query, flt, 5)) == 2 and cache.hits == 1


def test_searches_asked_not_to_reuse_neither_read_nor_fill_the_cache(
    cat_index: tuple[EdgeIndex, Any, Filter, QueryCache],
) -> None:
    index, query, flt, cache = cat_index
    sparse = Bm25Encoder().encode_query("cat")
    fused = {"dense_limit": 5, "sparse_limit": 5, "limit": 5}
    searches = [
        lambda reuse: index.search_dense(MEMORIES, query, flt, 5, reuse=reuse),
        lambda reuse: index.search_sparse(MEMORIES, sparse, flt, 5, reuse=reuse),
        lambda reuse: index.search_fused(MEMORIES, query, sparse, flt, **fused, reuse=reuse),
    ]
    for search in searches:
        first = search(False)
        assert search(False) == first and cache.hits == 0  # not kept
        search(True)
        assert search(False) == first and cache.hits == 0  # kept, but not read
        assert search(True) == first and cache.hits == 1
        cache.hits = 0


def test_a_payload_of_its_own_comes_back_as_itself_even_when_empty() -> None:
    own_empty: dict[str, Any] = {}
    hits = [ScoredPoint("a", 0.9, own_empty), ScoredPoint("b", 0.5, EMPTY_PAYLOAD)]
    cache = QueryCache()
    cache.store(MEMORIES, "q", hits, 0)
    found = cache.lookup(MEMORIES, "q")
    assert found == hits and found is not None
    assert found[0].payload is own_empty and found[1].payload is EMPTY_PAYLOAD


def test_route_lists_carry_the_engine_ids_as_text_as_every_other_read(
    cat_index: tuple[EdgeIndex, Any, Filter, QueryCache], make_point: Any
) -> None:
    index, query, flt, _ = cat_index
    index.upsert(MEMORIES, [make_point(f"cat number {n}", "acme") for n in range(20)])
    edge_requests._ID_TEXTS.clear()  # ids never seen, then seen: the same text
    for _ in range(2):
        route = index.search_dense(MEMORIES, query, flt, 30, with_payload=False, reuse=False)
        full = index.search_dense(MEMORIES, query, flt, 30, reuse=False)
        assert [(p.id, p.score) for p in route] == [(p.id, p.score) for p in full]
        assert len(route) == 21 and all(type(p) is ScoredPoint for p in route)
        assert all(type(p.id) is str and p.payload is EMPTY_PAYLOAD for p in route)
        sparse = index.search_sparse(
            MEMORIES, Bm25Encoder().encode_query("cat"), flt, 30, with_payload=False
        )
        assert {p.id for p in sparse} == {p.id for p in full}
