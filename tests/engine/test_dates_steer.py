"""A date named in a question steers the ranking, on the streaming path (``observe``).

A companion chat over ten days: the same kind of plan is told on two days, with small
talk around it. A question that names one of those days (a date, a weekday, a relative
day, "the first time we talked"), in English or in Chinese, ranks what was said that
day first. (That a date nothing was said on, or none, changes nothing else is
checked where each score can be read: tests/retrieval/test_timesteer.py.)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

import pytest

from memstrata.clock import FakeClock
from memstrata.config import Settings
from memstrata.embed.protocol import Embedder
from memstrata.engine import ContextEngine

USER = "u-dates"

# Wednesday 2025-05-14, the day the questions are asked (2025-05-01 is a Thursday).
NOW = datetime(2025, 5, 14, 20, 0, tzinfo=UTC)


def _day(day: int, hour: int = 19) -> datetime:
    return datetime(2025, 5, day, hour, 0, tzinfo=UTC)


EN_DAYS: dict[int, Sequence[str]] = {
    1: (
        "Morning! The weather is lovely today.",
        "I plan to go hiking on the West Lake trails with my sister this weekend.",
        "Thanks, talk to you tomorrow.",
    ),
    2: ("I had noodles for lunch, they were fine.", "Work was busy but okay."),
    4: (
        "Good evening, long day today.",
        "I plan to go hiking in the Moganshan mountains with my colleagues next month.",
        "Good night.",
    ),
    6: ("My cat knocked a cup off the table again.", "I watched a documentary about whales."),
    9: ("Another quiet day at the office.", "I bought a new pair of running shoes."),
    10: ("I plan to read a novel tonight.", "The rain kept me inside all afternoon."),
    13: ("I cooked dumplings with my roommate.", "We planned a picnic for the summer."),
}

ZH_DAYS: dict[int, Sequence[str]] = {
    1: (
        "早上好，今天天气不错。",
        "你给我推荐了电影《流浪地球》，我打算这个周末去看。",
        "谢谢，明天再聊。",
    ),
    2: ("中午吃了面条，还行。", "今天上班有点忙。"),
    3: ("晚上好，今天有点累。", "你给我推荐了电影《霸王别姬》，我打算下周去看。", "晚安。"),
    6: ("我的猫又把杯子打翻了。", "我看了一部关于鲸鱼的纪录片。"),
    9: ("今天办公室很安静。", "我买了一双新的跑鞋。"),
    10: ("周六和朋友去爬山了，很开心。", "晚上下雨了，没出门。"),
    13: ("和室友一起包了饺子。", "我们计划夏天去野餐。"),
}


def _observe_days(
    engine: ContextEngine, clock: FakeClock, tenant: str, days: dict[int, Sequence[str]]
) -> dict[int, list[str]]:
    """Each day one session, its turns a minute apart; the episode ids per day."""
    ids: dict[int, list[str]] = {}
    for day, texts in sorted(days.items()):
        clock.set(_day(day))
        state = engine.start_session(USER, "chat", tenant=tenant, session_id=f"{tenant}-d{day}")
        for i, text in enumerate(texts):
            clock.set(_day(day) + timedelta(minutes=i))
            receipt = engine.observe(state.session_id, "user", text)
            assert receipt.queued
            ids.setdefault(day, []).extend(receipt.episode_ids)
    engine.flush()
    return ids


def _first_day(engine: ContextEngine, tenant: str, question: str, ids: dict[int, list[str]]) -> int:
    """The day of the best-ranked episode that some day said."""
    day_of = {episode: day for day, episodes in ids.items() for episode in episodes}
    result = engine.retrieve(question, tenant=tenant, user=USER, k=10, now=NOW)
    for item in result.items:
        if item.id in day_of:
            return day_of[item.id]
    raise AssertionError(f"no episode retrieved for {question!r}")


@pytest.fixture(scope="module")
def chat(
    tmp_path_factory: pytest.TempPathFactory, minilm: Embedder
) -> Iterator[tuple[ContextEngine, dict[int, list[str]], dict[int, list[str]]]]:
    clock = FakeClock(_day(1))
    engine = ContextEngine.open(
        Settings(data_dir=tmp_path_factory.mktemp("dates")),
        clock=clock,
        embedder=minilm,
    )
    en = _observe_days(engine, clock, "en", EN_DAYS)
    zh = _observe_days(engine, clock, "zh", ZH_DAYS)
    yield engine, en, zh
    engine.close()


@pytest.mark.parametrize(
    ("question", "day"),
    [
        ("What did I plan on May 1?", 1),
        ("What did I plan on May 4?", 4),
        ("what hiking plan did I tell you about on 1 May?", 1),
        ("what hiking plan did I tell you about on May 4th?", 4),
    ],
)
def test_a_named_date_ranks_that_days_plan_first_in_english(
    chat: tuple[ContextEngine, dict[int, list[str]], dict[int, list[str]]],
    question: str,
    day: int,
) -> None:
    engine, en, _ = chat
    assert _first_day(engine, "en", question, en) == day


@pytest.mark.parametrize(
    ("question", "day"),
    [
        ("5月1号你给我推荐了哪些电影？", 1),
        ("5月3号你给我推荐了哪些电影？", 3),
        ("5月1日我打算看什么电影？", 1),
        ("5月3日我打算看什么电影？", 3),
    ],
)
def test_a_named_date_ranks_that_days_plan_first_in_chinese(
    chat: tuple[ContextEngine, dict[int, list[str]], dict[int, list[str]]],
    question: str,
    day: int,
) -> None:
    engine, _, zh = chat
    assert _first_day(engine, "zh", question, zh) == day


@pytest.mark.parametrize(
    ("tenant", "question", "day"),
    [
        # NOW is Wednesday 14 May: last week ran Mon 5 - Sun 11 May.
        ("en", "What did I tell you last Tuesday?", 13),  # the latest Tuesday before today
        ("zh", "上周二我跟你说了什么？", 6),
        ("zh", "上周六我做了什么？", 10),
        ("zh", "上周末我做了什么？", 10),
        ("en", "What hiking plan did I mention the first time we talked?", 1),
        ("zh", "第一次聊天的时候你给我推荐了什么电影？", 1),
    ],
)
def test_relative_days(
    chat: tuple[ContextEngine, dict[int, list[str]], dict[int, list[str]]],
    tenant: str,
    question: str,
    day: int,
) -> None:
    engine, en, zh = chat
    assert _first_day(engine, tenant, question, en if tenant == "en" else zh) == day
