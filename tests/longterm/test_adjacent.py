"""Conversation turns: positions, and dense vectors blended with adjacent turns."""

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
from memstrata.longterm.adjacent import blend_adjacent, turn_position
from memstrata.longterm.models import MEMORIES
from memstrata.longterm.protocol import VectorIndex
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.longterm.store import LongTermStore, NewItem


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
    store = LongTermStore(
        index,
        hash_embedder,
        Bm25Encoder(),
        LongTermSettings(adjacent_blend=weight),
        clock=FakeClock(),
    )
    items = _turns("acme")
    ids = store.add(MEMORIES, items)
    own = hash_embedder.embed([item.text for item in items])
    expected = blend_adjacent(own, [("acme", "s1", i) for i in range(3)], weight)
    for i, point_id in enumerate(ids):
        (hit,) = store.search(
            MEMORIES, items[i].text, tenant="acme", k=1, mode="dense", query_vector=expected[i]
        )
        assert hit.id == point_id
        assert hit.cosine == pytest.approx(1.0, abs=1e-3)
    if weight:  # blended: no longer the turn's own vector
        assert float(own[1] @ expected[1]) < 0.999


def test_a_turn_written_alone_keeps_its_own_vector(
    index: VectorIndex, hash_embedder: Embedder
) -> None:
    store = LongTermStore(
        index, hash_embedder, Bm25Encoder(), LongTermSettings(), clock=FakeClock()
    )
    items = _turns("acme")
    ids = [store.add(MEMORIES, [item])[0] for item in items]
    own = hash_embedder.embed([items[1].text])[0]
    (hit,) = store.search(
        MEMORIES, items[1].text, tenant="acme", k=1, mode="dense", query_vector=own
    )
    assert hit.id == ids[1]
    assert hit.cosine == pytest.approx(1.0, abs=1e-3)
