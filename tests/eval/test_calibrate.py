"""Threshold calibration on hand-made retrieval lists."""

from __future__ import annotations

import pytest

from memstrata.eval.calibrate import ScoredList, calibrate


def _lists() -> list[ScoredList]:
    return [
        # evidence at 0.62 and 0.48; noise at 0.55 and 0.20
        ScoredList(((0.62, True), (0.55, False), (0.48, True), (0.20, False))),
        # evidence at 0.33 only
        ScoredList(((0.40, False), (0.33, True))),
        # no evidence retrieved: everything is noise
        ScoredList(((0.25, False), (0.10, False))),
    ]


def test_curve_rows_are_hand_checked() -> None:
    report = calibrate(_lists())
    row = next(r for r in report["curve"] if r["threshold"] == 0.45)
    # evidence cosines 0.62, 0.48, 0.33: two of three at or above 0.45
    assert row["evidence_kept"] == pytest.approx(2 / 3, abs=1e-4)
    # items at or above 0.45: 0.62 (ev), 0.55, 0.48 (ev) -> precision 2/3
    assert row["precision"] == pytest.approx(2 / 3, abs=1e-4)
    # best items 0.62, 0.40, 0.25: two of three questions skipped below 0.45
    assert row["questions_skipped"] == pytest.approx(2 / 3, abs=1e-4)
    # of the two answerable questions, the second (best 0.40) is skipped
    assert row["answerable_skipped"] == pytest.approx(0.5)
    assert report["questions"] == 3 and report["evidence_items"] == 3


def test_chosen_thresholds_follow_the_rules() -> None:
    report = calibrate(_lists(), keep=2 / 3, skip_keep=1 / 3, max_lost=0.0)
    # 1/3 quantile of (0.33, 0.48, 0.62) with linear interpolation: 0.33 + 2/3 * 0.15
    assert report["low_confidence_cosine"] == pytest.approx(0.43, abs=1e-3)
    # by items: the 2/3 quantile, 0.48 + 1/3 * 0.14 = 0.527; by questions: none of the
    # answerable ones (best cosines 0.62 and 0.40) skipped -> 0.40; capped at 0.43
    assert report["skip_below_cosine"] == 0.4
    by_items = calibrate(_lists(), keep=2 / 3, skip_keep=1.0, max_lost=0.5)
    assert by_items["skip_below_cosine"] == pytest.approx(0.33)  # every evidence item kept
    capped = calibrate(_lists(), keep=1.0, skip_keep=1 / 3, max_lost=0.5)
    assert capped["low_confidence_cosine"] == pytest.approx(0.33)
    assert capped["skip_below_cosine"] == pytest.approx(0.33)  # never above the flag


def test_empty_input_chooses_nothing() -> None:
    report = calibrate([])
    assert report["low_confidence_cosine"] is None and report["skip_below_cosine"] is None
    with pytest.raises(ValueError):
        calibrate([], keep=0)
