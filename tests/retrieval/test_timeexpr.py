"""Time expressions in questions -> TimeWindow, against a fixed, timezone-aware now.

Every expected window below was worked out by hand from NOW (Sunday 2023-08-20 15:00
UTC; the current calendar week is Mon 08-14 .. Sun 08-20). "N units ago" is the
centre ``now - N x unit`` (month = 30 days, year = 365) with half a unit of slack
either side (at least one day), widened to whole days.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memstrata.errors import ValidationError
from memstrata.retrieval.timeexpr import TimeWindow, resolve

NOW = datetime(2023, 8, 20, 15, 0, tzinfo=UTC)
assert NOW.weekday() == 6  # a Sunday


def day(year: int, month: int, dom: int) -> datetime:
    return datetime(year, month, dom, tzinfo=UTC)


CASES: list[tuple[str, datetime, datetime]] = [
    # calendar days
    ("What did I eat yesterday?", day(2023, 8, 19), day(2023, 8, 20)),
    ("Where was I the day before yesterday?", day(2023, 8, 18), day(2023, 8, 19)),
    ("What did we discuss day before yesterday?", day(2023, 8, 18), day(2023, 8, 19)),
    ("What is on my list today?", day(2023, 8, 20), day(2023, 8, 21)),
    # calendar weeks (Monday..Sunday), months, years
    ("What did Anna do last week?", day(2023, 8, 7), day(2023, 8, 14)),
    ("What happened this week?", day(2023, 8, 14), day(2023, 8, 21)),
    ("Which books did I buy last month?", day(2023, 7, 1), day(2023, 8, 1)),
    ("What did I do this month?", day(2023, 8, 1), day(2023, 9, 1)),
    ("Where did we travel last year?", day(2022, 1, 1), day(2023, 1, 1)),
    ("Any plans this year?", day(2023, 1, 1), day(2024, 1, 1)),
    ("Did I go hiking last weekend?", day(2023, 8, 12), day(2023, 8, 14)),
    # "ago": centre +- half a unit (>= 1 day), whole days
    ("What did I start two months ago?", day(2023, 6, 6), day(2023, 7, 7)),
    ("Who did I meet 3 weeks ago?", day(2023, 7, 27), day(2023, 8, 4)),
    ("What did I order a few days ago?", day(2023, 8, 16), day(2023, 8, 19)),
    ("What did I read a week ago?", day(2023, 8, 10), day(2023, 8, 18)),
    # spans ending today
    ("What did I cook in the past 3 days?", day(2023, 8, 17), day(2023, 8, 21)),
    ("What have I been reading recently?", day(2023, 8, 6), day(2023, 8, 21)),
    # month names: the latest such month not after now
    ("What did I do in May?", day(2023, 5, 1), day(2023, 6, 1)),
    ("What happened during May?", day(2023, 5, 1), day(2023, 6, 1)),
    ("What did I buy in December?", day(2022, 12, 1), day(2023, 1, 1)),
    # absolute dates
    ("What did Margaret do on 21 March, 2023?", day(2023, 3, 21), day(2023, 3, 22)),
    ("What happened on June 5th 2023?", day(2023, 6, 5), day(2023, 6, 6)),
    ("Where was Anna in July 2023?", day(2023, 7, 1), day(2023, 8, 1)),
    ("Which countries did I visit in 2022?", day(2022, 1, 1), day(2023, 1, 1)),
    ("What did we decide on 2023-06-16?", day(2023, 6, 16), day(2023, 6, 17)),
    ("What did I do on the 3rd of July?", day(2023, 7, 3), day(2023, 7, 4)),
    # Chinese
    ("我昨天吃了什么?", day(2023, 8, 19), day(2023, 8, 20)),
    ("前天谁来过?", day(2023, 8, 18), day(2023, 8, 19)),
    ("上周我们讨论了什么?", day(2023, 8, 7), day(2023, 8, 14)),
    ("上上周呢?", day(2023, 7, 31), day(2023, 8, 7)),
    ("上个月的账单是多少?", day(2023, 7, 1), day(2023, 8, 1)),
    ("去年我去了哪里?", day(2022, 1, 1), day(2023, 1, 1)),
    ("三个月前我买了什么?", day(2023, 5, 7), day(2023, 6, 7)),
    ("两周前的会议说了什么?", day(2023, 8, 3), day(2023, 8, 11)),
    ("十天前发生了什么?", day(2023, 8, 9), day(2023, 8, 12)),
    ("2023年6月16日发生了什么?", day(2023, 6, 16), day(2023, 6, 17)),
    ("6月16日我在哪里?", day(2023, 6, 16), day(2023, 6, 17)),
    ("12月25日我在哪里?", day(2022, 12, 25), day(2022, 12, 26)),
    ("最近我在读什么书?", day(2023, 8, 6), day(2023, 8, 21)),
    ("去年6月我去了哪里?", day(2022, 6, 1), day(2022, 7, 1)),  # June of last year
    ("前年12月25日我在哪里?", day(2021, 12, 25), day(2021, 12, 26)),
    ("今年3月我在做什么?", day(2023, 3, 1), day(2023, 4, 1)),
    # "since" runs up to today
    ("What has changed since 2022?", day(2022, 1, 1), day(2023, 8, 21)),
    # an absolute date wins over a relative phrase, wherever it stands
    ("Yesterday, or rather on 16 June 2023, what did I do?", day(2023, 6, 16), day(2023, 6, 17)),
    ("Last week, or was it in July 2023?", day(2023, 7, 1), day(2023, 8, 1)),
    # among relative phrases, the most specific (shortest) window
    ("Recently, and especially yesterday, what did I eat?", day(2023, 8, 19), day(2023, 8, 20)),
]


@pytest.mark.parametrize(("question", "start", "end"), CASES, ids=[c[0] for c in CASES])
def test_resolves_to_the_hand_checked_window(question: str, start: datetime, end: datetime) -> None:
    window = resolve(question, NOW)
    assert window is not None, question
    assert (window.start, window.end) == (start, end)
    assert window.phrase  # names what it matched
    assert window.start.tzinfo is NOW.tzinfo


def test_at_least_25_cases() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize(
    "question",
    [
        "May I ask what Anna likes?",
        "What is the plan?",
        "How many of the 5 may join the call?",  # "may" the verb, not 5 May
        "What did Bob say about the project?",
        "Which day is best for the meeting?",
        "What does ORD-7781 contain?",
        "我喜欢什么颜色?",
        "What happened on 2023-02-30?",  # not a date
    ],
)
def test_questions_without_a_time_give_none(question: str) -> None:
    assert resolve(question, NOW) is None


def test_phrase_names_the_matched_text() -> None:
    window = resolve("What did Anna do two months ago?", NOW)
    assert window is not None and window.phrase == "two months ago"


def test_windows_keep_the_timezone_of_now() -> None:
    shanghai = datetime(2023, 8, 20, 1, 0, tzinfo=timezone(timedelta(hours=8)))
    window = resolve("我昨天吃了什么?", shanghai)
    assert window is not None
    assert window.start == datetime(2023, 8, 19, tzinfo=timezone(timedelta(hours=8)))
    assert window.end == datetime(2023, 8, 20, tzinfo=timezone(timedelta(hours=8)))
    # in UTC it is still the 19th, 17:00: "yesterday" is the local calendar day
    assert window.start.utcoffset() == timedelta(hours=8)


def test_window_is_half_open() -> None:
    window = TimeWindow(day(2023, 8, 19), day(2023, 8, 20), "yesterday")
    assert window.contains(day(2023, 8, 19))
    assert window.contains(datetime(2023, 8, 19, 23, 59, 59, tzinfo=UTC))
    assert not window.contains(day(2023, 8, 20))
    assert not window.contains(datetime(2023, 8, 18, 23, 59, tzinfo=UTC))


@pytest.mark.parametrize(
    ("question", "now", "field"),
    [
        ("What did I do yesterday?", datetime(2023, 8, 20, 15, 0), "now"),  # naive
        ("What did I do yesterday?", "2023-08-20", "now"),
        (123, NOW, "question"),
        (None, NOW, "question"),
        (b"yesterday", NOW, "question"),
    ],
)
def test_invalid_inputs_name_the_field(question: object, now: object, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        resolve(question, now)  # type: ignore[arg-type]
    assert info.value.field == field


RELATIVE = [
    "yesterday",
    "the day before yesterday",
    "today",
    "last week",
    "this week",
    "last weekend",
    "last month",
    "this month",
    "last year",
    "two months ago",
    "3 weeks ago",
    "a few days ago",
    "past 3 days",
    "recently",
    "in May",
    "in December",
    "昨天",
    "上周",
    "上个月",
    "去年",
    "三个月前",
    "6月16日",
    "最近",
]
ZONES = [
    UTC,
    timezone(timedelta(hours=8)),
    timezone(timedelta(hours=-5)),
    ZoneInfo("Europe/Berlin"),
]


@given(
    moment=st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2090, 12, 31)),
    zone=st.sampled_from(ZONES),
    phrase=st.sampled_from(RELATIVE),
)
def test_relative_windows_are_well_formed_and_never_start_after_now(
    moment: datetime, zone: timezone, phrase: str
) -> None:
    now = moment.replace(tzinfo=zone)
    window = resolve(f"What happened {phrase}?", now)
    assert window is not None
    assert window.start < window.end
    assert window.start <= now  # questions are about the past (or today)
    assert window.start.tzinfo is now.tzinfo and window.end.tzinfo is now.tzinfo


@pytest.mark.parametrize("text", ["1" * 32_000, "一" * 32_000, "1 may " * 5_000, "2023-" * 6_000])
def test_long_inputs_resolve_in_linear_time(text: str) -> None:
    # a question is user input up to 32k chars; a pattern retried at every digit of a
    # long number run took ~30 s here
    started = time.perf_counter()
    resolve(text, NOW)
    assert time.perf_counter() - started < 3.0
