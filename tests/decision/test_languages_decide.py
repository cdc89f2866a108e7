"""Issue 24, "Why" case 1 through the whole engine: over memories said in Chinese, an
unrelated question (in either language) is flagged and ``decide`` asks instead of
answering; related questions, in the memory's language or the other, are answered.
MiniLM alone scored "火星上的天气怎么样？" 0.70 against Chinese memories and answered."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memstrata import ContextEngine
from memstrata.clock import FakeClock

Factory = Callable[..., ContextEngine]
START = datetime(2025, 3, 1, 9, tzinfo=UTC)


@pytest.fixture
def engine(engine_opener: Factory) -> ContextEngine:
    clock = FakeClock(START)
    opened = engine_opener(clock=clock)
    opened.start_session("u1", "chat", tenant="acme", session_id="s1")
    for text in (
        "我对花生过敏。",
        "我住在杭州。",
        "我喜欢看科幻电影。",
        "My brother plays the violin.",
    ):
        opened.observe("s1", "user", text)
        clock.advance(timedelta(minutes=1))
    opened.flush()
    return opened


@pytest.mark.parametrize("question", ["火星上的天气怎么样？", "What is the weather on Mars?"])
def test_an_unrelated_question_is_asked_about(engine: ContextEngine, question: str) -> None:
    bundle = engine.route("s1", "respond", question)
    assert all(item.provenance.low_confidence for item in bundle.layer("L3"))
    decision = engine.decide("s1", bundle, question=question)
    assert decision.route == "ask"


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("我对什么过敏？", "花生"),
        ("What am I allergic to?", "花生"),
        ("我哥哥会什么乐器？", "violin"),
    ],
)
def test_a_related_question_is_answered(engine: ContextEngine, question: str, said: str) -> None:
    bundle = engine.route("s1", "respond", question)
    l3 = bundle.layer("L3")
    assert l3 and said in str(l3[0].content) and not l3[0].provenance.low_confidence
    assert engine.decide("s1", bundle, question=question).route == "answer"
