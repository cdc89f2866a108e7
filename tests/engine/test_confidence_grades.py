"""Confidence grades instead of withholding (issue 32, item 5, its "Why" cases), in
English and in Chinese, through the real engine (embedded Valkey, qdrant-edge, MiniLM
and the multilingual route):

- "What did I tell you yesterday?" / "前天我跟你说了什么？": the episodes said inside
  the window come back, L3 is not skipped, and the memory block is not empty;
- after "We relocated to Vancouver back in March.", "where do I live?" ranks it first,
  unflagged, and ``decide`` answers instead of asking;
- ``route()`` serves and flags what ``retrieve()`` returns, by the same confidence,
  and reports what every signal calls unrelated (a cat's name asked in one language
  over a statement in the other);
- the README's example: "Where should I eat tonight?" after a home, an allergy, a
  budget and a move brings the allergy and the new city into the block, not marked
  low confidence, the allergy above the budget.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.router.bundle import ContextBundle

Factory = Callable[..., ContextEngine]
START = datetime(2025, 3, 1, 9, tzinfo=UTC)
SYSTEM = "You are a helpful assistant."


def _said(engine: ContextEngine, clock: FakeClock, texts: tuple[str, ...], step: timedelta) -> None:
    engine.start_session("u1", "chat", tenant="acme", session_id="s1")
    for text in texts:
        assert engine.observe("s1", "user", text).queued
        clock.advance(step)
    engine.flush()


def _memory_block(engine: ContextEngine, question: str) -> str:
    built = engine.build_context("s1", "respond", question, system_prompt=SYSTEM)
    return "\n".join(m["content"] for m in built.messages() if m["role"] == "system")


def _l3(bundle: ContextBundle) -> list[tuple[str, bool]]:
    return [(i.provenance.ref, i.provenance.low_confidence) for i in bundle.layer("L3")]


YESTERDAY = [
    (
        ("I love hiking in the mountains.", "My sister is visiting next month."),
        ("I'm thinking about buying a new bike.", "My boss asked me to lead the project."),
        timedelta(days=1),
        "What did I tell you yesterday?",
    ),
    (
        ("我喜欢去山里徒步。", "我妹妹下个月来看我。"),
        ("我在考虑买一辆新自行车。", "老板让我负责这个项目。"),
        timedelta(days=2),
        "前天我跟你说了什么？",
    ),
]


@pytest.mark.parametrize(("older", "that_day", "since", "question"), YESTERDAY)
def test_what_was_said_inside_a_named_window_is_never_withheld(
    engine_factory: Factory,
    older: tuple[str, ...],
    that_day: tuple[str, ...],
    since: timedelta,
    question: str,
) -> None:
    clock = FakeClock(START)
    engine = engine_factory(clock=clock)
    engine.start_session("u1", "chat", tenant="acme", session_id="s1")
    for text in older:
        assert engine.observe("s1", "user", text).queued
        clock.advance(timedelta(hours=1))
    clock.advance(timedelta(days=5))
    for text in that_day:
        assert engine.observe("s1", "user", text).queued
        clock.advance(timedelta(hours=1))
    clock.advance(since)
    engine.flush()

    result = engine.retrieve(question, tenant="acme", user="u1")
    assert result.time_window is not None
    assert not result.l3_skipped, result.l3_skip_reason
    inside = [item.text for item in result.items if item.in_time_window]
    assert set(inside) == set(that_day)
    bundle = engine.route("s1", "respond", question)
    assert not bundle.l3_skipped, bundle.l3_skip_reason
    block = _memory_block(engine, question)
    for text in that_day:
        assert text in block


VANCOUVER = [
    (("I like jazz.", "We relocated to Vancouver back in March."), "where do I live?", "Vancouver"),
    (("我喜欢爵士乐。", "我们三月份搬到了温哥华。"), "我住在哪里？", "温哥华"),
]


@pytest.mark.parametrize(("texts", "question", "city"), VANCOUVER)
def test_a_move_in_everyday_words_answers_where_i_live(
    engine_factory: Factory, texts: tuple[str, ...], question: str, city: str
) -> None:
    clock = FakeClock(START)
    engine = engine_factory(clock=clock)
    _said(engine, clock, texts, timedelta(days=2))

    result = engine.retrieve(question, tenant="acme", user="u1")
    first = result.items[0]
    assert city in first.text
    assert not first.low_confidence, first.cosine
    decision = engine.decide("s1", question=question)
    assert decision.route == "answer", decision


CATS = [
    (("My cat is called Mochi.", "I work as a nurse."), "我的猫叫什么名字？", "Mochi"),
    (("我的猫叫年糕。", "我是一名护士。"), "What's my cat's name?", "年糕"),
]


@pytest.mark.parametrize(("texts", "question", "name"), CATS)
def test_route_serves_and_flags_what_retrieve_does(
    engine_factory: Factory, texts: tuple[str, ...], question: str, name: str
) -> None:
    clock = FakeClock(START)
    engine = engine_factory(clock=clock)
    _said(engine, clock, texts, timedelta(days=1))

    floor = engine.settings.longterm.skip_below_cosine
    result = engine.retrieve(question, tenant="acme", user="u1", k=8)
    retrieved, unrelated = [], set()
    for item in result.items:
        for found in (*item.facts, item):
            assert found.confidence is not None
            if found.confidence < floor:  # every signal calls it unrelated
                unrelated.add(found.id)
            else:
                retrieved.append((found.id, found.low_confidence))
    bundle = engine.route("s1", "respond", question)
    assert _l3(bundle) == list(dict.fromkeys(retrieved))
    assert unrelated == {m.ref for m in bundle.missing if m.layer == "L3"}
    cat = next(i for i in bundle.layer("L3") if name in str(i.content))
    assert not cat.provenance.low_confidence
    assert any(name in item.text and not item.low_confidence for item in result.items)


README = [
    (
        (
            "I live in Hangzhou",
            "I'm allergic to peanuts and shellfish",
            "My budget for dinners is 300 yuan",
            "Actually I moved to Chengdu last month",
        ),
        "Where should I eat tonight?",
        ("peanuts", "Chengdu", "300 yuan"),
    ),
    (
        ("我住在杭州", "我对花生和贝类过敏", "我吃饭的预算是300元", "其实我上个月搬到成都了"),
        "今晚去哪吃饭？",
        ("花生", "成都", "300元"),
    ),
]


@pytest.mark.parametrize(("texts", "question", "words"), README)
def test_a_meal_brings_the_allergy_and_the_city_first_and_confident(
    engine_factory: Factory, texts: tuple[str, ...], question: str, words: tuple[str, ...]
) -> None:
    allergy, city, budget = words
    clock = FakeClock(START)
    engine = engine_factory(clock=clock)
    _said(engine, clock, texts, timedelta(days=2))

    result = engine.retrieve(question, tenant="acme", user="u1")
    ranked = [item.text for item in result.items]
    at = {
        word: next(i for i, item in enumerate(result.items) if word in item.text)
        for word in (allergy, city)
    }
    assert not result.items[at[allergy]].low_confidence
    assert not result.items[at[city]].low_confidence
    said_budget = [i for i, item in enumerate(result.items) if budget in item.text]
    assert not said_budget or at[allergy] < said_budget[0], ranked

    block = _memory_block(engine, question)
    lines = block.splitlines()
    for word in (allergy, city):
        fenced = next(i for i, line in enumerate(lines) if word in line and "|" not in line)
        label = lines[fenced - 2]  # the label line above the fence
        assert "LOW CONFIDENCE" not in label, label
    first_allergy = block.index(allergy)
    assert budget not in block or first_allergy < block.index(budget)


TRAVEL = [
    (
        ("I love cats.", "My travel budget is 5000 dollars.", "I live in Denver.", "I like jazz."),
        "Can you book me a flight for next week?",
        ("5000", "Denver"),
    ),
    (
        ("我喜欢猫。", "我的出行预算是五千元。", "我住在成都。", "我喜欢爵士乐。"),
        "帮我订机票",
        ("五千", "成都"),
    ),
]


@pytest.mark.parametrize(("texts", "question", "words"), TRAVEL)
def test_a_trip_brings_the_budget_and_the_city_first_and_confident(
    engine_factory: Factory, texts: tuple[str, ...], question: str, words: tuple[str, ...]
) -> None:
    clock = FakeClock(START)
    engine = engine_factory(clock=clock)
    _said(engine, clock, texts, timedelta(days=1))

    result = engine.retrieve(question, tenant="acme", user="u1")
    firsts = result.items[: len(words)]
    for word in words:
        assert any(word in item.text and not item.low_confidence for item in firsts), [
            (item.text, item.confidence) for item in result.items
        ]
    block = _memory_block(engine, question)
    for word in words:
        assert word in block
