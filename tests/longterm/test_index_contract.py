"""One contract suite for every VectorIndex adapter (qdrant-edge and qdrant-client).

Runs against EdgeIndex on tmp_path and QdrantServerIndex on local mode, failures
included: both must raise the same memstrata exception types.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from qdrant_client import QdrantClient

from memstrata.embed.protocol import Embedder
from memstrata.errors import BackendUnavailableError, NotFoundError, ValidationError
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.fusion import rrf
from memstrata.longterm.points import KNOWLEDGE, MEMORIES, Filter, Point, ScoredPoint, SparseVector
from memstrata.longterm.protocol import VectorIndex
from memstrata.longterm.qdrant_server import QdrantServerIndex
from memstrata.longterm.sparse import Bm25Encoder

BM25 = Bm25Encoder()
IndexFactory = Callable[[str, Path], VectorIndex]
PointFactory = Callable[..., Point]


def ids(points: Any) -> list[str]:
    return [p.id for p in points]


@pytest.fixture
def seeded(index: VectorIndex, make_point: PointFactory) -> dict[str, Point]:
    pts = {
        "a_cat": make_point("the cat sat on the warm mat", "acme", created_at=10.0),
        "a_dog": make_point("a dog chased the red ball", "acme", user="u2", type_="event"),
        "a_rare": make_point("invoice zx81q overdue since march", "acme", created_at=300.0),
        "b_cat": make_point("the cat sat on the warm mat", "globex", created_at=10.0),
        "b_rare": make_point("invoice zx81q paid", "globex", lang="en"),
    }
    index.upsert(MEMORIES, list(pts.values()))
    return pts


def test_dense_search_is_tenant_scoped_and_scores_are_cosines(
    index: VectorIndex, seeded: dict[str, Point], hash_embedder: Embedder
) -> None:
    query = hash_embedder.embed(["cat on a mat"])[0]
    hits = index.search_dense(MEMORIES, query, Filter(tenant="acme"), 10, ef=64)
    assert set(ids(hits)) == {seeded[k].id for k in ("a_cat", "a_dog", "a_rare")}
    assert hits[0].id == seeded["a_cat"].id
    for hit in hits:
        stored = next(p for p in seeded.values() if p.id == hit.id)
        assert hit.score == pytest.approx(float(np.dot(stored.dense, query)), abs=1e-5)
        assert hit.payload["tenant"] == "acme"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_sparse_search_finds_rare_token_within_tenant(
    index: VectorIndex, seeded: dict[str, Point]
) -> None:
    hits = index.search_sparse(MEMORIES, BM25.encode_query("zx81q"), Filter(tenant="acme"), 10)
    assert ids(hits) == [seeded["a_rare"].id]
    assert hits[0].score > 0
    assert (
        index.search_sparse(MEMORIES, BM25.encode_query("the of"), Filter(tenant="acme"), 5) == []
    )


def test_sparse_idf_ignores_other_tenants(
    tmp_path: Path, make_index: IndexFactory, make_point: PointFactory
) -> None:
    # The same acme data scores the same whether or not globex is full of "invoice".
    scores = []
    for extra_docs in (0, 20):
        idx = make_index("edge", tmp_path / f"idf{extra_docs}")
        idx.ensure_collections(32)
        docs = [make_point("invoice overdue", "acme"), make_point("lunch menu", "acme")]
        docs += [make_point(f"invoice {i}", "globex") for i in range(extra_docs)]
        idx.upsert(MEMORIES, docs)
        hits = idx.search_sparse(MEMORIES, BM25.encode_query("invoice"), Filter(tenant="acme"), 5)
        scores.append(hits[0].score)
        idx.close()
    assert scores[0] == pytest.approx(scores[1])


def test_routes_can_skip_payloads(
    index: VectorIndex, seeded: dict[str, Point], hash_embedder: Embedder
) -> None:
    flt = Filter(tenant="acme")
    dense = index.search_dense(
        MEMORIES, hash_embedder.embed(["cat"])[0], flt, 5, with_payload=False
    )
    sparse = index.search_sparse(MEMORIES, BM25.encode_query("zx81q"), flt, 5, with_payload=False)
    assert len(dense) == 3 and ids(sparse) == [seeded["a_rare"].id]
    assert all(dict(p.payload) == {} for p in [*dense, *sparse])


def test_fused_search_scores_as_python_rrf_within_the_tenant(
    index: VectorIndex, seeded: dict[str, Point], hash_embedder: Embedder
) -> None:
    query = hash_embedder.embed(["invoice zx81q cat"])[0]
    sparse_query = BM25.encode_query("invoice zx81q")
    flt = Filter(tenant="acme")
    fused = index.search_fused(
        MEMORIES, query, sparse_query, flt, dense_limit=10, sparse_limit=10, limit=10
    )
    dense = index.search_dense(MEMORIES, query, flt, 10)
    sparse = index.search_sparse(MEMORIES, sparse_query, flt, 10)
    expected = rrf([[(p.id, p.score) for p in dense], [(p.id, p.score) for p in sparse]])
    assert sorted(ids(fused)) == sorted(f.id for f in expected)  # acme's three, no globex
    assert {p.id: p.score for p in fused} == pytest.approx({f.id: f.score for f in expected})
    assert fused[0].id == seeded["a_rare"].id  # first in both routes
    assert all(not p.payload for p in fused)  # ids and scores only
    top2 = index.search_fused(
        MEMORIES, query, sparse_query, flt, dense_limit=10, sparse_limit=10, limit=2
    )
    assert [(p.id, p.score) for p in top2] == [(p.id, p.score) for p in fused[:2]]
    # Without BM25 terms the dense route alone is fused.
    alone = index.search_fused(
        MEMORIES, query, BM25.encode_query("the of"), flt, dense_limit=2, sparse_limit=5, limit=5
    )
    assert ids(alone) == ids(dense)[:2]


def test_filters_user_types_time_and_extras(
    index: VectorIndex, seeded: dict[str, Point], hash_embedder: Embedder
) -> None:
    q = hash_embedder.embed(["anything"])[0]

    def found(flt: Filter) -> set[str]:
        return set(ids(index.search_dense(MEMORIES, q, flt, 10)))

    assert found(Filter(tenant="acme", user="u2")) == {seeded["a_dog"].id}
    assert found(Filter(tenant="acme", types=("event",))) == {seeded["a_dog"].id}
    assert found(Filter(tenant="acme", types=("fact", "event"))) == {
        seeded[k].id for k in ("a_cat", "a_dog", "a_rare")
    }
    assert found(Filter(tenant="acme", created_after=200.0)) == {seeded["a_rare"].id}
    assert found(Filter(tenant="acme", created_before=50.0)) == {seeded["a_cat"].id}
    assert found(Filter(tenant="globex", extras=(("lang", "en"),))) == {seeded["b_rare"].id}
    assert found(Filter(tenant="nobody")) == set()
    two = (seeded["a_cat"].id, seeded["b_cat"].id)
    assert found(Filter(tenant="acme", ids=two)) == {seeded["a_cat"].id}


def test_count(index: VectorIndex, seeded: dict[str, Point]) -> None:
    assert index.count(MEMORIES, Filter(tenant="acme")) == 3
    assert index.count(MEMORIES, Filter(tenant="acme", user="u1")) == 2
    assert index.count(MEMORIES, Filter(tenant="globex")) == 2
    assert index.count("knowledge", Filter(tenant="acme")) == 0


def test_retrieve_only_returns_own_tenant(index: VectorIndex, seeded: dict[str, Point]) -> None:
    wanted = [seeded["a_rare"].id, seeded["b_cat"].id, seeded["a_cat"].id, str(uuid.uuid4())]
    records = index.retrieve(MEMORIES, wanted, "acme")
    assert ids(records) == [seeded["a_rare"].id, seeded["a_cat"].id]  # order of the request
    assert records[0].payload["text"] == "invoice zx81q overdue since march"
    assert records[0].dense is None
    assert index.retrieve(MEMORIES, [seeded["a_cat"].id], "globex") == []


def test_retrieve_with_vectors(index: VectorIndex, seeded: dict[str, Point]) -> None:
    (record,) = index.retrieve(MEMORIES, [seeded["a_dog"].id], "acme", with_vectors=True)
    assert record.dense is not None
    np.testing.assert_allclose(record.dense, seeded["a_dog"].dense, atol=1e-6)


def test_delete_is_tenant_scoped(index: VectorIndex, seeded: dict[str, Point]) -> None:
    index.delete(MEMORIES, [seeded["a_cat"].id], "globex")  # not globex's point
    assert index.count(MEMORIES, Filter(tenant="acme")) == 3
    index.delete(MEMORIES, [seeded["a_cat"].id, seeded["b_cat"].id], "acme")
    assert index.count(MEMORIES, Filter(tenant="acme")) == 2
    assert index.count(MEMORIES, Filter(tenant="globex")) == 2
    index.delete(MEMORIES, [], "acme")


def test_upsert_same_id_replaces(
    index: VectorIndex, seeded: dict[str, Point], make_point: PointFactory
) -> None:
    pid = seeded["a_cat"].id
    index.upsert(MEMORIES, [make_point("the cat moved to the sofa", "acme", point_id=pid)])
    assert index.count(MEMORIES, Filter(tenant="acme")) == 3
    (record,) = index.retrieve(MEMORIES, [pid], "acme")
    assert record.payload["text"] == "the cat moved to the sofa"


def test_ensure_collections_is_idempotent_and_checks_dim(index: VectorIndex) -> None:
    index.ensure_collections(32)
    with pytest.raises(ValidationError) as err:
        index.ensure_collections(16)
    assert err.value.field == "dim"


def test_bad_input_raises_the_same_errors(index: VectorIndex) -> None:
    with pytest.raises(ValidationError) as err:
        index.upsert(
            MEMORIES,
            [Point(str(uuid.uuid4()), np.ones(8), BM25.encode_document("x"), {"tenant": "t"})],
        )
    assert err.value.field == "dense"
    with pytest.raises(ValidationError) as err:
        index.search_dense(MEMORIES, np.ones(8, dtype=np.float32), Filter(tenant="t"), 5)
    assert err.value.field == "vector"
    with pytest.raises(ValidationError) as err:
        index.search_dense(MEMORIES, np.ones(32, dtype=np.float32), Filter(tenant="t"), 0)
    assert err.value.field == "limit"
    with pytest.raises(ValidationError) as err:
        index.retrieve(MEMORIES, ["not-a-uuid"], "t")
    assert err.value.field == "ids"
    with pytest.raises(ValidationError) as err:
        index.delete(MEMORIES, [str(uuid.uuid4())], "")
    assert err.value.field == "tenant"
    with pytest.raises(NotFoundError):
        index.count("nope", Filter(tenant="t"))


@pytest.mark.parametrize("kind", ["edge", "server"])
def test_lifecycle_errors(kind: str, tmp_path: Path, make_index: IndexFactory) -> None:
    idx = make_index(kind, tmp_path)
    with pytest.raises(NotFoundError):
        idx.count(MEMORIES, Filter(tenant="t"))  # collections not ensured yet
    idx.ensure_collections(32)
    idx.optimize()
    idx.close()
    idx.close()  # idempotent
    with pytest.raises(BackendUnavailableError):
        idx.count(MEMORIES, Filter(tenant="t"))


def test_filter_requires_a_tenant() -> None:
    for bad in ("", None, "bad tenant", "{slot}"):
        with pytest.raises(ValidationError) as err:
            Filter(tenant=bad)  # type: ignore[arg-type]
        assert err.value.field == "tenant"


def test_edge_reopen_keeps_points(tmp_path: Path, make_point: PointFactory) -> None:
    first = EdgeIndex(tmp_path / "store")
    first.ensure_collections(32)
    pts = [make_point(f"note number {i} about topic {i % 3}", "acme") for i in range(25)]
    first.upsert(MEMORIES, pts)
    first.optimize()
    first.close()

    second = EdgeIndex(tmp_path / "store")
    second.ensure_collections(32)
    assert second.count(MEMORIES, Filter(tenant="acme")) == 25
    (record,) = second.retrieve(MEMORIES, [pts[7].id], "acme")
    assert record.payload["text"] == "note number 7 about topic 1"
    hits = second.search_sparse(MEMORIES, BM25.encode_query("number 7"), Filter(tenant="acme"), 3)
    assert hits[0].id == pts[7].id
    with pytest.raises(ValidationError):
        EdgeIndex(tmp_path / "store").ensure_collections(16)
    second.close()


@pytest.mark.parametrize("kind", ["edge", "server"])
def test_an_index_of_another_bm25_tokenizer_is_refused(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stored BM25 vectors of an older tokenizer would match fewer words without a sign."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # local mode's no-op payload index warnings
        client = QdrantClient(location=":memory:")

    def open_index() -> VectorIndex:
        return EdgeIndex(tmp_path / "edge") if kind == "edge" else QdrantServerIndex(client)

    # Where each adapter names its BM25 vector (the embedded one: its shards and the
    # layout its collections record).
    modules = (
        ["memstrata.longterm.edge_shards", "memstrata.longterm.edge_parts"]
        if kind == "edge"
        else ["memstrata.longterm.qdrant_server"]
    )
    with monkeypatch.context() as patched:
        for module in modules:
            patched.setattr(f"{module}.SPARSE_VECTOR", "bm25")  # the old tokenizer's name
        old = open_index()
        old.ensure_collections(32)
        if kind == "edge":
            old.close()
    with pytest.raises(ValidationError) as err:
        open_index().ensure_collections(32)
    assert err.value.field == "sparse_vectors"
    assert "(bm25)" in str(err.value) and "rebuild" in str(err.value)
    client.close()


def _tie_groups(points: list[ScoredPoint]) -> list[tuple[float, frozenset[str]]]:
    groups: dict[float, set[str]] = {}
    for point in points:
        groups.setdefault(round(point.score, 6), set()).add(point.id)
    return [(score, frozenset(found)) for score, found in sorted(groups.items(), reverse=True)]


def test_both_adapters_return_same_ids_in_same_order(
    tmp_path: Path, make_index: IndexFactory
) -> None:
    rng = np.random.default_rng(7)
    vocab = [f"w{i}" for i in range(40)]
    points = []
    for i in range(120):
        words = rng.choice(vocab, size=int(rng.integers(3, 15)))
        text = " ".join(words)
        vec = rng.normal(size=32).astype(np.float32)
        payload = {
            "tenant": f"t{i % 3}",
            "user": f"u{i % 2}",
            "type": "fact",
            "text": text,
            "source": "s",
            "created_at": float(i),
            "updated_at": float(i),
        }
        # BM25 weights jittered: equal texts' lengths and counts would tie their scores.
        bm25 = BM25.encode_document(text)
        jitter = rng.uniform(0.5, 1.5, size=len(bm25.values))
        sparse = SparseVector(
            bm25.indices, tuple(float(v * j) for v, j in zip(bm25.values, jitter, strict=True))
        )
        points.append(Point(str(uuid.uuid4()), vec, sparse, payload))
    adapters = [make_index(kind, tmp_path / kind) for kind in ("edge", "server")]
    for adapter in adapters:
        adapter.ensure_collections(32)
        adapter.upsert(MEMORIES, points)
    compared = fused_compared = 0
    for q in range(12):
        flt = Filter(tenant=f"t{q % 3}", user=f"u{q % 2}" if q % 4 == 0 else None)
        qvec = rng.normal(size=32).astype(np.float32)
        qtext = " ".join(rng.choice(vocab, size=2))
        dense = [a.search_dense(MEMORIES, qvec, flt, 11, ef=256) for a in adapters]
        sparse = [a.search_sparse(MEMORIES, BM25.encode_query(qtext), flt, 11) for a in adapters]
        for pair in (dense, sparse):
            scores = [round(p.score, 4) for p in pair[0]]
            if len(set(scores)) < len(scores):
                continue  # an exact tie may legitimately be ordered either way
            assert ids(pair[0]) == ids(pair[1])
            np.testing.assert_allclose(
                [p.score for p in pair[0]], [p.score for p in pair[1]], rtol=1e-4
            )
            compared += 1
        routes = [
            adapters[0].search_dense(MEMORIES, qvec, flt, 50, ef=256),
            adapters[0].search_sparse(MEMORIES, BM25.encode_query(qtext), flt, 50),
        ]
        if any(len({round(p.score, 4) for p in r}) < len(r) for r in routes):
            continue  # tied route ranks may differ, and so would the fused scores
        fused = [
            a.search_fused(
                MEMORIES,
                qvec,
                BM25.encode_query(qtext),
                flt,
                # Deeper than a tenant's 40 points: the route lists are never cut.
                dense_limit=50,
                sparse_limit=50,
                limit=8,
                ef=256,
            )
            for a in adapters
        ]
        # RRF ties are common (dense rank r alone, BM25 rank r alone) and either
        # order is right: compare the tie groups, all but the last (which limit cuts).
        groups = [_tie_groups(points) for points in fused]
        assert groups[0][:-1] == groups[1][:-1]
        twins = {p.id: p.score for p in fused[1]}
        for point in fused[0]:
            if point.id in twins:
                assert point.score == pytest.approx(twins[point.id], rel=1e-5)
        fused_compared += 1
    # The tie escape hatches must not hollow the test out.
    assert compared >= 20 and fused_compared >= 10, (compared, fused_compared)
    for adapter in adapters:
        adapter.close()


def test_edge_concurrent_writes_and_reads(tmp_path: Path, make_point: PointFactory) -> None:
    idx = EdgeIndex(tmp_path / "concurrent")
    idx.ensure_collections(32)
    query = make_point("probe text", "acme").dense

    def writer(n: int) -> None:
        for i in range(10):
            idx.upsert(MEMORIES, [make_point(f"writer {n} item {i}", "acme")])

    def reader(_: int) -> None:
        for _ in range(20):
            idx.search_dense(MEMORIES, query, Filter(tenant="acme"), 5)
            idx.search_sparse(MEMORIES, BM25.encode_query("item"), Filter(tenant="acme"), 5)

    with ThreadPoolExecutor(max_workers=6) as pool:
        futures = [pool.submit(writer, n) for n in range(3)]
        futures += [pool.submit(reader, n) for n in range(3)]
        for future in futures:
            future.result()
    assert idx.count(MEMORIES, Filter(tenant="acme")) == 30
    idx.close()


def _read_everything(index: VectorIndex, pid: str, tenant: str, query: Any) -> list[Any]:
    """The payload of ``pid`` as every read path returns it (None where absent)."""
    flt = Filter(tenant=tenant)
    dense = {p.id: p.payload for p in index.search_dense(MEMORIES, query, flt, 10)}
    sparse_query = BM25.encode_query("cat sofa mat")
    sparse = {p.id: p.payload for p in index.search_sparse(MEMORIES, sparse_query, flt, 10)}
    by_id = {r.id: r.payload for r in index.retrieve(MEMORIES, [pid], tenant)}
    fused = index.search_fused(
        MEMORIES, query, sparse_query, flt, dense_limit=10, sparse_limit=10, limit=10
    )
    # The fused route carries ids only: the point is there or not.
    assert (pid in {p.id for p in fused}) == (dense.get(pid) is not None)
    return [dense.get(pid), sparse.get(pid), by_id.get(pid)]


def test_reads_after_writes_never_see_an_old_payload(
    index: VectorIndex,
    seeded: dict[str, Point],
    make_point: PointFactory,
    hash_embedder: Embedder,
) -> None:
    # The edge adapter keeps payloads it has read and the answers of identical
    # searches; every path must see each write.
    pid = seeded["a_cat"].id
    query = hash_embedder.embed(["cat on a mat"])[0]
    for _ in range(2):  # the second round reads from a warm cache
        assert [p["text"] for p in _read_everything(index, pid, "acme", query)] == [
            "the cat sat on the warm mat"
        ] * 3
    index.upsert(MEMORIES, [make_point("the cat moved to the sofa", "acme", point_id=pid)])
    for _ in range(2):
        assert [p["text"] for p in _read_everything(index, pid, "acme", query)] == [
            "the cat moved to the sofa"
        ] * 3
    index.delete(MEMORIES, [pid], "acme")
    assert _read_everything(index, pid, "acme", query) == [None] * 3


def test_a_read_payload_is_never_served_to_another_tenant(
    index: VectorIndex, seeded: dict[str, Point], hash_embedder: Embedder
) -> None:
    query = hash_embedder.embed(["cat on a mat"])[0]
    own = seeded["a_cat"].id
    assert _read_everything(index, own, "acme", query)[2] is not None  # now cached
    assert _read_everything(index, own, "globex", query) == [None] * 3


def test_an_identical_search_sees_points_written_since(
    index: VectorIndex, seeded: dict[str, Point], make_point: PointFactory, hash_embedder: Embedder
) -> None:
    query = hash_embedder.embed(["cat on a mat"])[0]
    sparse_query = BM25.encode_query("cat mat")
    flt = Filter(tenant="acme")

    def everything() -> list[set[str]]:
        return [
            set(ids(index.search_dense(MEMORIES, query, flt, 10))),
            set(ids(index.search_sparse(MEMORIES, sparse_query, flt, 10))),
            set(
                ids(
                    index.search_fused(
                        MEMORIES,
                        query,
                        sparse_query,
                        flt,
                        dense_limit=10,
                        sparse_limit=10,
                        limit=10,
                    )
                )
            ),
        ]

    before = everything()
    assert everything() == before  # asked twice, answered the same
    new = make_point("another cat on another mat", "acme")
    index.upsert(MEMORIES, [new])
    after = everything()
    assert all(new.id in found for found in after)
    index.delete(MEMORIES, [new.id], "acme")
    assert everything() == before
    index.upsert("knowledge", [make_point("cat facts", "acme")])  # another collection
    assert everything() == before


def test_the_answer_generation_moves_with_every_write_and_is_refused_once_closed(
    index: VectorIndex, make_point: PointFactory
) -> None:
    """Store-level answers are reused only while it stands still: the embedded index
    bumps a collection's number on each write to it (not on another's) and has
    none once closed; the server adapter cannot see other clients' writes and says None."""
    # A server's counts are every process's (the health report does not add them up).
    assert index.shared is isinstance(index, QdrantServerIndex)
    if isinstance(index, QdrantServerIndex):
        index.upsert(MEMORIES, [make_point("x", "acme")])
        assert index.answer_generation(MEMORIES) is None
    else:
        _generations_move(index, make_point)
    index.close()  # no number at all: an answer kept from before must not be served
    with pytest.raises(BackendUnavailableError):
        index.answer_generation(KNOWLEDGE)


