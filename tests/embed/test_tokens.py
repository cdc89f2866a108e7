"""Token vectors: one forward pass gives the sentence vector and any span's vector."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray

from memstrata.embed import CachedEmbedder, TokenEmbedder, TokenVectors
from memstrata.embed.minilm import MiniLMEmbedder
from memstrata.errors import ValidationError
from memstrata.testing.embedders import HashEmbedder

TEXTS = (
    "When did Margaret visit the NASA space museum?",
    "我上周在杭州买了一台 ThinkPad X1",
    "x",
    "",
    "emoji 🎉 and ORD-7781",
)


@pytest.mark.parametrize("runtime", ["onnx", pytest.param("torch", marks=pytest.mark.torch)])
def test_pooled_tokens_are_the_sentence_vector(runtime: str) -> None:
    embedder = MiniLMEmbedder(runtime=runtime)  # type: ignore[arg-type]
    expected = embedder.embed(list(TEXTS))
    for text, row in zip(TEXTS, expected, strict=True):
        tokens = embedder.embed_tokens(text)
        assert tokens is not None and tokens.text == text
        assert tokens.vectors.shape == (len(tokens.offsets), 384)
        np.testing.assert_allclose(tokens.pooled(), row, atol=1e-5)


def test_offsets_point_into_the_text(minilm_embedder: MiniLMEmbedder) -> None:
    text = TEXTS[0]
    tokens = minilm_embedder.embed_tokens(text)
    assert tokens is not None
    assert tokens.offsets[0] == tokens.offsets[-1] == (0, 0)  # [CLS], [SEP]
    words = [text[s:e] for s, e in tokens.offsets if e > s]
    assert words[:3] == ["When", "did", "Margaret"]


@pytest.mark.torch
def test_offsets_agree_with_the_torch_runtime(minilm_embedder: MiniLMEmbedder) -> None:
    text = TEXTS[0]
    tokens = minilm_embedder.embed_tokens(text)
    assert tokens is not None
    assert tokens.offsets == MiniLMEmbedder(runtime="torch").embed_tokens(text).offsets  # type: ignore[union-attr]


def test_a_span_is_the_mean_of_its_tokens(minilm_embedder: MiniLMEmbedder) -> None:
    text = TEXTS[0]
    tokens = minilm_embedder.embed_tokens(text)
    assert tokens is not None
    start = text.index("Margaret")
    inside = [i for i, (s, e) in enumerate(tokens.offsets) if e > s and s < start + 8 and start < e]
    mean = tokens.vectors[inside].mean(axis=0)
    np.testing.assert_allclose(
        tokens.pooled_spans([(start, start + 8)]), mean / np.linalg.norm(mean), atol=1e-6
    )
    # The name read in its question is still close to the name alone.
    alone = minilm_embedder.embed(["Margaret"])[0]
    assert float(tokens.pooled_spans([(start, start + 8)]) @ alone) > 0.6  # type: ignore[operator]


def test_spans_outside_every_token_give_none(minilm_embedder: MiniLMEmbedder) -> None:
    tokens = minilm_embedder.embed_tokens("short text")
    assert tokens is not None
    assert tokens.pooled_spans([]) is None
    assert tokens.pooled_spans([(3, 3)]) is None
    assert tokens.pooled_spans([(100, 120)]) is None


def test_token_vectors_are_read_only_and_checked() -> None:
    tokens = TokenVectors("ab", np.ones((3, 4), dtype=np.float32), ((0, 0), (0, 2), (0, 0)))
    with pytest.raises(ValueError):
        tokens.vectors[0, 0] = 5.0
    with pytest.raises(ValidationError, match="vectors"):
        TokenVectors("ab", np.ones((2, 4), dtype=np.float32), ((0, 0),))
    with pytest.raises(ValidationError, match="vectors"):
        TokenVectors("", np.ones((0, 4), dtype=np.float32), ())


def test_bad_text_names_the_field(minilm_embedder: MiniLMEmbedder) -> None:
    with pytest.raises(ValidationError, match="text"):
        minilm_embedder.embed_tokens(["not", "one"])  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="text"):
        CachedEmbedder(minilm_embedder).embed_tokens(3)  # type: ignore[arg-type]


class CountingTokens:
    """TEST DOUBLE: token vectors of one-hot words; counts its passes."""

    name = "counting-tokens"
    dim = 8

    def __init__(self) -> None:
        self.passes = 0

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return np.stack([self._tokens(t).pooled() for t in texts]).astype(np.float32)

    def embed_tokens(self, text: str) -> TokenVectors:
        self.passes += 1
        return self._tokens(text)

    def _tokens(self, text: str) -> TokenVectors:
        offsets = [(0, 0)]
        for word in text.split():
            start = text.index(word, offsets[-1][1] if len(offsets) > 1 else 0)
            offsets.append((start, start + len(word)))
        offsets.append((0, 0))
        vectors = np.full((len(offsets), self.dim), 0.1, dtype=np.float32)
        for row, (start, end) in enumerate(offsets):
            if end > start:
                vectors[row, len(text[start:end]) % self.dim] += 1.0
        return TokenVectors(text, vectors, tuple(offsets))


def test_the_cache_keeps_token_vectors_and_passes_through() -> None:
    inner = CountingTokens()
    cache = CachedEmbedder(inner, max_token_entries=2)
    assert isinstance(cache, TokenEmbedder)
    first = cache.embed_tokens("a bb")
    assert cache.embed_tokens("a bb") is first and inner.passes == 1
    cache.embed_tokens("ccc")
    cache.embed_tokens("dddd")  # evicts "a bb"
    cache.embed_tokens("a bb")
    assert inner.passes == 4


def test_the_cache_says_none_for_an_embedder_without_tokens() -> None:
    cache = CachedEmbedder(HashEmbedder())
    assert not isinstance(HashEmbedder(), TokenEmbedder)
    assert cache.embed_tokens("anything") is None
