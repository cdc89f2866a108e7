"""Conversation turns: positions, dense vectors blended with adjacent turns, and BM25
vectors with the nearby turns' terms."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from memstrata.clock import FakeClock
from memstrata.config import LongTermSettings
from memstrata.embed.protocol import Embedder
from memstrata.errors import ConfigError
from memstrata.longterm.adjacent import add_context_terms, blend_adjacent, turn_position
from memstrata.longterm.facade import LongTermStore, NewItem
from memstrata.longterm.points import MEMORIES, SparseVector
from memstrata.longterm.protocol import VectorIndex
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.retrieval.search import HybridSearch


def unit_rows(*rows: list[float]) -> NDArray[np.float32]:
    array = np.array(rows, dtype=np.float32)
    unit: NDArray[np.float32] = (array / np.linalg.norm(array, axis=1, keepdims=True)).astype(
        np.float32
    )
    return unit


def normalized(vector: NDArray[np.float32]) -> NDArray[np.float32]:
    return (vector / np.linalg.norm(vector)).astype(np.float32)


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ({"thread": "s1", "seq": 3}, ("s1", 3)),
        ({"thread": 7, "seq": 0}, ("7", 0)),
        ({"thread": "s1"}, None),
        ({"seq": 3}, None),
        ({"thread": "s1", "seq": True}, None),
        ({"thread": "s1", "seq": "3"}, None),
        ({"thread": None, "seq": 3}, None),
    ],
)
def test_turn_position_reads_thread_and_int_seq(
    payload: dict[str, object], expected: tuple[str, int] | None
) -> None:
    assert turn_position(payload) == expected


def test_middle_turn_blends_both_neighbors_and_ends_blend_one() -> None:
    v = unit_rows([1, 0, 0], [0, 1, 0], [0, 0, 1])
    positions = [("t", "s", 0), ("t", "s", 1), ("t", "s", 2)]
    out = blend_adjacent(v, positions, 0.5)
    np.testing.assert_allclose(out[0], normalized(v[0] + 0.5 * v[1]), atol=1e-6)
    np.testing.assert_allclose(out[1], normalized(v[1] + 0.5 * (v[0] + v[2])), atol=1e-6)
    np.testing.assert_allclose(out[2], normalized(v[2] + 0.5 * v[1]), atol=1e-6)
    np.testing.assert_array_equal(v, unit_rows([1, 0, 0], [0, 1, 0], [0, 0, 1]))  # input kept


def test_other_threads_tenants_and_gaps_are_not_neighbors() -> None:
    v = unit_rows([1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [0, 1, 1])
    positions = [
        ("t", "s1", 0),
        ("t", "s2", 1),  # same seq neighborhood, other thread
        ("u", "s1", 1),  # same thread name, other tenant
        ("t", "s1", 2),  # a gap: seq 1 of (t, s1) is not in the batch
        None,
    ]
    np.testing.assert_array_equal(blend_adjacent(v, positions, 0.5), v)


def test_weight_zero_returns_the_vectors_unchanged() -> None:
    v = unit_rows([1, 0], [0, 1])
    assert blend_adjacent(v, [("t", "s", 0), ("t", "s", 1)], 0.0) is v


def test_neighbors_that_cancel_a_row_keep_it_as_it_was() -> None:
    v = unit_rows([1, 0], [-1, 0])
    out = blend_adjacent(v, [("t", "s", 0), ("t", "s", 1)], 1.0)
    np.testing.assert_array_equal(out, v)


def test_positions_must_match_the_rows() -> None:
    with pytest.raises(ValueError, match="positions"):
        blend_adjacent(unit_rows([1, 0]), [], 0.2)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    seqs=st.lists(st.one_of(st.none(), st.integers(0, 6)), min_size=1, max_size=12),
    weight=st.floats(0.0, 1.0),
)
def test_blended_rows_stay_unit_and_unpositioned_rows_untouched(
    seed: int, seqs: list[int | None], weight: float
) -> None:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(len(seqs), 8)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    positions = [None if s is None else ("t", "s", s) for s in seqs]
    out = blend_adjacent(v, positions, weight)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    for i, pos in enumerate(positions):
        if pos is None:
            np.testing.assert_array_equal(out[i], v[i])


@pytest.mark.parametrize("value", [-0.1, 1.5, True, "0.2", float("nan")])
def test_adjacent_blend_setting_is_validated(value: object) -> None:
    with pytest.raises(ConfigError, match=r"longterm\.adjacent_blend"):
        LongTermSettings(adjacent_blend=value)  # type: ignore[arg-type]


def _store(index: VectorIndex, embedder: Embedder, settings: LongTermSettings) -> LongTermStore:
    return LongTermStore(index, embedder, Bm25Encoder(), settings, clock=FakeClock())


def _turns(tenant: str) -> list[NewItem]:
    texts = ["did you go hiking on sunday", "yes up the ridge trail", "sounds lovely"]
    return [
        NewItem(text, tenant=tenant, extra={"thread": "s1", "seq": i})
        for i, text in enumerate(texts)
    ]


@pytest.mark.parametrize("weight", [0.0, 0.2])
def test_store_writes_turns_of_one_call_with_blended_vectors(
    index: VectorIndex, hash_embedder: Embedder, weight: float
) -> None:
    store = _store(index, hash_embedder, LongTermSettings(adjacent_blend=weight))
    items = _turns("acme")
    ids = store.add(MEMORIES, items)
    own = hash_embedder.embed([item.text for item in items])
    expected = blend_adjacent(own, [("acme", "s1", i) for i in range(3)], weight)
    for i, point_id in enumerate(ids):
        (hit,) = HybridSearch(store).search(
            MEMORIES, items[i].text, tenant="acme", k=1, mode="dense", query_vector=expected[i]
        )
        assert hit.id == point_id
        assert hit.cosine == pytest.approx(1.0, abs=1e-3)
    if weight:  # blended: no longer the turn's own vector
        assert float(own[1] @ expected[1]) < 0.999


def test_a_turn_written_alone_keeps_its_own_vector(
    index: VectorIndex, hash_embedder: Embedder
) -> None:
    store = _store(index, hash_embedder, LongTermSettings())
    items = _turns("acme")
    ids = [store.add(MEMORIES, [item])[0] for item in items]
    own = hash_embedder.embed([items[1].text])[0]
    (hit,) = HybridSearch(store).search(
        MEMORIES, items[1].text, tenant="acme", k=1, mode="dense", query_vector=own
    )
    assert hit.id == ids[1]
    assert hit.cosine == pytest.approx(1.0, abs=1e-3)


def sv(weights: dict[int, float]) -> SparseVector:
    terms = sorted(weights)
    return SparseVector(tuple(terms), tuple(weights[t] for t in terms))


def as_dict(vector: SparseVector) -> dict[int, float]:
    return dict(zip(vector.indices, vector.values, strict=True))


def test_context_terms_come_from_turns_one_and_two_steps_away_by_max() -> None:
    rows = [sv({1: 1.0}), sv({2: 1.0, 9: 0.4}), sv({3: 1.0, 9: 1.0}), sv({4: 1.0})]
    positions = [("t", "s", i) for i in range(4)]
    out = add_context_terms(rows, positions, (0.5, 0.25))
    assert as_dict(out[0]) == pytest.approx({1: 1.0, 2: 0.5, 9: 0.25, 3: 0.25})
    # Its own 0.4 for term 9 loses to 0.5 x 1.0 from the next turn; not summed.
    assert as_dict(out[1]) == pytest.approx({2: 1.0, 9: 0.5, 1: 0.5, 3: 0.5, 4: 0.25})
    # Its own 1.0 for term 9 stays: a neighbour never lowers a turn's own words.
    assert as_dict(out[2]) == pytest.approx({3: 1.0, 9: 1.0, 2: 0.5, 4: 0.5, 1: 0.25})
    assert as_dict(out[3]) == pytest.approx({4: 1.0, 3: 0.5, 9: 0.5, 2: 0.25})
    assert rows[0] == sv({1: 1.0})  # inputs are values, untouched


def test_other_threads_tenants_gaps_and_unplaced_rows_get_no_context_terms() -> None:
    rows = [sv({1: 1.0}), sv({2: 1.0}), sv({3: 1.0}), sv({4: 1.0}), sv({5: 1.0})]
    positions = [("t", "s", 0), ("t", "other", 1), ("u", "s", 1), ("t", "s", 3), None]
    out = add_context_terms(rows, positions, (0.5,))
    assert out == rows
    # Two steps away counts only with a second weight.
    assert as_dict(add_context_terms(rows, positions, (0.5, 0.2))[3]) == pytest.approx({4: 1.0})
    assert as_dict(
        add_context_terms(rows[:1] + rows[3:4], [("t", "s", 1), ("t", "s", 3)], (0.5, 0.2))[0]
    ) == pytest.approx({1: 1.0, 4: 0.2})


@pytest.mark.parametrize("weights", [(), (0.0,), (0.0, 0.0)])
def test_no_context_weights_return_the_vectors_unchanged(weights: tuple[float, ...]) -> None:
    rows = [sv({1: 1.0}), sv({2: 1.0})]
    assert add_context_terms(rows, [("t", "s", 0), ("t", "s", 1)], weights) == rows


def test_context_positions_must_match_the_rows() -> None:
    with pytest.raises(ValueError, match="positions"):
        add_context_terms([sv({1: 1.0})], [], (0.5,))


_WEIGHTS = st.dictionaries(
    st.integers(0, 20), st.floats(0.01, 5.0, allow_nan=False), min_size=1, max_size=5
)


@given(
    st.lists(st.tuples(_WEIGHTS, st.one_of(st.none(), st.integers(0, 6))), min_size=1, max_size=8),
    st.lists(st.floats(0.0, 1.0), max_size=3),
)
@settings(max_examples=60, deadline=None)
def test_context_terms_never_lower_own_words_and_stay_discounted(
    rows: list[tuple[dict[int, float], int | None]], weights: list[float]
) -> None:
    vectors = [sv(w) for w, _ in rows]
    # Unique positions: a (tenant, thread, seq) names one turn.
    seen: set[int] = set()
    positions: list[tuple[str, str, int] | None] = []
    for _, seq in rows:
        positions.append(None if seq is None or seq in seen else ("t", "s", seq))
        if seq is not None:
            seen.add(seq)
    out = add_context_terms(vectors, positions, weights)
    top_weight = max(weights, default=0.0)
    top_value = max(max(w.values()) for w, _ in rows)
    for vector, result, pos in zip(vectors, out, positions, strict=True):
        own, got = as_dict(vector), as_dict(result)
        if pos is None:
            assert result == vector
        for term, value in own.items():
            assert got[term] >= value
        for term, value in got.items():
            if term not in own:
                assert value <= top_weight * top_value + 1e-9


@pytest.mark.parametrize(
    "value", [[0.5], (0.5, 1.5), (-0.1,), (True,), ("0.5",), (float("nan"),), (0.1,) * 9]
)
def test_context_terms_setting_is_validated(value: object) -> None:
    with pytest.raises(ConfigError, match=r"longterm\.context_terms"):
        LongTermSettings(context_terms=value)  # type: ignore[arg-type]


@pytest.mark.parametrize("weights", [(), (0.5, 0.35)])
def test_store_indexes_turns_of_one_call_with_their_neighbours_terms(
    index: VectorIndex, hash_embedder: Embedder, weights: tuple[float, ...]
) -> None:
    store = _store(index, hash_embedder, LongTermSettings(context_terms=weights))
    ids = store.add(MEMORIES, _turns("acme"))
    hits = HybridSearch(store).search(MEMORIES, "hiking", tenant="acme", k=5, mode="sparse")
    if not weights:
        assert [h.id for h in hits] == ids[:1]
        return
    # The turn that says it, then its reply (x 0.5), then the turn after (x 0.35).
    assert [h.id for h in hits] == ids
    assert hits[1].score / hits[0].score == pytest.approx(0.5, rel=1e-3)
    assert hits[2].score / hits[0].score == pytest.approx(0.35, rel=1e-3)
    # A turn written alone has only its own words, and other tenants none of these.
    lone = store.add(
        MEMORIES,
        [NewItem("a quiet evening at home", tenant="acme", extra={"thread": "s1", "seq": 3})],
    )
    assert lone[0] not in [
        h.id
        for h in HybridSearch(store).search(
            MEMORIES, "sounds lovely", tenant="acme", k=5, mode="sparse"
        )
    ]
    assert HybridSearch(store).search(MEMORIES, "hiking", tenant="other", k=5, mode="sparse") == []
