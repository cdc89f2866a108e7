"""A question that asks only what was said in a time window ("What did I tell you
yesterday?", 前天我跟你说了什么？) shares no word with the answer: the window is its whole
evidence, so what was said inside it is served confident (retrieval/confidence.py,
``recall_only``); what was said outside it is not, and a question naming a topic
besides its window is graded as before."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.retrieval.confidence import question_signals
from memstrata.retrieval.timeexpr import TimeWindow

NOW = datetime(2025, 9, 10, 12, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "phrase", "expected"),
    [
        ("What did I tell you yesterday?", "yesterday", True),
        ("What did I mention three days ago?", "three days ago", True),
        ("前天我跟你说了什么？", "前天", True),
        ("上周我跟你聊了什么？", "上周", True),
        ("What did I tell you yesterday about my car?", "yesterday", False),
        ("昨天我说的那家餐厅叫什么？", "昨天", False),
    ],
)
def test_recall_only(question: str, phrase: str, expected: bool) -> None:
    window = TimeWindow(NOW - timedelta(days=2), NOW, phrase)
    assert question_signals(question, (), window, NOW).recall_only is expected


def test_no_window_is_never_recall_only() -> None:
    assert not question_signals("What did I tell you?", (), None, NOW).recall_only


@pytest.mark.parametrize(
    ("question", "inside", "outside"),
    [
        (
            "What did I tell you yesterday?",
            "I was thinking about adopting a whippet.",
            "I bought new running shoes.",
        ),
        ("前天我跟你说了什么？", "我打算下个月去贵州自驾。", "我最近在学陶艺。"),
    ],
)
def test_what_was_said_in_the_window_is_confident(
    engine_opener: Callable[..., ContextEngine], question: str, inside: str, outside: str
) -> None:
    clock = FakeClock(NOW - timedelta(days=30))
    engine = engine_opener(clock=clock)
    tenant = "recall-" + str(abs(hash(question)) % 10_000)
    engine.start_session("u1", "chat", tenant=tenant, session_id="old")
    engine.observe("old", "user", outside)
    engine.flush()
    days = 1 if "yesterday" in question else 2
    clock.set(NOW - timedelta(days=days, hours=2))
    engine.start_session("u1", "chat", tenant=tenant, session_id="recent")
    engine.observe("recent", "user", inside)
    engine.flush()
    clock.set(NOW)
    found = engine.retrieve(question, tenant=tenant, user="u1", now=NOW)
    by_text = {item.text: item for item in found.items}
    assert inside in by_text and not by_text[inside].low_confidence
    if outside in by_text:
        assert by_text[outside].low_confidence
