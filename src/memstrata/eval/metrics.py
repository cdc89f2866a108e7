"""Retrieval metrics as pure functions of a ranking and a set of relevant ids.

A ranking is the ids a system returned, best first. Repeated ids count once, at
their best position (a system returning one turn twice must not score twice).
``k`` cuts the ranking after deduplication. Every metric needs at least one
relevant id: a question without evidence cannot be scored and is counted apart
by the callers, never scored as 0 or 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence


def _top(ranked: Sequence[str], k: int) -> list[str]:
    if isinstance(k, bool) or not isinstance(k, int) or k <= 0:
        raise ValueError(f"k: must be a positive integer, got {k!r}")
    return list(dict.fromkeys(ranked))[:k]


def _relevant(relevant: Collection[str]) -> frozenset[str]:
    wanted = frozenset(relevant)
    if not wanted:
        raise ValueError("relevant: must not be empty (an unscorable question)")
    return wanted


def hit_any(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 when at least one relevant id is in the top ``k``, else 0.0."""
    wanted = _relevant(relevant)
    return 1.0 if any(i in wanted for i in _top(ranked, k)) else 0.0


def hit_all(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 when every relevant id is in the top ``k``, else 0.0."""
    wanted = _relevant(relevant)
    return 1.0 if wanted <= set(_top(ranked, k)) else 0.0


def evidence_recall(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """The share of relevant ids found in the top ``k``."""
    wanted = _relevant(relevant)
    return len(wanted.intersection(_top(ranked, k))) / len(wanted)


def recall_all(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """LongMemEval's ``recall_all@k``: 1.0 when every relevant id is in the top ``k``."""
    return hit_all(ranked, relevant, k)


def recall_any(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """LongMemEval's ``recall_any@k``: 1.0 when some relevant id is in the top ``k``."""
    return hit_any(ranked, relevant, k)


def ndcg(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Binary-gain nDCG@k: DCG = sum of 1 / log2(rank + 1) over the relevant ids in
    the top ``k`` (rank 1-based), divided by the DCG of the ideal ranking, which puts
    min(len(relevant), k) relevant ids first."""
    wanted = _relevant(relevant)
    dcg = sum(
        1.0 / math.log2(rank + 1)
        for rank, item in enumerate(_top(ranked, k), start=1)
        if item in wanted
    )
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
    return dcg / ideal


Metric = Callable[[Sequence[str], Collection[str], int], float]


def scores_at(
    ranked: Sequence[str],
    relevant: Collection[str],
    ks: Sequence[int],
    metrics: Sequence[tuple[str, Metric]],
) -> dict[str, float]:
    """``{"<name>@<k>": value}`` for each k and each named metric, k-major order."""
    return {f"{name}@{k}": metric(ranked, relevant, k) for k in ks for name, metric in metrics}


def mean_scores(rows: Iterable[Mapping[str, float]], *, digits: int = 4) -> dict[str, float]:
    """Per-metric means of ``rows`` (each a metric -> value mapping) plus ``n``.

    An empty group gives ``{"n": 0}``: no metric is invented for it.
    """
    items = list(rows)
    if not items:
        return {"n": 0}
    names = list(items[0])
    for row in items:
        if list(row) != names:
            raise ValueError("rows: every row must have the same metrics in the same order")
    means: dict[str, float] = {
        name: round(math.fsum(row[name] for row in items) / len(items), digits) for name in names
    }
    means["n"] = len(items)
    return means
