"""CachedEmbedder: LRU behaviour, one batch for misses, read-only cached rows."""

from __future__ import annotations

import threading
import time
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


class _SlowFirstCall(RecordingEmbedder):
    """TEST DOUBLE: its first call waits until a second caller is inside ``embed``
    (the moment two write workers' batches overlap), then a little longer."""

    def __init__(self) -> None:
        super().__init__()
        self.second_caller_in = threading.Event()
        self.first_started = threading.Event()

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if not self.first_started.is_set():
            self.first_started.set()
            assert self.second_caller_in.wait(5)
            time.sleep(0.05)
        return super().embed(texts)


def test_a_text_another_thread_is_embedding_is_waited_for_not_embedded_again() -> None:
    """Two threads asking for overlapping texts at once: the model embeds each text
    once (the second thread embeds only its own texts, then takes the others')."""
    inner = _SlowFirstCall()
    cache = CachedEmbedder(inner, max_entries=100)
    results: dict[str, NDArray[np.float32]] = {}
    first = threading.Thread(target=lambda: results.update(a=cache.embed(["x", "yy", "zzz"])))
    first.start()
    assert inner.first_started.wait(5)
    inner.second_caller_in.set()
    results["b"] = cache.embed(["yy", "w", "zzz"])
    first.join(5)
    embedded = [text for call in inner.calls for text in call]
    assert sorted(embedded) == ["w", "x", "yy", "zzz"]  # each text once
    np.testing.assert_array_equal(results["b"][0], results["a"][1])
    np.testing.assert_array_equal(results["b"][2], results["a"][2])


def test_a_failed_call_leaves_its_texts_to_the_waiting_thread() -> None:
    class FailsFirst(_SlowFirstCall):
        def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
            first = not self.first_started.is_set()
            out = super().embed(texts)
            if first:
                raise RuntimeError("model crashed")
            return out

    inner = FailsFirst()
    cache = CachedEmbedder(inner, max_entries=100)
    errors: list[BaseException] = []

    def run_first() -> None:
        try:
            cache.embed(["x", "yy"])
        except RuntimeError as exc:
            errors.append(exc)

    first = threading.Thread(target=run_first)
    first.start()
    assert inner.first_started.wait(5)
    inner.second_caller_in.set()
    rows = cache.embed(["yy"])
    first.join(5)
    assert errors and rows.shape == (1, 4) and rows[0, 2] == 1.0
