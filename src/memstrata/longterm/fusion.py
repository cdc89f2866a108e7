"""Pure rank-fusion functions for the hybrid (dense + BM25) route.

Both take any number of ranked lists of ``(id, score)`` (best first) and return
:class:`Fused` entries, best first. Ties are broken by the best rank the item
reached in any list, then by id, so the output is deterministic.

* :func:`rrf` - reciprocal rank fusion: ``sum_i w_i / (k + rank_i)``. Ignores the
  raw scores, so it needs no calibration between cosine and BM25 scales.
* :func:`normalized` - min-max normalize each list to [0, 1], then a weighted sum.
  Keeps score gaps (a near-exact match stays far ahead), which the design's
  "fused on normalized scores" retrieval step relies on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memstrata.errors import ValidationError

RRF_K = 60
# Qdrant's RRF scores 1 / (k + 0-based position); :func:`rrf` scores 1 / (k + rank)
# with 1-based ranks. One more in the engine makes the two score identically.
ENGINE_RRF_K = RRF_K + 1

Ranked = Sequence[tuple[str, float]]


@dataclass(frozen=True, slots=True)
class Fused:
    """One fused item: its fusion score and its 1-based rank in each input list."""

    id: str
    score: float
    ranks: tuple[int | None, ...]


def _check_weights(lists: Sequence[Ranked], weights: Sequence[float] | None) -> tuple[float, ...]:
    if weights is None:
        return (1.0,) * len(lists)
    if len(weights) != len(lists):
        raise ValidationError("weights", f"expected {len(lists)} weights, got {len(weights)}")
    if any(not w >= 0 for w in weights):
        raise ValidationError("weights", "must all be >= 0")
    return tuple(float(w) for w in weights)


def _ranks(lists: Sequence[Ranked]) -> dict[str, list[int | None]]:
    n = len(lists)
    ranks: dict[str, list[int | None]] = {}
    for li, ranked in enumerate(lists):
        for position, (item_id, _) in enumerate(ranked, start=1):
            slot = ranks.get(item_id)
            if slot is None:
                slot = ranks[item_id] = [None] * n
            # A duplicated id within one list keeps its best (first) rank.
            if slot[li] is None:
                slot[li] = position
    return ranks


def _ordered(
    scores: dict[str, float], ranks: dict[str, list[int | None]], limit: int | None
) -> list[Fused]:
    keyed = [
        (-score, min([r for r in ranks[item_id] if r is not None]), item_id)
        for item_id, score in scores.items()
    ]
    keyed.sort()
    # Only the kept items become Fused values: building all of them was most of
    # the cost of fusing two top-50 lists.
    kept = keyed if limit is None else keyed[:limit]
    return [Fused(item_id, -neg, tuple(ranks[item_id])) for neg, _, item_id in kept]


def _check_limit(limit: int | None) -> None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValidationError("limit", "must be a non-negative int or None")


def rrf(
    lists: Sequence[Ranked],
    *,
    k: int = RRF_K,
    weights: Sequence[float] | None = None,
    limit: int | None = None,
) -> list[Fused]:
    """Reciprocal rank fusion of ranked lists (``k`` = 60 as in Cormack et al.).

    ``limit`` keeps only the best ``limit`` results (all when ``None``).
    """
    if k < 0:
        raise ValidationError("k", "must be >= 0")
    _check_limit(limit)
    w = _check_weights(lists, weights)
    ranks = _ranks(lists)
    scores: dict[str, float] = {}
    for item_id, item_ranks in ranks.items():
        total = 0.0
        for li, r in enumerate(item_ranks):
            if r is not None:
                total += w[li] / (k + r)
        scores[item_id] = total
    return _ordered(scores, ranks, limit)


def _min_max(ranked: Ranked) -> dict[str, float]:
    if not ranked:
        return {}
    values = [score for _, score in ranked]
    low, high = min(values), max(values)
    span = high - low
    normalized: dict[str, float] = {}
    for item_id, score in ranked:
        # A single result, or all equal, carries no spread: treat them as top matches.
        normalized.setdefault(item_id, 1.0 if span == 0 else (score - low) / span)
    return normalized


def normalized(
    lists: Sequence[Ranked],
    *,
    weights: Sequence[float] | None = None,
    limit: int | None = None,
) -> list[Fused]:
    """Min-max normalize each list, then sum with ``weights`` (default equal).

    An item missing from a list contributes 0 for that list; ``limit`` as in :func:`rrf`.
    """
    _check_limit(limit)
    w = _check_weights(lists, weights)
    ranks = _ranks(lists)
    per_list = [_min_max(ranked) for ranked in lists]
    scores: dict[str, float] = {}
    for item_id in ranks:
        total = 0.0
        for li, values in enumerate(per_list):
            value = values.get(item_id)
            if value is not None:
                total += w[li] * value
        scores[item_id] = total
    return _ordered(scores, ranks, limit)
