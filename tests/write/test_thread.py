"""Issue 32, item 3, through the engine as a user drives it: a turn is read in its
conversation. A bare correction ("不对，是6月3号。", "我记错了，是6月3号。", "Actually it's
June 3", "I meant 10,000") corrects the attribute just stated whose value type the
value fits; the old fact is history, its episode is marked past (never ranked first
unmarked), and ``decide`` does not answer from it. "Not anymore" retracts the value
just stated; "me too" takes the other speaker's statement as the user's."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from memstrata.clock import FakeClock
from memstrata.engine import ContextEngine
from memstrata.memory.store import MemoryStore

Factory = Callable[..., ContextEngine]
START = datetime(2025, 3, 1, 9, tzinfo=UTC)
USER = "u1"


def _store(engine: ContextEngine) -> MemoryStore:
    store = engine.parts.memory
    assert store is not None
    return store


def converse(
    engine: ContextEngine, clock: FakeClock, tenant: str, turns: tuple[tuple[str, str], ...]
) -> None:
    """One session of ``(role, text)`` turns, a minute apart, then flushed."""
    engine.start_session(USER, "chat", tenant=tenant, session_id=f"s-{tenant}")
    for role, text in turns:
        engine.observe(f"s-{tenant}", role, text)
        clock.advance(timedelta(minutes=1))
    engine.flush()


def current(engine: ContextEngine, tenant: str, attribute: str) -> str | None:
    active = _store(engine).active_fact(tenant, USER, "user", attribute)
    return None if active is None else active.value


def history(engine: ContextEngine, tenant: str, attribute: str) -> list[str]:
    return [u.value for u in _store(engine).history(tenant, USER, "user", attribute)]


BARE_BIRTHDAYS = (
    ("zh-budui", "我的生日是5月3号。", "不对，是6月3号。", "我的生日是哪天？", "5月3号", "6月3号"),
    (
        "zh-jicuo",
        "我的生日是5月3号。",
        "我记错了，是6月3号。",
        "我的生日是哪天？",
        "5月3号",
        "6月3号",
    ),
    (
        "en-actually",
        "My birthday is May 3.",
        "Actually it's June 3.",
        "When is my birthday?",
        "May 3",
        "June 3",
    ),
    (
        "en-meant",
        "My birthday is May 3.",
        "Sorry, I meant June 3.",
        "When is my birthday?",
        "May 3",
        "June 3",
    ),
)


@pytest.mark.parametrize("case", BARE_BIRTHDAYS, ids=[c[0] for c in BARE_BIRTHDAYS])
def test_a_bare_correction_corrects_the_attribute_just_stated(
    engine_opener: Factory, case: tuple[str, str, str, str, str, str]
) -> None:
    name, said, correction, question, old, new = case
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = f"bare-{name}"
    converse(engine, clock, tenant, (("user", said), ("user", correction)))

    assert current(engine, tenant, "birthday") == new
    assert history(engine, tenant, "birthday") == [old, new]  # the old one kept, closed
    result = engine.retrieve(question, tenant=tenant, user=USER)
    facts = [f.text for f in result.current_facts() if "birthday" in f.text]
    assert facts == [f"user birthday: {new}"]
    # The old episode is never first unmarked: it names the fact that replaced it.
    episodes = [i for i in result.items if i.kind == "episode"]
    old_episode = next(i for i in episodes if i.text == said)
    assert old_episode.superseded_by is not None
    assert episodes[0].text != said or episodes[0].superseded_by is not None
    # decide does not answer from the old value.
    old_id = _store(engine).history(tenant, USER, "user", "birthday")[0].id
    bundle = engine.route(f"s-{tenant}", "respond", question)
    decision = engine.decide(f"s-{tenant}", bundle, question=question)
    assert old_id not in decision.used.memory_ids
    facts_served = [
        str(i.content.get("text"))
        for i in bundle.layer("L3")
        if i.content.get("type") == "fact" and "birthday" in str(i.content.get("text"))
    ]
    assert facts_served == [f"user birthday: {new}"]
    if decision.route == "answer":
        assert decision.used.memory_ids or decision.used.episode_ids


# More sequences: other attributes and value types, English, Chinese and mixed. Each is
# (turns, attribute, current value after, values in history or None: no change there).
SEQUENCES: tuple[tuple[str, tuple[tuple[str, str], ...], str, str | None, tuple[str, ...]], ...] = (
    (
        "budget-en-meant",
        (("user", "My budget is 8000 yuan."), ("user", "I meant 10,000.")),
        "budget",
        "10,000",
        ("8000 yuan", "10,000"),
    ),
    (
        "budget-zh-named",
        (("user", "我的预算是8000元。"), ("user", "不对，预算应该是一万元。")),
        "budget",
        "一万元",
        ("8000元", "一万元"),
    ),
    (
        "budget-zh-bare",
        (("user", "我的预算是8000元。"), ("user", "说错了，是五千块。")),
        "budget",
        "五千块",
        ("8000元", "五千块"),
    ),
    (
        "city-en-wait",
        (("user", "I live in Hangzhou."), ("user", "No wait, Chengdu.")),
        "city",
        "Chengdu",
        ("Hangzhou", "Chengdu"),
    ),
    (
        "city-zh-bare",
        (("user", "我住在杭州。"), ("user", "不对，是成都。")),
        "city",
        "成都",
        ("杭州", "成都"),
    ),
    (
        "name-en",
        (("user", "My name is Li Lei."), ("user", "Sorry, it's Li Wei.")),
        "name",
        "Li Wei",
        ("Li Lei", "Li Wei"),
    ),
    (
        "birthday-en-day-first",
        (("user", "My birthday is May 3."), ("user", "Oops, 3 June.")),
        "birthday",
        "3 June",
        ("May 3", "3 June"),
    ),
    (
        "birthday-mixed",
        (("user", "My birthday is May 3."), ("user", "不对，是6月3号。")),
        "birthday",
        "6月3号",
        ("May 3", "6月3号"),
    ),
    (
        "birthday-zh-en",
        (("user", "我的生日是5月3号。"), ("user", "Actually it's June 3.")),
        "birthday",
        "June 3",
        ("5月3号", "June 3"),
    ),
    # A value that fits the earlier attribute, not the last one: the amount goes to the
    # budget although the city was stated last.
    (
        "skip-to-fitting",
        (
            ("user", "My budget is 8000 yuan."),
            ("user", "I live in Hangzhou."),
            ("user", "I meant 9000."),
        ),
        "budget",
        "9000",
        ("8000 yuan", "9000"),
    ),
    # An assistant turn between the statement and the correction changes nothing.
    (
        "assistant-between",
        (("user", "我住在杭州。"), ("assistant", "好的，记住了。"), ("user", "不对，是成都。")),
        "city",
        "成都",
        ("杭州", "成都"),
    ),
    # A value that fits nothing just stated is not guessed.
    (
        "no-fit",
        (("user", "My birthday is May 3."), ("user", "Sorry, Hangzhou.")),
        "birthday",
        "May 3",
        ("May 3",),
    ),
    (
        "no-fit-zh",
        (("user", "我的预算是8000元。"), ("user", "不对，是杭州。")),
        "budget",
        "8000元",
        ("8000元",),
    ),
    # Nothing was stated before: a bare correction has nothing to correct.
    (
        "nothing-before",
        (("user", "Hello there!"), ("user", "Actually it's June 3.")),
        "birthday",
        None,
        (),
    ),
    # Not anymore: the value just stated is retracted (closed, kept in history).
    (
        "not-anymore-en",
        (("user", "I'm a vegetarian."), ("user", "Not anymore.")),
        "diet",
        None,
        ("vegetarian",),
    ),
    (
        "not-anymore-zh",
        (("user", "我住在杭州。"), ("user", "现在不是了。")),
        "city",
        None,
        ("杭州",),
    ),
    # Me too: what the other speaker said of themselves holds for the user.
    (
        "me-too-en",
        (("assistant", "I live in Hangzhou."), ("user", "Me too!")),
        "city",
        "Hangzhou",
        ("Hangzhou",),
    ),
    ("me-too-zh", (("assistant", "我住在杭州。"), ("user", "我也是。")), "city", "杭州", ("杭州",)),
    # A statement after the correction supersedes as usual.
    (
        "then-stated",
        (
            ("user", "My budget is 8000 yuan."),
            ("user", "I meant 10,000."),
            ("user", "My budget is 12000 yuan."),
        ),
        "budget",
        "12000 yuan",
        ("8000 yuan", "10,000", "12000 yuan"),
    ),
    # A correction that names its own attribute is the rules' (unchanged).
    (
        "named-by-rules",
        (("user", "I live in Hangzhou."), ("user", "Sorry, I got that wrong: I live in Chengdu.")),
        "city",
        "Chengdu",
        ("Hangzhou", "Chengdu"),
    ),
    # A question is not a correction.
    (
        "question",
        (("user", "My budget is 8000 yuan."), ("user", "Actually, is it 10,000?")),
        "budget",
        "8000 yuan",
        ("8000 yuan",),
    ),
    (
        "job-en",
        (("user", "I work as a teacher."), ("user", "Sorry, I meant nurse.")),
        "job",
        "nurse",
        ("teacher", "nurse"),
    ),
)


@pytest.mark.parametrize("case", SEQUENCES, ids=[c[0] for c in SEQUENCES])
def test_turns_are_read_in_their_conversation(
    engine_opener: Factory,
    case: tuple[str, tuple[tuple[str, str], ...], str, str | None, tuple[str, ...]],
) -> None:
    name, turns, attribute, now, said = case
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = f"seq-{name}"
    converse(engine, clock, tenant, turns)
    assert current(engine, tenant, attribute) == now
    assert tuple(history(engine, tenant, attribute)) == said


@pytest.mark.parametrize(
    ("texts", "now"),
    [
        (("我的预算是8000元。", "不对，预算应该是一万元。"), "一万元"),
        (("My budget is 8000 yuan.", "Sorry, the budget is 10,000."), "10,000"),
    ],
)
def test_a_correction_naming_its_attribute_needs_no_thread(
    engine_opener: Factory, texts: tuple[str, str], now: str
) -> None:
    """Remembered outside any conversation, a correction that names the attribute by
    its label corrects it (the issue: "不对，预算应该是一万元。" gave nothing)."""
    clock = FakeClock(START)
    engine = engine_opener(clock=clock)
    tenant = f"named-{len(now)}"
    for text in texts:
        engine.remember(USER, text, tenant=tenant)
        engine.flush()
        clock.advance(timedelta(days=1))
    assert current(engine, tenant, "budget") == now
    assert len(history(engine, tenant, "budget")) == 2
