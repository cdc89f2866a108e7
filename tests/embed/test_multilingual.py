"""The multilingual embedder: Chinese and English in one space, from the bundled weights."""

from __future__ import annotations

import numpy as np
import pytest

from memstrata.embed.multilingual import MODEL_DIM, MultilingualEmbedder
from memstrata.errors import ValidationError


@pytest.fixture(scope="module")
def embedder() -> MultilingualEmbedder:
    return MultilingualEmbedder()


def test_rows_are_unit_norm_float32_in_order(embedder: MultilingualEmbedder) -> None:
    texts = ["我对花生过敏", "I am allergic to peanuts", "", "今天天气不错"]
    vectors = embedder.embed(texts)
    assert vectors.shape == (4, MODEL_DIM)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Order is kept: embedding one text alone gives its row.
    np.testing.assert_allclose(embedder.embed([texts[3]])[0], vectors[3], atol=1e-5)


def test_related_beats_unrelated_in_and_across_languages(embedder: MultilingualEmbedder) -> None:
    allergy_zh, home_zh, allergy_en = embedder.embed(
        ["我对花生过敏", "我住在杭州", "I am allergic to peanuts"]
    )
    question_zh, question_en, mars = embedder.embed(
        ["我对什么过敏？", "What am I allergic to?", "火星上的天气怎么样？"]
    )
    assert question_zh @ allergy_zh > question_zh @ home_zh + 0.2
    assert question_en @ allergy_zh > question_en @ home_zh + 0.2
    assert question_zh @ allergy_en > question_zh @ home_zh + 0.2
    assert max(mars @ allergy_zh, mars @ home_zh, mars @ allergy_en) < 0.3


def test_empty_input_and_bad_input(embedder: MultilingualEmbedder) -> None:
    assert embedder.embed([]).shape == (0, MODEL_DIM)
    with pytest.raises(ValidationError, match="texts"):
        embedder.embed("one string")
    with pytest.raises(ValidationError, match=r"texts\[1\]"):
        embedder.embed(["ok", 3])  # type: ignore[list-item]
