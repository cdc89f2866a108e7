"""Retrieval metrics and CER on hand-computed cases."""

from __future__ import annotations

import math

import pytest

from memstrata.cer import (
    StepOutcome,
    cer,
    cer_summary,
    content_words,
    context_loaded,
    context_used,
    is_reflected,
    overlap,
)
from memstrata.eval.metrics import (
    evidence_recall,
    hit_all,
    hit_any,
    mean_scores,
    ndcg,
    recall_all,
    recall_any,
)


def test_hit_and_recall_at_k() -> None:
    ranked = ["x", "a", "y", "b", "z"]
    assert hit_any(ranked, {"a", "b"}, 1) == 0.0
    assert hit_any(ranked, {"a", "b"}, 2) == 1.0
    assert hit_all(ranked, {"a", "b"}, 3) == 0.0
    assert hit_all(ranked, {"a", "b"}, 4) == 1.0
    assert evidence_recall(ranked, {"a", "b", "c"}, 2) == pytest.approx(1 / 3)
    assert evidence_recall(ranked, {"a", "b", "c"}, 10) == pytest.approx(2 / 3)
    assert recall_all(ranked, {"a"}, 2) == 1.0 and recall_any(ranked, {"q"}, 5) == 0.0
    assert hit_any([], {"a"}, 5) == 0.0


def test_repeated_ids_count_once_at_their_best_rank() -> None:
    # Deduplicated ranking: x, a, b -> b is inside the top 3.
    assert hit_all(["x", "x", "a", "a", "b"], {"a", "b"}, 3) == 1.0
    assert evidence_recall(["a", "a", "a"], {"a", "b"}, 3) == 0.5


def test_ndcg_known_values() -> None:
    # relevant at ranks 1 and 3 of 3: (1 + 1/log2 4) / (1 + 1/log2 3)
    assert ndcg(["a", "x", "b"], {"a", "b"}, 3) == pytest.approx(1.5 / (1 + 1 / math.log2(3)))
    assert ndcg(["a", "x", "b"], {"a", "b"}, 3) == pytest.approx(0.91972, abs=1e-5)
    assert ndcg(["x", "a"], {"a"}, 5) == pytest.approx(0.63093, abs=1e-5)  # 1/log2 3
    assert ndcg(["x", "a"], {"a"}, 1) == 0.0
    assert ndcg(["a", "b"], {"a", "b"}, 10) == 1.0
    # The ideal ranking is cut at k: 3 relevant, k = 2, both top slots relevant -> 1.
    assert ndcg(["a", "b", "x"], {"a", "b", "c"}, 2) == 1.0
    # A relevant item below k does not count.
    assert ndcg(["x", "y", "a"], {"a"}, 2) == 0.0


def test_metrics_reject_unscorable_input() -> None:
    with pytest.raises(ValueError, match="relevant"):
        hit_any(["a"], set(), 5)
    with pytest.raises(ValueError, match="k"):
        ndcg(["a"], {"a"}, 0)


def test_mean_scores() -> None:
    rows = [{"m@5": 1.0, "r@5": 0.5}, {"m@5": 0.0, "r@5": 0.25}, {"m@5": 1.0, "r@5": 0.0}]
    assert mean_scores(rows) == {"m@5": 0.6667, "r@5": 0.25, "n": 3}
    assert mean_scores([]) == {"n": 0}
    with pytest.raises(ValueError):
        mean_scores([{"a": 1.0}, {"b": 1.0}])


def test_cer_counts_steps_loaded_and_used() -> None:
    steps = [
        StepOutcome(loaded=True, used=True),
        StepOutcome(loaded=True, used=False),
        StepOutcome(loaded=False, used=True),
        StepOutcome(loaded=True, used=True, step="s4"),
    ]
    assert cer(steps) == 0.5
    assert cer_summary(steps) == {"cer": 0.5, "loaded_rate": 0.75, "used_rate": 0.75, "steps": 4}
    assert cer_summary([]) == {"cer": None, "loaded_rate": None, "used_rate": None, "steps": 0}
    with pytest.raises(ValueError):
        cer([])


def test_context_loaded_follows_the_seed_definition() -> None:
    assert context_loaded(
        required_l2_keys=["k1"],
        present_l2_keys=["k1", "k2"],
        l3_confidences=[0.3, 0.8],
        threshold=0.72,
    )
    # An L2 key missing or expired (not in present) -> not loaded.
    assert not context_loaded(
        required_l2_keys=["k1", "k3"], present_l2_keys=["k1"], l3_confidences=None, threshold=0.72
    )
    # L3 asked and empty, or only below the threshold -> not loaded.
    assert not context_loaded(l3_confidences=[], threshold=0.72)
    assert not context_loaded(l3_confidences=[0.5, 0.71], threshold=0.72)
    # A step that needs no L3 and no L2 keys.
    assert context_loaded(l3_confidences=None, threshold=0.72)
    # Unknown confidence (None) counts as returned and confident.
    assert context_loaded(l3_confidences=[None], threshold=0.72)


def test_matcher_rule() -> None:
    assert content_words("The Paintings of a sunrise, 2022!") == {"painting", "sunrise", "2022"}
    assert content_words("振动分析标准") == {"振动", "动分", "分析", "析标", "标准"}
    assert is_reflected("a border collie", "My dog is a Border Collie.")
    assert overlap("7 May 2023", "[1:47 pm on 8 May, 2023] yesterday") == pytest.approx(2 / 3)
    assert is_reflected("7 May 2023", "[1:47 pm on 8 May, 2023] yesterday")
    assert not is_reflected("7 May 2023", "in May", min_overlap=0.5)
    assert not is_reflected("the", "the the the")  # no content word: nothing to check
    assert is_reflected("根据振动分析标准", "按照振动分析标准，阈值为 3.5")
    with pytest.raises(ValueError):
        is_reflected("a", "b", min_overlap=0)


def test_context_used() -> None:
    output = "Per the vibration standard the threshold is 3.5 mm/s for device D123."
    assert context_used(["vibration standard", "unrelated weather"], output)
    assert not context_used(["vibration standard", "unrelated weather"], output, require_all=True)
    assert not context_used([], output)
