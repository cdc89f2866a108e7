"""Conversation turns: their position, and index vectors that know their neighbors.

A turn such as "Yes, every Sunday since March!" says little on its own; what it
answers is in the turn before it. When turns are written together with their
position in a conversation (payload ``thread`` + ``seq``), each turn is indexed with
its nearby turns of the same tenant and thread:

- dense: its vector blended with the adjacent turns' vectors,
  ``normalize(v[i] + weight * (v[i-1] + v[i+1]))`` (:func:`blend_adjacent`);
- BM25: its nearby turns' terms added at a discount, ``w[t] = max(own[t],
  weights[d-1] * near[t])`` for the turns ``d`` steps away (:func:`add_context_terms`).
  The turn's own words keep their full weight, so an exact match still ranks first.

LoCoMo numbers are in docs/benchmarks.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.longterm.models import SparseVector

Position = tuple[str, int]
"""``(thread, seq)``: a turn's conversation and its place in it."""


def turn_position(payload: Mapping[str, Any]) -> Position | None:
    """``(thread, seq)`` when the payload places the item in a conversation.

    ``thread`` is any value (kept as its string); ``seq`` must be an int (not a bool).
    """
    thread, seq = payload.get("thread"), payload.get("seq")
    if thread is None or isinstance(seq, bool) or not isinstance(seq, int):
        return None
    return str(thread), seq


def blend_adjacent(
    vectors: NDArray[np.float32],
    positions: Sequence[tuple[str, str, int] | None],
    weight: float,
) -> NDArray[np.float32]:
    """Each positioned row blended with the rows at ``seq`` +-1 of its ``(tenant,
    thread)``, L2-normalized; rows without a position or neighbor come back as they
    were. Pure: returns a new array (the input itself when ``weight`` is 0).

    ``positions`` has one ``(tenant, thread, seq)`` or None per row. Only rows of this
    batch are neighbors: a turn written alone keeps its own vector.
    """
    if len(positions) != len(vectors):
        raise ValueError(f"positions: expected {len(vectors)}, got {len(positions)}")
    if weight == 0:
        return vectors
    row_at = {pos: i for i, pos in enumerate(positions) if pos is not None}
    out = np.array(vectors, dtype=np.float32, copy=True)
    for i, pos in enumerate(positions):
        if pos is None:
            continue
        tenant, thread, seq = pos
        near = [row_at.get((tenant, thread, seq + step)) for step in (-1, 1)]
        rows = [j for j in near if j is not None]
        if not rows:
            continue
        mixed = vectors[i] + weight * vectors[rows].sum(axis=0)
        norm = float(np.linalg.norm(mixed))
        if norm > 0:  # opposite neighbors can cancel a row out: keep it as it was
            out[i] = mixed / norm
    return out


def add_context_terms(
    vectors: Sequence[SparseVector],
    positions: Sequence[tuple[str, str, int] | None],
    weights: Sequence[float],
) -> list[SparseVector]:
    """Each positioned BM25 vector with the terms of the turns up to ``len(weights)``
    steps away in its ``(tenant, thread)``: a term's weight is the largest of its own
    and ``weights[d - 1]`` times its weight in each turn ``d`` steps away. Pure;
    rows without a position or a nearby turn come back as they were.

    ``max``, not a sum: a term said in three nearby turns does not outweigh the turn
    that says it itself (LoCoMo: summing cost 0.01 hit@10). Only rows of this batch
    are nearby turns, as in :func:`blend_adjacent`.
    """
    if len(positions) != len(vectors):
        raise ValueError(f"positions: expected {len(vectors)}, got {len(positions)}")
    active = [(step, weight) for step, weight in enumerate(weights, 1) if weight > 0]
    if not active:
        return list(vectors)
    row_at = {pos: i for i, pos in enumerate(positions) if pos is not None}
    out = list(vectors)
    for i, pos in enumerate(positions):
        if pos is None:
            continue
        tenant, thread, seq = pos
        merged: dict[int, float] | None = None
        for step, weight in active:
            for j in (
                row_at.get((tenant, thread, seq - step)),
                row_at.get((tenant, thread, seq + step)),
            ):
                if j is None:
                    continue
                if merged is None:
                    merged = dict(zip(vectors[i].indices, vectors[i].values, strict=True))
                for term, value in zip(vectors[j].indices, vectors[j].values, strict=True):
                    discounted = weight * value
                    if discounted > merged.get(term, 0.0):
                        merged[term] = discounted
        if merged is not None:
            terms = sorted(merged)
            out[i] = SparseVector(tuple(terms), tuple(merged[t] for t in terms))
    return out
