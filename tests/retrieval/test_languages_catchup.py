"""Issue 33 with both real models: an English-only tenant is written without the
multilingual vector, and the bilingual property still holds - once the tenant turns
cross-language (a Chinese memory, or a Chinese question) a Chinese question finds the
English memory that answers it."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from memstrata.clock import FakeClock
from memstrata.config import LongTermSettings, RetrievalSettings
from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.multilingual import MultilingualEmbedder
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.facade import LongTermStore, NewItem
from memstrata.longterm.points import MEMORIES, MULTILINGUAL_VECTOR
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.retrieval.results import RetrievalQuery
from memstrata.retrieval.retriever import Retriever

EN_MEMORIES = (
    "My brother plays the violin in an orchestra",
    "I work as a nurse at the city hospital",
    "We adopted a grey cat called Mochi last spring",
)


class Counting:
    """The real multilingual model, counting the texts it embeds in the foreground."""

    def __init__(self, inner: CachedEmbedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if threading.current_thread().name != "memstrata-multilingual-catchup":
            self.texts.extend(texts)
        return self.inner.embed(texts)


@pytest.fixture(scope="module")
def use_model() -> CachedEmbedder:
    return CachedEmbedder(MultilingualEmbedder())


@pytest.fixture
def opened(
    tmp_path: Path, minilm: CachedEmbedder, use_model: CachedEmbedder
) -> Iterator[tuple[LongTermStore, Retriever, Counting]]:
    second = Counting(use_model)
    settings = LongTermSettings()
    store = LongTermStore(
        EdgeIndex(tmp_path / "l3"),
        minilm,
        Bm25Encoder(),
        settings,
        clock=FakeClock(),
        multilingual=second,
    )
    yield store, Retriever(store, minilm, RetrievalSettings(), settings), second
    store.close()


def ask(reader: Retriever, text: str, tenant: str) -> list[str]:
    result = reader.retrieve(RetrievalQuery(text, tenant=tenant, user="u1", k=5))
    assert result.warnings == ()
    return [item.text for item in result.items[:3]]


def test_a_tenant_turning_cross_language_finds_its_english_memories_in_chinese(
    opened: tuple[LongTermStore, Retriever, Counting],
) -> None:
    store, reader, second = opened
    ids = store.add(MEMORIES, [NewItem(t, tenant="t1", user="u1") for t in EN_MEMORIES])
    assert second.texts == []  # English only: MiniLM and BM25
    assert "My brother plays the violin in an orchestra" in ask(reader, "Who plays violin?", "t1")
    assert second.texts == []  # no Chinese point: the cross route is not read
    store.add(MEMORIES, [NewItem("我对花生过敏", tenant="t1", user="u1")])
    assert second.texts == ["我对花生过敏"]
    assert store.settle(60)
    stored = store.dense_vectors(MEMORIES, ids, tenant="t1", using=MULTILINGUAL_VECTOR)
    assert set(stored) == set(ids)
    assert EN_MEMORIES[0] in ask(reader, "我哥哥会什么乐器？", "t1")
    assert EN_MEMORIES[1] in ask(reader, "我是做什么工作的？", "t1")
    # An English question now reads the cross route too (the tenant has Chinese).
    before = len(second.texts)
    assert "我对花生过敏" in ask(reader, "What am I allergic to?", "t1")
    assert len(second.texts) > before


def test_a_first_chinese_question_over_an_english_tenant_finds_the_answer(
    opened: tuple[LongTermStore, Retriever, Counting],
) -> None:
    store, reader, second = opened
    store.add(MEMORIES, [NewItem(t, tenant="t2", user="u1") for t in EN_MEMORIES])
    assert second.texts == []
    # The question turns the tenant cross-language; its few points are embedded
    # before it reads, so nothing is missed and nothing needs saying.
    assert EN_MEMORIES[2] in ask(reader, "我家的猫叫什么名字？", "t2")
