"""The L3 facade with a second dense model: every write embeds with both and records
the text's language; a failure of either model writes nothing; a store created
before the second vector existed opens, serves and says how to add it."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from memstrata.config import LongTermSettings
from memstrata.errors import BackendError, ValidationError
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.facade import IndexedItem, LongTermStore, NewItem
from memstrata.longterm.points import MEMORIES, MULTILINGUAL_VECTOR
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.testing.embedders import HashEmbedder
from memstrata.testing.faults import FaultyEmbedder

TEXTS = ("我对花生过敏", "I live in Hangzhou", "我用 iPhone 拍照 and edit in Lightroom")


def open_store(path: Path, multilingual: HashEmbedder | FaultyEmbedder | None) -> LongTermStore:
    return LongTermStore(
        EdgeIndex(path),
        HashEmbedder(32),
        Bm25Encoder(),
        LongTermSettings(),
        multilingual=multilingual,
    )


def test_every_write_path_stores_both_vectors_and_the_language(tmp_path: Path) -> None:
    second = HashEmbedder(16)
    store = open_store(tmp_path / "l3", second)
    try:
        assert store.multilingual_status == "on"
        ids = store.add(MEMORIES, [NewItem(t, tenant="acme", user="u1") for t in TEXTS])
        ids += store.add_vectors(
            MEMORIES, [NewItem("我住在杭州", tenant="acme")], np.ones((1, 32), dtype=np.float32)
        )
        ids += store.add_points(
            MEMORIES, [IndexedItem(NewItem("下个月去日本", tenant="acme"), np.ones(32))]
        )
        langs = {
            r.payload["text"]: r.payload["lang"] for r in store.get(MEMORIES, ids, tenant="acme")
        }
        assert langs == {
            "我对花生过敏": "zh",
            "I live in Hangzhou": "en",
            "我用 iPhone 拍照 and edit in Lightroom": "mixed",
            "我住在杭州": "zh",
            "下个月去日本": "zh",
        }
        stored = store.dense_vectors(MEMORIES, ids, tenant="acme", using=MULTILINGUAL_VECTOR)
        assert set(stored) == set(ids)
        expected = second.embed(["我对花生过敏"])[0]
        assert np.allclose(stored[ids[0]], expected, atol=1e-5)
    finally:
        store.close()


def test_a_failing_second_model_writes_nothing(tmp_path: Path) -> None:
    second = FaultyEmbedder(HashEmbedder(16))
    store = open_store(tmp_path / "l3", second)
    try:
        second.fail()
        with pytest.raises(BackendError):
            store.add(MEMORIES, [NewItem(t, tenant="acme") for t in TEXTS])
        with pytest.raises(BackendError):
            store.add_points(
                MEMORIES, [IndexedItem(NewItem("我住在杭州", tenant="acme"), np.ones(32))]
            )
        assert store.count(MEMORIES, tenant="acme") == 0
        second.heal()
        store.add(MEMORIES, [NewItem(t, tenant="acme") for t in TEXTS])  # the retry
        assert store.count(MEMORIES, tenant="acme") == len(TEXTS)
    finally:
        store.close()


def test_a_store_without_the_second_vector_opens_and_serves(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    old = open_store(tmp_path / "l3", None)
    assert old.multilingual_status.startswith("off: not configured")
    kept = old.add(MEMORIES, [NewItem("I live in Hangzhou", tenant="acme")])
    old.close()

    with caplog.at_level(logging.WARNING, logger="memstrata.longterm.facade"):
        store = open_store(tmp_path / "l3", HashEmbedder(16))
    try:
        assert store.multilingual is None
        assert "created without the 'multilingual' vector" in store.multilingual_status
        [line] = [r.getMessage() for r in caplog.records if "multilingual" in r.getMessage()]
        assert "rebuild" in line
        assert [r.id for r in store.get(MEMORIES, kept, tenant="acme")] == kept
        new = store.add(MEMORIES, [NewItem("我对花生过敏", tenant="acme")])
        assert store.count(MEMORIES, tenant="acme") == 2
        [record] = store.get(MEMORIES, new, tenant="acme")
        assert record.payload["lang"] == "zh"
        with pytest.raises(ValidationError):
            store.embed_multilingual(["x"])
    finally:
        store.close()
