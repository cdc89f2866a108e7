"""The current value first when the newest statement of it was read by no pattern, or
when the question asks in an everyday phrasing (issue 24, item 5): a later episode that
states the attribute anew ("New job confirmed - lawyer.", 电脑预算我调到两万块了) comes
before the episode of the slot's now stale fact; a corrected birthday's old episode is
marked past; someone else's home is nobody's past; and the questions' cues cover
住处 / 哪座城市, 收件地址, "current job", birthdays in both languages."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.retrieval.currency import asked_attributes
from memstrata.retrieval.results import RetrievalResult

Factory = Callable[..., ContextEngine]
START = datetime(2025, 3, 1, 9, tzinfo=UTC)


def _observe(engine: ContextEngine, clock: FakeClock, texts: tuple[str, ...]) -> None:
    state = engine.start_session("u1", "chat", tenant="acme", session_id="s1")
    for text in texts:
        assert engine.observe(state.session_id, "user", text).queued
        clock.advance(timedelta(days=3))
    engine.flush()


def _index(result: RetrievalResult, words: str) -> int:
    found = [
        i for i, item in enumerate(result.items) if item.kind == "episode" and words in item.text
    ]
    assert found, f"no episode saying {words!r} in {[item.text for item in result.items]}"
    return found[0]


# (old value, fillers..., the change no pattern reads, question, old words, new words)
RESTATED = (
    (
        "I work as a journalist, and this month has been hectic.",
        "I love hiking on weekends.",
        "New job confirmed - lawyer. I've handed over my old journalist role.",
        "What's my job now?",
        "hectic",
        "lawyer",
    ),
    (
        "我打算换台新电脑，预算大概五千块。",
        "我平时喜欢喝茶。",
        "电脑预算我调到两万块了，之前五千块不够。",
        "我现在买电脑的预算是多少？",
        "大概五千块",
        "两万块",
    ),
    (
        "我是做护士的，最近项目特别多。",
        "我周末喜欢去爬山。",
        "我辞职了！下周开始去新公司当小学老师，不再做护士了。",
        "我现在做什么工作？",
        "项目特别多",
        "小学老师",
    ),
)


@pytest.mark.parametrize("case", RESTATED, ids=[case[3] for case in RESTATED])
def test_a_newer_statement_no_pattern_read_comes_before_the_stale_fact(
    engine_factory: Factory, case: tuple[str, ...]
) -> None:
    old, filler, change, question, old_words, new_words = case
    clock = FakeClock(START)
    engine = engine_factory(clock=clock)
    _observe(engine, clock, (old, filler, change))
    result = engine.retrieve(question, tenant="acme", user="u1")
    texts = [item.text for item in result.items]
    assert new_words in result.items[0].text, texts
    assert _index(result, old_words) > 0


BIRTHDAYS = (
    (
        "December 2 is my birthday, don't forget!",
        "Sorry, I mixed it up: my birthday is actually July 8.",
        "When is my birthday?",
        "December 2",
        "July 8",
    ),
    (
        "12月2号是我生日，别忘了！",
        "不好意思记混了，我生日是7月8号。",
        "我的 real birthday 是哪天？",
        "12月2号",
        "7月8号",
    ),
)


@pytest.mark.parametrize("case", BIRTHDAYS, ids=[case[2] for case in BIRTHDAYS])
def test_a_corrected_birthday_comes_first_and_the_old_one_is_the_past(
    engine_factory: Factory, case: tuple[str, ...]
) -> None:
    old, new, question, old_words, new_words = case
    clock = FakeClock(START)
    engine = engine_factory(clock=clock)
    _observe(engine, clock, (old, "I like jazz.", new))
    result = engine.retrieve(question, tenant="acme", user="u1")
    texts = [item.text for item in result.items]
    assert new_words in result.items[0].text, texts
    assert result.items[0].superseded_by is None
    assert result.items[_index(result, old_words)].superseded_by is not None, texts


def test_someone_elses_home_is_not_the_users_past(engine_factory: Factory) -> None:
    clock = FakeClock(START)
    engine = engine_factory(clock=clock)
    texts = (
        "我在成都住了十年。",
        "我姐姐一家住在深圳，我们一年见两三次。",
        "我喜欢喝咖啡。",
        "上个月搬到了西安。",
    )
    _observe(engine, clock, texts)
    result = engine.retrieve("我现在住哪？", tenant="acme", user="u1")
    assert "西安" in result.items[0].text
    assert result.items[_index(result, "成都")].superseded_by is not None
    assert result.items[_index(result, "姐姐")].superseded_by is None


def test_a_new_home_announced_on_its_own_comes_first(engine_factory: Factory) -> None:
    clock = FakeClock(START)
    engine = engine_factory(clock=clock)
    texts = (
        "我在长沙住了快五年了，已经习惯这边的节奏了。",
        "我喜欢周末去爬山。",
        "搬家总算搞定了，新家在昆明，比长沙暖和多了。",
    )
    _observe(engine, clock, texts)
    result = engine.retrieve("我目前的住处在哪座城市？", tenant="acme", user="u1")
    assert "昆明" in result.items[0].text, [item.text for item in result.items]
    assert result.items[_index(result, "快五年")].superseded_by is not None


@pytest.mark.parametrize(
    ("first", "second", "new_value"),
    [
        (
            "Delivery address 是滨江区江南大道88号。",
            "Shipping address 改成朝阳区建国路21号了。",
            "朝阳区建国路21号",
        ),
        (
            "记一下我的收件地址：朝阳区建国路21号。",
            "以后快递寄到江北区北滨一路9号。",
            "江北区北滨一路9号",
        ),
    ],
)
def test_a_delivery_address_labelled_in_english_or_as_收件地址_is_a_fact(
    engine_factory: Factory, first: str, second: str, new_value: str
) -> None:
    clock = FakeClock(START)
    engine = engine_factory(clock=clock)
    _observe(engine, clock, (first, second))
    memory = engine.parts.memory
    history = memory.history("acme", "u1", "user", "delivery_address")
    assert [u.active for u in history] == [False, True]
    assert history[-1].value == new_value
    result = engine.retrieve("我最新的收件地址是什么？", tenant="acme", user="u1")
    assert new_value in result.items[0].text


def test_someone_elses_delivery_address_is_none_of_the_users(engine_factory: Factory) -> None:
    clock = FakeClock(START)
    engine = engine_factory(clock=clock)
    _observe(engine, clock, ("她的 shipping address 是朝阳区建国路21号。",))
    assert engine.parts.memory.active_fact("acme", "u1", "user", "delivery_address") is None


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("我目前的住处在哪座城市？", ("city", "address")),
        ("我最新的收件地址是什么？", ("delivery_address",)),
        ("我 current job 是什么 role？", ("employer", "job")),
        ("我目前的职业是什么？", ("employer", "job")),
        ("When is my birthday?", ("birthday",)),
        ("我真正的生日是什么时候？", ("birthday",)),
        ("我的 real birthday 是哪天？", ("birthday",)),
        ("我妈妈的生日是哪天？", ()),  # someone else's
        ("When is my sister's birthday?", ()),
        ("我下个月要去哪个城市出差？", ()),  # a trip, not a home
        ("我的职业规划是什么？", ()),  # a career plan, not the job
    ],
)
def test_everyday_questions_about_a_current_value(question: str, asked: tuple[str, ...]) -> None:
    assert asked_attributes(question) == asked
