"""Small talk is kept, but weighs little in ranking (issue 25, "Noise kept out").

A support chat ends with "Thanks, that's all for today." right after the user names
an allergy. Before, the goodbye borrowed the allergy turn's score (it sits next to it
in the thread) and came back second for an allergy question, above the user's budget
and city (in Chinese above the city). Now it ranks below every real memory, in
English and in Chinese; it is still stored whole, marked as small talk, and found
when the question asks how the conversation ended.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from memstrata.clock import FakeClock
from memstrata.config import Settings
from memstrata.embed.protocol import Embedder
from memstrata.engine import ContextEngine
from memstrata.retrieval import RetrievedItem

T0 = datetime(2025, 5, 1, 9, 0, tzinfo=UTC)
NOW = T0 + timedelta(hours=2)

CHATS: dict[str, Sequence[str]] = {
    "en": (
        "I live in Hangzhou.",
        "My budget for the trip is 5000 yuan.",
        "I'm allergic to peanuts and shellfish.",
        "Thanks, that's all for today.",
    ),
    "zh": (
        "我住在杭州。",
        "这次旅行我的预算是5000元。",
        "我对花生和海鲜过敏。",
        "谢谢，今天就到这里吧。",
    ),
}
ALLERGY = {"en": "allergic to peanuts", "zh": "花生"}
GOODBYE = {"en": "that's all for today", "zh": "今天就到这里"}


@pytest.fixture(scope="module")
def engine(
    tmp_path_factory: pytest.TempPathFactory, minilm: Embedder
) -> Iterator[tuple[ContextEngine, FakeClock]]:
    clock = FakeClock(T0)
    opened = ContextEngine.open(
        Settings(data_dir=tmp_path_factory.mktemp("smalltalk")), clock=clock, embedder=minilm
    )
    for lang, texts in CHATS.items():
        _observe(opened, clock, f"observe-{lang}", texts)
    yield opened, clock
    opened.close()


def _observe(engine: ContextEngine, clock: FakeClock, user: str, texts: Sequence[str]) -> None:
    state = engine.start_session(user, "support", session_id=f"s-{user}")
    for i, text in enumerate(texts):
        clock.set(T0 + timedelta(minutes=i))
        assert engine.observe(state.session_id, "user", text).queued
    engine.flush()


def _remember(engine: ContextEngine, clock: FakeClock, user: str, texts: Sequence[str]) -> None:
    for i, text in enumerate(texts):
        clock.set(T0 + timedelta(minutes=i))
        engine.remember(user, text)
    engine.flush()


def _episodes(engine: ContextEngine, user: str, question: str) -> list[RetrievedItem]:
    result = engine.retrieve(question, user=user, k=10, now=NOW)
    return [item for item in result.items if item.payload.get("type") == "episode"]


def _rank(items: Sequence[RetrievedItem], words: str) -> int:
    return next(i for i, item in enumerate(items) if words in item.text)


@pytest.mark.parametrize(
    ("lang", "question"),
    [
        ("en", "Do I have any food allergies?"),
        ("en", "Any allergies I should know about?"),
        ("en", "What am I allergic to?"),
        ("zh", "我对什么过敏？"),
        ("zh", "我有哪些食物过敏？"),
        ("zh", "我有什么过敏吗？"),
    ],
)
def test_small_talk_does_not_outrank_real_memories(
    engine: tuple[ContextEngine, FakeClock], lang: str, question: str
) -> None:
    opened, _ = engine
    user = f"observe-{lang}"
    items = _episodes(opened, user, question)
    assert len(items) == len(CHATS[lang])  # nothing said is lost
    assert _rank(items, ALLERGY[lang]) == 0
    # the goodbye ranks below every real memory (before: second in English, above
    # the city in Chinese)
    assert _rank(items, GOODBYE[lang]) == len(items) - 1
    goodbye = items[_rank(items, GOODBYE[lang])]
    assert goodbye.payload.get("small_talk") is True
    assert not goodbye.payload.get("facts")  # no "commitment for today" read from it
    assert all(item.payload.get("small_talk") is None for item in items if item is not goodbye)


@pytest.mark.parametrize(
    ("lang", "question"),
    [
        ("en", "What did I say at the end of our chat today?"),
        ("en", "thanks, that's all"),
        ("zh", "今天最后我说了什么？"),
        ("zh", "我最后说谢谢了吗？"),
        ("zh", "谢谢"),
    ],
)
def test_small_talk_is_found_when_asked_for(
    engine: tuple[ContextEngine, FakeClock], lang: str, question: str
) -> None:
    opened, _ = engine
    user = f"observe-{lang}"
    items = _episodes(opened, user, question)
    assert _rank(items, GOODBYE[lang]) == 0


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_remembered_small_talk_is_kept_and_marked(
    engine: tuple[ContextEngine, FakeClock], lang: str
) -> None:
    opened, clock = engine
    user = f"remember-{lang}"
    _remember(opened, clock, user, CHATS[lang])
    question = {"en": "What am I allergic to?", "zh": "我对什么过敏？"}[lang]
    items = _episodes(opened, user, question)
    assert len(items) == len(CHATS[lang])
    assert _rank(items, ALLERGY[lang]) == 0
    assert _rank(items, GOODBYE[lang]) == len(items) - 1
    flagged = [item.text for item in items if item.payload.get("small_talk") is True]
    assert flagged == [CHATS[lang][-1]]
