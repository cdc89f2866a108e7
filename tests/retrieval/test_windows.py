"""Window keys of long episodes in retrieval: an episode is scored by the best of its
own vector and its windows, and a window key is never an item (both index adapters)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pytest
from numpy.typing import NDArray

from memstrata.config import LongTermSettings, RetrievalSettings
from memstrata.errors import ConfigError
from memstrata.longterm.facade import IndexedItem, LongTermStore, NewItem
from memstrata.longterm.points import Filter
from memstrata.memory.episodes import EPISODE_TYPE, EPISODE_WINDOW_TYPE, window_points
from memstrata.retrieval import RetrievalQuery, RetrievedItem, Retriever
from memstrata.retrieval.links import EPISODE_WINDOW
from memstrata.retrieval.visibility import ACTIVE_MEMORY_TYPES
from memstrata.testing.settings import NEUTRAL_RETRIEVAL

DIM = 64
NOW = datetime(2023, 8, 20, 15, 0, tzinfo=UTC)
Q = "which stations does the night train stop at"
FAR = " ".join(f"filler{i}" for i in range(300))
LONG = f"{FAR} the night train stops at Lyon and Turin"  # the answer past word 300
ACTIVE = ACTIVE_MEMORY_TYPES

# Only the adjustments off: the score is the dense cosine (BM25 weight 0).
PLAIN = NEUTRAL_RETRIEVAL


def unit(values: Mapping[int, float]) -> NDArray[np.float32]:
    out = np.zeros(DIM, dtype=np.float32)
    for axis, value in values.items():
        out[axis] = value
    normalized: NDArray[np.float32] = out / np.linalg.norm(out)
    return normalized


class Table:
    """TEST DOUBLE embedder: the query along axis 0; a text naming the train (what a
    window of the long turn says) at cosine 0.9 to it; anything else on its own axis."""

    name = "test-table-embedder"
    dim = DIM

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        rows = []
        for text in texts:
            if text == Q:
                rows.append(unit({0: 1.0}))
            elif "night train stops" in text:
                rows.append(unit({0: 0.9, 1: 0.4359}))
            else:
                rows.append(unit({DIM - 1: 1.0}))
        return np.stack(rows)


def episode(tenant: str, item_id: str, text: str, seq: int) -> NewItem:
    return NewItem(
        text=text,
        tenant=tenant,
        user="u1",
        type=EPISODE_TYPE,
        source="turn",
        id=item_id,
        created_at=datetime(2023, 8, 1, tzinfo=UTC).timestamp(),
        extra={"thread": "s1", "seq": seq},
    )


LONG_ID = "0b6d8f5e-7a21-4c3e-9f10-2d4b6a8c0e11"
SHORT_ID = "1c7e9a6f-8b32-4d4f-8a21-3e5c7b9d1f22"


def write(store: LongTermStore, tenant: str) -> list[str]:
    """A long episode (its own vector sees only filler) and a short one at cosine
    0.5; returns the long one's window ids."""
    long_item = episode(tenant, LONG_ID, LONG, 1)
    points = [
        IndexedItem(long_item, unit({DIM - 2: 1.0})),
        IndexedItem(episode(tenant, SHORT_ID, "a train ride", 2), unit({0: 0.5, 2: 0.866})),
    ]
    windows = window_points([long_item], LongTermSettings(), Table().embed)
    store.add_points("memories", points + windows)
    return [w.item.id or "" for w in windows]


def ask(
    store: LongTermStore,
    tenant: str,
    settings: RetrievalSettings,
    types: tuple[str, ...] | None = None,
) -> list[RetrievedItem]:
    retriever = Retriever(store, Table(), settings, store.settings)
    result = retriever.retrieve(RetrievalQuery(text=Q, tenant=tenant, now=NOW, k=5, types=types))
    return list(result.items or result.below_threshold)


@pytest.mark.parametrize("types", [None, ACTIVE])
def test_a_long_episode_is_found_by_its_window(
    store: LongTermStore, tenant: str, types: tuple[str, ...] | None
) -> None:
    window_ids = write(store, tenant)
    assert len(window_ids) == 2
    items = ask(store, tenant, PLAIN, types=types)
    assert [item.id for item in items] == [LONG_ID, SHORT_ID]
    assert items[0].cosine == pytest.approx(0.9, abs=1e-3)  # its best window's
    assert all(item.kind != EPISODE_WINDOW for item in items)
    # Without the window search the long episode is invisible to the dense route.
    blind = ask(store, tenant, replace(PLAIN, window_depth=0), types=types)
    assert [item.id for item in blind][:1] == [SHORT_ID]
    assert LONG_ID not in [item.id for item in blind if item.cosine > 0.1]


def test_windows_are_not_searched_for_types_without_episodes(
    store: LongTermStore, tenant: str
) -> None:
    write(store, tenant)
    assert ask(store, tenant, PLAIN, types=("fact",)) == []


def test_a_window_of_a_deleted_episode_brings_nothing(store: LongTermStore, tenant: str) -> None:
    write(store, tenant)
    store.delete("memories", [LONG_ID], tenant=tenant)
    for types in (None, ACTIVE):
        assert [item.id for item in ask(store, tenant, PLAIN, types=types)] == [SHORT_ID]


def test_windows_go_with_their_user(store: LongTermStore, tenant: str) -> None:
    write(store, tenant)
    windows = Filter(tenant=tenant, types=(EPISODE_WINDOW_TYPE,))
    assert store.index.count("memories", windows) == 2
    store.index.delete_where("memories", Filter(tenant=tenant, user="u1"))
    assert store.index.count("memories", windows) == 0


def test_window_depth_is_validated() -> None:
    assert EPISODE_WINDOW == EPISODE_WINDOW_TYPE
    for bad in (-1, 1001, True, 2.5):
        with pytest.raises(ConfigError, match=r"retrieval\.window_depth"):
            RetrievalSettings(window_depth=bad)  # type: ignore[arg-type]
