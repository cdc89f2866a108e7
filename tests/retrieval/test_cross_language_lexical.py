"""A Chinese question over a fact said in English inside Chinese chats: BM25 (jieba)
can never match an English text, so without a share of the lexical half every Chinese
turn sharing a single character with the question ("开" in "我开什么车？" and
"楼下新开了一家火锅店") gained up to the whole BM25 weight over the English answer
(issue 24: Chinese questions over English evidence were the weakest cross-language
direction)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memstrata.clock import FakeClock
from memstrata.config import LongTermSettings, RetrievalSettings
from memstrata.embed.cache import CachedEmbedder
from memstrata.embed.multilingual import MultilingualEmbedder
from memstrata.longterm.edge import EdgeIndex
from memstrata.longterm.facade import LongTermStore, NewItem
from memstrata.longterm.points import MEMORIES
from memstrata.longterm.sparse import Bm25Encoder
from memstrata.retrieval.languages import lexical_share
from memstrata.retrieval.results import RetrievalQuery
from memstrata.retrieval.retriever import Retriever

# A Chinese-speaking user's sessions, one fact of each said in English.
SESSIONS = (
    (
        "嗨，今天下班有点晚。",
        "辛苦啦，吃饭了吗？",
        "还没，等会儿点个外卖。",
        "I moved to Chengdu last spring for my new job.",
        "新城市适应得怎么样？",
        "还行吧，就是有点想家。",
        "我去洗澡了，拜拜。",
    ),
    (
        "今天天气好热啊。",
        "记得多喝水哦。",
        "My daughter is learning to play the piano.",
        "真棒，她几岁了？",
        "刚满七岁，每周上两次课。",
        "有什么好看的电视剧推荐吗？",
        "可以看看《繁花》，口碑很好。",
        "好的，我去洗澡了，拜拜。",
    ),
    (
        "今天心情不太好。",
        "怎么了？愿意说说吗？",
        "I drive a blue Tesla Model 3 to work every day.",
        "开车上班累不累？",
        "堵车的时候挺烦的。",
        "有什么好吃的推荐吗？",
        "楼下新开了一家火锅店。",
        "好，我去洗澡了，拜拜。",
    ),
)
CAR = "I drive a blue Tesla Model 3 to work every day."


@pytest.fixture(scope="module")
def reader(tmp_path_factory: pytest.TempPathFactory, minilm: CachedEmbedder) -> Iterator[Retriever]:
    settings = LongTermSettings()
    store = LongTermStore(
        EdgeIndex(Path(tmp_path_factory.mktemp("zh-en"))),
        minilm,
        Bm25Encoder(),
        settings,
        clock=FakeClock(),
        multilingual=CachedEmbedder(MultilingualEmbedder()),
    )
    store.add(
        MEMORIES,
        [
            NewItem(
                text, tenant="t", user="u1", type="episode", extra={"thread": f"s{s}", "seq": i}
            )
            for s, turns in enumerate(SESSIONS)
            for i, text in enumerate(turns)
        ],
    )
    yield Retriever(store, minilm, RetrievalSettings(), settings)
    store.close()


def test_an_english_answer_outranks_a_chinese_turn_sharing_one_character(
    reader: Retriever,
) -> None:
    result = reader.retrieve(RetrievalQuery("我开什么车？", tenant="t", user="u1", k=10))
    # Ranked whether or not L3 is confident enough to serve it (a separate matter).
    found = [*result.items, *result.below_threshold]
    texts = [item.text for item in found]
    assert CAR in texts
    assert texts.index(CAR) < texts.index("楼下新开了一家火锅店。")
    car = next(item for item in found if item.text == CAR)
    assert car.cosine_route == "multilingual"


def test_the_english_facts_answer_chinese_questions(reader: Retriever) -> None:
    for question, answer in (
        ("我现在住在哪个城市？", "I moved to Chengdu last spring for my new job."),
        ("我女儿在学什么乐器？", "My daughter is learning to play the piano."),
        ("我开什么车？", CAR),
    ):
        result = reader.retrieve(RetrievalQuery(question, tenant="t", user="u1", k=3))
        found = [*result.items, *result.below_threshold]
        assert answer in [item.text for item in found], question


def test_lexical_share_adds_the_sparse_half_at_the_dense_value_to_unseen_points() -> None:
    fused = {"zh": 0.5 + 0.15, "en": 0.4}
    dense = [("zh", 0.5), ("en", 0.4), ("far", -0.2)]
    shared = lexical_share(fused, dense, frozenset({"en", "far"}), 0.15)
    assert shared["zh"] == fused["zh"]  # seen by BM25: as it was
    assert shared["en"] == pytest.approx(0.4 + 0.15 * 0.4)
    assert shared["far"] == 0.0  # a negative cosine adds nothing
    assert lexical_share(fused, dense, frozenset(), 0.15) == fused
    assert lexical_share(fused, dense, frozenset({"en"}), 0.0) == fused
