"""Pure scoring steps of retrieval: per-route fusion, the cross-route merge, and the
adjustments (time decay, importance, memory type, the question's time window).

Every function takes plain values and returns new ones; the retriever wires them
to the store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from memstrata.config import RetrievalSettings
from memstrata.extract.filter import is_pure_question
from memstrata.longterm.adjacent import Position

Ranked = Sequence[tuple[str, float]]

SECONDS_PER_DAY = 86_400.0


class Candidate(NamedTuple):
    """One id after the merge: its best fused score and the routes that found it.

    A NamedTuple, not a frozen dataclass: hundreds are built per retrieval and a
    frozen dataclass costs ~1.3 us each to construct, a tuple ~0.3.
    """

    id: str
    score: float
    routes: tuple[str, ...]


def fuse_route(
    dense: Ranked, sparse: Ranked, *, dense_weight: float, sparse_weight: float
) -> dict[str, float]:
    """Normalized-score fusion of one route: cosine as is (clipped to [0, 1]) and BM25
    divided by the route's best BM25 score, then a weighted sum.

    Cosine keeps its absolute meaning (a 0.2 best match stays weak); BM25 has no
    scale of its own, so the best lexical match of the route scores 1.
    """
    fused: dict[str, float] = {}
    for item_id, cosine in dense:
        fused[item_id] = fused.get(item_id, 0.0) + dense_weight * min(1.0, max(0.0, cosine))
    top = max((score for _, score in sparse), default=0.0)
    if top > 0:
        for item_id, score in sparse:
            fused[item_id] = fused.get(item_id, 0.0) + sparse_weight * (score / top)
    return fused


def merge_routes(
    per_route: Sequence[tuple[str, float, Mapping[str, float]]], limit: int | None = None
) -> list[Candidate]:
    """Merge ``(route name, route weight, fused scores)``: duplicates removed, each id
    keeping its best weighted score; best first, ties by id for determinism; the
    best ``limit`` only when given."""
    best: dict[str, float] = {}
    found_by: dict[str, tuple[str, ...]] = {}
    for name, weight, scores in per_route:
        for item_id, score in scores.items():
            weighted = weight * score
            prior = best.get(item_id)
            if prior is None:
                best[item_id] = weighted
                found_by[item_id] = (name,)
                continue
            if weighted > prior:
                best[item_id] = weighted
            routes = found_by[item_id]
            if name not in routes:
                found_by[item_id] = (*routes, name)
    # Two stable sorts: by id, then by score descending (reverse keeps the id order
    # of equal scores) - no key tuple per id.
    ordered = sorted(best)
    ordered.sort(key=best.__getitem__, reverse=True)
    if limit is not None:
        del ordered[limit:]
    return [Candidate(i, best[i], found_by[i]) for i in ordered]


def decay_factor(age_days: float, per_day: float, weight: float) -> float:
    """``1 - weight + weight * per_day ** age``: ``weight`` 1 is pure exponential decay,
    0 turns it off; memories from the future (clock skew) are not boosted."""
    return 1.0 - weight + weight * float(per_day ** max(0.0, age_days))


def importance_factor(importance: float | None, weight: float) -> float:
    """``1 + weight * (importance - 0.5)``; unknown importance counts as 0.5."""
    value = 0.5 if importance is None else min(1.0, max(0.0, importance))
    return 1.0 + weight * (value - 0.5)


def type_factor(item_type: str | None, weights: Mapping[str, float]) -> float:
    """The configured multiplier of a memory type (1 when not configured)."""
    if item_type is None:
        return 1.0
    return float(weights.get(item_type, 1.0))


def informativeness(payload: Mapping[str, Any], cfg: RetrievalSettings) -> float:
    """How much a memory's own text can say: a bare question or a short text less."""
    text = str(payload.get("text", ""))
    # Turns are stored as "Speaker: text"; judge the utterance itself.
    speaker = payload.get("speaker")
    if isinstance(speaker, str) and text.startswith(speaker + ":"):
        text = text[len(speaker) + 1 :].strip()
    return utterance_factor(text, cfg.question_penalty, cfg.short_penalty, cfg.short_words)


def number(value: Any) -> float | None:
    """A payload number (a bool is none)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return None


def utterance_factor(text: str, question_penalty: float, short_penalty: float, words: int) -> float:
    """The penalties of a pure question and of a text shorter than ``words``."""
    factor = 1.0
    if is_pure_question(text):
        factor *= 1.0 - question_penalty
    if len(text.split()) < words:
        factor *= 1.0 - short_penalty
    return factor


def context_bonus(
    positions: Mapping[str, Position | None],
    base: Mapping[str, float],
    neighbor_weight: float,
    thread_weight: float,
) -> dict[str, float]:
    """Score added from the item's conversational context (pure).

    Neighbors are pool items of the same ``thread`` at ``seq`` +-1; the thread's
    score is the mean of its best three pool scores.
    """
    placed: dict[str, Position] = {}
    by_position: dict[Position, str] = {}
    by_thread: dict[str, list[float]] = {}
    for item_id, key in positions.items():
        if key is None:
            continue
        placed[item_id] = key
        by_position[key] = item_id
        by_thread.setdefault(key[0], []).append(base[item_id])
    thread_score = {
        t: sum(sorted(s, reverse=True)[:3]) / min(3, len(s)) for t, s in by_thread.items()
    }
    bonus: dict[str, float] = {}
    for item_id, (thread, seq) in placed.items():
        before, after = by_position.get((thread, seq - 1)), by_position.get((thread, seq + 1))
        best = max(
            base[before] if before is not None else 0.0, base[after] if after is not None else 0.0
        )
        bonus[item_id] = neighbor_weight * best + thread_weight * thread_score[thread]
    return bonus
