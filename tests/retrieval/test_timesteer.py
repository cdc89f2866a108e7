"""The time a question names steers the ranking: fully inside the window, fading over
the slack, nothing else changed when the window holds nothing or there is none.

Same stores and test doubles as test_retriever.py: every adjustment off but the time
boost, the items' cosines chosen by the test.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from tests.retrieval.test_retriever import (
    FixedEmbedder,
    Spec,
    at_cosine,
    basis,
    only,
    order,
    put,
    query,
)

from memstrata.longterm.facade import LongTermStore
from memstrata.retrieval import Retriever
from memstrata.retrieval.timesteer import (
    SLACK_WEIGHT,
    earliest_observed,
    first_session_phrase,
    question_window,
    window_weight,
)

# Wednesday 2023-08-23; 2023-08-01 is a Tuesday.
NOW = datetime(2023, 8, 23, 20, 0, tzinfo=UTC)


def at(day: int, hour: int = 19) -> float:
    return datetime(2023, 8, day, hour, tzinfo=UTC).timestamp()


def _two_plans(store: LongTermStore, tenant: str) -> list[str]:
    """The same plan on 1 and 4 August, the 4th's a little closer to the question."""
    return put(
        store,
        tenant,
        [
            Spec("plan: hiking at West Lake", at_cosine(0.60, 1), created_at=at(1)),
            Spec("plan: hiking at Moganshan", at_cosine(0.62, 2), created_at=at(4)),
            Spec("lunch was noodles", at_cosine(0.30, 3), created_at=at(2)),
        ],
    )


@pytest.mark.parametrize(
    ("question", "first"),
    [
        ("what did I plan on August 1", 0),
        ("what did I plan on 4 August", 1),
        ("8月1号我计划了什么", 0),
        ("8月4日我计划了什么", 1),
        ("八月一号我计划了什么", 0),
    ],
)
def test_the_named_day_outranks_a_day_within_the_slack(
    store: LongTermStore, tenant: str, question: str, first: int
) -> None:
    # 1 and 4 August are three days apart: before, both were inside each other's
    # slack and got the same lift, so the closer cosine (the 4th's) always won
    ids = _two_plans(store, tenant)
    embedder = FixedEmbedder({question: basis(0)})
    result = Retriever(store, embedder, only(time_boost=0.6)).retrieve(
        query(question, tenant, now=NOW)
    )
    assert order(result, ids)[0] == first
    assert result.items[0].in_time_window is True


@pytest.mark.parametrize(
    ("question", "start_day"),
    [
        ("what did I do last Tuesday", 22),  # the latest Tuesday before today
        ("what did I do on Tuesday", 22),
        ("上周二我做了什么", 15),  # Tuesday of last calendar week
        ("上周末我做了什么", 19),  # Sat 19 - Sun 20
        ("周末我做了什么", 19),
        ("what did I do last weekend", 19),
        ("上周六我做了什么", 19),
        ("大前天我做了什么", 20),
        ("3号你给我推荐了什么", 3),
    ],
)
def test_weekdays_and_weekends_resolve_against_now(question: str, start_day: int) -> None:
    window = question_window(question, NOW)
    assert window is not None, question
    assert window.start == datetime(2023, 8, start_day, tzinfo=UTC)


def test_first_time_phrases() -> None:
    for text in (
        "What did I tell you the first time we talked?",
        "what hiking plan did I mention when we first chatted",
        "in our first conversation, what did I ask?",
        "第一次聊天的时候你给我推荐了什么电影？",
        "我们第一次说话时我提到了什么",
    ):
        assert first_session_phrase(text), text
    for text in (
        "When did I first go to Beijing?",
        "我第一次去北京是什么时候？",
        "first things first",
    ):
        assert first_session_phrase(text) is None, text


def test_earliest_observed_finds_the_hour_by_counting() -> None:
    stamps = [at(3, 9), at(5), at(9)]
    calls: list[float] = []

    def count_before(stamp: float) -> int:
        calls.append(stamp)
        return sum(1 for s in stamps if s < stamp)

    found = earliest_observed(count_before, NOW)
    assert found is not None
    assert 0 <= stamps[0] - found.timestamp() <= 3600
    assert len(calls) < 40
    assert earliest_observed(lambda _: 0, NOW) is None


