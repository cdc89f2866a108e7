"""CachedEmbedder: LRU behaviour, one batch for misses, read-only cached rows."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray

from memstrata.embed.cache import CachedEmbedder
from memstrata.errors import ValidationError


class RecordingEmbedder:
    """TEST DOUBLE: one-hot-ish vectors by text length; records every call."""

    name = "recording"
    dim = 4

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.calls.append(list(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            out[i, len(text) % self.dim] = 1.0
        return out


def test_hits_skip_the_model_and_misses_go_in_one_batch() -> None:
    inner = RecordingEmbedder()
    cache = CachedEmbedder(inner, max_entries=10)
    first = cache.embed(["a", "bb"])
    second = cache.embed(["bb", "ccc", "a", "ccc"])
    assert inner.calls == [["a", "bb"], ["ccc"]]
    np.testing.assert_array_equal(second[0], first[1])
    np.testing.assert_array_equal(second[2], first[0])
    np.testing.assert_array_equal(second[1], second[3])
    assert (cache.hits, cache.misses) == (2, 4)
    assert cache.name == "recording" and cache.dim == 4


def test_least_recently_used_is_evicted() -> None:
    inner = RecordingEmbedder()
    cache = CachedEmbedder(inner, max_entries=2)
    cache.embed(["a"])
    cache.embed(["b"])
    cache.embed(["a"])  # a is now the most recent
    cache.embed(["c"])  # evicts b
    cache.embed(["a"])
    cache.embed(["b"])
    assert inner.calls == [["a"], ["b"], ["c"], ["b"]]


def test_callers_cannot_corrupt_the_cache() -> None:
    cache = CachedEmbedder(RecordingEmbedder())
    out = cache.embed(["abc"])
    out[0, :] = 99.0
    assert cache.embed(["abc"])[0].max() == 1.0


def test_empty_input_and_bad_size() -> None:
    assert CachedEmbedder(RecordingEmbedder()).embed([]).shape == (0, 4)
    with pytest.raises(ValidationError) as err:
        CachedEmbedder(RecordingEmbedder(), max_entries=0)
    assert err.value.field == "max_entries"
