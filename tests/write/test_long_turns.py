"""Long turns through the write path store what the plain definitions say: BM25
document vectors as tokenize() and the BM25 formula give them, and - once a
conversation's turns have all arrived - the same episode vectors as the batch index
of the whole conversation, however the turns were batched."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from memstrata.config import LongTermSettings
from memstrata.longterm.adjacent import add_context_terms, blend_adjacent
from memstrata.longterm.facade import NewItem
from memstrata.longterm.points import SparseVector
from memstrata.longterm.sparse import Bm25Encoder, token_id, tokenize
from memstrata.memory.episodes import turn_episode_id
from memstrata.testing.synthetic_longmemeval import long_turns
from memstrata.write.index import EpisodeIndex


def reference_document(text: str, k1: float = 1.2, b: float = 0.75, avgdl: float = 32.0):  # type: ignore[no-untyped-def]
    tokens = tokenize(text)
    counts = Counter(token_id(t) for t in tokens)
    norm = k1 * (1.0 - b + b * len(tokens) / avgdl)
    weights = {tid: tf * (k1 + 1.0) / (tf + norm) for tid, tf in counts.items()}
    ordered = sorted(weights)
    return SparseVector(tuple(ordered), tuple(weights[t] for t in ordered))


def test_bm25_documents_of_long_turns_follow_the_formula() -> None:
    encoder = Bm25Encoder()
    texts = [text for _, _, _, text in long_turns(150, seed=2)]
    texts += ["我住在杭州，I moved to Chengdu in 2024!", "", "the and of", "Ünïcode straße 東京"]
    for text in texts:
        assert encoder.encode_document(text) == reference_document(text)


def _vector(rng: np.random.Generator) -> np.ndarray:  # type: ignore[type-arg]
    v = rng.standard_normal(16).astype(np.float32)
    return v / np.linalg.norm(v)


@pytest.mark.parametrize("batch", [1, 3, 7, 40])
def test_streamed_long_turns_get_the_batch_index_vectors(batch: int) -> None:
    """Turns streamed in batches (the workers' way) end with the vectors the batch
    index of the whole conversation gives: the last write of each turn wins."""
    settings = LongTermSettings()
    encoder = Bm25Encoder()
    rng = np.random.default_rng(0)
    turns = [text for _, _, _, text in long_turns(40, seed=6)]
    items = [
        NewItem(
            text=text,
            tenant="t",
            user="u",
            type="episode",
            source="turn",
            id=turn_episode_id("t", "th", seq),
            extra={"thread": "th", "seq": seq},
        )
        for seq, text in enumerate(turns, start=1)
    ]
    dense = [_vector(rng) for _ in items]
    index = EpisodeIndex(encoder.encode_document, settings)
    written: dict[str, tuple[np.ndarray, SparseVector]] = {}  # type: ignore[type-arg]
    for start in range(0, len(items), batch):
        chunk = list(zip(items[start : start + batch], dense[start : start + batch], strict=True))
        with index.writing():
            for point in index.index(chunk):
                assert point.item.id is not None
                written[point.item.id] = (point.dense, point.sparse)
    positions = [("t", "th", seq) for seq in range(1, len(items) + 1)]
    expected_dense = blend_adjacent(np.stack(dense), positions, settings.adjacent_blend)
    expected_terms = add_context_terms(
        [encoder.encode_document(t) for t in turns], positions, settings.context_terms
    )
    assert set(written) == {item.id for item in items}
    for row, item in enumerate(items):
        assert item.id is not None
        vector, terms = written[item.id]
        np.testing.assert_allclose(vector, expected_dense[row], rtol=0, atol=1e-6)
        assert terms == expected_terms[row]
