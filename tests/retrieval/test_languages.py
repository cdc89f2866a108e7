"""Issue 24's first three "Why" cases, on the reader with both real models: Chinese
questions over Chinese memories, and questions across the two languages. MiniLM alone
scored "火星上的天气怎么样？" at 0.70 against Chinese memories (never flagged), ranked
"我住在杭州" above the allergy memory for "我对什么过敏？", and found nothing across
languages."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.retrieval.bilingual_probe import MEMORIES as PROBE_MEMORIES
from tests.retrieval.bilingual_probe import RELATED, UNRELATED

from memstrata.clock import FakeClock
from memstrata.config import ConfigError, LongTermSettings, RetrievalSettings
from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.multilingual import MultilingualEmbedder
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.facade import LongTermStore, NewItem
from memstrata.longterm.points import MEMORIES
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.retrieval.languages import dense_space, interpolate
from memstrata.retrieval.results import RetrievalQuery, RetrievalResult
from memstrata.retrieval.retriever import Retriever

ZH_MEMORIES = ("我对花生过敏", "我住在杭州", "我喜欢看科幻电影", "我的妹妹在银行工作")
EN_MEMORIES = (
    "My brother plays the violin in an orchestra",
    "I work as a nurse at the city hospital",
)


@pytest.fixture(scope="module")
def multilingual() -> CachedEmbedder:
    return CachedEmbedder(MultilingualEmbedder())


def open_reader(
    path: Path, minilm: CachedEmbedder, multilingual: CachedEmbedder | None
) -> tuple[LongTermStore, Retriever]:
    settings = LongTermSettings(multilingual=multilingual is not None)
    store = LongTermStore(
        EdgeIndex(path),
        minilm,
        Bm25Encoder(),
        settings,
        clock=FakeClock(),
        multilingual=multilingual,
    )
    return store, Retriever(store, minilm, RetrievalSettings(), settings)


@pytest.fixture(scope="module")
def reader(
    tmp_path_factory: pytest.TempPathFactory, minilm: CachedEmbedder, multilingual: CachedEmbedder
) -> Iterator[Retriever]:
    store, retriever = open_reader(tmp_path_factory.mktemp("bilingual"), minilm, multilingual)
    items = [NewItem(t, tenant="zh", user="u1", type="episode") for t in ZH_MEMORIES]
    items += [NewItem(t, tenant="mix", user="u1", type="episode") for t in ZH_MEMORIES]
    items += [NewItem(t, tenant="mix", user="u1", type="episode") for t in EN_MEMORIES]
    items += [NewItem(t, tenant="probe", user="u1", type="episode") for t in PROBE_MEMORIES]
    store.add(MEMORIES, items)
    yield retriever
    store.close()


def ask(reader: Retriever, text: str, tenant: str, k: int = 5) -> RetrievalResult:
    return reader.retrieve(RetrievalQuery(text, tenant=tenant, user="u1", k=k))


def flagged(result: RetrievalResult) -> bool:
    """What the prompt would say: nothing from L3, or its best item low-confidence."""
    return result.l3_skipped or not result.items or result.items[0].low_confidence


@pytest.mark.parametrize("question", ["火星上的天气怎么样？", "What is the weather on Mars?"])
def test_an_unrelated_question_over_chinese_memories_is_flagged(
    reader: Retriever, question: str
) -> None:
    result = ask(reader, question, "zh")
    assert flagged(result)
    assert all(item.cosine < 0.36 for item in (*result.items, *result.below_threshold))


def test_the_allergy_memory_outranks_the_home_city(reader: Retriever) -> None:
    result = ask(reader, "我对什么过敏？", "zh")
    texts = [item.text for item in result.items]
    assert texts[0] == "我对花生过敏"
    assert (
        texts.index("我对花生过敏") < texts.index("我住在杭州") if "我住在杭州" in texts else True
    )
    top = result.items[0]
    assert not top.low_confidence and top.cosine_route == "multilingual"
    city = next(i for i in (*result.items, *result.below_threshold) if i.text == "我住在杭州")
    assert city.cosine < top.cosine and city.low_confidence


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("我哥哥会什么乐器？", "My brother plays the violin in an orchestra"),
        ("我是做什么工作的？", "I work as a nurse at the city hospital"),
        ("What am I allergic to?", "我对花生过敏"),
        ("Which city do I live in?", "我住在杭州"),
    ],
)
def test_a_question_finds_the_memory_said_in_the_other_language(
    reader: Retriever, question: str, answer: str
) -> None:
    result = ask(reader, question, "mix")
    assert not result.l3_skipped
    # In the top 3: BM25 still lifts an English memory sharing a word with an English
    # question ("city" in "city hospital") above the Chinese answer.
    [found] = [item for item in result.items[:3] if item.text == answer]
    assert not found.low_confidence
    assert found.cosine_route == "multilingual"


def test_a_plain_search_follows_the_question_language(reader: Retriever) -> None:
    """The router's and ``engine.search``'s single-route reads, too."""
    hits = reader.search(MEMORIES, "What am I allergic to?", tenant="mix", user="u1", k=3)
    assert hits[0].payload["text"] == "我对花生过敏"
    assert hits[0].cosine_route == "multilingual" and hits[0].cosine >= 0.36
    zh = reader.search(MEMORIES, "火星上的天气怎么样？", tenant="zh", user="u1", k=3)
    assert all(hit.cosine < 0.36 for hit in zh)


def test_the_probe_set_is_separated_by_the_defaults(reader: Retriever) -> None:
    """The knots and weights were chosen on this probe (docs/benchmarks.md,
    "Languages"): a change that breaks them shows here first."""
    found = sum(
        answer in [i.text for i in ask(reader, question, "probe", k=3).items]
        for question, answer in RELATED
    )
    assert found == len(RELATED)
    assert not any(flagged(ask(reader, question, "probe")) for question, _ in RELATED)
    assert all(flagged(ask(reader, question, "probe")) for question in UNRELATED)


def test_an_english_store_ranks_exactly_as_without_the_second_model(
    tmp_path: Path, minilm: CachedEmbedder, multilingual: CachedEmbedder
) -> None:
    texts = [
        "I live in Hangzhou with my wife",
        "My budget for the trip is 5000 yuan",
        "I am allergic to peanuts",
        "We adopted a cat called Snow last spring",
        "My sister works at a bank downtown",
    ]
    results = []
    for name, second in (("on", multilingual), ("off", None)):
        store, reader = open_reader(tmp_path / name, minilm, second)
        try:
            store.add(
                MEMORIES,
                [
                    NewItem(t, tenant="t", user="u1", id=f"00000000-0000-4000-8000-00000000000{i}")
                    for i, t in enumerate(texts)
                ],
            )
            for question in ("What am I allergic to?", "where do I live", "Snow"):
                result = ask(reader, question, "t")
                results.append(
                    [
                        (i.id, round(i.score, 6), round(i.cosine, 6), i.cosine_route)
                        for i in result.items
                    ]
                )
        finally:
            store.close()
    half = len(results) // 2
    assert results[:half] == results[half:]


def test_routes_by_language() -> None:
    assert dense_space("What am I allergic to?", True) == ("en", "dense", True)
    assert dense_space("我对什么过敏？", True) == ("zh", "multilingual", False)
    assert dense_space("我用 iPhone 和 Lightroom 修 photos", True).using == "multilingual"
    assert dense_space("我对什么过敏？", False) == ("zh", "dense", False)


def test_cosines_map_through_the_knots() -> None:
    knots = ((0.0, 0.0), (0.3, 0.36), (1.0, 1.0))
    assert interpolate(0.15, knots) == pytest.approx(0.18)
    assert interpolate(0.3, knots) == pytest.approx(0.36)
    assert interpolate(1.2, knots) == 1.0 and interpolate(-0.2, knots) == 0.0
    with pytest.raises(ConfigError, match="multilingual_knots"):
        LongTermSettings(multilingual_knots=(("zh-zh", ((0.0, 0.0), (0.5, 0.6), (0.4, 0.7))),))
    with pytest.raises(ConfigError, match="multilingual_knots"):
        LongTermSettings(multilingual_knots=(("en-en", ((0.0, 0.0), (1.0, 1.0))),))
    loaded = LongTermSettings(multilingual_knots=[["zh-zh", [[0, 0], [1, 1]]]])  # type: ignore[arg-type]
    assert loaded.multilingual_knots == (("zh-zh", ((0, 0), (1, 1))),)
    with pytest.raises(ConfigError, match="multilingual_sparse_weight"):
        dataclasses.replace(LongTermSettings(), multilingual_sparse_weight=-1)
