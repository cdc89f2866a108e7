"""The second named dense vector (``multilingual``) and the ``lang`` condition, on both
VectorIndex adapters (qdrant-edge, and QdrantServerIndex over qdrant-client's local
mode), and an index created before the vector existed: it opens, keeps its data and
reports the vector missing."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray
from qdrant_client import QdrantClient

from memstrata.errors import NotFoundError, ValidationError
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.points import (
    DENSE_VECTOR,
    MEMORIES,
    MULTILINGUAL_VECTOR,
    Filter,
    Point,
)
from memstrata.longterm.protocol import VectorIndex
from memstrata.longterm.qdrant_server import QdrantServerIndex
from memstrata.longterm.sparse import Bm25Encoder

DIM, SECOND = 8, 6
BM25 = Bm25Encoder()


def unit(seed: int, dim: int) -> NDArray[np.float32]:
    vector = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
    return vector / np.linalg.norm(vector)


def point(text: str, seed: int, lang: str, *, second: bool = True, tenant: str = "acme") -> Point:
    payload = {"tenant": tenant, "user": "u1", "type": "fact", "text": text, "lang": lang}
    return Point(
        str(uuid.uuid4()),
        unit(seed, DIM),
        BM25.encode_document(text),
        payload,
        unit(seed + 1000, SECOND) if second else None,
    )


def open_index(kind: str, path: Path) -> VectorIndex:
    if kind == "edge":
        return EdgeIndex(path / "edge")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return QdrantServerIndex(QdrantClient(path=str(path / "local")))


@pytest.fixture(params=["edge", "server"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def index(kind: str, tmp_path: Path) -> Iterator[VectorIndex]:
    opened = open_index(kind, tmp_path)
    opened.ensure_collections(DIM, {MULTILINGUAL_VECTOR: SECOND})
    yield opened
    opened.close()


def test_both_vectors_are_searched_by_name_with_exact_cosines(index: VectorIndex) -> None:
    assert index.named_vectors() == {DENSE_VECTOR: DIM, MULTILINGUAL_VECTOR: SECOND}
    zh, en = point("我对花生过敏", 1, "zh"), point("I live in Hangzhou", 2, "en")
    index.upsert(MEMORIES, [zh, en])
    assert zh.multilingual is not None
    query = unit(1001, SECOND)  # the zh point's second vector
    hits = index.search_dense(MEMORIES, query, Filter(tenant="acme"), 5, using=MULTILINGUAL_VECTOR)
    assert hits[0].id == zh.id and hits[0].score == pytest.approx(1.0, abs=1e-4)
    dense = index.search_dense(MEMORIES, unit(2, DIM), Filter(tenant="acme"), 5)
    assert dense[0].id == en.id and dense[0].score == pytest.approx(1.0, abs=1e-4)
    [record] = index.retrieve(
        MEMORIES, [zh.id], "acme", with_vectors=True, using=MULTILINGUAL_VECTOR
    )
    assert record.dense is not None and np.allclose(record.dense, zh.multilingual, atol=1e-5)
    fused = index.search_fused(
        MEMORIES,
        query,
        BM25.encode_query("Hangzhou"),
        Filter(tenant="acme"),
        dense_limit=5,
        sparse_limit=5,
        limit=5,
        using=MULTILINGUAL_VECTOR,
    )
    assert {p.id for p in fused} == {zh.id, en.id}


def test_the_lang_condition_and_points_without_the_second_vector(index: VectorIndex) -> None:
    zh, mixed = point("我住在杭州", 3, "zh"), point("我用 iPhone 和 Lightroom", 4, "mixed")
    en, bare = (
        point("My brother plays the violin", 5, "en"),
        point("没有第二个向量", 6, "zh", second=False),
    )
    other = point("我住在杭州", 3, "zh", tenant="globex")
    index.upsert(MEMORIES, [zh, mixed, en, bare, other])
    query = unit(5 + 1000, SECOND)
    cross = Filter(tenant="acme", extras=(("lang", ("zh", "mixed")),))
    found = index.search_dense(MEMORIES, query, cross, 10, using=MULTILINGUAL_VECTOR)
    # English points are left out by the condition, a point without the vector by the
    # engine, another tenant's by the tenant rule.
    assert {p.id for p in found} == {zh.id, mixed.id}
    every = index.search_dense(
        MEMORIES, query, Filter(tenant="acme"), 10, using=MULTILINGUAL_VECTOR
    )
    assert {p.id for p in every} == {zh.id, mixed.id, en.id}
    assert index.count(MEMORIES, Filter(tenant="acme", extras=(("lang", "en"),))) == 1
    dense = index.search_dense(MEMORIES, unit(6, DIM), Filter(tenant="acme"), 10)
    assert bare.id in {p.id for p in dense}


def test_wrong_names_and_sizes_are_refused(index: VectorIndex) -> None:
    with pytest.raises(ValidationError) as bad_name:
        index.search_dense(MEMORIES, unit(1, DIM), Filter(tenant="acme"), 3, using="bogus")
    assert bad_name.value.field == "using"
    with pytest.raises(ValidationError):
        index.search_dense(
            MEMORIES, unit(1, DIM), Filter(tenant="acme"), 3, using=MULTILINGUAL_VECTOR
        )
    wrong = Point(
        str(uuid.uuid4()),
        unit(1, DIM),
        BM25.encode_document("x"),
        {"tenant": "acme", "text": "x"},
        unit(1, SECOND + 1),
    )
    with pytest.raises(ValidationError) as bad_size:
        index.upsert(MEMORIES, [wrong])
    assert bad_size.value.field == MULTILINGUAL_VECTOR
    assert index.count(MEMORIES, Filter(tenant="acme")) == 0


def test_an_index_created_without_the_second_vector_opens_as_it_was(
    kind: str, tmp_path: Path
) -> None:
    old = open_index(kind, tmp_path)
    old.ensure_collections(DIM)
    kept = point("I live in Hangzhou", 7, "en", second=False)
    old.upsert(MEMORIES, [kept])
    old.close()

    reopened = open_index(kind, tmp_path)
    try:
        reopened.ensure_collections(DIM, {MULTILINGUAL_VECTOR: SECOND})
        assert reopened.named_vectors() == {DENSE_VECTOR: DIM}
        hits = reopened.search_dense(MEMORIES, unit(7, DIM), Filter(tenant="acme"), 3)
        assert [h.id for h in hits] == [kept.id]
        with pytest.raises(NotFoundError, match="rebuild"):
            reopened.search_dense(
                MEMORIES, unit(1, SECOND), Filter(tenant="acme"), 3, using=MULTILINGUAL_VECTOR
            )
        with pytest.raises(ValidationError):
            reopened.upsert(MEMORIES, [point("新的", 8, "zh")])
        reopened.upsert(MEMORIES, [point("still written", 9, "en", second=False)])
        assert reopened.count(MEMORIES, Filter(tenant="acme")) == 2
    finally:
        reopened.close()


def test_a_purge_keeps_the_second_vector(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path / "edge")
    index.ensure_collections(DIM, {MULTILINGUAL_VECTOR: SECOND})
    try:
        kept, gone = point("我住在杭州", 10, "zh"), point("我对花生过敏", 11, "zh")
        index.upsert(MEMORIES, [kept, gone])
        index.delete(MEMORIES, [gone.id], "acme")
        index.purge()
        hits = index.search_dense(
            MEMORIES, unit(1010, SECOND), Filter(tenant="acme"), 3, using=MULTILINGUAL_VECTOR
        )
        assert [h.id for h in hits] == [kept.id]
        assert hits[0].score == pytest.approx(1.0, abs=1e-4)
        assert index.named_vectors() == {DENSE_VECTOR: DIM, MULTILINGUAL_VECTOR: SECOND}
    finally:
        index.close()


def test_update_vectors_fills_only_points_lacking_the_vector(index: VectorIndex) -> None:
    """Issue 33's catch-up primitives on both adapters: ``lacks_vector`` finds the
    points written without the second vector; ``update_vectors`` sets it alone
    (payload and ``dense`` kept), never on a point that has one, another tenant's or
    a deleted one."""
    bare, full = point("I live in Hangzhou", 7, "en", second=False), point("我住在杭州", 8, "zh")
    gone = point("deleted soon", 9, "en", second=False)
    foreign = point("I live in Hangzhou", 7, "en", second=False, tenant="globex")
    index.upsert(MEMORIES, [bare, full, gone, foreign])
    index.delete(MEMORIES, [gone.id], "acme")
    lacking = Filter(tenant="acme", lacks_vector=MULTILINGUAL_VECTOR)
    assert [r.id for r in index.scroll(MEMORIES, lacking, limit=10)[0]] == [bare.id]
    assert index.count(MEMORIES, lacking) == 1
    row, other = unit(2007, SECOND), unit(2008, SECOND)
    index.update_vectors(
        MEMORIES,
        "acme",
        MULTILINGUAL_VECTOR,
        {bare.id: row, full.id: other, gone.id: row, foreign.id: row},
    )
    assert index.count(MEMORIES, lacking) == 0
    vectors = {
        r.id: r.dense
        for r in index.retrieve(
            MEMORIES, [bare.id, full.id], "acme", with_vectors=True, using=MULTILINGUAL_VECTOR
        )
    }
    assert np.allclose(vectors[bare.id], row, atol=1e-5)
    assert full.multilingual is not None
    assert np.allclose(vectors[full.id], full.multilingual, atol=1e-5)
    [record] = index.retrieve(MEMORIES, [bare.id], "acme", with_vectors=True)
    assert record.dense is not None and np.allclose(record.dense, bare.dense, atol=1e-5)
    assert dict(record.payload) == dict(bare.payload)
    assert index.count(MEMORIES, Filter(tenant="globex", lacks_vector=MULTILINGUAL_VECTOR)) == 1
    assert index.count(MEMORIES, Filter(tenant="acme")) == 2
