"""Calibrating the two confidence thresholds on evaluation data (pure).

For every scored question we know the retrieved items' cosines to the question and
which items are evidence. Two thresholds come out:

* ``low_confidence_cosine`` - items below it are flagged in the prompt. Chosen as
  the cosine that keeps ``keep`` (default 90 %) of the retrieved *evidence* items
  unflagged: flags should mostly land on noise, rarely on what answers the question.
* ``skip_below_cosine`` - when every item is below it, L3 is skipped. Skipping throws
  context away, so it must almost never hit evidence: the cosine that keeps
  ``skip_keep`` (default 97.5 %) of the retrieved evidence items above it, lowered
  further if needed so that at most ``max_lost`` (default 5 %) of the questions whose
  list does contain evidence are skipped, and never above ``low_confidence_cosine``.

The curve the choice came from is returned with it, one row per threshold:
``evidence_kept`` (share of retrieved evidence items at or above it),
``precision`` (share of items at or above it that are evidence),
``questions_skipped`` (share of questions whose best item is below it) and
``answerable_skipped`` (the same among questions that retrieved evidence).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(0, 19))  # 0.00 .. 0.90


@dataclass(frozen=True, slots=True)
class ScoredList:
    """One question's retrieved items: (cosine, is_evidence) in rank order."""

    items: tuple[tuple[float, bool], ...]


def calibrate(
    lists: Sequence[ScoredList],
    *,
    keep: float = 0.9,
    skip_keep: float = 0.975,
    max_lost: float = 0.05,
) -> dict[str, Any]:
    """The chosen thresholds and the curve; empty input gives ``None`` choices."""
    if not 0 < keep <= 1 or not 0 < skip_keep <= 1 or not 0 <= max_lost < 1:
        raise ValueError("keep and skip_keep must be in (0, 1], max_lost in [0, 1)")
    evidence = np.array([c for s in lists for c, ev in s.items if ev], dtype=np.float64)
    every = np.array([c for s in lists for c, _ in s.items], dtype=np.float64)
    labels = np.array([ev for s in lists for _, ev in s.items], dtype=bool)
    best = np.array([max((c for c, _ in s.items), default=-1.0) for s in lists])
    answerable = np.array([any(ev for _, ev in s.items) for s in lists], dtype=bool)
    curve = [_row(t, evidence, every, labels, best, answerable) for t in THRESHOLDS]
    low = None
    if evidence.size:
        low = round(float(np.quantile(evidence, 1 - keep)), 3)
    skip = None
    if answerable.any() and low is not None:
        allowed = [r["threshold"] for r in curve if r["answerable_skipped"] <= max_lost]
        by_questions = max(allowed) if allowed else 0.0
        by_items = round(float(np.quantile(evidence, 1 - skip_keep)), 3)
        skip = min(by_questions, by_items, low)
    return {
        "low_confidence_cosine": low,
        "skip_below_cosine": skip,
        "rule": (
            f"low_confidence: {keep:.1%} of retrieved evidence items at or above; "
            f"skip: {skip_keep:.1%} of them at or above, skipping <= {max_lost:.0%} of "
            "the questions that retrieved evidence, at most the low-confidence threshold"
        ),
        "evidence_items": int(evidence.size),
        "questions": len(lists),
        "curve": curve,
    }


def _row(
    threshold: float,
    evidence: np.ndarray,
    every: np.ndarray,
    labels: np.ndarray,
    best: np.ndarray,
    answerable: np.ndarray,
) -> dict[str, float]:
    above = every >= threshold
    skipped = best < threshold
    return {
        "threshold": threshold,
        "evidence_kept": _share(evidence >= threshold),
        "precision": round(float(labels[above].mean()), 4) if above.any() else 0.0,
        "questions_skipped": _share(skipped),
        "answerable_skipped": _share(skipped[answerable]),
    }


def _share(mask: np.ndarray) -> float:
    return round(float(mask.mean()), 4) if mask.size else 0.0
