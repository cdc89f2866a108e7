"""LongTermStore: validation, atomic batches, hybrid search, cosine on every hit."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memstrata.clock import FakeClock
from memstrata.config import LongTermSettings
from memstrata.embed.protocol import Embedder
from memstrata.errors import BackendUnavailableError, ValidationError
from memstrata.longterm.facade import LongTermStore, NewItem
from memstrata.longterm.points import KNOWLEDGE, MEMORIES, Filter, Hit, ScoredPoint
from memstrata.longterm.protocol import VectorIndex
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.retrieval.search import HybridSearch

IndexFactory = Callable[[str, Path], VectorIndex]


class CountingIndex:
    """Wraps an index and counts optimize() calls (a spy, not a fake engine)."""

    def __init__(self, inner: VectorIndex) -> None:
        self.inner = inner
        self.optimized = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def optimize(self) -> None:
        self.optimized += 1
        self.inner.optimize()


@pytest.fixture
def store(index: VectorIndex, hash_embedder: Embedder) -> LongTermStore:
    return LongTermStore(index, hash_embedder, Bm25Encoder(), LongTermSettings(), clock=FakeClock())


def test_add_writes_the_full_payload(store: LongTermStore) -> None:
    (pid,) = store.add(
        MEMORIES,
        [NewItem("likes green tea", tenant="acme", user="bob", source="s1", extra={"lang": "en"})],
    )
    (record,) = store.get(MEMORIES, [pid], tenant="acme")
    payload = dict(record.payload)
    now = FakeClock().now().timestamp()
    assert payload == {
        "tenant": "acme",
        "user": "bob",
        "type": "fact",
        "text": "likes green tea",
        "source": "s1",
        "created_at": now,
        "updated_at": now,
        "lang": "en",
    }
    uuid.UUID(pid)


def test_add_keeps_given_id_and_created_at(store: LongTermStore) -> None:
    pid = str(uuid.uuid4())
    assert store.add(KNOWLEDGE, [NewItem("chunk", tenant="t", id=pid, created_at=5.0)]) == [pid]
    (record,) = store.get(KNOWLEDGE, [pid], tenant="t")
    assert record.payload["created_at"] == 5.0


@pytest.mark.parametrize(
    ("item", "field"),
    [
        (NewItem("", tenant="t"), "items[1].text"),
        (NewItem("   ", tenant="t"), "items[1].text"),
        (NewItem("x" * 32_001, tenant="t"), "items[1].text"),
        (NewItem("ok", tenant=""), "items[1].tenant"),
        (NewItem("ok", tenant="a:b"), "items[1].tenant"),
        (NewItem("ok", tenant="t", user="no spaces"), "items[1].user"),
        (NewItem("ok", tenant="t", type=""), "items[1].type"),
        (NewItem("ok", tenant="t", id="42"), "items[1].id"),
        (NewItem("ok", tenant="t", created_at=float("nan")), "items[1].created_at"),
        (NewItem("ok", tenant="t", extra={"tenant": "other"}), "items[1].extra"),
    ],
)
def test_invalid_item_rejects_the_whole_batch(
    store: LongTermStore, item: NewItem, field: str
) -> None:
    with pytest.raises(ValidationError) as err:
        store.add(MEMORIES, [NewItem("valid first item", tenant="t"), item])
    assert err.value.field == field
    assert store.count(MEMORIES, tenant="t") == 0


def test_text_at_the_limit_is_accepted(store: LongTermStore) -> None:
    store.add(MEMORIES, [NewItem("y" * 32_000, tenant="t")])
    assert store.count(MEMORIES, tenant="t") == 1


def test_bad_search_arguments_name_the_field(store: LongTermStore) -> None:
    cases = [
        ({"collection": "nope"}, "collection"),
        ({"query": ""}, "query"),
        ({"tenant": ""}, "tenant"),
        ({"user": "a b"}, "user"),
        ({"types": ()}, "types"),
        ({"k": 0}, "k"),
        ({"k": 5000}, "k"),
        ({"fusion": "max"}, "fusion"),
        ({"query_vector": np.zeros(32, dtype=np.float32)}, "query_vector"),
        ({"query_vector": np.ones(3, dtype=np.float32)}, "query_vector"),
    ]
    for override, field in cases:
        args = {"collection": MEMORIES, "query": "q", "tenant": "t", **override}
        collection, query = args.pop("collection"), args.pop("query")
        with pytest.raises(ValidationError) as err:
            HybridSearch(store).search(collection, query, **args)  # type: ignore[arg-type]
        assert err.value.field == field, override


def test_bulk_add_vectors_optimizes_and_normalizes(
    index: VectorIndex, hash_embedder: Embedder
) -> None:
    spy = CountingIndex(index)
    store = LongTermStore(
        spy,  # type: ignore[arg-type]
        hash_embedder,
        Bm25Encoder(),
        LongTermSettings(),
        bulk_optimize_threshold=50,
    )
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(60, 32)).astype(np.float32) * 3.0
    items = [NewItem(f"doc {i}", tenant="t") for i in range(60)]
    ids = store.add_vectors(KNOWLEDGE, items, vectors)
    assert spy.optimized == 1
    store.add_vectors(KNOWLEDGE, items[:2], vectors[:2])
    assert spy.optimized == 1  # small writes do not optimize
    (record,) = index.retrieve(KNOWLEDGE, [ids[0]], "t", with_vectors=True)
    assert record.dense is not None
    assert float(np.linalg.norm(record.dense)) == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(ValidationError) as err:
        store.add_vectors(KNOWLEDGE, items[:2], vectors[:1])
    assert err.value.field == "vectors"


def test_hybrid_hits_carry_cosine_and_ranks(store: LongTermStore, hash_embedder: Embedder) -> None:
    store.add(
        MEMORIES,
        [
            NewItem("quarterly budget report draft", tenant="t"),
            NewItem("budget meeting with finance", tenant="t"),
            NewItem("holiday photos from the lake", tenant="t"),
        ],
    )
    query = "budget report"
    qvec = hash_embedder.embed([query])[0]
    for fusion in ("rrf", "normalized"):
        hits = HybridSearch(store).search(
            MEMORIES, query, tenant="t", k=3, fusion=fusion, explain=True
        )
        assert hits[0].payload["text"] == "quarterly budget report draft"
        assert hits[0].dense_rank == 1 and hits[0].sparse_rank == 1
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        for hit in hits:
            expected = float(np.dot(hash_embedder.embed([hit.payload["text"]])[0], qvec))
            assert hit.cosine == pytest.approx(expected, abs=1e-5)


def test_bm25_only_hit_gets_its_cosine_from_the_stored_vector(
    index: VectorIndex, hash_embedder: Embedder
) -> None:
    # Two fillers sit nearer the query vector, and k=2 caps the dense route at two,
    # so the rare-token item can only arrive through BM25.
    settings = LongTermSettings(dense_top_n=1, sparse_top_n=5)
    store = LongTermStore(index, hash_embedder, Bm25Encoder(), settings)
    e = np.eye(32, dtype=np.float32)
    vectors = np.stack([e[0] + e[1], e[0], e[0] + 0.1 * e[2]])
    texts = ["error zx81q seen", "filler one", "filler two"]
    store.add_vectors(MEMORIES, [NewItem(t, tenant="t") for t in texts], vectors)
    hits = HybridSearch(store).search(
        MEMORIES, "zx81q", tenant="t", k=2, query_vector=e[0], explain=True
    )
    rare = next(h for h in hits if h.payload["text"] == texts[0])
    assert rare.dense_rank is None and rare.sparse_rank == 1
    assert rare.cosine == pytest.approx(1 / np.sqrt(2), abs=1e-5)


def _tie_groups(hits: list[Hit]) -> list[frozenset[str]]:
    groups: dict[float, set[str]] = {}
    for hit in hits:
        groups.setdefault(round(hit.score, 6), set()).add(hit.id)
    return [frozenset(ids) for _, ids in sorted(groups.items(), reverse=True)]


def test_engine_fusion_equals_python_fusion(store: LongTermStore) -> None:
    # Random vectors and a wide vocabulary: no exact score ties, whose order is free.
    rng = random.Random(5)
    nprng = np.random.default_rng(5)
    words = ["budget", "report", "lake", "violin", "berlin", "coffee", "firmware", "refund"]
    words += [f"w{i}" for i in range(40)]
    texts = [" ".join(rng.sample(words, k=6)) + f" n{i}" for i in range(60)]
    vectors = nprng.normal(size=(60, 32)).astype(np.float32)
    store.add_vectors(MEMORIES, [NewItem(t, tenant="t") for t in texts], vectors)
    for query in ("budget report", "violin lake coffee", "n7 refund", "zzz unmatched"):
        qvec = nprng.normal(size=32).astype(np.float32)
        fast = HybridSearch(store).search(MEMORIES, query, tenant="t", k=8, query_vector=qvec)
        explained = HybridSearch(store).search(
            MEMORIES, query, tenant="t", k=8, query_vector=qvec, explain=True
        )
        # The engine fuses in float32; RRF ties (dense rank r vs BM25 rank r) may come
        # in either order, and the last tie group may be cut differently.
        assert [h.score for h in fast] == pytest.approx([h.score for h in explained], rel=1e-6)
        assert _tie_groups(fast)[:-1] == _tie_groups(explained)[:-1]
        cosines = {h.id: h.cosine for h in explained}
        assert all(h.cosine == pytest.approx(cosines[h.id]) for h in fast if h.id in cosines)
        assert all(h.dense_rank is None and h.sparse_rank is None for h in fast)


class TiedFusion(CountingIndex):
    """The engine's fusion answered with ``scores`` for ``ids`` (in reverse id order,
    as an arbitrary engine cut would), recording each limit asked for."""

    def __init__(self, inner: VectorIndex, ids: list[str], scores: list[float]) -> None:
        super().__init__(inner)
        self.ranked = sorted(zip(ids, scores, strict=True), key=lambda p: (-p[1], p[0]))
        self.limits: list[int] = []

    def search_fused(self, collection: str, *args: Any, limit: int, **kw: Any) -> Any:
        self.limits.append(limit)
        top = self.ranked[:limit]
        ties = sorted(top, key=lambda p: (-p[1], p[0]), reverse=True)
        return [ScoredPoint(i, s, {}) for i, s in sorted(ties, key=lambda p: -p[1])]


@pytest.mark.parametrize(
    ("tied", "limits"),
    [(25, [12, 24, 48]), (11, [12]), (12, [12, 24]), (0, [12])],
)
def test_fusion_fetches_the_whole_tie_at_the_cut(
    index: VectorIndex, hash_embedder: Embedder, tied: int, limits: list[int]
) -> None:
    """k = 10: the engine is asked for 12, then twice as many while the last one
    fetched still ties with the 10th; the tie is ordered by id."""
    writer = LongTermStore(index, hash_embedder, Bm25Encoder(), LongTermSettings())
    ids = writer.add(MEMORIES, [NewItem(f"note {i}", tenant="t") for i in range(30)])
    scores = [0.5] * tied + [0.4 - i / 1000 for i in range(30 - tied)]
    spy = TiedFusion(index, ids, scores)
    store = LongTermStore(spy, hash_embedder, Bm25Encoder(), LongTermSettings())  # type: ignore[arg-type]
    hits = HybridSearch(store).search(MEMORIES, "note", tenant="t", k=10)
    assert spy.limits == limits
    expected = sorted(zip(ids, scores, strict=True), key=lambda p: (-p[1], p[0]))[:10]
    assert [(h.id, h.score) for h in hits] == expected


def test_single_route_modes(store: LongTermStore, hash_embedder: Embedder) -> None:
    store.add(
        MEMORIES,
        [
            NewItem("quarterly budget report draft", tenant="t"),
            NewItem("holiday photos from the lake", tenant="t"),
            NewItem("budget lake", tenant="u"),
        ],
    )
    sparse = HybridSearch(store).search(MEMORIES, "lake", tenant="t", k=5, mode="sparse")
    assert [h.payload["text"] for h in sparse] == ["holiday photos from the lake"]
    assert sparse[0].sparse_rank == 1 and sparse[0].dense_rank is None
    dense = HybridSearch(store).search(MEMORIES, "lake", tenant="t", k=5, mode="dense")
    assert len(dense) == 2 and [h.dense_rank for h in dense] == [1, 2]
    assert all(h.score == h.cosine for h in dense)
    qvec = hash_embedder.embed(["lake"])[0]
    for hit in sparse + dense:
        expected = float(np.dot(hash_embedder.embed([hit.payload["text"]])[0], qvec))
        assert hit.cosine == pytest.approx(expected, abs=1e-5)
    with pytest.raises(ValidationError) as err:
        HybridSearch(store).search(MEMORIES, "lake", tenant="t", mode="both")
    assert err.value.field == "mode"


def test_search_filters_user_and_types(store: LongTermStore) -> None:
    store.add(
        MEMORIES,
        [
            NewItem("prefers window seat", tenant="t", user="ann", type="preference"),
            NewItem("prefers aisle seat", tenant="t", user="bob", type="preference"),
            NewItem("booked a window seat", tenant="t", user="ann", type="event"),
        ],
    )
    hits = HybridSearch(store).search(
        MEMORIES, "seat", tenant="t", user="ann", types=["preference"]
    )
    assert [h.payload["text"] for h in hits] == ["prefers window seat"]
    assert store.count(MEMORIES, tenant="t", user="ann") == 2
    assert store.count(MEMORIES, tenant="t", types=["event"]) == 1


def test_delete_and_get_through_the_facade(store: LongTermStore) -> None:
    ids = store.add(MEMORIES, [NewItem("a", tenant="t"), NewItem("b", tenant="u")])
    assert [r.id for r in store.get(MEMORIES, ids, tenant="t")] == [ids[0]]
    store.delete(MEMORIES, ids, tenant="t")
    assert store.get(MEMORIES, ids, tenant="t") == []
    assert [r.id for r in store.get(MEMORIES, ids, tenant="u")] == [ids[1]]
    with pytest.raises(ValidationError) as err:
        store.get(MEMORIES, ids[0], tenant="t")
    assert err.value.field == "ids"


# --- the real model -------------------------------------------------------------------

CORPUS = [
    "I am relocating to Berlin next month for a new job",
    "The firmware error code ZX81Q appears after the update",
    "My daughter started violin lessons on Tuesday",
    "We switched the office coffee machine to oat milk",
    "Quarterly revenue grew by twelve percent",
    "我喜欢杭州的西湖",
]


@pytest.fixture
def minilm_store(make_index: IndexFactory, tmp_path: Path, minilm: Embedder) -> LongTermStore:
    index = make_index("edge", tmp_path)
    store = LongTermStore(index, minilm, Bm25Encoder(), LongTermSettings())
    store.add(MEMORIES, [NewItem(text, tenant="t") for text in CORPUS])
    return store


def test_rare_keyword_is_found_by_bm25(minilm_store: LongTermStore) -> None:
    hits = HybridSearch(minilm_store).search(MEMORIES, "zx81q", tenant="t", k=3, explain=True)
    assert hits[0].payload["text"] == CORPUS[1]
    assert hits[0].sparse_rank == 1


def test_paraphrase_is_found_by_dense(minilm_store: LongTermStore) -> None:
    hits = HybridSearch(minilm_store).search(
        MEMORIES, "moving to Germany for work", tenant="t", k=3, explain=True
    )
    assert hits[0].payload["text"] == CORPUS[0]
    assert hits[0].dense_rank == 1
    assert hits[0].sparse_rank is None  # no shared term: dense alone found it
    assert hits[0].cosine > 0.4
    assert all(h.cosine < hits[0].cosine for h in hits[1:])


def test_chinese_keyword_route(minilm_store: LongTermStore) -> None:
    hits = HybridSearch(minilm_store).search(MEMORIES, "西湖", tenant="t", k=2, explain=True)
    assert hits[0].payload["text"] == CORPUS[5]
    assert hits[0].sparse_rank == 1


class MarkingSanitizer:
    """TEST DOUBLE for the gateway: replaces the token 'sk-live-123' everywhere."""

    def __init__(self) -> None:
        self.locations: list[str] = []

    def text(self, text: str, *, location: str, field: str | None = None) -> str:
        self.locations.append(location)
        return text.replace("sk-live-123", "[SECRET]")

    def value(self, obj: Any, *, location: str) -> Any:
        return {
            k: self.text(v, location=location) if isinstance(v, str) else v for k, v in obj.items()
        }


def test_text_is_sanitized_before_it_is_embedded_or_stored(
    index: VectorIndex, hash_embedder: Embedder
) -> None:
    sanitizer = MarkingSanitizer()
    store = LongTermStore(
        index, hash_embedder, Bm25Encoder(), LongTermSettings(), sanitizer=sanitizer
    )
    extra = {"note": "key sk-live-123"}
    (pid,) = store.add(MEMORIES, [NewItem("my key is sk-live-123", tenant="t", extra=extra)])
    (record,) = store.index.retrieve(MEMORIES, [pid], "t", with_vectors=True)
    assert record.payload["text"] == "my key is [SECRET]"
    assert record.payload["note"] == "key [SECRET]"
    assert extra == {"note": "key sk-live-123"}  # the caller's mapping is untouched
    assert record.dense is not None
    clean_vector = hash_embedder.embed(["my key is [SECRET]"])[0]
    np.testing.assert_allclose(record.dense, clean_vector, atol=1e-6)
    assert "L3:memories" in sanitizer.locations
    assert (
        HybridSearch(store)
        .search(MEMORIES, "sk-live-123", tenant="t", fusion="normalized")[0]
        .sparse_rank
        is None
    )


def test_route_lists_and_read_scored_agree_with_known_cosines(
    store: LongTermStore, hash_embedder: Embedder
) -> None:
    texts = ["the cat sat on the mat", "a dog in the park", "cats and dogs", "tea time"]
    ids = store.add(MEMORIES, [NewItem(t, tenant="acme") for t in texts])
    store.add(MEMORIES, [NewItem("the cat sat on the mat", tenant="globex")])
    vector = hash_embedder.embed(["cat on a mat"])[0]
    flt = Filter(tenant="acme")
    dense, sparse = store.route_lists(
        MEMORIES, "cat on a mat", vector, flt, dense_depth=10, sparse_depth=10
    )
    assert {i for i, _ in dense} == set(ids)  # the tenant's own points only
    assert {i for i, _ in sparse} <= set(ids) and sparse
    scratch = store.read_scored(MEMORIES, ids, vector, tenant="acme")
    # Cosines the caller already has are reused, the rest scored by the engine:
    # the same points, payloads and cosines either way.
    half = dict(dense[:2])
    reused = store.read_scored(MEMORIES, ids, vector, tenant="acme", known_cosines=half)
    assert set(reused) == set(scratch) == set(ids)
    for point_id in ids:
        assert reused[point_id].score == pytest.approx(scratch[point_id].score, abs=1e-5)
        assert dict(reused[point_id].payload) == dict(scratch[point_id].payload)
    # Another tenant's ids read as absent, with or without known cosines.
    foreign = store.read_scored(MEMORIES, ids, vector, tenant="globex", known_cosines=half)
    assert foreign == {}


def _same(hits: list[Hit], others: list[Hit]) -> bool:
    def seen(h: Hit) -> tuple[Any, ...]:
        return (h.id, h.score, h.cosine, h.dense_rank, h.sparse_rank, dict(h.payload))

    return [seen(h) for h in hits] == [seen(h) for h in others]


class FusionCounter(CountingIndex):
    """Counts the fused searches that reach the index."""

    def __init__(self, inner: VectorIndex) -> None:
        super().__init__(inner)
        self.fused = 0

    def search_fused(self, *args: Any, **kwargs: Any) -> Any:
        self.fused += 1
        return self.inner.search_fused(*args, **kwargs)


def test_an_identical_search_is_answered_again_only_until_a_write(
    index: VectorIndex, hash_embedder: Embedder
) -> None:
    spy = FusionCounter(index)
    store = LongTermStore(spy, hash_embedder, Bm25Encoder(), LongTermSettings())  # type: ignore[arg-type]
    other = LongTermStore(index, hash_embedder, Bm25Encoder(), LongTermSettings())
    search = HybridSearch(store).search
    store.add(MEMORIES, [NewItem("report template: summary first", tenant="t")])
    reuses = index.answer_generation(MEMORIES) is not None  # the embedded index only
    first = search(MEMORIES, "report template", tenant="t", k=3)
    again = search(MEMORIES, "report template", tenant="t", k=3)
    assert _same(again, first) and again is not first  # the same hits, a list of its own
    again.clear()
    assert spy.fused == (1 if reuses else 2)
    # Other words, k, scope or mode are other searches.
    search(MEMORIES, "report templates", tenant="t", k=3)
    search(MEMORIES, "report template", tenant="t", k=4)
    search(MEMORIES, "report template", tenant="t", user="u", k=3)
    search(MEMORIES, "report template", tenant="t", k=3, explain=True)
    assert spy.fused == (4 if reuses else 5)
    assert _same(search(MEMORIES, "report template", tenant="t", k=3), first)
    # A write through another store on the same index is seen at once.
    (new,) = other.add(MEMORIES, [NewItem("report template: charts", tenant="t")])
    assert new in {h.id for h in search(MEMORIES, "report template", tenant="t", k=3)}
    other.delete(MEMORIES, [new], tenant="t")
    assert new not in {h.id for h in search(MEMORIES, "report template", tenant="t", k=3)}
    index.close()
    with pytest.raises(BackendUnavailableError):
        search(MEMORIES, "report template", tenant="t", k=3)