def test_the_first_time_we_talked_ranks_the_earliest_session_first(
    store: LongTermStore, tenant: str
) -> None:
    question = "what hiking plan did I tell you the first time we talked"
    ids = put(
        store,
        tenant,
        [
            Spec("plan: hiking at West Lake", at_cosine(0.60, 1), created_at=at(1)),
            Spec("plan: hiking at Moganshan", at_cosine(0.62, 2), created_at=at(4)),
            Spec("plan: hiking at Huangshan", at_cosine(0.61, 3), created_at=at(9)),
        ],
    )
    embedder = FixedEmbedder({question: basis(0)})
    result = Retriever(store, embedder, only(time_boost=0.6)).retrieve(
        query(question, tenant, now=NOW)
    )
    assert result.time_window is not None
    assert result.time_window.start <= datetime.fromtimestamp(at(1), tz=UTC)
    assert order(result, ids)[0] == 0
    # another user's earlier memories do not count as this user's first conversation
    other = put(
        store,
        tenant,
        [
            Spec(
                "plan: hiking at Taishan",
                at_cosine(0.9, 4),
                created_at=at(1) - 86400 * 30,
                user="u2",
            )
        ],
    )
    again = Retriever(store, embedder, only(time_boost=0.6)).retrieve(
        query(question, tenant, now=NOW, user="u1")
    )
    assert other[0] not in [i.id for i in again.items]
    assert order(again, ids)[0] == 0


@pytest.mark.parametrize(
    "question",
    [
        "what did I plan on 20 March",  # a date nothing was said on
        "what did I plan",  # no date at all
        "what did I plan on 2023-02-30",  # not a date
    ],
)
def test_an_empty_or_absent_window_changes_nothing(
    store: LongTermStore, tenant: str, question: str
) -> None:
    ids = _two_plans(store, tenant)
    embedder = FixedEmbedder({question: basis(0)})
    boosted = Retriever(store, embedder, only(time_boost=0.6)).retrieve(
        query(question, tenant, now=NOW)
    )
    plain = Retriever(store, embedder, only()).retrieve(query(question, tenant, now=NOW))
    assert [i.id for i in boosted.items] == [i.id for i in plain.items]
    assert [i.score for i in boosted.items] == pytest.approx([i.score for i in plain.items])
    assert order(plain, ids)[0] == 1


def test_window_weight_fades_across_the_slack() -> None:
    day = 86400.0
    start, end, slack = 10 * day, 11 * day, 3 * day
    assert window_weight(start, end, slack, None) == 0.0
    assert window_weight(start, end, slack, start) == 1.0
    assert window_weight(start, end, slack, end - 1) == 1.0
    assert window_weight(start, end, slack, end) == pytest.approx(SLACK_WEIGHT)
    assert window_weight(start, end, slack, end + 1.5 * day) == pytest.approx(SLACK_WEIGHT / 2)
    assert window_weight(start, end, slack, start - 3 * day) == 0.0
    assert window_weight(start, end, 0.0, end + 1) == 0.0


def test_an_as_of_read_never_sees_the_window_after_it(store: LongTermStore, tenant: str) -> None:
    question = "what did I plan on August 4"
    ids = put(
        store,
        tenant,
        [
            Spec("plan: hiking at West Lake", at_cosine(0.60, 1), created_at=at(1)),
            Spec("plan: hiking at Moganshan", at_cosine(0.62, 2), created_at=at(4, 18)),
        ],
    )
    embedder = FixedEmbedder({question: basis(0)})
    as_of = datetime.fromtimestamp(at(4, 12), tz=UTC)  # before the 4th's plan was told
    result = Retriever(store, embedder, only(time_boost=0.6)).retrieve(
        query(question, tenant, now=NOW, as_of=as_of)
    )
    assert order(result, ids) == [0]


def test_the_slack_of_a_wide_window_keeps_its_full_weight() -> None:
    day = 86400.0
    start, end, slack = 0.0, 30 * day, 3 * day  # a month, or "recently"
    assert window_weight(start, end, slack, end + 1.5 * day) == 1.0
    assert window_weight(start, end, slack, end + 3 * day) == 0.0


@pytest.mark.parametrize(
    "question",
    ["What do I do on Sundays?", "每周一我都做什么？", "Which day is best for the meeting?"],
)
def test_habits_are_not_dates(question: str) -> None:
    assert question_window(question, NOW) is None
