"""The streaming episode index gives every turn exactly the vectors the batch index
gives it, whatever batches and order the turns arrive in (two worker threads, a
restart in between)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.config import LongTermSettings
from memstrata.longterm.adjacent import add_context_terms, blend_adjacent
from memstrata.longterm.facade import IndexedItem, NewItem
from memstrata.longterm.points import Record
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.memory.episodes import Episode, turn_episode_id
from memstrata.write.index import EpisodeIndex, item_of_record

AT = datetime(2025, 3, 1, tzinfo=UTC)
WORDS = [
    "tea",
    "city",
    "moved",
    "sunday",
    "painting",
    "marathon",
    "dog",
    "violin",
    "budget",
    "peanuts",
    "trip",
    "work",
]
SETTINGS = LongTermSettings()
ENCODER = Bm25Encoder()


def conversation(n: int, thread: str = "s1#0") -> list[Episode]:
    return [
        Episode(
            id=turn_episode_id("t1", thread, seq),
            tenant="t1",
            user="u1",
            text=" ".join(WORDS[(seq * k) % len(WORDS)] for k in (1, 3, 5)),
            role="user",
            observed_at=AT,
            source=f"turn:s1/t{seq}",
            session_id="s1",
            turn_id=f"t{seq}",
            thread=thread,
            seq=seq,
        )
        for seq in range(1, n + 1)
    ]


def own_vectors(n: int) -> np.ndarray:
    rng = np.random.default_rng(n)
    rows = rng.normal(size=(n, 16)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def batch_index(episodes: Sequence[Episode], vectors: np.ndarray) -> dict[str, IndexedItem]:
    """What the batch path (``LongTermStore.add`` of a whole session) computes."""
    positions = [e.position for e in episodes]
    dense = blend_adjacent(vectors, positions, SETTINGS.adjacent_blend)
    terms = add_context_terms(
        [ENCODER.encode_document(e.text) for e in episodes], positions, SETTINGS.context_terms
    )
    return {e.id: IndexedItem(e.item(), dense[i], terms[i]) for i, e in enumerate(episodes)}


def assert_same(written: dict[str, IndexedItem], expected: dict[str, IndexedItem]) -> None:
    assert set(written) == set(expected)
    for point_id, want in expected.items():
        got = written[point_id]
        np.testing.assert_allclose(got.dense, want.dense, atol=1e-6)
        assert got.sparse is not None and want.sparse is not None
        assert got.sparse.indices == want.sparse.indices
        np.testing.assert_allclose(got.sparse.values, want.sparse.values, atol=1e-9)
        assert got.item.extra == want.item.extra


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=1, max_value=24).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=24),
            st.randoms(use_true_random=False),
        )
    )
)
def test_any_batches_in_any_order_end_with_the_batch_vectors(case: tuple) -> None:  # type: ignore[type-arg]
    n, sizes, rng = case
    episodes, vectors = conversation(n), own_vectors(n)
    # Cut the turns into consecutive batches, then hand the batches out in an order
    # two worker threads could finish them in.
    batches, start = [], 0
    for size in sizes:
        if start >= n:
            break
        batches.append(list(range(start, min(n, start + size))))
        start += size
    if start < n:
        batches.append(list(range(start, n)))
    rng.shuffle(batches)
    index = EpisodeIndex(ENCODER.encode_document, SETTINGS)
    written: dict[str, IndexedItem] = {}
    for batch in batches:
        with index.writing():
            new = [(episodes[i].item(), vectors[i]) for i in batch]
            for point in index.index(new, _store_fetch(written, episodes, vectors)):
                assert point.item.id is not None
                written[point.item.id] = point  # the last write of a point is what stays
    assert_same(written, batch_index(episodes, vectors))


def _store_fetch(
    written: dict[str, IndexedItem], episodes: Sequence[Episode], vectors: np.ndarray
) -> Callable[[Sequence[tuple[str, str]]], list[tuple[NewItem, np.ndarray]]]:
    """What the handler's read-back does: the stored points among the ids asked for
    (their payload as stored), with their own vectors embedded again."""
    own = {e.id: vectors[i] for i, e in enumerate(episodes)}

    def fetch(wanted: Sequence[tuple[str, str]]) -> list[tuple[NewItem, np.ndarray]]:
        found = []
        for _, point_id in wanted:
            point = written.get(point_id)
            if point is not None:
                record = Record(point_id, {**point.item.extra, **_reserved(point.item)})
                found.append((item_of_record(record), own[point_id]))
        return found

    return fetch


def test_after_a_restart_the_turns_within_reach_are_read_back() -> None:
    episodes, vectors = conversation(12), own_vectors(12)
    written: dict[str, IndexedItem] = {}
    first = EpisodeIndex(ENCODER.encode_document, SETTINGS)
    with first.writing():
        new = [(e.item(), vectors[i]) for i, e in enumerate(episodes[:7])]
        for point in first.index(new, _store_fetch(written, episodes, vectors)):
            written[point.item.id or ""] = point
    # A new process: the index holds nothing and reads back what it needs.
    asked: list[str] = []
    fetch = _store_fetch(written, episodes, vectors)

    def recording(wanted: Sequence[tuple[str, str]]) -> list[tuple[NewItem, np.ndarray]]:
        asked.extend(point_id for _, point_id in wanted)
        return fetch(wanted)

    second = EpisodeIndex(ENCODER.encode_document, SETTINGS)
    with second.writing():
        new = [(e.item(), vectors[7 + i]) for i, e in enumerate(episodes[7:])]
        for point in second.index(new, recording):
            written[point.item.id or ""] = point
    assert {e.id for e in episodes[3:7]} <= set(asked)
    assert_same(written, batch_index(episodes, vectors))


def test_a_remembered_text_has_no_neighbours() -> None:
    note = Episode(
        id="9f0e6d9c-8b8a-4c1e-9f3e-2d7c6b5a4e3f",
        tenant="t1",
        user="u1",
        text="call me after six",
        role="user",
        observed_at=AT,
        source="remember",
    )
    index = EpisodeIndex(ENCODER.encode_document, SETTINGS)
    vector = own_vectors(1)[0]
    with index.writing():
        (point,) = index.index([(note.item(), vector)])
    np.testing.assert_allclose(point.dense, vector)
    assert point.sparse == ENCODER.encode_document("call me after six")


def _reserved(item: NewItem) -> dict[str, object]:
    return {
        "tenant": item.tenant,
        "user": item.user,
        "type": item.type,
        "text": item.text,
        "source": item.source,
        "created_at": item.created_at,
    }
