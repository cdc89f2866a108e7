"""Conversation turns: their position, and dense vectors that know their neighbors.

A turn such as "Yes, every Sunday since March!" says little on its own; what it
answers is in the turn before it. When turns are written together with their
position in a conversation (payload ``thread`` + ``seq``), each turn's dense vector
is blended with the vectors of its adjacent turns of the same tenant and thread:
``normalize(v[i] + weight * (v[i-1] + v[i+1]))``. BM25 still indexes the turn's own
words, so an exact match stays exact. LoCoMo numbers are in docs/benchmarks.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

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
