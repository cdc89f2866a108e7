"""The index systems write long turns' window keys as the product does; the baselines
never see them."""

from __future__ import annotations

from datetime import UTC, datetime

from memstrata.config import LongTermSettings, RetrievalSettings
from memstrata.eval.command import open_turn_store
from memstrata.eval.datasets import Turn
from memstrata.eval.systems import retrieved, retriever_search
from memstrata.longterm.points import Filter
from memstrata.memory.episodes import EPISODE_WINDOW_TYPE
from memstrata.retrieval import Retriever
from memstrata.testing.embedders import HashEmbedder

AT = datetime(2023, 5, 1, tzinfo=UTC)
FILLER = " ".join(f"filler{i}" for i in range(200))


def turns() -> list[Turn]:
    out = [
        Turn(f"D1:{i}", "session_1", "Ann", f"Ann: small talk number {i}", AT, "d")
        for i in range(1, 6)
    ]
    out[2] = Turn("D1:3", "session_1", "Ann", f"Ann: {FILLER} the ferry leaves at dawn", AT, "d")
    return out


def test_long_turns_get_window_keys_that_no_system_returns() -> None:
    settings = LongTermSettings(window_words=50, window_stride_words=40)
    with open_turn_store(None, "locomo", HashEmbedder(64), settings) as store:
        store.ensure_indexed("locomo-0", turns())
        store.finish_indexing()
        keys = Filter(tenant="locomo-0", types=(EPISODE_WINDOW_TYPE,))
        assert store.windows == store.store.index.count("memories", keys) == 4
        for mode in ("dense", "sparse", "hybrid"):
            hits = store.search("locomo-0", "ferry at dawn", 10, mode)
            assert len(hits) == 5 and all(h.payload["type"] == "turn" for h in hits)
        retriever = Retriever(store.store, store.store.embedder, RetrievalSettings(), settings)
        found = retriever_search(store, retriever)("locomo-0", "ferry at dawn", AT, 10)
        assert len(found) == 5 and all(item.payload["type"] == "turn" for item in found)
        assert retrieved(found)[0].id == "D1:3"