def _generations_move(index: VectorIndex, make_point: PointFactory) -> None:
    start = index.answer_generation(MEMORIES)
    other = index.answer_generation(KNOWLEDGE)
    assert start is not None and index.answer_generation(MEMORIES) == start  # reads keep it
    point = make_point("cat on a mat", "acme")
    index.upsert(MEMORIES, [point])
    after_upsert = index.answer_generation(MEMORIES)
    assert after_upsert not in (None, start)
    assert index.answer_generation(KNOWLEDGE) == other
    index.delete(MEMORIES, [point.id], "acme")
    assert index.answer_generation(MEMORIES) not in (None, after_upsert)


# --- forget: delete by filter, purge --------------------------------------------------


def test_delete_where_deletes_the_filters_points_only_and_counts_them(
    index: VectorIndex, seeded: dict[str, Point]
) -> None:
    assert index.delete_where(MEMORIES, Filter(tenant="acme", user="u1")) == 2
    assert ids(index.scroll(MEMORIES, Filter(tenant="acme"), limit=10)[0]) == [seeded["a_dog"].id]
    assert index.count(MEMORIES, Filter(tenant="globex")) == 2  # same user id, other tenant
    assert index.delete_where(MEMORIES, Filter(tenant="acme", user="u1")) == 0
    # Every condition of the filter holds, the tenant first: another tenant's id is
    # never deleted through it.
    foreign = (seeded["b_cat"].id, seeded["a_dog"].id)
    assert index.delete_where(MEMORIES, Filter(tenant="acme", ids=foreign)) == 1
    assert index.delete_where(MEMORIES, Filter(tenant="globex", extras=(("lang", "en"),))) == 1
    assert ids(index.scroll(MEMORIES, Filter(tenant="globex"), limit=10)[0]) == [seeded["b_cat"].id]
    assert index.delete_where(KNOWLEDGE, Filter(tenant="globex")) == 0


