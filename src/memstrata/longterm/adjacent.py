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

Why, and by how much on LoCoMo: docs/benchmarks.md ("Context terms";
"How the defaults were chosen").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memstrata.longterm.points import SparseVector

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
    if weight == 0:
        _check_rows(positions, len(vectors))
        return vectors
    out = np.array(vectors, dtype=np.float32, copy=True)
    for i, near in enumerate(_nearby_rows(positions, len(vectors), 1)):
        if not near:
            continue
        mixed = vectors[i] + weight * vectors[[j for _, j in near]].sum(axis=0)
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
    that says it itself (docs/benchmarks.md, "How the defaults were chosen"). Only rows
    of this batch are nearby turns, as in :func:`blend_adjacent`.
    """
    steps = max((step for step, weight in enumerate(weights, 1) if weight > 0), default=0)
    if steps == 0:
        _check_rows(positions, len(vectors))
        return list(vectors)
    out = list(vectors)
    for i, near in enumerate(_nearby_rows(positions, len(vectors), steps)):
        if not near:
            continue
        merged = dict(zip(vectors[i].indices, vectors[i].values, strict=True))
        for step, j in near:
            weight = weights[step - 1]
            for term, value in zip(vectors[j].indices, vectors[j].values, strict=True):
                if weight * value > merged.get(term, 0.0):
                    merged[term] = weight * value
        terms = sorted(merged)
        out[i] = SparseVector(tuple(terms), tuple(merged[t] for t in terms))
    return out


def _nearby_rows(
    positions: Sequence[tuple[str, str, int] | None], rows: int, steps: int
) -> list[list[tuple[int, int]]]:
    """For each of ``rows`` rows, ``(distance, row)`` of the rows up to ``steps`` turns
    away in its ``(tenant, thread)``; empty for a row without a position. The one
    place both the blend and the context terms find a turn's neighbors."""
    _check_rows(positions, rows)
    row_at = {pos: i for i, pos in enumerate(positions) if pos is not None}
    out: list[list[tuple[int, int]]] = []
    for pos in positions:
        near: list[tuple[int, int]] = []
        if pos is not None:
            tenant, thread, seq = pos
            for step in range(1, steps + 1):
                for other in (seq - step, seq + step):
                    j = row_at.get((tenant, thread, other))
                    if j is not None:
                        near.append((step, j))
        out.append(near)
    return out


def _check_rows(positions: Sequence[object], rows: int) -> None:
    if len(positions) != rows:
        raise ValueError(f"positions: expected {rows}, got {len(positions)}")
