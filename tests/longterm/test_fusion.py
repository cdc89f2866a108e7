"""RRF and normalized-score fusion against hand-computed values."""

from __future__ import annotations

import pytest

from memstrata.errors import ValidationError
from memstrata.longterm.fusion import normalized, rrf

DENSE = [("a", 0.9), ("b", 0.8), ("c", 0.5)]
SPARSE = [("c", 12.0), ("d", 6.0), ("a", 3.0)]


def test_rrf_hand_computed() -> None:
    fused = rrf([DENSE, SPARSE], k=60)
    scores = {f.id: f.score for f in fused}
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert scores["b"] == pytest.approx(1 / 62)
    assert scores["d"] == pytest.approx(1 / 62)
    # a and c tie exactly; both reached rank 1 somewhere, so id order decides.
    assert [f.id for f in fused] == ["a", "c", "b", "d"]
    assert next(f for f in fused if f.id == "c").ranks == (3, 1)
    assert next(f for f in fused if f.id == "d").ranks == (None, 2)


def test_rrf_weights_and_small_k() -> None:
    fused = rrf([DENSE, SPARSE], k=1, weights=[2.0, 1.0])
    scores = {f.id: f.score for f in fused}
    assert scores["a"] == pytest.approx(2 / 2 + 1 / 4)
    assert scores["c"] == pytest.approx(2 / 4 + 1 / 2)
    assert [f.id for f in fused][:2] == ["a", "c"]


def test_normalized_hand_computed() -> None:
    fused = normalized([DENSE, SPARSE], weights=[0.5, 0.5])
    scores = {f.id: f.score for f in fused}
    # dense min-max over [0.5, 0.9]: a=1, b=0.75, c=0 ; sparse over [3, 12]: c=1, d=1/3, a=0
    assert scores["a"] == pytest.approx(0.5)
    assert scores["b"] == pytest.approx(0.375)
    assert scores["c"] == pytest.approx(0.5)
    assert scores["d"] == pytest.approx(1 / 6)
    assert [f.id for f in fused] == ["a", "c", "b", "d"]


def test_normalized_keeps_score_gaps_that_rrf_drops() -> None:
    # x leads dense by far and is close behind in BM25; y leads BM25 by a hair.
    dense = [("x", 0.95), ("y", 0.31), ("z", 0.30), ("w", 0.05)]
    sparse = [("y", 5.0), ("z", 4.9), ("x", 4.8), ("w", 0.1)]
    assert normalized([dense, sparse])[0].id == "x"
    assert rrf([dense, sparse])[0].id == "y"


def test_single_item_or_flat_list_normalizes_to_one() -> None:
    fused = normalized([[("a", 0.3)], [("b", 2.0), ("c", 2.0)]])
    assert {f.id: f.score for f in fused} == {"a": 1.0, "b": 1.0, "c": 1.0}


def test_empty_inputs() -> None:
    assert rrf([[], []]) == []
    assert normalized([[], []]) == []
    only_sparse = rrf([[], [("q", 1.0)]])
    assert [(f.id, f.ranks) for f in only_sparse] == [("q", (None, 1))]


def test_duplicate_id_in_one_list_keeps_best_rank() -> None:
    fused = rrf([[("a", 1.0), ("a", 0.5)]], k=0)
    assert fused[0].score == pytest.approx(1.0)
    assert fused[0].ranks == (1,)


def test_inputs_are_not_mutated() -> None:
    dense, sparse = list(DENSE), list(SPARSE)
    rrf([dense, sparse])
    normalized([dense, sparse])
    assert dense == DENSE and sparse == SPARSE


@pytest.mark.parametrize("weights", [[1.0], [1.0, -1.0]])
def test_bad_weights_rejected(weights: list[float]) -> None:
    with pytest.raises(ValidationError) as err:
        rrf([DENSE, SPARSE], weights=weights)
    assert err.value.field == "weights"


def test_limit_keeps_the_best() -> None:
    assert [f.id for f in rrf([DENSE, SPARSE], limit=2)] == ["a", "c"]
    assert [f.id for f in normalized([DENSE, SPARSE], limit=3)] == ["a", "c", "b"]
    assert rrf([DENSE, SPARSE], limit=0) == []
    with pytest.raises(ValidationError) as err:
        rrf([DENSE], limit=-1)
    assert err.value.field == "limit"