def test_delete_where_refuses_what_is_not_a_filter(index: VectorIndex) -> None:
    for bad in (None, "acme", {"tenant": "acme"}):
        with pytest.raises(ValidationError) as err:
            index.delete_where(MEMORIES, bad)  # type: ignore[arg-type]
        assert err.value.field == "filter"
    with pytest.raises(NotFoundError):
        index.delete_where("nope", Filter(tenant="acme"))


def test_points_deleted_by_filter_are_gone_from_every_read_path(
    index: VectorIndex, seeded: dict[str, Point], hash_embedder: Embedder
) -> None:
    # Read twice first, so the edge adapter's caches hold the point and the answers.
    pid = seeded["a_cat"].id
    query = hash_embedder.embed(["cat on a mat"])[0]
    for _ in range(2):
        assert _read_everything(index, pid, "acme", query)[2] is not None
    generation = index.answer_generation(MEMORIES)
    assert index.delete_where(MEMORIES, Filter(tenant="acme", created_before=50.0)) == 1
    assert generation is None or index.answer_generation(MEMORIES) != generation
    assert _read_everything(index, pid, "acme", query) == [None] * 3


def test_purge_keeps_every_live_point_searchable(
    index: VectorIndex, seeded: dict[str, Point], make_point: PointFactory, hash_embedder: Embedder
) -> None:
    query = hash_embedder.embed(["invoice cat"])[0]
    sparse_query = BM25.encode_query("invoice zx81q cat")
    globex = Filter(tenant="globex")
    before_dense = index.search_dense(MEMORIES, query, globex, 10)
    before_sparse = index.search_sparse(MEMORIES, sparse_query, globex, 10)
    index.delete_where(MEMORIES, Filter(tenant="acme", user="u1"))
    index.purge()
    assert index.count(MEMORIES, Filter(tenant="acme")) == 1
    assert [(p.id, dict(p.payload)) for p in index.search_dense(MEMORIES, query, globex, 10)] == [
        (p.id, dict(p.payload)) for p in before_dense
    ]
    after_sparse = index.search_sparse(MEMORIES, sparse_query, globex, 10)
    assert ids(after_sparse) == ids(before_sparse)
    assert [p.score for p in after_sparse] == pytest.approx([p.score for p in before_sparse])
    (record,) = index.retrieve(MEMORIES, [seeded["a_dog"].id], "acme", with_vectors=True)
    assert record.dense is not None
    np.testing.assert_allclose(record.dense, seeded["a_dog"].dense, atol=1e-6)
    assert index.retrieve(MEMORIES, [seeded["a_cat"].id], "acme") == []
    # Writes after a purge land as before, and a purge with nothing new to do is harmless.
    index.upsert(MEMORIES, [make_point("the cat is back", "acme")])
    index.purge()
    index.purge()
    assert index.count(MEMORIES, Filter(tenant="acme")) == 2


@pytest.mark.parametrize("kind", ["edge", "server"])
def test_delete_where_and_purge_after_close_raise(
    kind: str, tmp_path: Path, make_index: IndexFactory
) -> None:
    idx = make_index(kind, tmp_path)
    idx.purge()  # nothing opened yet: nothing to purge
    idx.ensure_collections(32)
    idx.close()
    with pytest.raises(BackendUnavailableError):
        idx.delete_where(MEMORIES, Filter(tenant="t"))
    with pytest.raises(BackendUnavailableError):
        idx.purge()
